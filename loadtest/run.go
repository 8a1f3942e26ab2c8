package loadtest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Names of the runs in a Report.
const (
	RunSmearOff = "smear-off"
	RunSmearOn  = "smear-on"
)

// Run runs the load test cfg describes against cfg.Servers: creates the
// table (or uses it if it exists), then one run with cfg.Smear, or with
// cfg.Compare a smear-off run and a smear-on run. It prints the summary
// to out, writes the JSON report and the chart when their paths are set,
// and returns the report. When ctx ends, the runs stop, and the partial
// report (Aborted) is still printed, written and returned without error.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Report, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cl := newClient(cfg.AuthToken, cfg.TLS, cfg.RequestTimeout, cfg.Concurrency+4)
	defer cl.close()
	servers, err := discover(ctx, cl, &cfg)
	if err != nil {
		return nil, err
	}
	table, err := prepareTable(ctx, cl, &cfg, servers[0].URL)
	if err != nil {
		return nil, err
	}
	if err := waitNarrow(ctx, cl, &cfg, servers[0].URL, table); err != nil {
		return nil, err
	}
	if cfg.ProbeTimeout == 0 {
		cfg.ProbeTimeout = time.Duration(table.MaxDelay) + probeSlack
	}
	rep := &Report{Settings: cfg.settings(), Table: table, Servers: servers}
	prog := &progress{w: cfg.Progress, tty: cfg.ProgressTTY}
	for _, smear := range cfg.smearModes() {
		r := newRunner(&cfg, cl, servers, smear, prog)
		res := r.run(ctx)
		rep.Runs = append(rep.Runs, res)
		if res.Aborted {
			rep.Aborted = true
			break
		}
	}
	rep.Compare = rep.comparison()
	return rep, rep.output(&cfg, out)
}

// smearModes lists the smear setting of each run.
func (c *Config) smearModes() []bool {
	if c.Compare {
		return []bool{false, true}
	}
	return []bool{c.Smear}
}

// output prints the summary and writes the report and chart files.
func (r *Report) output(cfg *Config, out io.Writer) error {
	if err := r.WriteSummary(out); err != nil {
		return err
	}
	if cfg.ReportPath != "" {
		if err := r.WriteJSON(cfg.ReportPath); err != nil {
			return err
		}
		fmt.Fprintf(out, "report: %s\n", cfg.ReportPath)
	}
	if cfg.ChartPath != "" {
		if err := WriteChart(cfg.ChartPath, r); err != nil {
			return err
		}
		fmt.Fprintf(out, "chart:  %s\n", cfg.ChartPath)
	}
	return nil
}

// runner is one run: its workers, sampler, prober and progress.
type runner struct {
	cfg     *Config
	cl      *client
	servers []Server
	smear   bool
	name    string
	stats   *stats
	pacer   *pacer
	prog    *progress
	sampler *sampler
	prober  *prober
	rr      atomic.Uint64 // round-robin counter of the workers' requests
}

func newRunner(cfg *Config, cl *client, servers []Server, smear bool, prog *progress) *runner {
	name := RunSmearOff
	if smear {
		name = RunSmearOn
	}
	return &runner{
		cfg: cfg, cl: cl, servers: servers, smear: smear, name: name,
		stats: newStats(), pacer: newPacer(cfg.Rate, cfg.Batch), prog: prog,
	}
}

// window is the measured part of a run.
type window struct {
	start, end time.Time
	base, last []sample // scrapes at start and end
}

// run runs the three phases (warm-up, measure, drain) and returns the
// result. Every goroutine it starts has returned when it returns.
func (r *runner) run(ctx context.Context) RunResult {
	start := time.Now()
	r.sampler = newSampler(r.cl, r.servers, r.cfg.SampleInterval, start.Add(r.cfg.Warmup))
	r.prober = &prober{
		cl: r.cl, servers: r.servers, table: r.cfg.Table, smear: r.smear,
		runID: fmt.Sprintf("%s-%d", r.name, start.UnixNano()), every: r.cfg.ProbeInterval, timeout: r.cfg.ProbeTimeout,
	}
	r.sampler.add(r.sampler.scrapeAll(ctx)) // the baseline, before any load
	var bg, workers sync.WaitGroup
	sampleCtx, stopSampler := context.WithCancel(ctx)
	defer stopSampler()
	bg.Go(func() { r.sampler.run(sampleCtx) })
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	for i := range r.cfg.Concurrency {
		workers.Go(func() { r.worker(loadCtx, i) })
	}

	r.watch(ctx, "warm-up", start.Add(r.cfg.Warmup), nil)
	var w window
	if ctx.Err() == nil {
		w = r.measure(ctx)
	}
	stopLoad()
	workers.Wait()

	probesDone := make(chan struct{})
	bg.Go(func() {
		r.prober.wait()
		close(probesDone)
	})
	r.watch(ctx, "drain", time.Time{}, probesDone)
	<-probesDone
	r.prober.recheck(ctx)
	stopSampler()
	bg.Wait()
	r.prog.end()
	return r.result(w, ctx.Err() != nil)
}

// measure runs the measured phase: counting on, probes on, and the
// scrapes at both ends. When it returns no probe is being started any
// more (the probes started may still run: prober.wait).
func (r *runner) measure(ctx context.Context) window {
	var w window
	w.base = r.scrapeOrLatest(ctx)
	w.start = time.Now()
	r.prober.start = w.start
	r.stats.measuring.Store(true)
	stopProbes := make(chan struct{})
	var starter sync.WaitGroup
	starter.Go(func() { r.prober.run(ctx, stopProbes) })
	r.watch(ctx, "measure", w.start.Add(r.cfg.Duration), nil)
	r.stats.measuring.Store(false)
	w.end = time.Now()
	close(stopProbes)
	starter.Wait()
	w.last = r.scrapeOrLatest(ctx)
	return w
}

