package loadtest

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/tsdb/tsdb/http/api"
)

// Defaults of a Config.
const (
	DefaultTable               = "loadtest"
	DefaultPartitionSizeTarget = 4 << 20
	DefaultMaxDelay            = 20 * time.Second
	DefaultKeyrangeThreshold   = 60 * time.Second
	DefaultSeries              = 1000
	DefaultBatch               = 1000
	DefaultConcurrency         = 8
	DefaultDuration            = 60 * time.Second
	DefaultWarmup              = 20 * time.Second
	DefaultProbeInterval       = time.Second
	DefaultSampleInterval      = time.Second
	DefaultRequestTimeout      = 30 * time.Second
	// probeSlack is added to the table's max delay for the default
	// ProbeTimeout.
	probeSlack = 30 * time.Second
	// probePoll is how often a probe's query is repeated.
	probePoll = 100 * time.Millisecond
	// quorumPoll is how often a probe's quorum read is repeated (its
	// delay is known to this resolution).
	quorumPoll = time.Second
)

// Config holds every setting of a load test. Zero fields take the
// defaults above (EnsureDefaults); Validate checks the result.
type Config struct {
	// Servers are the base URLs (http://host:port) of the servers to send
	// to. Required.
	Servers []string
	// Discover makes Run send to every server GET /api/v1/cluster lists
	// (asking Servers in turn); otherwise only to Servers. Either way one
	// of Servers must answer that listing (it names the servers).
	Discover bool
	// AuthToken is sent as a bearer token when set.
	AuthToken string
	// TLS configures requests to https servers (RootCAs: the CAs their
	// certificates must chain to, tsdb loadtest --tls-ca-file); nil: the
	// system's roots.
	TLS *tls.Config

	// Table is the table written to. Run creates it with the settings
	// below; if it exists it is used as it is.
	Table string
	// ReplicationFactor of a created table; 0 leaves the server's default
	// (min(3, live servers)).
	ReplicationFactor int
	// PartitionSizeTarget of a created table, bytes.
	PartitionSizeTarget int64
	// MaxDelay and KeyrangeThreshold are the created table's smear
	// settings (smearing is enabled on the table; Smear/Compare choose
	// per insert).
	MaxDelay, KeyrangeThreshold time.Duration

	// Series is the number of distinct series written.
	Series int
	// Batch is the number of rows per request.
	Batch int
	// Concurrency is the number of workers, each with one request in
	// flight.
	Concurrency int
	// Rate is the target of rows per second over all workers; 0 sends as
	// fast as the servers answer.
	Rate float64
	// Duration is the measured time of one run; Warmup precedes it with
	// the same load, not counted.
	Duration, Warmup time.Duration
	// NarrowWait bounds the wait, before the first run, for the master's
	// pre-split to make the partitions at now narrow enough to smear
	// into (hot mode, smearing on); zero does not wait.
	NarrowWait time.Duration
	// From and To select range mode: rows timed uniformly in [From, To).
	// Both zero: every row is timed at the moment its batch is built.
	From, To time.Time
	// Smear says whether inserts may be smeared (false sends X-TSDB-Smear:
	// off). Ignored with Compare.
	Smear bool
	// Compare runs smear off, then smear on, and reports the ratio.
	Compare bool

	// ProbeInterval is the time between visibility probes.
	ProbeInterval time.Duration
	// ProbeTimeout bounds the wait for a probe to become visible; 0 means
	// the table's max delay plus 30 s.
	ProbeTimeout time.Duration
	// SampleInterval is the time between scrapes of the servers' /metrics.
	SampleInterval time.Duration
	// RequestTimeout bounds every HTTP request.
	RequestTimeout time.Duration

	// WriteLimit is the servers' --write-limit in bytes/s, when known (0:
	// unknown or none). Only reported and drawn on the chart.
	WriteLimit int64
	// ClusterMode describes where the servers come from ("url" or
	// "local"), for the report.
	ClusterMode string
	// ServerFlags are the flags a local cluster's servers were started
	// with, for the report.
	ServerFlags []string

	// ReportPath is where the JSON report is written ("" = not written).
	ReportPath string
	// ChartPath is where the chart is written, .svg or .png ("" = not
	// written).
	ChartPath string

	// Progress receives the live progress line (nil = none).
	Progress io.Writer
	// ProgressTTY rewrites the progress line in place every second
	// (a terminal); otherwise a line is printed every 5 s.
	ProgressTTY bool
	// Logger receives notes (table reused, discovery failed); nil discards.
	Logger *slog.Logger
}

