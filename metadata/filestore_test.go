package metadata

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func openStore(t *testing.T, dir string) *FileStore {
	t.Helper()
	s, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFileStorePutGet(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	txn := testTxn('a')
	if _, err := s.Get("cpu", txn); !errors.Is(err, ErrFileNotFound) {
		t.Fatalf("Get before Put: %v", err)
	}
	if err := s.Put("cpu", txn, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get("cpu", txn); err != nil || string(got) != "one" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if err := s.Put("cpu", txn, []byte("one")); err != nil {
		t.Fatalf("idempotent Put: %v", err)
	}
	if err := s.Put("cpu", txn, []byte("two")); !errors.Is(err, ErrTxnMismatch) {
		t.Fatalf("mismatching Put: %v", err)
	}
	if got, _ := s.Get("cpu", txn); string(got) != "one" {
		t.Fatalf("mismatching Put changed the file: %q", got)
	}
	if err := s.Put("mem", txn, []byte("other table")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get("mem", txn); string(got) != "other table" {
		t.Fatal("tables share files")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cpu", txn)); err != nil || string(b) != "one" {
		t.Fatalf("layout is not dir/<table>/<txnid>: %v", err)
	}
	// Reopen: everything is still there, and no temp file is left behind.
	s2 := openStore(t, dir)
	if got, err := s2.Get("cpu", txn); err != nil || string(got) != "one" {
		t.Fatalf("after reopen: %q, %v", got, err)
	}
	if err := s2.Put("cpu", txn, []byte("two")); !errors.Is(err, ErrTxnMismatch) {
		t.Fatalf("after reopen, mismatching Put: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "cpu"))
	if len(entries) != 1 {
		t.Fatalf("stray files: %v", entries)
	}
}

func TestFileStoreList(t *testing.T) {
	s := openStore(t, t.TempDir())
	if got, err := s.List("cpu"); err != nil || len(got) != 0 {
		t.Fatalf("List of an unknown table = %v, %v", got, err)
	}
	for _, c := range "cab" {
		if err := s.Put("cpu", testTxn(byte(c)), []byte{byte(c)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List("cpu")
	if want := []string{testTxn('a'), testTxn('b'), testTxn('c')}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("List = %v, %v", got, err)
	}
	if tables, err := s.Tables(); err != nil || !reflect.DeepEqual(tables, []string{"cpu"}) {
		t.Fatalf("Tables = %v, %v", tables, err)
	}
}

func TestFileStoreRejectsBadNames(t *testing.T) {
	s := openStore(t, t.TempDir())
	for _, tc := range []struct{ table, txn string }{
		{"../etc", testTxn('a')}, {"cpu", "../../x"}, {"cpu", ""}, {"", testTxn('a')}, {"cpu", strings.ToUpper(testTxn('a'))},
	} {
		if err := s.Put(tc.table, tc.txn, []byte("x")); err == nil {
			t.Errorf("Put(%q, %q) accepted", tc.table, tc.txn)
		}
		if _, err := s.Get(tc.table, tc.txn); err == nil || errors.Is(err, ErrFileNotFound) {
			t.Errorf("Get(%q, %q) = %v", tc.table, tc.txn, err)
		}
	}
}

// chainFile encodes a file of table "cpu" named txn whose parent is parent.
func chainFile(t *testing.T, seq uint64, txn, parent string) []byte {
	t.Helper()
	f := &File{Table: "cpu", TxnID: txn, TxnSeq: seq, ParentTxnID: parent,
		Partitions: []Partition{{ID: testID("p"), Servers: []Placement{pl("s1", "x")}}}}
	b, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func setAge(t *testing.T, s *FileStore, table, name string, mtime time.Time) {
	t.Helper()
	if err := os.Chtimes(filepath.Join(s.dir, table, name), mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func TestFileStoreSweep(t *testing.T) {
	s := openStore(t, t.TempDir())
	now := time.Now().Add(time.Hour) // a fake "now", one hour ahead
	old, recent := now.Add(-2*time.Hour), now.Add(-time.Minute)
	grace := 10 * time.Minute
	// Chain a ← b ← c ← d (d current); x and y orphans off a and c; z a
	// recent orphan (a commit in flight); e a recent child of d.
	files := []struct {
		txn, parent string
		seq         uint64
		mtime       time.Time
	}{
		{testTxn('a'), "", 1, old},
		{testTxn('b'), testTxn('a'), 2, old},
		{testTxn('c'), testTxn('b'), 3, old},
		{testTxn('d'), testTxn('c'), 4, old},
		{testTxn('1'), testTxn('a'), 2, old}, // orphan x
		{testTxn('2'), testTxn('c'), 4, old}, // orphan y
		{testTxn('3'), testTxn('c'), 4, recent},
		{testTxn('e'), testTxn('d'), 5, recent},
	}
	for _, f := range files {
		if err := s.Put("cpu", f.txn, chainFile(t, f.seq, f.txn, f.parent)); err != nil {
			t.Fatal(err)
		}
		setAge(t, s, "cpu", f.txn, f.mtime)
	}
	// A temporary file left by a crash.
	tmp := filepath.Join(s.dir, "cpu", tmpPrefix+"crash")
	if err := os.WriteFile(tmp, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	setAge(t, s, "cpu", tmpPrefix+"crash", old)

	current := func(table string) (string, bool) { return testTxn('d'), table == "cpu" }
	n, err := s.Sweep(now, grace, 2, current)
	if err != nil {
		t.Fatal(err)
	}
	// Kept: d (current), c and b (2 ancestors), 3 and e (recent). Deleted:
	// a (beyond keep), 1, 2 and the temp file.
	if n != 4 {
		t.Errorf("deleted %d files, want 4", n)
	}
	got, _ := s.List("cpu")
	want := []string{testTxn('3'), testTxn('b'), testTxn('c'), testTxn('d'), testTxn('e')}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after sweep %v, want %v", got, want)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatal("old temp file survived")
	}
	// keep 0: only the current file of the chain is protected.
	if n, err := s.Sweep(now, grace, 0, current); err != nil || n != 2 {
		t.Fatalf("keep 0: deleted %d, %v; want 2 (b, c)", n, err)
	}
	// Much later everything but the current file goes, and Sweep repeats
	// without error.
	later := now.Add(time.Hour)
	if n, err := s.Sweep(later, grace, 0, current); err != nil || n != 2 {
		t.Fatalf("later: deleted %d, %v; want 2 (3, e)", n, err)
	}
	if got, _ := s.List("cpu"); !reflect.DeepEqual(got, []string{testTxn('d')}) {
		t.Fatalf("only the current file should remain: %v", got)
	}
}

func TestFileStoreSweepMissingCurrent(t *testing.T) {
	s := openStore(t, t.TempDir())
	now := time.Now().Add(time.Hour)
	for _, c := range "ab" {
		if err := s.Put("cpu", testTxn(byte(c)), chainFile(t, 1, testTxn(byte(c)), "")); err != nil {
			t.Fatal(err)
		}
		setAge(t, s, "cpu", testTxn(byte(c)), now.Add(-24*time.Hour))
	}
	// TableConfig names a txn this server does not hold: it cannot tell the
	// chain, so it deletes nothing.
	n, err := s.Sweep(now, time.Minute, 3, func(string) (string, bool) { return testTxn('f'), true })
	if err != nil || n != 0 {
		t.Fatalf("deleted %d, %v; want nothing", n, err)
	}
}

func TestFileStoreSweepNoTable(t *testing.T) {
	s := openStore(t, t.TempDir())
	now := time.Now().Add(time.Hour)
	grace := 10 * time.Minute
	put := func(table string, c byte, mtime time.Time) {
		b := chainFile(t, 1, testTxn(c), "")
		if err := s.Put(table, testTxn(c), b); err != nil {
			t.Fatal(err)
		}
		setAge(t, s, table, testTxn(c), mtime)
	}
	// "gone": every file old → all deleted, directory removed.
	put("gone", 'a', now.Add(-time.Hour))
	put("gone", 'b', now.Add(-2*time.Hour))
	// "young": one file is recent (a CREATE in flight) → left alone.
	put("young", 'a', now.Add(-time.Hour))
	put("young", 'b', now.Add(-time.Minute))
	n, err := s.Sweep(now, grace, 3, func(string) (string, bool) { return "", false })
	if err != nil || n != 2 {
		t.Fatalf("deleted %d, %v; want 2", n, err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "gone")); !os.IsNotExist(err) {
		t.Fatal("the directory of a table with no files left was kept")
	}
	if got, _ := s.List("young"); len(got) != 2 {
		t.Fatalf("young table lost files: %v", got)
	}
}

// TestFileStorePutRefreshesMtime: re-storing an old file (a retried commit
// of the same txn) makes it recent, so the sweep does not delete it under
// the commit.
func TestFileStorePutRefreshesMtime(t *testing.T) {
	s := openStore(t, t.TempDir())
	b := chainFile(t, 1, testTxn('a'), "")
	if err := s.Put("cpu", testTxn('a'), b); err != nil {
		t.Fatal(err)
	}
	setAge(t, s, "cpu", testTxn('a'), time.Now().Add(-48*time.Hour))
	if err := s.Put("cpu", testTxn('a'), b); err != nil {
		t.Fatal(err)
	}
	n, err := s.Sweep(time.Now(), time.Hour, 0, func(string) (string, bool) { return testTxn('f'), true })
	if err != nil || n != 0 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	n, err = s.Sweep(time.Now(), time.Hour, 0, func(string) (string, bool) { return "", false })
	if err != nil || n != 0 {
		t.Fatalf("no table: deleted %d, %v", n, err)
	}
}
