package partition

import (
	"fmt"
	"testing"

	"github.com/tsdb/tsdb/internal/diskusage"
	"github.com/tsdb/tsdb/model"
)

// diskUsage returns the apparent size and the allocated bytes (what du
// counts, preallocated blocks included) of the files of dir whose name
// ends with suffix ("" for all), and how many there are.
func diskUsage(t testing.TB, dir, suffix string) (apparent, allocated int64, files int) {
	t.Helper()
	u, err := diskusage.Of(dir, suffix)
	if err != nil {
		t.Fatal(err)
	}
	return u.Apparent, u.Allocated, u.Files
}

// walRows writes rows first to first+n-1 of a sequence of rows of 3
// float fields over 1,000 series (row i: series i mod 1000, second i/1000),
// 1,000 rows per Apply, and returns them.
func walRows(t testing.TB, r *Replica, first, n int) []model.Row {
	t.Helper()
	var all, batch []model.Row
	for i := first; i < first+n; i++ {
		batch = append(batch, row(fmt.Sprintf("cpu,host=h%03d", i%1000), int64(i/1000)*1e9,
			fl("a", float64(i), 1), fl("b", float64(i)*2, 1), fl("c", 3, 1)))
		if len(batch) == 1000 || i == first+n-1 {
			mustApply(t, r, batch...)
			all = append(all, batch...)
			batch = nil
		}
	}
	return all
}

// TestCloseLeavesNoWAL checks issue 17 item 5: after Close the WAL files
// left in the directory (their blocks as du counts them, preallocation
// included) are far smaller than the data, and a reopened store sees every
// row. The small-memtable case rotates the WAL many times, so pebble holds
// recycled WAL files when Close begins.
func TestCloseLeavesNoWAL(t *testing.T) {
	for _, tc := range []struct {
		name     string
		memtable uint64
		rows     int
	}{
		{"default memtable", 0, 100_000},
		{"recycled WALs", 1 << 20, 100_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, MemTableSize: tc.memtable, CacheSize: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			r := createTestReplica(t, s)
			want := walRows(t, r, 0, tc.rows)
			if tc.memtable != 0 {
				// Write on until pebble holds a recycled WAL (a rotation
				// takes it back, a flush adds one): nothing writes
				// between the last check and Close.
				for i := 0; s.Metrics().WAL.ObsoleteFiles == 0; i++ {
					if i == 1000 {
						t.Fatal("no recycled WAL after 1,000 more batches: the case tests nothing")
					}
					want = append(want, walRows(t, r, len(want), 1000)...)
				}
			}
			_, walBefore, _ := diskUsage(t, dir, ".log")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			la, lb, lf := diskUsage(t, dir, ".log")
			_, sb, _ := diskUsage(t, dir, ".sst")
			_, tb, _ := diskUsage(t, dir, "")
			t.Logf("%d rows: WAL blocks %d B before Close; after: %d .log files %d B (%d B allocated), .sst %d B allocated, directory %d B allocated",
				tc.rows, walBefore, lf, la, lb, sb, tb)
			if lb > 16<<10 || lf > 1 {
				t.Errorf("after Close %d WAL files hold %d B (%d B allocated); want at most one of a few KiB", lf, la, lb)
			}

			s2 := openTestStore(t, dir)
			r2, ok := s2.Replica(r.Info().Placement)
			if !ok {
				t.Fatal("replica missing after reopen")
			}
			sortRows(want)
			if err := sameRows(scanAll(t, r2), want); err != nil {
				t.Fatalf("rows after reopen: %v", err)
			}
		})
	}
}

// TestWALBoundedWhileRunning: while a store takes writes, its WAL files
// (live ones, recycled ones, preallocation included) stay within pebble's
// bound, (MemTableStopWritesThreshold + 1 live + MemTableStopWritesThreshold
// + 1 recycled) × 110% of MemTableSize, whatever was written.
func TestWALBoundedWhileRunning(t *testing.T) {
	const memtable = 1 << 20
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MemTableSize: memtable, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := createTestReplica(t, s)
	const stop = 4 // pebbleOptions' MemTableStopWritesThreshold
	bound := int64((stop+1)*2) * memtable * 11 / 10
	var peak int64
	for i := range 400 {
		var rows []model.Row
		for j := range 1000 {
			rows = append(rows, row(fmt.Sprintf("cpu,host=h%03d", j), int64(i)*1e9, fl("a", float64(i), 1), fl("b", 2, 1)))
		}
		mustApply(t, r, rows...)
		_, alloc, _ := diskUsage(t, dir, ".log")
		peak = max(peak, alloc)
	}
	written := int64(s.Metrics().WAL.BytesWritten)
	t.Logf("WAL bytes written %d; peak WAL blocks on disk %d (bound %d)", written, peak, bound)
	if written < 3*bound {
		t.Fatalf("only %d WAL bytes written: the test tests nothing against a bound of %d", written, bound)
	}
	if peak > bound {
		t.Fatalf("WAL files reached %d B on disk, over the bound %d", peak, bound)
	}
}