// EnsureDefaults fills zero fields with the defaults.
func (c *Config) EnsureDefaults() {
	setDefault(&c.Table, DefaultTable)
	setDefault(&c.PartitionSizeTarget, DefaultPartitionSizeTarget)
	setDefault(&c.MaxDelay, DefaultMaxDelay)
	setDefault(&c.KeyrangeThreshold, DefaultKeyrangeThreshold)
	setDefault(&c.Series, DefaultSeries)
	setDefault(&c.Batch, DefaultBatch)
	setDefault(&c.Concurrency, DefaultConcurrency)
	setDefault(&c.Duration, DefaultDuration)
	setDefault(&c.ProbeInterval, DefaultProbeInterval)
	setDefault(&c.SampleInterval, DefaultSampleInterval)
	setDefault(&c.RequestTimeout, DefaultRequestTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// Validate reports every setting out of range at once, in one line, each
// named as its tsdb loadtest flag.
func (c *Config) Validate() error {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if len(c.Servers) == 0 {
		add("--url: at least one server is required")
	}
	for _, s := range c.Servers {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("--url %q: want http://host:port", s)
		}
	}
	if c.Table == "" || strings.ContainsAny(c.Table, "/?&# ") {
		add("--table %q: want a table name", c.Table)
	}
	positive := []struct {
		flag string
		v    int64
	}{
		{"--series", int64(c.Series)}, {"--batch", int64(c.Batch)}, {"--concurrency", int64(c.Concurrency)},
		{"--duration", int64(c.Duration)}, {"--probe-interval", int64(c.ProbeInterval)},
		{"--sample-interval", int64(c.SampleInterval)}, {"--request-timeout", int64(c.RequestTimeout)},
		{"--max-delay", int64(c.MaxDelay)}, {"--keyrange-threshold", int64(c.KeyrangeThreshold)},
		{"--partition-size-target", c.PartitionSizeTarget},
	}
	for _, p := range positive {
		if p.v <= 0 {
			add("%s: want more than 0", p.flag)
		}
	}
	if c.ReplicationFactor < 0 || c.Rate < 0 || c.Warmup < 0 || c.ProbeTimeout < 0 || c.WriteLimit < 0 {
		add("--rf, --rate, --warmup, --probe-timeout, --write-limit: want 0 or more")
	}
	if c.From.IsZero() != c.To.IsZero() || (!c.From.IsZero() && !c.To.After(c.From)) {
		add("--from/--to: give both, with --to after --from")
	}
	if ext := strings.ToLower(filepath.Ext(c.ChartPath)); c.ChartPath != "" && ext != ".svg" && ext != ".png" {
		add("--chart %q: want a .svg or .png file", c.ChartPath)
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(bad, "; "))
}

// rangeMode reports whether rows are spread over [From, To).
func (c *Config) rangeMode() bool { return !c.From.IsZero() }

// Settings is the part of a Config written in the report.
type Settings struct {
	Servers             []string     `json:"servers"`
	ClusterMode         string       `json:"cluster_mode,omitempty"`
	Table               string       `json:"table"`
	ReplicationFactor   int          `json:"replication_factor,omitempty"`
	PartitionSizeTarget int64        `json:"partition_size_target"`
	MaxDelay            api.Duration `json:"max_delay"`
	KeyrangeThreshold   api.Duration `json:"keyrange_threshold"`
	Series              int          `json:"series"`
	Batch               int          `json:"batch"`
	Concurrency         int          `json:"concurrency"`
	Rate                float64      `json:"rate"`
	Duration            api.Duration `json:"duration"`
	Warmup              api.Duration `json:"warmup"`
	From                *time.Time   `json:"from,omitempty"`
	To                  *time.Time   `json:"to,omitempty"`
	Smear               bool         `json:"smear"`
	Compare             bool         `json:"compare"`
	ProbeInterval       api.Duration `json:"probe_interval"`
	ProbeTimeout        api.Duration `json:"probe_timeout"`
	SampleInterval      api.Duration `json:"sample_interval"`
	WriteLimit          int64        `json:"write_limit,omitempty"`
	ServerFlags         []string     `json:"server_flags,omitempty"`
}

// settings returns the report's copy of c.
func (c *Config) settings() Settings {
	s := Settings{
		Servers: c.Servers, ClusterMode: c.ClusterMode, Table: c.Table, ReplicationFactor: c.ReplicationFactor,
		PartitionSizeTarget: c.PartitionSizeTarget, MaxDelay: api.Duration(c.MaxDelay),
		KeyrangeThreshold: api.Duration(c.KeyrangeThreshold), Series: c.Series, Batch: c.Batch,
		Concurrency: c.Concurrency, Rate: c.Rate, Duration: api.Duration(c.Duration), Warmup: api.Duration(c.Warmup),
		Smear: c.Smear, Compare: c.Compare, ProbeInterval: api.Duration(c.ProbeInterval),
		ProbeTimeout: api.Duration(c.ProbeTimeout), SampleInterval: api.Duration(c.SampleInterval),
		WriteLimit: c.WriteLimit, ServerFlags: c.ServerFlags,
	}
	if c.rangeMode() {
		from, to := c.From.UTC(), c.To.UTC()
		s.From, s.To = &from, &to
	}
	return s
}
