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

// replicationMetrics counts what replication ships and what inserts
// coordinate; pushed rows per coordinated row is the replication
// amplification.
type replicationMetrics struct {
	pushRows, pushBytes, pushErrors prometheus.Counter
	recvRows                        prometheus.Counter
	coordRows                       prometheus.Counter
}

func newReplicationMetrics() *replicationMetrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return &replicationMetrics{
		pushRows:   c("tsdb_replication_push_rows_total", "Rows this server's replicas pushed to others (confirmed or not)."),
		pushBytes:  c("tsdb_replication_push_bytes_total", "Encoded row bytes this server's replicas pushed (before the transport's zstd)."),
		pushErrors: c("tsdb_replication_push_errors_total", "Pushes that failed (unreachable, refused, timed out)."),
		recvRows:   c("tsdb_replication_received_rows_total", "Rows received by pushes and applied."),
		coordRows:  c("tsdb_insert_coordinated_rows_total", "Rows of client inserts this server coordinated (wrote first)."),
	}
}

func (m *replicationMetrics) register(reg prometheus.Registerer, n *Node) {
	reg.MustRegister(m.pushRows, m.pushBytes, m.pushErrors, m.recvRows, m.coordRows)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tsdb_replication_max_lag_seqs",
		Help: "The largest replication lag, in sequences, from a local replica to one of its targets.",
	}, func() float64 {
		var max uint64
		n.mu.Lock()
		rts := make([]*replicaRuntime, 0, len(n.mu.runtimes))
		for _, rt := range n.mu.runtimes {
			rts = append(rts, rt)
		}
		n.mu.Unlock()
		for _, rt := range rts {
			for _, t := range rt.pusher.Status() {
				max = maxU(max, t.Lag)
			}
		}
		return float64(max)
	}))
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil || m.Counter == nil {
		return 0
	}
	return m.Counter.GetValue()
}
