package node

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tsdb/tsdb/partition"
)

// registerStoreMetrics exports the pebble statistics of the partition store
// and the replica count as gauges read at scrape time.
func registerStoreMetrics(reg prometheus.Registerer, store *partition.Store) {
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

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil || m.Counter == nil {
		return 0
	}
	return m.Counter.GetValue()
}
