package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tsdb/tsdb/internal/bytesize"
	"github.com/tsdb/tsdb/internal/tlsconfig"
	"github.com/tsdb/tsdb/loadtest"
	"github.com/tsdb/tsdb/loadtest/localcluster"
)

// loadtestFlags are the flags of tsdb loadtest beyond loadtest.Config's.
type loadtestFlags struct {
	cfg                     loadtest.Config
	partitionSize, writeLim int64 // bytes (bytesize flags)
	from, to, tokenFile     string
	caFile                  string // --tls-ca-file
	local                   localcluster.Config
	logs                    logFlags
}

const loadtestLong = `Send InfluxDB line-protocol inserts to a tsdb cluster and measure it.

Workers (--concurrency) send batches of --batch rows over --series series,
timed at "now" (the hot case: all rows land in the partition at the head of
the time axis) or uniformly in --from..--to, to the servers in turn, at
--rate rows/s or as fast as they answer. A run warms up (--warmup, not
counted), measures for --duration, then waits for its visibility probes.

It targets a running cluster (--url; with --discover, every server the
cluster lists), or starts its own: --cluster N runs an embedded etcd and N
'tsdb server' processes of this executable on loopback, each with
--write-limit, --min-servers N and the --presplit-* flags below, data and
logs in --dir (a temporary directory removed afterwards unless --keep).
The table (--table) is created with --rf, --partition-size-target,
--max-delay and --keyrange-threshold, smearing enabled; if it exists it is
used as it is. --smear=false sends every insert with X-TSDB-Smear: off;
--compare runs smear off, then smear on, with the same settings.

While it runs, a progress line on stderr: acknowledged rows/s, p50/p99
latency, errors, each server's share of stored writes
(tsdb_store_write_bytes_total from /metrics; n/a when not exported), smear
queue depth. At the end: a summary (acked rows/s, latency, errors by code,
each server's share of stored write bytes, busiest share against the fair
share 1/N, visibility delay p50/p99/max, and with --compare the throughput
ratio on/off next to the ideal N/(RF+1)), a JSON report (--report) and a
chart of each server's stored write rate over time (--chart, .svg or .png;
one panel per run). The visibility delay is the time from a probe row's
acknowledgement until a query through another server returns it (one probe
per --probe-interval, polled every 100 ms). Ctrl-C stops the run and still
prints and writes what was measured.

Sizes take units: 512KiB, 4MiB (powers of 1024), 2MB, 1.5GB (powers of
1000). Durations are Go durations (1m30s).

Examples:
  # Against the cluster of 'make run' (127.0.0.1:8080-8082), 30 s, 50k rows/s:
  tsdb loadtest --url http://127.0.0.1:8080 --duration 30s --rate 50000

  # Three local servers, RF 3, each limited to 2 MB/s of store writes,
  # smear off then on:
  tsdb loadtest --cluster 3 --rf 3 --write-limit 2MB --compare`

func newLoadtestCmd() *cobra.Command {
	var lf loadtestFlags
	cmd := &cobra.Command{
		Use:   "loadtest",
		Short: "Load a cluster with inserts (hot or over a time range) and measure throughput, balance and visibility",
		Long:  loadtestLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if err := lf.finish(cmd.Flags()); err != nil {
				return err
			}
			ctx := cmd.Context()
			lf.cfg.Progress = cmd.ErrOrStderr()
			if f, ok := lf.cfg.Progress.(*os.File); ok {
				lf.cfg.ProgressTTY = isTerminal(f)
			}
			if lf.local.Servers > 0 {
				lc, err := localcluster.Start(ctx, lf.local)
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, lc.Close()) }()
				fmt.Fprintf(cmd.OutOrStdout(), "local cluster: %d servers %s, etcd %s, data and logs in %s\n",
					lf.local.Servers, strings.Join(lc.URLs(), " "), lc.EtcdEndpoint(), lc.Dir())
				lf.cfg.Servers, lf.cfg.ServerFlags = lc.URLs(), lc.SharedFlags()
			}
			_, err = loadtest.Run(ctx, lf.cfg, cmd.OutOrStdout())
			return err
		},
	}
	lf.register(cmd.Flags())
	return cmd
}

