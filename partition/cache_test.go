package partition

import (
	"fmt"
	"testing"
	"time"

	"github.com/tsdb/tsdb/model"
)

// TestBlockCacheBesideFullMemtables: once the memtables have grown to
// their full size, a small replica's rows read again are served from the
// block cache. Pebble reserves the memtables' arenas in
// the block cache; with the cache no larger than them (this test's sizes,
// as the defaults were: 128 MiB beside 64 MiB memtables) no block was
// ever cached.
func TestBlockCacheBesideFullMemtables(t *testing.T) {
	const memtable = 1 << 20
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: t.TempDir(), MemTableSize: memtable, CacheSize: memtable})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// Pebble's memtables start small and double up to MemTableSize at
	// each rotation: several memtables' worth of rows grow them.
	big := createTestReplica(t, s)
	for b := range 40 {
		rows := make([]model.Row, 0, 1000)
		for i := range 1000 {
			rows = append(rows, row(fmt.Sprintf("series-%03d", i%100), int64(b*1000+i)*1e9, fl("v", float64(i), 1)))
		}
		mustApply(t, big, rows...)
	}
	small := createTestReplica(t, s)
	rows := make([]model.Row, 0, 1000)
	for i := range 1000 {
		rows = append(rows, row(fmt.Sprintf("series-%03d", i%10), int64(i)*1e9, fl("v", float64(i), 1)))
	}
	mustApply(t, small, rows...)
	flush(t, s)
	scan := func() {
		if n := countHeadRows(t, small); n != len(rows) {
			t.Fatalf("scan: %d rows, want %d", n, len(rows))
		}
	}
	// Background compactions may move the rows to new files between two
	// scans (new blocks, misses); the scans go on until one reads every
	// block from the cache, or fail after a while.
	var hits, misses int64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		before := s.db.Metrics().BlockCache
		scan()
		after := s.db.Metrics().BlockCache
		hits, misses = after.Hits-before.Hits, after.Misses-before.Misses
		if hits > 0 && misses == 0 {
			return
		}
	}
	m := s.db.Metrics()
	t.Fatalf("the last scan of 20 s: %d hits and %d misses, want every block from the cache; it holds %d bytes beside %d memtables of %d bytes (and %d zombies)",
		hits, misses, m.BlockCache.Size, m.MemTable.Count, m.MemTable.Size, m.MemTable.ZombieCount)
}
