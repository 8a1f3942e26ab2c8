package master

import "github.com/prometheus/client_golang/prometheus"

// NewMetrics returns the master's counters (the replicas' split counters
// are replica.Metrics), unregistered.
func NewMetrics() Metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return Metrics{
		SplitsAborted: c("tsdb_splits_aborted_total", "SPLIT_ABORT transactions this server committed as master (a child without a live majority)."),
		Presplits:     c("tsdb_presplits_total", "Pre-split SPLIT_BEGIN transactions this server committed as master."),
		RetentionDrops: c("tsdb_retention_dropped_partitions_total",
			"Partitions this server dropped as master because they ended before now - retention (DROP_PARTITIONS)."),
	}
}

// Register registers the counters with reg.
func (m Metrics) Register(reg prometheus.Registerer) {
	reg.MustRegister(m.SplitsAborted, m.Presplits)
	if m.RetentionDrops != nil {
		reg.MustRegister(m.RetentionDrops)
	}
}
