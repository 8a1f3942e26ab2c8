package replica

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts what replication ships, what inserts coordinate and what
// the split trigger does; pushed rows per coordinated row is the
// replication amplification. The node creates it (its membership summary,
// Load, reads CoordinatedRows) and hands it to New; Server.RegisterMetrics
// registers it.
type Metrics struct {
	PushRows, PushBytes, PushErrors prometheus.Counter
	ReceivedRows                    prometheus.Counter
	CoordinatedRows                 prometheus.Counter
	// The split trigger's outcomes.
	SplitsStarted, SplitsFollowed, SplitsImpossible, SplitsFinalized prometheus.Counter
}

// NewMetrics returns unregistered counters.
func NewMetrics() *Metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return &Metrics{
		PushRows:        c("tsdb_replication_push_rows_total", "Rows this server's replicas pushed to others (confirmed or not)."),
		PushBytes:       c("tsdb_replication_push_bytes_total", "Encoded row bytes this server's replicas pushed (before the transport's zstd)."),
		PushErrors:      c("tsdb_replication_push_errors_total", "Pushes that failed (unreachable, refused, timed out)."),
		ReceivedRows:    c("tsdb_replication_received_rows_total", "Rows received by pushes and applied."),
		CoordinatedRows: c("tsdb_insert_coordinated_rows_total", "Rows of client inserts this server coordinated (wrote first)."),

		SplitsStarted:    c("tsdb_splits_started_total", "SPLIT_BEGIN transactions this server committed (size trigger or manual)."),
		SplitsFollowed:   c("tsdb_splits_followed_total", "Size-triggered splits this server found already started by another replica (it follows that split)."),
		SplitsImpossible: c("tsdb_splits_impossible_total", "Times a partition over its size target could not split because every row is at one time."),
		SplitsFinalized:  c("tsdb_splits_finalized_total", "SPLIT_FINALIZE transactions this server committed."),
	}
}

// RegisterMetrics registers the server's metrics: its Metrics, the largest
// replication lag (read at scrape time) and the versions the clock refused
// to follow.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) {
	m := s.metrics
	reg.MustRegister(m.PushRows, m.PushBytes, m.PushErrors, m.ReceivedRows, m.CoordinatedRows)
	reg.MustRegister(m.SplitsStarted, m.SplitsFollowed, m.SplitsImpossible, m.SplitsFinalized)
	reg.MustRegister(s.farVersions.rejected)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tsdb_replication_max_lag_seqs",
		Help: "The largest replication lag, in sequences, from a local replica to one of its targets.",
	}, func() float64 {
		var lag uint64
		for _, rt := range s.runtimes() {
			for _, t := range rt.pusher.Status() {
				lag = max(lag, t.Lag)
			}
		}
		return float64(lag)
	}))
}
