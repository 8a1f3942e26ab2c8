package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// Partition-map fixtures; package metadata's tests use the same ones.

func i64(v int64) *int64 { return &v }

// testID returns a stable uuid named by s, so failures read the same every run.
func testID(s string) uuid.UUID { return uuid.NewSHA1(uuid.NameSpaceOID, []byte(s)) }

func pl(server, name string) Placement {
	return Placement{ServerID: server, PlacementID: testID(name)}
}

// testTxn returns a valid txnid made from one repeated hex digit.
func testTxn(c byte) string { return strings.Repeat(string(c), 40) }

// fourPartitions returns a valid file cut at 0, 100 and 200.
func fourPartitions() *File {
	bounds := []*int64{nil, i64(0), i64(100), i64(200), nil}
	f := &File{Table: "cpu", TxnID: testTxn('b'), TxnSeq: 2, ParentTxnID: testTxn('a')}
	for i := 0; i < 4; i++ {
		n := string(rune('0' + i))
		f.Partitions = append(f.Partitions, Partition{
			ID:      testID("p" + n),
			Begin:   bounds[i],
			End:     bounds[i+1],
			Servers: []Placement{pl("s1", "p"+n+"s1"), pl("s2", "p"+n+"s2")},
		})
	}
	return f
}

func wantErr(t *testing.T, err error, target error, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v containing %q", target, substr)
	}
	if target != nil && !errors.Is(err, target) {
		t.Fatalf("got %v, want errors.Is %v", err, target)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %q does not contain %q", err, substr)
	}
}

func splitFile() *File {
	f := fourPartitions()
	p := &f.Partitions[1] // [0, 100)
	p.Joining = []Placement{pl("s3", "p1s3")}
	p.Split = &Split{
		Points: []int64{30, 60},
		Children: []Child{
			{ID: testID("c0"), Begin: i64(0), End: i64(30), Servers: []Placement{pl("s1", "c0s1"), pl("s4", "c0s4")}},
			{ID: testID("c1"), Begin: i64(30), End: i64(60), Servers: []Placement{pl("s2", "c1s2")}},
			{ID: testID("c2"), Begin: i64(60), End: i64(100), Servers: []Placement{pl("s5", "c2s5")}},
		},
	}
	f.Partitions[3].Offline = true
	return f
}
