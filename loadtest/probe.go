package loadtest

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tsdb/tsdb/http/api"
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
	start   time.Time      // the measurement's start, origin of the records' times
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
		// each is every finished probe, in the order they finished.
		each []ProbeRecord
	}
	// seenLate counts the timed-out probes recheck found visible;
	// missing names those it did not.
	seenLate int
	missing  []string
}

// lateProbe is a probe that timed out: what to look for again.
type lateProbe struct {
	series string
	t      int64
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
	rec := ProbeRecord{Via: p.servers[i].ID, Sent: secondsSince(p.start, time.Unix(0, t))}
	if !r.ok() {
		rec.Outcome = "error"
		p.count(rec, func() { p.mu.errors++ })
		return
	}
	acked := time.Now()
	rec.Acked = secondsSince(p.start, acked)
	query := p.servers[(i+1)%len(p.servers)].URL
	// The row is polled at the default read consistency (one replica,
	// which may lag by the replication delay) and at quorum (every row a
	// quorum acknowledged): the first is what the report's delays are,
	// the second tells a forward that came late from a replica that did.
	// The quorum read is repeated only every quorumPoll: each one makes
	// the partition's other replicas push to the one asked and wait for
	// its confirmation (a catch-up request to each), and a smeared probe
	// is polled for up to max_delay, so at probePoll the probes' quorum
	// reads became a load of their own on the hot partition, one the
	// smear-off phase, whose probes are seen within a second, hardly had.
	one, quorum := time.Duration(-1), time.Duration(-1)
	var quorumAsked time.Time
	for {
		for _, c := range []struct {
			seen        *time.Duration
			consistency string
		}{{&quorum, api.ConsistencyQuorum}, {&one, ""}} {
			if *c.seen >= 0 {
				continue
			}
			if c.consistency == api.ConsistencyQuorum {
				if time.Since(quorumAsked) < quorumPoll {
					continue
				}
				quorumAsked = time.Now()
			}
			n, err := p.cl.queryCount(ctx, query, p.table, series, t, t+1, c.consistency)
			if ctx.Err() != nil {
				return
			}
			if err == nil && n > 0 {
				*c.seen = time.Since(acked)
			}
		}
		if quorum >= 0 {
			rec.QuorumDelayMs = ms(quorum)
		}
		timedOut := time.Since(acked) > p.timeout
		if one >= 0 && (quorum >= 0 || timedOut) {
			rec.Outcome, rec.DelayMs = "visible", ms(one)
			p.count(rec, func() { p.mu.delays.Record(one) })
			return
		}
		if timedOut {
			rec.Outcome = "timed_out"
			p.count(rec, func() {
				p.mu.timedOut++
				p.mu.late = append(p.mu.late, lateProbe{series: series, t: t})
			})
			return
		}
		if sleepCtx(ctx, probePoll) != nil {
			return
		}
	}
}

// recheck looks again, after the drain, for every probe that timed out:
// through every server, once a second, until it is visible or one more
// probe timeout has passed. It counts those seen (late) and those still
// not visible (missing: later still, or lost), and names the missing
// ones. Call it after wait.
func (p *prober) recheck(ctx context.Context) {
	if ctx.Err() != nil {
		return // interrupted: nothing to say about them
	}
	p.mu.Lock()
	left := slices.Clone(p.mu.late)
	p.mu.Unlock()
	late := len(left)
	deadline := time.Now().Add(p.timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for len(left) > 0 && ctx.Err() == nil {
		left = slices.DeleteFunc(left, func(l lateProbe) bool { return p.visibleAnywhere(ctx, l) })
		if len(left) == 0 || time.Now().After(deadline) || sleepCtx(ctx, time.Second) != nil {
			break
		}
	}
	p.missing = nil
	for _, l := range left {
		p.missing = append(p.missing, l.series)
	}
	p.seenLate = late - len(left)
}

// visibleAnywhere reports whether a query through any server returns the
// probe's row (false once ctx ends).
func (p *prober) visibleAnywhere(ctx context.Context, l lateProbe) bool {
	for _, srv := range p.servers {
		if ctx.Err() != nil {
			return false
		}
		if n, err := p.cl.queryCount(ctx, srv.URL, p.table, l.series, l.t, l.t+1, ""); err == nil && n > 0 {
			return true
		}
	}
	return false
}

// count counts one finished probe, keeps its record and applies f under
// the lock.
func (p *prober) count(rec ProbeRecord, f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.probes++
	p.mu.each = append(p.mu.each, rec)
	f()
}

// secondsSince is t's offset from start in seconds.
func secondsSince(start, t time.Time) float64 { return t.Sub(start).Seconds() }

// result summarises the finished probes.
func (p *prober) result() Visibility {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := &p.mu.delays
	return Visibility{
		Probes: p.mu.probes, Visible: int(h.Count()), TimedOut: p.mu.timedOut, Errors: p.mu.errors,
		SeenLate: p.seenLate, Missing: len(p.missing), MissingSeries: p.missing,
		P50Ms: ms(h.Quantile(0.5)), P99Ms: ms(h.Quantile(0.99)), MaxMs: ms(h.Max()),
		Each: slices.Clone(p.mu.each),
	}
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
