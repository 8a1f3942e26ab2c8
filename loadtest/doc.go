// Package loadtest is tsdb's load generator (DESIGN.md sections 7 and 11,
// issue 7): it sends InfluxDB line-protocol inserts to a running cluster
// and measures what the cluster does with them. `tsdb loadtest` is a thin
// command line over Run.
//
// # What one run does
//
// Concurrency workers build batches of Batch rows over Series series
// (loadtest,s=N v=FLOAT TIME), timed at "now" (the hot case: every row
// lands in the partition at the head of the time axis) or uniformly in
// [From, To) (range mode). A shared pacer (a token bucket in rows per
// second, golang.org/x/time/rate, with a burst of one batch) holds them to
// Rate; Rate 0 sends as fast as the servers answer. Each request goes to
// the next server round-robin. A 503
// with Retry-After makes that worker wait that long; other failures make
// it wait 100 ms. Failed batches are counted by status and error code,
// never retried, so the acknowledged row count is exact.
//
// A run has three phases: Warmup (load runs, nothing is counted; it lets
// the master pre-split the new table at the measured rate), the measured
// Duration, and a drain (load stopped) that lasts until every visibility
// probe has been seen or timed out. Meanwhile:
//
//   - a sampler scrapes GET /metrics of every server each SampleInterval
//     and keeps, per server, the rate of tsdb_store_write_bytes_total
//     (bytes the server wrote to its stores, smear queue included: what
//     the servers' --write-limit caps) and tsdb_smear_queue_rows. The
//     shares of stored write bytes come from counter readings taken
//     exactly at the start and end of the measured window. Servers that do
//     not export the counter are reported as "n/a";
//   - a prober inserts one row of a unique series every ProbeInterval
//     through a random server, with the run's smear setting, and polls a
//     query for it through another server every 100 ms until it is
//     visible or ProbeTimeout passes: the visibility delay, measured from
//     the acknowledgement;
//   - a progress line every second (rewritten in place on a terminal,
//     otherwise printed every 5 s): acknowledged rows/s, p50/p99 latency
//     of the last interval, errors, each server's share of stored writes,
//     smear queue depth.
//
// # Compare mode
//
// Compare runs smear off (every insert carries X-TSDB-Smear: off), then
// smear on, against the same table with the same settings, and reports
// the ratio of acknowledged throughputs next to the ideal N/(RF+1): with
// smearing, a row costs one write to the receiving server's smear queue
// plus RF replica writes, spread over all N servers; without, the RF
// replicas of the hot partition take all of it. Off runs first so that
// no smear queue is still draining into the other run's window.
//
// # Results
//
// Run prints a summary table (one column per run) and returns a Report,
// which it also writes as indented JSON (ReportPath) and as a chart of
// each server's stored write rate over time (ChartPath; .svg or .png;
// one panel per run, stacked, with a common scale). Cancelling the
// context stops everything; the partial results are still summarised
// and written, with Aborted set.
//
// # Clusters
//
// Run speaks only the public HTTP API (package http/api) to the servers
// in Config.Servers; with Discover it asks them for GET /api/v1/cluster
// and spreads load over every server listed. Starting a local cluster of
// `tsdb server` processes is the job of subpackage localcluster, which
// the command wires in front of Run.
//
// # Concurrency
//
// Run owns every goroutine it starts (workers, sampler, prober and its
// probes, the progress loop) and waits for all of them before returning.
// Counters are typed atomics; the histograms and error counts sit under
// a mutex.
package loadtest
