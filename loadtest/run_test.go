package loadtest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// tinyConfig is a short run against servers: no warm-up, 700 ms measured,
// fast sampling and probing, files under dir.
func tinyConfig(servers []string, dir, chart string) Config {
	return Config{
		Servers: servers, Discover: true, Table: "lt", Series: 20, Batch: 50, Concurrency: 2, Rate: 20000,
		Duration: 700 * time.Millisecond, ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 10 * time.Second,
		SampleInterval: 100 * time.Millisecond, RequestTimeout: 5 * time.Second, WriteLimit: 1 << 20,
		ReportPath: filepath.Join(dir, "report.json"), ChartPath: filepath.Join(dir, chart),
	}
}

// TestRunCompare runs compare mode against a fake cluster whose stored
// writes are deterministic (smear off: all on s1; on: even) and checks
// the report, the shares, the ratio line, the JSON file and the chart.
func TestRunCompare(t *testing.T) {
	f := newFakeCluster(t, 3)
	dir := t.TempDir()
	cfg := tinyConfig(f.urls()[:1], dir, "chart.png")
	cfg.Compare = true
	var out bytes.Buffer
	rep, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if len(rep.Servers) != 3 || rep.Servers[2].ID != "s3" || !rep.Table.Created || rep.Table.ReplicationFactor != 3 {
		t.Fatalf("servers %v, table %+v", rep.Servers, rep.Table)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Name != RunSmearOff || rep.Runs[1].Name != RunSmearOn || rep.Aborted {
		t.Fatalf("runs %+v, aborted %v", rep.Runs, rep.Aborted)
	}
	for _, r := range rep.Runs {
		if r.RowsAcked <= 0 || r.RowsAcked != r.Requests*50 || r.AckedRowsPerSec <= 0 || r.Latency.P99Ms <= 0 {
			t.Errorf("%s: rows %d requests %d rate %v p99 %v", r.Name, r.RowsAcked, r.Requests, r.AckedRowsPerSec, r.Latency.P99Ms)
		}
		if r.Visibility.Visible < 1 || r.Visibility.TimedOut != 0 || r.Visibility.Errors != 0 {
			t.Errorf("%s: visibility %+v", r.Name, r.Visibility)
		}
		if v := r.Visibility; len(v.Each) != v.Probes {
			t.Errorf("%s: %d probe records for %d probes", r.Name, len(v.Each), v.Probes)
		}
		for _, p := range r.Visibility.Each {
			if p.Outcome != "visible" || p.DelayMs <= 0 || p.QuorumDelayMs <= 0 || p.Acked < p.Sent || p.Via == "" {
				t.Errorf("%s: probe record %+v", r.Name, p)
			}
		}
		if !r.Stored.Available || r.Stored.FairShare != 1.0/3 || len(r.TimeSeries) != 3 {
			t.Errorf("%s: stored %+v, %d series", r.Name, r.Stored, len(r.TimeSeries))
		}
	}
	off, on := rep.Runs[0].Stored, rep.Runs[1].Stored
	if off.BusiestID != "s1" || off.BusiestShare != 1 || off.BusiestOverFair != 3 {
		t.Errorf("smear off: busiest %s share %v over fair %v, want s1, 1, 3", off.BusiestID, off.BusiestShare, off.BusiestOverFair)
	}
	// Even in the model, but the servers are scraped one after the other
	// while the load goes on, so not exactly 1.
	if on.BusiestOverFair < 1 || on.BusiestOverFair > 1.5 {
		t.Errorf("smear on: busiest over fair %v, want about 1", on.BusiestOverFair)
	}
	c := rep.Compare
	if c == nil || c.Ideal != 0.75 || c.Servers != 3 || c.ReplicationFactor != 3 ||
		c.Ratio != rep.Runs[1].DeliveredRowsPerSec/rep.Runs[0].DeliveredRowsPerSec {
		t.Fatalf("compare %+v", c)
	}
	for _, want := range []string{"throughput ratio smear on/off:", "ideal N/(RF+1) = 3/4 = 0.75", "acked rows/s",
		"busiest share / fair share", "100.0% / 33.3% = 3.00x (s1)", "share of stored writes s3", "visibility p50 / p99 / max",
		"report: " + cfg.ReportPath, "chart:  " + cfg.ChartPath} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	back, err := ReadReport(cfg.ReportPath)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rep) {
		t.Errorf("report file differs from the returned report:\n%+v\n%+v", back, rep)
	}
	checkChart(t, cfg.ChartPath)
	if p := os.Getenv("LOADTEST_KEEP_CHART"); p != "" {
		b, _ := os.ReadFile(cfg.ChartPath)
		os.WriteFile(p, b, 0o644)
	}
}

