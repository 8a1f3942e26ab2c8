package smear

import (
	"math"
	"time"
)

// Admission control: a queue whose forwarder falls behind refuses new
// smeared inserts (ErrBehind, answered 503 queue_full with Retry-After)
// instead of letting its due rows age past max_delay. See doc.go,
// "Admission".
//
// The state lives in Queue.mu and is advanced by tick, called lazily by
// every Enqueue, every settle and the forwarder's Run loop: no goroutine
// of its own, and a fake clock (Options.Now) drives it in tests.

// Defaults of the admission options.
const (
	// DefaultAdmitTick is the period of the rate measurements.
	DefaultAdmitTick = time.Second
	// DefaultRateWindow is the time constant of the rates' EWMA.
	DefaultRateWindow = 2 * time.Second
	// DefaultOverdueAfter is how long past its due time a queued row
	// counts as overdue.
	DefaultOverdueAfter = 2 * time.Second
	// DefaultBehindFor is how long the forwarder must stay behind before
	// admission closes.
	DefaultBehindFor = 3 * time.Second
	// maxBehindRetryAfter caps the Retry-After suggested while closed.
	maxBehindRetryAfter = 10 * time.Second
	// DefaultInitialForwardRate is the forward rate admission assumes
	// before it has measured one, rows/s.
	DefaultInitialForwardRate = 1_000
	// slowStartProbe and probe are how far the rows due in one second
	// of the next probeTicks ticks may exceed the estimated forward
	// capacity while nothing is overdue: twice until the forwarder was
	// first seen saturated (the estimate then grows as fast as the
	// forwarder proves it), a quarter afterwards. Later seconds, and
	// every second while rows are overdue, get headroom of the estimate:
	// rows due then come at a rate the forwarder has shown it keeps, with
	// room to work off a backlog, and only a probe's worth (probeTicks
	// seconds of the excess) can be late.
	slowStartProbe = 2.0
	probe          = 1.25
	headroom       = 0.8
	probeTicks     = 2
	// maxLag is the backlog, in seconds of forwarding at the current
	// rate, past which rows overdue close admission even when the queue
	// does not accept faster than it forwards (a backlog that holds
	// steady is a lag that does not go away).
	maxLag = 2.0
	// minSlotRows is the least budget of one second of due times.
	minSlotRows = 1000
)

// admission is the queue's admission state (guarded by Queue.mu).
type admission struct {
	tick, window, overdueAfter, behindFor int64 // ns; see Options

	// lastTick is when the rates were last updated (0: never).
	lastTick int64
	// boundary: rows due at or before it (bucket end) count as overdue.
	boundary int64
	// future holds the rows due after boundary, by bucket: bucket b holds
	// the rows due in ((b-1)·tick, b·tick].
	future map[int64]int64
	// overdue counts the queued rows due at or before boundary.
	overdue int64
	// accepted and forwarded count rows since lastTick: enqueued, and
	// gone from the queue after an accepted forward.
	accepted, forwarded int64
	// acceptRate and forwardRate are their EWMAs, rows/s.
	acceptRate, forwardRate float64
	// behindSince is when the forwarder was first seen behind in the
	// current stretch (0: not behind).
	behindSince int64
	// closed: new smeared inserts are refused.
	closed bool
	// capacity estimates the rows/s the forwarder can forward: the
	// forward rate while it is saturated (rows overdue), and the highest
	// forward rate seen otherwise. saturated says it has been measured
	// so at least once.
	capacity  float64
	saturated bool
}

func newAdmission(o *Options) admission {
	return admission{
		tick: int64(o.AdmitTick), window: int64(o.RateWindow),
		overdueAfter: int64(o.OverdueAfter), behindFor: int64(o.BehindFor),
		boundary: math.MinInt64, future: make(map[int64]int64),
		capacity: o.InitialForwardRate,
	}
}

// slotBudget is how many rows may be due in one bucket: the estimated
// capacity over a tick, with the probe's headroom for the buckets due
// within probeTicks of now (near).
func (a *admission) slotBudget(near bool) int64 {
	f := headroom
	switch {
	case !near || a.overdue > 0:
	case a.saturated:
		f = probe
	default:
		f = slowStartProbe
	}
	return max(int64(a.capacity*f*float64(a.tick)/float64(time.Second)), minSlotRows)
}

// slotFull reports whether n more rows due at due would take their
// bucket over its budget at now. A bucket always takes one entry, however
// large, and rows already overdue are never refused here (the closing
// rule covers them).
func (a *admission) slotFull(now, due, n int64) bool {
	b := a.bucket(due)
	if a.isOverdue(b) {
		return false
	}
	have := a.future[b]
	return have > 0 && have+n > a.slotBudget(due-now <= probeTicks*a.tick)
}

// bucket returns the bucket of a due time: ceil(due / tick).
func (a *admission) bucket(due int64) int64 {
	b := due / a.tick
	if due%a.tick > 0 {
		b++
	}
	return b
}

// isOverdue reports whether the rows of bucket b are counted as overdue.
func (a *admission) isOverdue(b int64) bool {
	return a.boundary != math.MinInt64 && b <= a.boundary/a.tick
}

// add counts n rows due at due (an enqueue, a requeue, a replayed entry).
func (a *admission) add(due, n int64) {
	if b := a.bucket(due); a.isOverdue(b) {
		a.overdue += n
	} else {
		a.future[b] += n
	}
}

