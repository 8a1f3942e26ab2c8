package loadtest

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ProbeMeasurement is the measurement of the visibility probes' rows:
// series loadtest_probe,id=N,run=RUN, one row each.
const ProbeMeasurement = "loadtest_probe"

// prober measures the visibility delay: it inserts one probe row every
// interval and polls a query for it until it is visible.
type prober struct {
	cl      *client
	servers []Server
	table   string
	smear   bool
	runID   string // a tag value unique to this run
	every   time.Duration
	timeout time.Duration
	wg      sync.WaitGroup // the probes in flight
	ids     atomic.Int64
	pending atomic.Int64
	mu      struct {
		sync.Mutex
		delays   Histogram // guarded by mu: acknowledgement to visibility
		probes   int       // guarded by mu: probes sent
		timedOut int       // guarded by mu: acknowledged, never seen within timeout
		errors   int       // guarded by mu: insert or every query failed
		// late are the probes that timed out, for recheck.
		late []lateProbe
	}
	// seenLate and missing count the timed-out probes recheck found
	// visible, and not visible, at the end of the run.
	seenLate, missing int
}

// lateProbe is a probe that timed out: where to look for it again.
type lateProbe struct {
	query, series string
	t             int64
}

// run starts a probe every interval until stop is closed or ctx ends. The
// probes outlive run; wait waits for them, and must be called only after
// run has returned (it adds to the WaitGroup wait waits on).
func (p *prober) run(ctx context.Context, stop <-chan struct{}) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		p.pending.Add(1)
		p.wg.Go(func() {
			defer p.pending.Add(-1)
			p.probe(ctx)
		})
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// wait waits for every probe started to finish.
func (p *prober) wait() { p.wg.Wait() }

// probe inserts one row through a random server and polls another server
// until the row is visible, the timeout passes or ctx ends (not counted).
func (p *prober) probe(ctx context.Context) {
	series := ProbeMeasurement + ",id=" + strconv.FormatInt(p.ids.Add(1), 10) + ",run=" + p.runID
	t := time.Now().UnixNano()
	i := rand.IntN(len(p.servers))
	r := p.cl.write(ctx, p.servers[i].URL, p.table, []byte(series+" v=1 "+strconv.FormatInt(t, 10)+"\n"), p.smear)
	if ctx.Err() != nil {
		return
	}
	if !r.ok() {
		p.count(func() { p.mu.errors++ })
		return
	}
	acked := time.Now()
	query := p.servers[(i+1)%len(p.servers)].URL
	for {
		n, err := p.cl.queryCount(ctx, query, p.table, series, t, t+1)
		if ctx.Err() != nil {
			return
		}
		if err == nil && n > 0 {
			d := time.Since(acked)
			p.count(func() { p.mu.delays.Record(d) })
			return
		}
		if time.Since(acked) > p.timeout {
			p.count(func() {
				p.mu.timedOut++
				p.mu.late = append(p.mu.late, lateProbe{query: query, series: series, t: t})
			})
			return
		}
		if sleepCtx(ctx, probePoll) != nil {
			return
		}
	}
}

// recheck queries once more, through the same servers, every probe that
// timed out, and counts those visible now (late) and those still not
// (missing: late past the run's drain, or lost). Call it after wait.
func (p *prober) recheck(ctx context.Context) {
	p.mu.Lock()
	late := p.mu.late
	p.mu.Unlock()
	for _, l := range late {
		n, err := p.cl.queryCount(ctx, l.query, p.table, l.series, l.t, l.t+1)
		if ctx.Err() != nil {
			return
		}
		if err == nil && n > 0 {
			p.seenLate++
		} else {
			p.missing++
		}
	}
}

// count counts one finished probe and applies f under the lock.
func (p *prober) count(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.probes++
	f()
}

// result summarises the finished probes.
func (p *prober) result() Visibility {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := &p.mu.delays
	return Visibility{
		Probes: p.mu.probes, Visible: int(h.Count()), TimedOut: p.mu.timedOut, Errors: p.mu.errors,
		SeenLate: p.seenLate, Missing: p.missing,
		P50Ms: ms(h.Quantile(0.5)), P99Ms: ms(h.Quantile(0.99)), MaxMs: ms(h.Max()),
	}
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
