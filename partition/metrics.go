package partition

import "github.com/prometheus/client_golang/prometheus"

// RegisterMetrics exports the pebble statistics of store and its replica
// count to reg, as gauges and counters read at scrape time.
func RegisterMetrics(reg prometheus.Registerer, store *Store) {
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	counter := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
	}
	gauge("tsdb_partition_replicas", "Partition replicas held by this server.",
		func() float64 { return float64(len(store.Replicas())) })
	gauge("tsdb_pebble_disk_usage_bytes", "Bytes pebble uses on disk (sstables, WAL, manifest).",
		func() float64 { return float64(store.Metrics().DiskSpaceUsage()) })
	gauge("tsdb_pebble_memtable_bytes", "Bytes in pebble memtables.",
		func() float64 { return float64(store.Metrics().MemTable.Size) })
	gauge("tsdb_pebble_read_amplification", "Pebble read amplification (L0 sublevels plus non-empty levels).",
		func() float64 { return float64(store.Metrics().ReadAmp()) })
	gauge("tsdb_pebble_l0_files", "Files in pebble level 0.",
		func() float64 { return float64(store.Metrics().Levels[0].TablesCount) })
	counter("tsdb_pebble_wal_bytes_written_total", "Bytes written to pebble's WAL.",
		func() float64 { return float64(store.Metrics().WAL.BytesWritten) })
	counter("tsdb_pebble_flushes_total", "Pebble memtable flushes.",
		func() float64 { return float64(store.Metrics().Flush.Count) })
	counter("tsdb_pebble_compactions_total", "Pebble compactions.",
		func() float64 { return float64(store.Metrics().Compact.Count) })
	gauge("tsdb_pebble_block_cache_bytes", "Bytes in pebble's block cache.",
		func() float64 { return float64(store.Metrics().BlockCache.Size) })
	counter("tsdb_pebble_block_cache_hits_total", "Pebble block cache hits.",
		func() float64 { return float64(store.Metrics().BlockCache.Hits) })
	counter("tsdb_pebble_block_cache_misses_total", "Pebble block cache misses (blocks read from the files).",
		func() float64 { return float64(store.Metrics().BlockCache.Misses) })
	gauge("tsdb_memory_head_bytes", "Bytes the memory heads hold: rows of unsealed storage buckets kept in memory, their log records being their durable form (--memory-head).",
		func() float64 { return float64(store.MemoryHeadBytes()) })
	counter("tsdb_memory_head_drained_rows_total", "Rows written from the memory heads to pebble's head as rows: past --memory-head-bytes (the present's bucket), and before a drop.",
		func() float64 { return float64(store.MemoryHeadDrainedRows()) })
	counter("tsdb_memory_head_early_sealed_rows_total", "Rows sealed from the memory heads before their storage bucket went quiet: past --memory-head-bytes (a bucket that has ended).",
		func() float64 { return float64(store.MemoryHeadEarlySealedRows()) })
	counter("tsdb_snapshot_blocks_ingested_total", "Sealed blocks received in snapshot chunks and stored as they came, not rewritten as rows.",
		func() float64 { return float64(store.SnapshotBlocksIngested()) })
	c := &store.sealed
	counter("tsdb_seal_rows_total", "Rows sealed into column blocks.",
		func() float64 { return float64(c.rows.Load()) })
	counter("tsdb_seal_blocks_total", "Column blocks written by seals (one per series and storage bucket sealed).",
		func() float64 { return float64(c.series.Load()) })
	counter("tsdb_seal_skipped_total", "Series left in the head by a seal: over a block's limits.",
		func() float64 { return float64(c.skipped.Load()) })
	counter("tsdb_seal_retries_total", "Seal batches read and encoded outside the apply lock, then again under it because their data space changed meanwhile.",
		func() float64 { return float64(store.SealRetries()) })
	counter("tsdb_seal_head_bytes_total", "Key and value bytes of the head rows seals replaced.",
		func() float64 { return float64(c.headBytes.Load()) })
	counter("tsdb_seal_block_bytes_total", "Key and value bytes of the blocks seals wrote.",
		func() float64 { return float64(c.blockBytes.Load()) })
}