// TestRunWithoutStoreMetric: servers without the write counter give n/a
// shares, and the chart is still written.
func TestRunWithoutStoreMetric(t *testing.T) {
	f := newFakeCluster(t, 2)
	f.noMetric = true
	dir := t.TempDir()
	cfg := tinyConfig(f.urls(), dir, "chart.svg")
	cfg.Smear = true
	var out bytes.Buffer
	rep, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Name != RunSmearOn || rep.Runs[0].Stored.Available || rep.Compare != nil {
		t.Fatalf("runs %+v compare %+v", rep.Runs, rep.Compare)
	}
	if !strings.Contains(out.String(), "n/a") || strings.Contains(out.String(), "throughput ratio") {
		t.Errorf("summary:\n%s", out.String())
	}
	checkChart(t, cfg.ChartPath)
}

// TestRunCountsErrorsAndStopsOnCancel: every third write fails with 503
// queue_full; the fake cancels the context at its 20th write, which ends
// the run early (the smear-on run never starts) with a partial report
// still printed and written.
func TestRunCountsErrorsAndStopsOnCancel(t *testing.T) {
	f := newFakeCluster(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.failEveryK = 3
	f.onWrite = func(n int) {
		if n == 20 {
			cancel()
		}
	}
	dir := t.TempDir()
	cfg := tinyConfig(f.urls(), dir, "chart.svg")
	cfg.Compare, cfg.Duration, cfg.Rate = true, time.Hour, 0
	var out bytes.Buffer
	rep, err := Run(ctx, cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Aborted || len(rep.Runs) != 1 || !rep.Runs[0].Aborted || rep.Compare != nil {
		t.Fatalf("aborted %v, runs %+v", rep.Aborted, rep.Runs)
	}
	if !strings.Contains(out.String(), "interrupted") {
		t.Errorf("summary does not say interrupted:\n%s", out.String())
	}
	if _, err := os.Stat(cfg.ReportPath); err != nil {
		t.Error(err)
	}
	checkChart(t, cfg.ChartPath)
}

// TestStatsCountsErrorsByCode checks the error keys and that only
// measured requests count in the totals.
func TestStatsCountsErrorsByCode(t *testing.T) {
	s := newStats()
	s.record(result{status: 204}, time.Millisecond, 10) // not measuring
	s.measuring.Store(true)
	s.record(result{status: 204}, 2*time.Millisecond, 10)
	s.record(result{status: 503, code: "queue_full", retryAfter: time.Second}, time.Millisecond, 10)
	s.record(result{status: 503, code: "queue_full"}, time.Millisecond, 10)
	s.record(result{status: 500}, time.Millisecond, 10)
	s.record(result{err: context.DeadlineExceeded}, time.Millisecond, 10)
	s.record(result{err: os.ErrClosed}, time.Millisecond, 10)
	h, errs := s.totals()
	want := map[string]int64{"503 queue_full": 2, "500": 1, "timeout": 1, "transport": 1}
	if !reflect.DeepEqual(errs, want) || h.Count() != 1 || s.rows.Load() != 10 || s.requests.Load() != 1 {
		t.Errorf("errors %v (want %v), latencies %d, rows %d", errs, want, h.Count(), s.rows.Load())
	}
	if tk := s.tick(); tk.rows != 20 || tk.errors != 5 {
		t.Errorf("tick %+v, want 20 rows and 5 errors", tk)
	}
	if got := retryPause(result{status: 503, retryAfter: time.Hour}); got != 30*time.Second {
		t.Errorf("backoff of Retry-After 1h: %v", got)
	}
}

// TestProgressLine formats a progress line from fixed figures, and checks
// the terminal mode rewrites the line in place.
func TestProgressLine(t *testing.T) {
	servers := []Server{{ID: "s1"}, {ID: "s2"}}
	r := &runner{name: RunSmearOn, servers: servers, stats: newStats(), prober: &prober{}}
	r.sampler = newSampler(nil, servers, time.Second, time.Now())
	at := time.Now()
	base := []sample{{at: at, ok: true, hasWrite: true, write: 0}, {at: at, ok: true, hasWrite: true, write: 0}}
	r.sampler.add(base)
	r.sampler.add([]sample{{at: at.Add(time.Second), ok: true, hasWrite: true, write: 300, queue: 7},
		{at: at.Add(time.Second), ok: true, hasWrite: true, write: 100, queue: 5}})
	r.stats.record(result{status: 204}, 2*time.Millisecond, 500)
	r.stats.record(result{status: 503}, time.Millisecond, 500)
	line := r.progressLine("measure", time.Now(), time.Time{}, 500*time.Millisecond, base)
	want := "smear-on measure 0s | 1000 rows/s p50 2.0ms p99 2.0ms | errors 1 | stored s1 75% s2 25% | queue 12 rows"
	if line != want {
		t.Errorf("line\n%q, want\n%q", line, want)
	}
	var b bytes.Buffer
	p := &progress{w: &b, tty: true}
	p.show("long line")
	p.show("short")
	p.end()
	if b.String() != "\rlong line\rshort    \n" || p.every() != time.Second {
		t.Errorf("terminal output %q", b.String())
	}
	b.Reset()
	p = &progress{w: &b}
	p.show("a")
	p.end()
	if b.String() != "a\n" || p.every() != 5*time.Second {
		t.Errorf("plain output %q", b.String())
	}
}
