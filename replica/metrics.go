package replica

import (
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/replication"
)

// Metrics counts what replication ships, what inserts coordinate and what
// the split trigger does; pushed rows per coordinated row is the
// replication amplification. The node creates it (its membership summary,
// Load, reads CoordinatedRows) and hands it to New; Server.RegisterMetrics
// registers it.
type Metrics struct {
	PushRows, PushBytes, PushErrors prometheus.Counter
	ReceivedRows                    prometheus.Counter
	RelayRowsDropped                prometheus.Counter
	// RelayRowsElided counts the relayed rows this server's pushes left
	// out as held (wire.PushRequest.Held); RelayClaimsUnheld the claims
	// of pushes received that this server could not confirm (their rows
	// then come in another push).
	RelayRowsElided, RelayClaimsUnheld prometheus.Counter
	CoordinatedRows                    prometheus.Counter
	// The split trigger's outcomes.
	SplitsStarted, SplitsFollowed, SplitsImpossible, SplitsFinalized prometheus.Counter
	// MovedRows and MovedBytes count the rows and bytes of confirmed
	// pushes by label kind (replication.MoveKind: push, snapshot, split,
	// join); their rate is the data moved per second by kind.
	MovedRows, MovedBytes *prometheus.CounterVec
	// Snapshots counts the row snapshots that ended, by label result
	// (done, failed, dropped); SnapshotSeconds is the duration of those
	// done.
	Snapshots       *prometheus.CounterVec
	SnapshotSeconds prometheus.Histogram
	// QuotaWaitSeconds is, per coordinated insert that waited for the
	// replication quota, how long; QuotaRefusals counts the inserts
	// refused because the wait ran out.
	QuotaWaitSeconds prometheus.Histogram
	QuotaRefusals    prometheus.Counter
}

// NewMetrics returns unregistered counters.
func NewMetrics() *Metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &Metrics{
		PushRows:     c("tsdb_replication_push_rows_total", "Rows this server's replicas pushed to others (confirmed or not)."),
		PushBytes:    c("tsdb_replication_push_bytes_total", "Encoded row bytes this server's replicas pushed (before the transport's zstd)."),
		PushErrors:   c("tsdb_replication_push_errors_total", "Pushes that failed (unreachable, refused, timed out)."),
		ReceivedRows: c("tsdb_replication_received_rows_total", "Rows received by pushes and applied."),
		RelayRowsDropped: c("tsdb_replication_relay_rows_dropped_total",
			"Rows received by pushes as relayed copies of rows this replica held already (their origin's own push had delivered them), dropped without a lookup; they count in received rows too."),
		RelayRowsElided: c("tsdb_replication_relay_rows_elided_total",
			"Relayed rows this server's pushes left out, claiming the receiver held them from their origin's own push (a claim it could not confirm brings them in another push, counted in pushed rows)."),
		RelayClaimsUnheld: c("tsdb_replication_relay_claims_unheld_total",
			"Claims of pushes received (relayed rows left out) that this server could not confirm within the wait for their origin's push; the sender then pushes those rows."),
		CoordinatedRows: c("tsdb_insert_coordinated_rows_total", "Rows of client inserts this server coordinated (wrote first)."),

		SplitsStarted:    c("tsdb_splits_started_total", "SPLIT_BEGIN transactions this server committed (size trigger or manual)."),
		SplitsFollowed:   c("tsdb_splits_followed_total", "Size-triggered splits this server found already started by another replica (it follows that split)."),
		SplitsImpossible: c("tsdb_splits_impossible_total", "Times a partition over its size target could not split because every row is at one time."),
		SplitsFinalized:  c("tsdb_splits_finalized_total", "SPLIT_FINALIZE transactions this server committed."),

		MovedRows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tsdb_moved_rows_total",
			Help: "Rows of confirmed pushes by kind: push (a replica target, from the log), snapshot (read from a row snapshot), split (a split target, from the log), join (a joining target, from the log)."},
			[]string{"kind"}),
		MovedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tsdb_moved_bytes_total",
			Help: "Encoded row bytes of confirmed pushes (before the transport's zstd) by kind, as tsdb_moved_rows_total."},
			[]string{"kind"}),
		Snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tsdb_snapshots_total",
			Help: "Row snapshots sent to a target below the log's truncation point that ended, by result: done, failed (a read error; a new one starts), dropped (abandoned: target removed, server stopping, cursor got past it)."},
			[]string{"result"}),
		SnapshotSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tsdb_snapshot_seconds",
			Help:    "Duration of the row snapshots done, from start to the confirmation of the last batch.",
			Buckets: prometheus.ExponentialBuckets(0.05, 4, 10), // 50 ms .. 3.6 h
		}),
		QuotaWaitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tsdb_replication_quota_wait_seconds",
			Help:    "Per coordinated insert that waited for its replica's slowest copy to come within the replication quota, the wait.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9), // 1 ms .. 65 s
		}),
		QuotaRefusals: c("tsdb_replication_quota_refusals_total",
			"Inserts refused, nothing written, because the replica's slowest copy stayed behind the replication quota for half the ack timeout."),
	}
	for _, k := range replication.MoveKinds { // every series exists from the start, at 0
		m.MovedRows.WithLabelValues(string(k))
		m.MovedBytes.WithLabelValues(string(k))
	}
	for _, r := range []string{replication.SnapshotDone, replication.SnapshotFailed, replication.SnapshotDropped} {
		m.Snapshots.WithLabelValues(r)
	}
	return m
}

// countPush counts a confirmed push to a target of kind target (or a
// failed one).
func (m *Metrics) countPush(target metadata.TargetKind, req wire.PushRequest, err error) {
	if err != nil {
		m.PushErrors.Inc()
		return
	}
	m.PushRows.Add(float64(req.Count))
	for _, h := range req.Held {
		m.RelayRowsElided.Add(float64(h.Rows))
	}
	m.PushBytes.Add(float64(replication.PushBytes(req)))
	kind := string(replication.KindOf(target, req))
	m.MovedRows.WithLabelValues(kind).Add(float64(req.Count))
	m.MovedBytes.WithLabelValues(kind).Add(float64(replication.PushBytes(req)))
}

// snapshotEnded counts a row snapshot that ended (replication.Config's
// OnSnapshotEnd).
func (m *Metrics) snapshotEnded(_ uuid.UUID, _ int, elapsed time.Duration, result string) {
	m.Snapshots.WithLabelValues(result).Inc()
	if result == replication.SnapshotDone {
		m.SnapshotSeconds.Observe(elapsed.Seconds())
	}
}

// RegisterMetrics registers the server's metrics: its Metrics, the largest
// replication lag (read at scrape time) and the versions the clock refused
// to follow.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) {
	m := s.metrics
	reg.MustRegister(m.PushRows, m.PushBytes, m.PushErrors, m.ReceivedRows, m.RelayRowsDropped, m.RelayRowsElided, m.RelayClaimsUnheld, m.CoordinatedRows)
	reg.MustRegister(m.SplitsStarted, m.SplitsFollowed, m.SplitsImpossible, m.SplitsFinalized)
	reg.MustRegister(m.MovedRows, m.MovedBytes, m.Snapshots, m.SnapshotSeconds, m.QuotaWaitSeconds, m.QuotaRefusals)
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