// register defines the flags.
func (lf *loadtestFlags) register(f *pflag.FlagSet) {
	c := &lf.cfg
	f.StringSliceVar(&c.Servers, "url", nil, "servers of a running cluster, comma-separated or repeated (default http://127.0.0.1:8080 without --cluster)")
	f.BoolVar(&c.Discover, "discover", true, "send to every server GET /api/v1/cluster lists, not only to --url")
	f.StringVar(&lf.tokenFile, "auth-token-file", "", "file holding the bearer token the cluster's public API requires")
	f.StringVar(&lf.caFile, "tls-ca-file", "", "PEM CA certificates the certificates of https --url servers must chain to (default: the system's roots)")
	lf.registerLocal(f)

	f.StringVar(&c.Table, "table", loadtest.DefaultTable, "table to write (created if missing, else used as it is)")
	f.IntVar(&c.ReplicationFactor, "rf", 0, "replication factor of the created table (0: the server's default, min(3, servers))")
	lf.partitionSize = loadtest.DefaultPartitionSizeTarget
	f.Var(bytesize.Var(&lf.partitionSize), "partition-size-target", "partition_size_target of the created table (small: the pre-split makes narrow partitions at now)")
	f.DurationVar(&c.MaxDelay, "max-delay", loadtest.DefaultMaxDelay, "smear max_delay of the created table")
	f.DurationVar(&c.KeyrangeThreshold, "keyrange-threshold", loadtest.DefaultKeyrangeThreshold, "smear keyrange_threshold of the created table: inserts into narrower partitions are smeared")

	f.IntVar(&c.Series, "series", loadtest.DefaultSeries, "number of series (loadtest,s=N)")
	f.IntVar(&c.Batch, "batch", loadtest.DefaultBatch, "rows per request")
	f.IntVar(&c.Concurrency, "concurrency", loadtest.DefaultConcurrency, "workers, each with one request in flight")
	f.Float64Var(&c.Rate, "rate", 0, "target rows/s over all workers (0: as fast as the servers answer)")
	f.DurationVar(&c.Duration, "duration", loadtest.DefaultDuration, "measured time of each run")
	f.DurationVar(&c.NarrowWait, "wait-narrow", 3*time.Minute, "before the first run, wait at most this long for the master's pre-split to make the partitions at now narrower than the threshold (0: start at once)")
	f.DurationVar(&c.Warmup, "warmup", loadtest.DefaultWarmup, "load before each run's measurement, not counted (lets the master pre-split at the measured rate)")
	f.StringVar(&lf.from, "from", "", "range mode: rows timed uniformly from this time (RFC 3339, or a duration relative to now: --from=-1h); needs --to")
	f.StringVar(&lf.to, "to", "", "range mode: end of the time range, exclusive (RFC 3339, or relative to now: --to=0s)")
	f.BoolVar(&c.Smear, "smear", true, "let inserts be smeared (false: send X-TSDB-Smear: off); ignored with --compare")
	f.BoolVar(&c.Compare, "compare", false, "run smear off, then smear on, with the same settings, and print the throughput ratio")

	f.DurationVar(&c.ProbeInterval, "probe-interval", loadtest.DefaultProbeInterval, "time between visibility probes")
	f.DurationVar(&c.ProbeTimeout, "probe-timeout", 0, "give up on a probe not visible after this (0: the table's max delay + 30s)")
	f.DurationVar(&c.SampleInterval, "sample-interval", loadtest.DefaultSampleInterval, "time between scrapes of every server's /metrics")
	f.DurationVar(&c.RequestTimeout, "request-timeout", loadtest.DefaultRequestTimeout, "timeout of every HTTP request")
	f.StringVar(&c.ReportPath, "report", "loadtest-report.json", "JSON report file (empty: none)")
	f.StringVar(&c.ChartPath, "chart", "loadtest-chart.svg", "chart of each server's stored write rate, .svg or .png (empty: none)")
	lf.logs.register(f)
}