// remove uncounts n rows due at due (settled or quarantined).
func (a *admission) remove(due, n int64) {
	b := a.bucket(due)
	if a.isOverdue(b) {
		a.overdue = max(a.overdue-n, 0)
		return
	}
	if left := a.future[b] - n; left > 0 {
		a.future[b] = left
	} else {
		delete(a.future, b)
	}
}

// reset forgets every row: the queue is empty (a safety net against a
// count that went wrong, which would keep admission closed).
func (a *admission) reset() {
	a.overdue = 0
	clear(a.future)
}

// advance moves the buckets due at or before boundary into overdue.
func (a *admission) advance(boundary int64) {
	if boundary <= a.boundary {
		return
	}
	a.boundary = boundary
	limit := boundary / a.tick
	for b, n := range a.future {
		if b <= limit {
			a.overdue += n
			delete(a.future, b)
		}
	}
}

// transition is what a tick changed: admission closed or opened.
type transition int

const (
	unchanged transition = iota
	nowClosed
	nowOpen
)

// update runs a tick at now if one is due: updates the rates, the overdue
// count, and the admission state. It returns what changed.
func (a *admission) update(now int64) transition {
	if a.lastTick == 0 {
		a.lastTick = now
		a.advance(now - a.overdueAfter)
		return unchanged
	}
	dt := now - a.lastTick
	if dt < a.tick {
		return unchanged
	}
	secs := float64(dt) / float64(time.Second)
	alpha := 1 - math.Exp(-float64(dt)/float64(a.window))
	a.acceptRate += alpha * (float64(a.accepted)/secs - a.acceptRate)
	a.forwardRate += alpha * (float64(a.forwarded)/secs - a.forwardRate)
	a.accepted, a.forwarded = 0, 0
	a.lastTick = now
	a.advance(now - a.overdueAfter)
	if a.overdue > 0 {
		// Saturated: what it forwards is what it can (falling by at
		// most half per tick, so that one stalled call does not
		// collapse the estimate at once).
		a.capacity = max(a.forwardRate, a.capacity/2, minSlotRows)
		a.saturated = true
	} else {
		a.capacity = max(a.capacity, a.forwardRate)
	}

	if a.closed {
		if a.overdue == 0 {
			a.closed, a.behindSince = false, 0
			return nowOpen
		}
		return unchanged
	}
	// Behind: rows are overdue, and the queue takes rows in faster than
	// it forwards them, so the backlog is bound to grow, or the backlog
	// is more than maxLag seconds of forwarding.
	lagging := float64(a.overdue) > maxLag*a.forwardRate
	if a.overdue == 0 || (a.acceptRate <= a.forwardRate && !lagging) {
		a.behindSince = 0
		return unchanged
	}
	if a.behindSince == 0 {
		a.behindSince = now
	}
	if now-a.behindSince >= a.behindFor {
		a.closed = true
		return nowClosed
	}
	return unchanged
}

// retryAfter suggests how long a refused client should wait: the time the
// forwarder needs for the overdue rows at its current rate, at most
// maxBehindRetryAfter, at least floor (Options.RetryAfter).
func (a *admission) retryAfter(floor time.Duration) time.Duration {
	if !a.closed {
		return floor
	}
	d := maxBehindRetryAfter
	if a.forwardRate > 0 {
		d = min(d, time.Duration(float64(a.overdue)/a.forwardRate*float64(time.Second)))
	}
	return max(floor, d)
}

// AdmissionState is a snapshot of a queue's admission control, for
// metrics, tests and inspection.
type AdmissionState struct {
	// Closed reports that new smeared inserts are refused with ErrBehind.
	Closed bool
	// OverdueRows counts the queued rows due more than OverdueAfter ago.
	OverdueRows int64
	// AcceptRate and ForwardRate are the EWMAs of rows enqueued and
	// forwarded per second.
	AcceptRate, ForwardRate float64
	// Capacity is the estimated forward capacity, rows/s, and SlotRows
	// the rows admission lets fall due within one tick (AdmitTick) more
	// than two ticks ahead.
	Capacity float64
	SlotRows int64
}

// Admission returns the queue's admission state, after a tick if one is
// due.
func (q *Queue) Admission() AdmissionState {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tickLocked()
	a := &q.mu.adm
	return AdmissionState{Closed: a.closed, OverdueRows: a.overdue, AcceptRate: a.acceptRate, ForwardRate: a.forwardRate,
		Capacity: a.capacity, SlotRows: a.slotBudget(false)}
}

// tick advances the admission state if a tick is due.
func (q *Queue) tick() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tickLocked()
}

func (q *Queue) tickLocked() {
	a := &q.mu.adm
	if q.opts.NoAdmission {
		return
	}
	switch a.update(q.now().UnixNano()) {
	case nowClosed:
		q.metrics.admissionClosings.Inc()
		q.log.Warn("smear: forwarding is behind; refusing new smeared inserts until the overdue rows are forwarded",
			"overdue_rows", a.overdue, "accept_rows_per_s", int64(a.acceptRate), "forward_rows_per_s", int64(a.forwardRate))
	case nowOpen:
		q.log.Info("smear: overdue rows forwarded; admitting smeared inserts again",
			"forward_rows_per_s", int64(a.forwardRate))
	}
	q.metrics.capacity.Set(a.capacity)
	q.metrics.acceptRate.Set(a.acceptRate)
	q.metrics.forwardRate.Set(a.forwardRate)
	q.metrics.overdueRows.Set(float64(a.overdue))
	closed := 0.0
	if a.closed {
		closed = 1
	}
	q.metrics.admissionClosed.Set(closed)
}
