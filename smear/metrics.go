package smear

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the smear queue's and forwarder's Prometheus collectors. One
// Metrics serves one Queue and the Forwarder over it; create it once per
// registry (registering twice on one registry panics).
type Metrics struct {
	queueRows    prometheus.Gauge     // rows stored or being enqueued
	queueBytes   prometheus.Gauge     // bytes of those entries (keys and values)
	enqueuedRows prometheus.Counter   // rows admitted by Enqueue
	fullRejects  prometheus.Counter   // Enqueue calls refused with ErrFull or ErrTooLarge
	delay        prometheus.Histogram // per forwarded row: forward time − first enqueue time
	lateness     prometheus.Histogram // per forwarded row: forward time − due time
	dueLead      prometheus.Gauge     // the due lead of the last smeared insert (DueLead)
	forwarded    prometheus.Counter   // rows a Sender accepted
	retried      prometheus.Counter   // rows rewritten for a later retry
	callFailures prometheus.Counter   // Sender calls that failed as a whole
	quarantined  prometheus.Counter   // entries moved aside because they do not decode
	callSeconds  prometheus.Histogram // per Sender call: its duration
	callRows     prometheus.Histogram // per Sender call: its rows
	settleSecs   prometheus.Histogram // per settle of a call's entries: its duration

	// Forwarding and admission control (admission.go).
	inFlight          prometheus.Gauge   // Sender calls in flight
	acceptRate        prometheus.Gauge   // EWMA of rows enqueued per second
	forwardRate       prometheus.Gauge   // EWMA of rows forwarded per second
	directRate        prometheus.Gauge   // EWMA of rows written straight to their partitions per second
	capacity          prometheus.Gauge   // estimated forward capacity, rows/s
	overdueRows       prometheus.Gauge   // rows due more than OverdueAfter ago, still queued
	lateInFlightRows  prometheus.Gauge   // rows of late forward calls, counted as behind
	admissionClosed   prometheus.Gauge   // 1 while new smeared inserts are refused
	admissionClosings prometheus.Counter // times admission closed
	behindRejects     prometheus.Counter // inserts refused with ErrBehind, or ErrDueFull on every draw (RefusedDueFull)
}

// NewMetrics builds the collectors and registers them on reg; a nil reg
// registers nothing (tests, or a caller that exports them otherwise). The
// names are tsdb_smear_*.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		queueRows: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_queue_rows",
			Help: "Rows in this server's smear queue (including enqueues in flight).",
		}),
		queueBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_queue_bytes",
			Help: "Bytes of the entries in this server's smear queue (including enqueues in flight).",
		}),
		enqueuedRows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_smear_enqueued_rows_total",
			Help: "Rows written durably to the smear queue.",
		}),
		fullRejects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_smear_full_rejections_total",
			Help: "Inserts refused because the smear queue was full (or the insert larger than the queue).",
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tsdb_smear_delay_seconds",
			Help:    "Per forwarded row, the time from its enqueue to the forward that was accepted.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2, 13), // 0.1 s .. 409.6 s
		}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tsdb_smear_lateness_seconds",
			Help:    "Per forwarded row, the time from its due time to the end of the forward call that delivered it (a requeued row's due time is its retry's).",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12), // 50 ms .. 102 s
		}),
		dueLead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_due_lead_seconds",
			Help: "How much shorter than max_delay the window a smeared insert's due time is drawn from was, at the last smeared insert: the largest lateness of the last 30 s, at most max_delay/4.",
		}),
		callSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tsdb_smear_forward_call_seconds",
			Help:    "Per forward call (one partition's due rows, an insert at the table's consistency), its duration, failed calls included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1 ms .. 32.8 s
		}),
		callRows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tsdb_smear_forward_call_rows",
			Help:    "Per forward call, the rows it sent.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9), // 1 .. 65,536
		}),
		settleSecs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tsdb_smear_settle_seconds",
			Help:    "Per forward call, the time to record its outcome in the queue (delete the forwarded entries, requeue the failed ones; a synced write).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16), // 0.1 ms .. 3.3 s
		}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_smear_forwarded_rows_total",
			Help: "Smeared rows forwarded and accepted by their partition.",
		}),
		retried: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_smear_retried_rows_total",
			Help: "Smeared rows whose forward failed and were requeued with backoff.",
		}),
		callFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_smear_forward_failures_total",
			Help: "Forward calls that failed as a whole (every row of the call requeued).",
		}),
		quarantined: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_smear_quarantined_entries_total",
			Help: "Queue entries that did not decode and were moved aside (kept on disk, not forwarded).",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_forward_calls_in_flight",
			Help: "Forward calls (pipelined inserts of one partition's due rows) in flight.",
		}),
		acceptRate: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_accept_rows_per_second",
			Help: "Rows written to the smear queue per second (moving average over 1 s ticks).",
		}),
		forwardRate: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_forward_rows_per_second",
			Help: "Rows forwarded out of the smear queue per second (moving average over 1 s ticks).",
		}),
		directRate: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_direct_rows_per_second",
			Help: "Rows this server wrote straight to their partitions (inserts not smeared) per second (moving average, 30 s); its recent peak is the least forward capacity estimate until the forwarder is seen saturated.",
		}),
		capacity: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_forward_capacity_rows_per_second",
			Help: "Estimated rows/s the forwarder can forward (its rate while saturated; else at least its rate, an older higher estimate decaying over minutes, and until first saturated at least the recent peak of the direct rate); admission lets at most this much (with some headroom) fall due per second.",
		}),
		overdueRows: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_overdue_rows",
			Help: "Queued rows due more than the overdue allowance (2 s) ago and not in a forward call: the forwarder's backlog (rows retrying after a failed forward are not counted).",
		}),
		lateInFlightRows: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_late_in_flight_rows",
			Help: "Rows of forward calls (waiting for a slot or in flight) whose latest row is due more than the overdue allowance (2 s) ago, counted when such calls go to two partitions or more (probes of failing partitions excluded): loaded on time, not delivered; admission counts them with the overdue rows.",
		}),
		admissionClosed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tsdb_smear_admission_closed",
			Help: "1 while this server refuses new smeared inserts (503 queue_full) because forwarding is behind.",
		}),
		admissionClosings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_smear_admission_closings_total",
			Help: "Times admission control closed because forwarding fell behind.",
		}),
		behindRejects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_smear_behind_rejections_total",
			Help: "Smeared inserts refused (503 queue_full) by admission control: while closed, or after every due time drawn was full (once per insert).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.queueRows, m.queueBytes, m.enqueuedRows, m.fullRejects, m.delay, m.lateness, m.dueLead,
			m.forwarded, m.retried, m.callFailures, m.quarantined, m.callSeconds, m.callRows, m.settleSecs,
			m.inFlight, m.acceptRate, m.forwardRate, m.directRate, m.capacity, m.overdueRows, m.lateInFlightRows, m.admissionClosed,
			m.admissionClosings, m.behindRejects)
	}
	return m
}
