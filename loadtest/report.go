package loadtest

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of Run, written as JSON by WriteJSON.
type Report struct {
	Settings Settings    `json:"settings"`
	Table    TableInfo   `json:"table"`
	Servers  []Server    `json:"servers"`
	Runs     []RunResult `json:"runs"`
	// Compare is set when both runs of compare mode finished.
	Compare *Comparison `json:"compare,omitempty"`
	// Aborted is true when the context ended before the last run did.
	Aborted bool `json:"aborted,omitempty"`
}

// RunResult is one run (smear off or on). Throughput, latency, errors and
// shares cover the measured window only.
type RunResult struct {
	Name  string `json:"name"`
	Smear bool   `json:"smear"`
	// Start is the start of the measured window; Seconds its length.
	Start           time.Time `json:"start"`
	Seconds         float64   `json:"seconds"`
	RowsAcked       int64     `json:"rows_acked"`
	Requests        int64     `json:"requests"`
	AckedRowsPerSec float64   `json:"acked_rows_per_sec"`
	// QueueGrowthRowsPerSec is how fast the servers' smear queues grew in
	// the window (summed over the servers); DeliveredRowsPerSec is
	// AckedRowsPerSec minus it: the rate the cluster wrote to partitions,
	// which a queue filling faster than it drains cannot sustain.
	QueueGrowthRowsPerSec float64 `json:"queue_growth_rows_per_sec"`
	DeliveredRowsPerSec   float64 `json:"delivered_rows_per_sec"`
	// Latency is the latency of the acknowledged requests.
	Latency Latency `json:"latency"`
	// Errors counts failed requests by "STATUS CODE" (e.g. "503
	// queue_full"), "timeout" or "transport".
	Errors     map[string]int64 `json:"errors,omitempty"`
	Stored     StoredWrites     `json:"stored"`
	Visibility Visibility       `json:"visibility"`
	// TimeSeries holds each server's stored write rate over the whole run
	// (t < 0: warm-up; t > Seconds: drain).
	TimeSeries []ServerSeries `json:"time_series"`
	Aborted    bool           `json:"aborted,omitempty"`
}