// scrapeOrLatest scrapes every server now (even after ctx ended, within
// the request timeout), using the sampler's latest scrape for a server
// that fails.
func (r *runner) scrapeOrLatest(ctx context.Context) []sample {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.RequestTimeout)
	defer cancel()
	cur, latest := r.sampler.scrapeAll(ctx), r.sampler.latest()
	for i := range cur {
		if !cur[i].ok {
			cur[i] = latest[i]
		}
	}
	return cur
}

// worker sends batches until ctx ends.
func (r *runner) worker(ctx context.Context, id int) {
	from, to := int64(0), int64(0)
	if r.cfg.rangeMode() {
		from, to = r.cfg.From.UnixNano(), r.cfg.To.UnixNano()
	}
	first := id * max(r.cfg.Series/r.cfg.Concurrency, 1)
	b := newBatchBuilder(r.cfg.Series, r.cfg.Batch, first, from, to, uint64(time.Now().UnixNano())+uint64(id))
	for r.pacer.wait(ctx, r.cfg.Batch) == nil {
		body := b.build(time.Now())
		srv := r.servers[r.rr.Add(1)%uint64(len(r.servers))]
		t0 := time.Now()
		res := r.cl.write(ctx, srv.URL, r.cfg.Table, body, r.smear)
		lat := time.Since(t0)
		if ctx.Err() != nil {
			return // cut off by the end of the run: not counted
		}
		r.stats.record(res, lat, r.cfg.Batch)
		if !res.ok() && sleepCtx(ctx, retryPause(res)) != nil {
			return
		}
	}
}

// retryPause is a worker's pause after a failed request: the server's
// Retry-After (at most maxRetryAfter), else 100 ms.
func retryPause(r result) time.Duration {
	const maxRetryAfter = 30 * time.Second
	if r.retryAfter > 0 {
		return min(r.retryAfter, maxRetryAfter)
	}
	return 100 * time.Millisecond
}

// watch prints progress lines until the deadline (zero: none), done is
// closed or ctx ends.
func (r *runner) watch(ctx context.Context, phase string, until time.Time, done <-chan struct{}) {
	var deadline <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(r.prog.every())
	defer tick.Stop()
	begin, base, last := time.Now(), r.sampler.latest(), time.Now()
	r.stats.tick()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-deadline:
			return
		case now := <-tick.C:
			r.prog.show(r.progressLine(phase, begin, until, now.Sub(last), base))
			last = now
		}
	}
}

// progressLine formats one progress line for the interval dt just ended.
func (r *runner) progressLine(phase string, begin, until time.Time, dt time.Duration, base []sample) string {
	t := r.stats.tick()
	elapsed := time.Since(begin).Round(time.Second)
	clock := elapsed.String()
	if !until.IsZero() {
		clock += "/" + until.Sub(begin).Round(time.Second).String()
	}
	if phase == "drain" {
		clock += fmt.Sprintf(", %d probes pending", r.prober.pending.Load())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s | %.0f rows/s p50 %s p99 %s | errors %d | stored",
		r.name, phase, clock, float64(t.rows)/dt.Seconds(), fmtMs(ms(t.p50)), fmtMs(ms(t.p99)), t.errors)
	latest := r.sampler.latest()
	sw := storedShares(r.servers, base, latest)
	for _, s := range sw.Servers {
		if sw.Available {
			fmt.Fprintf(&b, " %s %.0f%%", s.ID, 100*s.Share)
		} else {
			fmt.Fprintf(&b, " %s n/a", s.ID)
		}
	}
	var queue float64
	for _, s := range latest {
		queue += s.queue
	}
	fmt.Fprintf(&b, " | queue %.0f rows", queue)
	return b.String()
}

// result builds the run's result.
func (r *runner) result(w window, aborted bool) RunResult {
	h, errs := r.stats.totals()
	res := RunResult{
		Name: r.name, Smear: r.smear, Aborted: aborted,
		RowsAcked: r.stats.rows.Load(), Requests: r.stats.requests.Load(),
		Latency: Latency{
			P50Ms: ms(h.Quantile(0.5)), P90Ms: ms(h.Quantile(0.9)), P99Ms: ms(h.Quantile(0.99)),
			MaxMs: ms(h.Max()), MeanMs: ms(h.Mean()),
		},
		Visibility: r.prober.result(),
		TimeSeries: r.sampler.series(),
	}
	if len(errs) > 0 {
		res.Errors = errs
	}
	if w.start.IsZero() {
		return res // stopped during the warm-up
	}
	res.Start = w.start.Round(0).UTC()
	res.Seconds = w.end.Sub(w.start).Seconds()
	if res.Seconds > 0 {
		res.AckedRowsPerSec = float64(res.RowsAcked) / res.Seconds
		var q0, q1 float64
		for i := range w.base {
			q0 += w.base[i].queue
		}
		for i := range w.last {
			q1 += w.last[i].queue
		}
		res.QueueGrowthRowsPerSec = (q1 - q0) / res.Seconds
		res.DeliveredRowsPerSec = res.AckedRowsPerSec - res.QueueGrowthRowsPerSec
	}
	res.Stored = storedShares(r.servers, w.base, w.last)
	for i := range res.Stored.Servers {
		for _, p := range res.TimeSeries[i].Points {
			res.Stored.Servers[i].MaxQueueRows = max(res.Stored.Servers[i].MaxQueueRows, p.QueueRows)
		}
	}
	return res
}
