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
}