// Latency summarises request latencies, in milliseconds.
type Latency struct {
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

// StoredWrites is how the servers shared the bytes written to their stores
// (MetricStoreWriteBytes) in the measured window.
type StoredWrites struct {
	// Available is false when a server did not export the counter; the
	// figures below are then zero ("n/a").
	Available   bool          `json:"available"`
	TotalBytes  int64         `json:"total_bytes"`
	BytesPerSec float64       `json:"bytes_per_sec"`
	Servers     []ServerShare `json:"servers"`
	// BusiestShare is the largest share, of server BusiestID; FairShare is
	// 1/N; BusiestOverFair their ratio (1 is perfectly even).
	BusiestID       string  `json:"busiest_id,omitempty"`
	BusiestShare    float64 `json:"busiest_share"`
	FairShare       float64 `json:"fair_share"`
	BusiestOverFair float64 `json:"busiest_over_fair"`
}

// ServerShare is one server's part of the stored writes.
type ServerShare struct {
	ID    string  `json:"id"`
	URL   string  `json:"url"`
	Bytes int64   `json:"bytes"`
	Share float64 `json:"share"`
	// MaxQueueRows is the deepest smear queue seen during the run.
	MaxQueueRows float64 `json:"max_queue_rows"`
}

// Visibility summarises the probes: the delay from an insert's
// acknowledgement until a query returns its row, in milliseconds (with a
// resolution of the 100 ms polling).
type Visibility struct {
	Probes   int `json:"probes"`
	Visible  int `json:"visible"`
	TimedOut int `json:"timed_out"`
	// SeenLate and Missing split the timed-out probes by queries for
	// each, through every server, for one more probe timeout after the
	// drain: visible by then, or still not (later still, or lost).
	// MissingSeries names the missing probes' series.
	SeenLate      int      `json:"seen_late"`
	Missing       int      `json:"missing"`
	MissingSeries []string `json:"missing_series,omitempty"`
	Errors        int      `json:"errors"`
	P50Ms         float64  `json:"p50_ms"`
	P99Ms         float64  `json:"p99_ms"`
	MaxMs         float64  `json:"max_ms"`
	// Each is every probe, in the order they finished: to see when the
	// late ones were sent and through which server.
	Each []ProbeRecord `json:"each,omitempty"`
}

// ProbeRecord is one visibility probe.
type ProbeRecord struct {
	// Via is the id of the server the probe's insert went to.
	Via string `json:"via"`
	// Sent and Acked are the insert's send and acknowledgement times,
	// seconds since the measurement's start (Acked 0 when not acked).
	Sent  float64 `json:"sent_s"`
	Acked float64 `json:"acked_s,omitempty"`
	// Outcome is visible, timed_out or error (the insert failed).
	Outcome string `json:"outcome"`
	// DelayMs is the acknowledgement-to-visibility delay of a visible
	// probe, read at the default consistency (one replica);
	// QuorumDelayMs the same read at quorum (0: not seen so within the
	// probe timeout).
	DelayMs       float64 `json:"delay_ms,omitempty"`
	QuorumDelayMs float64 `json:"quorum_delay_ms,omitempty"`
}

// ServerSeries is one server's time series.
type ServerSeries struct {
	ID     string  `json:"id"`
	Points []Point `json:"points"`
}

// Point is one sampling interval of one server.
type Point struct {
	// T is the end of the interval, seconds since the measurement start.
	T                float64 `json:"t"`
	WriteBytesPerSec float64 `json:"write_bytes_per_sec"`
	QueueRows        float64 `json:"queue_rows"`
	// OverdueRows are the queued rows past their due time.
	OverdueRows float64 `json:"overdue_rows"`
	// LateInFlightRows are the rows of forward calls late past their due
	// time, which admission counts with the overdue ones.
	LateInFlightRows float64 `json:"late_in_flight_rows"`
	// AdmissionClosed says the server's smear admission refused new rows.
	AdmissionClosed bool `json:"admission_closed,omitempty"`
	// RetriedRowsPerSec is the rate of rows whose forward failed and was
	// queued again.
	RetriedRowsPerSec float64 `json:"retried_rows_per_sec"`
	// ReplicationLagSeqs is the server's largest replication lag from a
	// replica to one of its targets, in sequences.
	ReplicationLagSeqs float64 `json:"replication_lag_seqs"`
	// DueLeadSeconds is how much earlier than max_delay the server's
	// smeared inserts fell due at its last one (its forwarder's recent
	// lateness, docs/smearing.md "Due lead").
	DueLeadSeconds float64 `json:"due_lead_seconds,omitempty"`
	// CapacityRowsPerSec is the server's smear admission estimate of its
	// forward capacity; AcceptRowsPerSec and ForwardRowsPerSec the rows
	// its smear queue took in and forwarded per second (the server's
	// moving averages); DirectRowsPerSec the rows it wrote straight to
	// their partitions per second (its moving average); RefusalsPerSec
	// the smeared inserts its admission refused per second.
	CapacityRowsPerSec float64 `json:"capacity_rows_per_sec,omitempty"`
	AcceptRowsPerSec   float64 `json:"accept_rows_per_sec,omitempty"`
	ForwardRowsPerSec  float64 `json:"forward_rows_per_sec,omitempty"`
	DirectRowsPerSec   float64 `json:"direct_rows_per_sec,omitempty"`
	RefusalsPerSec     float64 `json:"refusals_per_sec,omitempty"`
	// SealedRowsPerSec is the rate of rows the server sealed into column
	// blocks; SplitsStarted the splits it began in the interval.
	SealedRowsPerSec float64 `json:"sealed_rows_per_sec,omitempty"`
	SplitsStarted    float64 `json:"splits_started,omitempty"`
}

// Comparison relates the smear-on run to the smear-off run.
type Comparison struct {
	OffRowsPerSec float64 `json:"off_rows_per_sec"`
	OnRowsPerSec  float64 `json:"on_rows_per_sec"`
	// Ratio is on/off (0 when off acknowledged nothing).
	Ratio             float64 `json:"ratio"`
	Servers           int     `json:"servers"`
	ReplicationFactor int     `json:"replication_factor"`
	// Ideal is N/(RF+1): a smeared row costs RF+1 writes spread over N
	// servers, an unsmeared one RF writes on the RF replicas of the hot
	// partition.
	Ideal float64 `json:"ideal"`
}

// comparison returns the comparison of a finished compare mode, or nil.
func (r *Report) comparison() *Comparison {
	if !r.Settings.Compare || len(r.Runs) != 2 || r.Aborted {
		return nil
	}
	c := &Comparison{
		OffRowsPerSec: r.Runs[0].DeliveredRowsPerSec, OnRowsPerSec: r.Runs[1].DeliveredRowsPerSec,
		Servers: len(r.Servers), ReplicationFactor: r.Table.ReplicationFactor,
	}
	if c.OffRowsPerSec > 0 {
		c.Ratio = c.OnRowsPerSec / c.OffRowsPerSec
	}
	c.Ideal = float64(c.Servers) / float64(c.ReplicationFactor+1)
	return c
}

// WriteJSON writes the report, indented, to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("loadtest: encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("loadtest: write report: %w", err)
	}
	return nil
}

