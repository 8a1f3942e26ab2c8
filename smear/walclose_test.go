package smear

import (
	"context"
	"testing"
	"time"

	"github.com/tsdb/tsdb/internal/diskusage"
)

// TestCloseLeavesNoWAL (issue 17 item 5): the queue's Close flushes its
// memtable and leaves no WAL of MemTableSize behind (before, the active
// WAL alone held 110% of the 32 MiB memtable in preallocated blocks); the
// queued entries survive the reopen.
func TestCloseLeavesNoWAL(t *testing.T) {
	dir := t.TempDir()
	clk, opts := clockedOptions(t)
	q, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for b := range 200 {
		if err := q.Enqueue(context.Background(), "cpu", makeRows(b, 50), clk.Now().Add(time.Minute+time.Duration(b)*time.Second)); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
	}
	rows, bytes := q.Depth()
	before, beforeBytes := walBlocks(t, dir)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	files, allocated := walBlocks(t, dir)
	t.Logf("%d rows queued (%d B): %d WAL files of %d B allocated before Close, %d of %d B after",
		rows, bytes, before, beforeBytes, files, allocated)
	if files > 1 || allocated > 16<<10 {
		t.Fatalf("after Close %d WAL files hold %d B; want at most one of a few KiB", files, allocated)
	}
	opts.Metrics = NewMetrics(nil)
	q = openQueue(t, dir, opts)
	if r, b := q.Depth(); r != rows || b != bytes {
		t.Fatalf("Depth after reopen = %d, %d; want %d, %d", r, b, rows, bytes)
	}
}

// walBlocks returns how many .log files dir holds and the bytes allocated
// to them (preallocation included).
func walBlocks(t testing.TB, dir string) (files int, allocated int64) {
	t.Helper()
	u, err := diskusage.Of(dir, ".log")
	if err != nil {
		t.Fatal(err)
	}
	return u.Files, u.Allocated
}