// registerLocal defines the flags of the local cluster.
func (lf *loadtestFlags) registerLocal(f *pflag.FlagSet) {
	l := &lf.local
	f.IntVar(&l.Servers, "cluster", 0, "start a local cluster of N 'tsdb server' processes with an embedded etcd instead of using --url")
	f.Var(bytesize.Var(&lf.writeLim), "write-limit", "each local server's --write-limit, bytes/s of store writes (0: none); with --url only drawn on the chart")
	f.StringVar(&l.Dir, "dir", "", "local cluster: directory for etcd, each server's data and logs (default: a new temporary directory)")
	f.BoolVar(&l.Keep, "keep", false, "local cluster: keep the temporary directory afterwards")
	f.StringVar(&l.Command, "tsdb-binary", "", "local cluster: the tsdb executable to run as servers (default: this executable)")
	f.StringArrayVar(&l.ExtraFlags, "server-flag", nil, "local cluster: an extra flag for every server, repeatable (e.g. --server-flag=--dead-after=10s)")
	f.DurationVar(&l.PresplitMinWidth, "presplit-min-width", time.Second, "local cluster: the servers' --presplit-min-width")
	f.DurationVar(&l.PresplitMaxWidth, "presplit-max-width", 5*time.Second, "local cluster: the servers' --presplit-max-width (also the width before the rate is known; below --keyrange-threshold, so inserts at now are smeared from the start)")
	f.DurationVar(&l.PresplitHorizon, "presplit-horizon", 45*time.Second, "local cluster: the servers' --presplit-horizon (short, so a narrower width applies soon, but longer than a master pass takes on a saturated machine, 10-35 s measured on 2 cores: else \"now\" outruns the pre-split into the open-ended last partition, which is never smeared)")
	f.DurationVar(&l.PresplitInterval, "presplit-interval", 2*time.Second, "local cluster: the servers' --presplit-interval")
}

// finish validates the flags and fills the derived settings.
func (lf *loadtestFlags) finish(f *pflag.FlagSet) error {
	c, l := &lf.cfg, &lf.local
	if l.Servers < 0 || l.Servers > 64 {
		return fmt.Errorf("--cluster %d: want 0 (use --url) to 64", l.Servers)
	}
	if l.Servers > 0 && f.Changed("url") {
		return fmt.Errorf("--cluster and --url: give one of them")
	}
	if l.Servers == 0 && len(c.Servers) == 0 {
		c.Servers = []string{"http://127.0.0.1:8080"}
	}
	for i, s := range c.Servers {
		c.Servers[i] = strings.TrimRight(s, "/")
	}
	var err error
	now := time.Now()
	if c.From, err = parseTimeFlag("from", lf.from, now); err != nil {
		return err
	}
	if c.To, err = parseTimeFlag("to", lf.to, now); err != nil {
		return err
	}
	if c.Logger, err = lf.logs.logger(); err != nil {
		return err
	}
	if c.AuthToken, err = readSecretFile("auth-token-file", lf.tokenFile); err != nil {
		return err
	}
	if lf.caFile != "" {
		if c.TLS, err = tlsconfig.Client(lf.caFile, "", ""); err != nil {
			return fmt.Errorf("--tls-ca-file: %w", err)
		}
	}
	c.PartitionSizeTarget, c.WriteLimit = lf.partitionSize, lf.writeLim
	c.ClusterMode = "url"
	if l.Servers > 0 {
		if err := lf.finishLocal(); err != nil {
			return err
		}
	}
	c.EnsureDefaults()
	check := *c
	if l.Servers > 0 {
		check.Servers = []string{"http://127.0.0.1"} // the local servers, known once started
	}
	return check.Validate()
}

// finishLocal fills the local cluster's derived settings.
func (lf *loadtestFlags) finishLocal() error {
	l := &lf.local
	if l.Command == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--tsdb-binary: this executable's path: %w", err)
		}
		l.Command = exe
	}
	l.Args = []string{"server"}
	l.WriteLimit = lf.writeLim
	l.LogLevel = lf.logs.level
	l.Logger = lf.cfg.Logger
	lf.cfg.ClusterMode = "local"
	lf.cfg.Discover = true
	return nil
}

// parseTimeFlag reads an RFC 3339 time or a duration relative to now
// ("-1h"); empty is the zero time.
func parseTimeFlag(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	return time.Time{}, fmt.Errorf("--%s %q: want an RFC 3339 time or a duration relative to now such as -1h", flag, s)
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