// ReadReport reads a report WriteJSON wrote.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loadtest: read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("loadtest: decode report %s: %w", path, err)
	}
	return &r, nil
}

// WriteSummary prints the summary table: one column per run.
func (r *Report) WriteSummary(w io.Writer) error {
	var b strings.Builder
	r.writeHeader(&b)
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	row := func(label string, cell func(RunResult) string) {
		fmt.Fprint(tw, label)
		for _, run := range r.Runs {
			fmt.Fprint(tw, "\t"+cell(run))
		}
		fmt.Fprintln(tw, "\t")
	}
	row("", func(run RunResult) string { return run.Name + abortedMark(run) })
	for _, m := range r.summaryRows() {
		row(m.label, m.cell)
	}
	tw.Flush()
	if c := r.Compare; c != nil {
		fmt.Fprintf(&b, "\nthroughput ratio smear on/off: %.2f (ideal N/(RF+1) = %d/%d = %.2f)\n",
			c.Ratio, c.Servers, c.ReplicationFactor+1, c.Ideal)
	}
	if r.Aborted {
		fmt.Fprintln(&b, "\ninterrupted: the figures cover the part that ran")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHeader prints the settings line above the table.
func (r *Report) writeHeader(b *strings.Builder) {
	s, t := r.Settings, r.Table
	rate := "max"
	if s.Rate > 0 {
		rate = fmt.Sprintf("%.0f rows/s", s.Rate)
	}
	timing := "now (hot)"
	if s.From != nil {
		timing = fmt.Sprintf("%s..%s", s.From.Format(time.RFC3339), s.To.Format(time.RFC3339))
	}
	limit := "none"
	if s.WriteLimit > 0 {
		limit = fmt.Sprintf("%s/s (%d B/s)", FormatSize(s.WriteLimit), s.WriteLimit)
	}
	fmt.Fprintf(b, "\ntsdb loadtest: %d servers (%s), table %s: RF %d, partition size target %s, smear max delay %s\n",
		len(r.Servers), orDash(s.ClusterMode), t.Name, t.ReplicationFactor, FormatSize(t.PartitionSizeTarget),
		time.Duration(t.MaxDelay))
	fmt.Fprintf(b, "%d series, batch %d rows, concurrency %d, rate %s, rows at %s, write limit %s, %s measured after %s warm-up\n",
		s.Series, s.Batch, s.Concurrency, rate, timing, limit, time.Duration(s.Duration), time.Duration(s.Warmup))
	if len(s.ServerFlags) > 0 {
		fmt.Fprintf(b, "servers started with %s\n", strings.Join(s.ServerFlags, " "))
	}
	b.WriteString("\n")
}

// summaryRow is one line of the summary table.
type summaryRow struct {
	label string
	cell  func(RunResult) string
}

// summaryRows lists the summary lines: throughput, latency, errors,
// stored write shares (one line per server), visibility.
func (r *Report) summaryRows() []summaryRow {
	rows := []summaryRow{
		{"acked rows/s", func(x RunResult) string { return fmt.Sprintf("%.0f", x.AckedRowsPerSec) }},
		{"delivered rows/s", func(x RunResult) string {
			return fmt.Sprintf("%.0f (smear queues %+.0f rows/s)", x.DeliveredRowsPerSec, x.QueueGrowthRowsPerSec)
		}},
		{"acked rows / requests", func(x RunResult) string { return fmt.Sprintf("%d / %d", x.RowsAcked, x.Requests) }},
		{"latency p50 / p99", func(x RunResult) string {
			return fmtMs(x.Latency.P50Ms) + " / " + fmtMs(x.Latency.P99Ms)
		}},
		{"errors", func(x RunResult) string { return fmtErrors(x.Errors) }},
		{"stored write bytes/s", func(x RunResult) string {
			return naOr(x.Stored.Available, func() string { return FormatSize(int64(x.Stored.BytesPerSec)) + "/s" })
		}},
		{"busiest share / fair share", func(x RunResult) string {
			return naOr(x.Stored.Available, func() string {
				return fmt.Sprintf("%.1f%% / %.1f%% = %.2fx (%s)", 100*x.Stored.BusiestShare, 100*x.Stored.FairShare,
					x.Stored.BusiestOverFair, x.Stored.BusiestID)
			})
		}},
	}
	for i, srv := range r.Servers {
		rows = append(rows, summaryRow{"  share of stored writes " + srv.ID, func(x RunResult) string {
			return naOr(x.Stored.Available && i < len(x.Stored.Servers), func() string {
				s := x.Stored.Servers[i]
				return fmt.Sprintf("%.1f%% (queue max %.0f rows)", 100*s.Share, s.MaxQueueRows)
			})
		}})
	}
	return append(rows,
		summaryRow{"visibility p50 / p99 / max", func(x RunResult) string {
			v := x.Visibility
			return naOr(v.Visible > 0, func() string { return fmtMs(v.P50Ms) + " / " + fmtMs(v.P99Ms) + " / " + fmtMs(v.MaxMs) })
		}},
		summaryRow{"visibility probes", func(x RunResult) string {
			v := x.Visibility
			return fmt.Sprintf("%d: %d seen, %d timed out (%d seen after the drain, %d still not), %d failed",
				v.Probes, v.Visible, v.TimedOut, v.SeenLate, v.Missing, v.Errors)
		}},
	)
}

// fmtMs writes milliseconds readably: "0.42ms", "12.3ms", "4.56s".
func fmtMs(v float64) string {
	switch {
	case v < 1:
		return fmt.Sprintf("%.2fms", v)
	case v < 1000:
		return fmt.Sprintf("%.1fms", v)
	default:
		return fmt.Sprintf("%.2fs", v/1000)
	}
}

// fmtErrors writes error counts sorted by key, or "none".
func fmtErrors(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// naOr returns "n/a" unless ok, else f().
func naOr(ok bool, f func() string) string {
	if !ok {
		return "n/a"
	}
	return f()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func abortedMark(r RunResult) string {
	if r.Aborted {
		return " (interrupted)"
	}
	return ""
}
