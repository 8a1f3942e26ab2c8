package loadtest

import (
	"bufio"
	"io"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric names scraped from every server's GET /metrics.
const (
	// MetricStoreWriteBytes is the counter of bytes a server wrote to its
	// stores (partitions and smear queue): what --write-limit caps.
	MetricStoreWriteBytes = "tsdb_store_write_bytes_total"
	// MetricSmearQueueRows is the gauge of rows waiting in a server's smear
	// queue.
	MetricSmearQueueRows = "tsdb_smear_queue_rows"
	// MetricSmearOverdueRows is the gauge of queued rows past their due
	// time.
	MetricSmearOverdueRows = "tsdb_smear_overdue_rows"
	// MetricSmearLateInFlightRows is the gauge of rows in forward calls
	// late past their due time (loaded on time, not yet delivered).
	MetricSmearLateInFlightRows = "tsdb_smear_late_in_flight_rows"
	// MetricSmearAdmissionClosed is 1 while a server's smear admission
	// refuses new rows.
	MetricSmearAdmissionClosed = "tsdb_smear_admission_closed"
	// MetricSmearRetriedRows counts the rows whose forward failed and was
	// queued again.
	MetricSmearRetriedRows = "tsdb_smear_retried_rows_total"
	// MetricSmearDueLead is the gauge of how much earlier than max_delay
	// a server's smeared inserts fall due (the forwarder's recent
	// lateness).
	MetricSmearDueLead = "tsdb_smear_due_lead_seconds"
	// MetricSmearCapacity is the gauge of a server's estimated smear
	// forward capacity, rows/s (what admission lets fall due per second).
	MetricSmearCapacity = "tsdb_smear_forward_capacity_rows_per_second"
	// MetricSmearAcceptRate and MetricSmearForwardRate are the gauges of
	// the rows a server's smear queue takes in and forwards per second
	// (moving averages).
	MetricSmearAcceptRate  = "tsdb_smear_accept_rows_per_second"
	MetricSmearForwardRate = "tsdb_smear_forward_rows_per_second"
	// MetricSmearDirectRate is the gauge of the rows a server wrote
	// straight to their partitions per second (a moving average; its
	// recent peak is admission's direct prior).
	MetricSmearDirectRate = "tsdb_smear_direct_rows_per_second"
	// MetricSmearRefusals counts the smeared inserts a server's admission
	// control refused (503 queue_full).
	MetricSmearRefusals = "tsdb_smear_behind_rejections_total"
	// MetricSealRows counts the rows a server sealed into column blocks.
	MetricSealRows = "tsdb_seal_rows_total"
	// MetricSplitsStarted counts the splits a server began (SPLIT_BEGIN
	// it committed).
	MetricSplitsStarted = "tsdb_splits_started_total"
	// MetricReplicationMaxLag is the gauge of a server's largest
	// replication lag, in sequences, from a replica to one of its targets.
	MetricReplicationMaxLag = "tsdb_replication_max_lag_seqs"
)

// scrapedMetrics are the names the sampler reads.
var scrapedMetrics = []string{
	MetricStoreWriteBytes, MetricSmearQueueRows, MetricSmearOverdueRows, MetricSmearLateInFlightRows,
	MetricSmearAdmissionClosed, MetricSmearRetriedRows, MetricReplicationMaxLag, MetricSmearDueLead,
	MetricSmearCapacity, MetricSmearAcceptRate, MetricSmearForwardRate, MetricSmearDirectRate, MetricSmearRefusals,
	MetricSealRows, MetricSplitsStarted,
}

// ParseMetrics reads the Prometheus text exposition format and returns,
// for each of names present, the sum of its samples over all label sets.
// A name absent from the text is absent from the map. Comments, other
// metrics and malformed lines are skipped; only read errors are returned.
//
// Each sample line of a wanted name is parsed by prometheus/common's
// expfmt on its own, so that one malformed line (which ends an expfmt
// parse) skips only itself.
func ParseMetrics(r io.Reader, names ...string) (map[string]float64, error) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	out := make(map[string]float64)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !want[sampleName(line)] {
			continue
		}
		fams, err := parser.TextToMetricFamilies(strings.NewReader(line + "\n"))
		if err != nil {
			continue // malformed: skipped
		}
		for name, mf := range fams {
			for _, m := range mf.GetMetric() {
				out[name] += m.GetUntyped().GetValue()
			}
		}
	}
	return out, sc.Err()
}

// sampleName returns the metric name a sample line starts with ("" for a
// comment or a blank line).
func sampleName(line string) string {
	if line == "" || line[0] == '#' {
		return ""
	}
	if i := strings.IndexAny(line, "{ \t"); i >= 0 {
		return line[:i]
	}
	return ""
}
