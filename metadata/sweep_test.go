package metadata

import (
	"testing"
	"time"
)

// TestFileStoreSweepListed: a listed table keeps its committed chain, an
// unlisted one whose files are all old is deleted.
func TestFileStoreSweepListed(t *testing.T) {
	s := openStore(t, t.TempDir())
	now := time.Now().Add(time.Hour)
	old := now.Add(-2 * time.Hour)
	for _, table := range []string{"cpu", "gone"} {
		if err := s.Put(table, testTxn('a'), chainFile(t, 1, testTxn('a'), "")); err != nil {
			t.Fatal(err)
		}
		setAge(t, s, table, testTxn('a'), old)
	}
	n, err := s.SweepListed(now, time.Minute, 3, []TableConfig{{Name: "cpu", MetadataTxnID: testTxn('a')}})
	if err != nil || n != 1 {
		t.Fatalf("deleted %d, %v; want 1 (gone's file)", n, err)
	}
	if _, err := s.Get("cpu", testTxn('a')); err != nil {
		t.Errorf("cpu's current file: %v", err)
	}
	if _, err := s.Get("gone", testTxn('a')); err == nil {
		t.Error("gone's file survived the sweep")
	}
}
