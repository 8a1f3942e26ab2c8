package smear

import (
	"math"
	"slices"
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
	// capacityDecay is the time constant with which the capacity
	// estimate decays while the forwarder is not saturated, down to
	// idleMargin times the current forward rate (and at least the
	// initial rate): a capacity proven long ago (before another load
	// took the machine, or a replica set became write-limited) is not
	// trusted forever.
	capacityDecay = 2 * time.Minute
	idleMargin    = 1.5
	// drainShare is the share of its forward rate a forwarder that works
	// off a backlog with nothing accepted proves for certain: such a
	// forwarder forwards two to three times what it can while it also
	// accepts and writes new rows, so a quarter of it is a rate it keeps
	// under load (see admission.update).
	drainShare = 4
	// maxLag is the backlog, in seconds of forwarding at the current
	// rate, past which rows overdue close admission even when the queue
	// does not accept faster than it forwards (a backlog that holds
	// steady is a lag that does not go away).
	maxLag = 2.0
	// minSlotRows is the least budget of one second of due times.
	minSlotRows = 1000
	// acceptProbe bounds the rows accepted in one tick, once the
	// forwarder was seen saturated, to this many times the capacity
	// estimate. At a steady load the queue accepts what it forwards; the
	// bound is for a queue with room in every due second (idle, or just
	// reopened): without it a burst takes max_delay's worth of the due
	// budget within a second or two, and accepting it takes the CPU the
	// forwarder needs as the first of those rows fall due.
	acceptProbe = probe
	// recoveryProbe replaces acceptProbe while the estimate is below the
	// forwarder's recent peak (admission.recovering): a capacity the
	// forwarder proved within the last minutes is found again as fast as
	// the forwarder proves it, not a quarter at a time. The due budget
	// still bounds the rows due in every second by the estimate.
	recoveryProbe = slowStartProbe
	// widespreadFailures is the number of failing partitions from which
	// the rows retrying count as behind (see admission.failedParts).
	widespreadFailures = 2
	// widespreadLate is the number of partitions from which the rows of
	// forward calls late in the forwarder's hands count as behind (see
	// admission.calls).
	widespreadLate = 2
	// directWindow is the time constant of the direct rate's EWMA
	// (admission.directRate): long enough that the rate a burst of
	// direct inserts reaches is not taken for one the server sustains (a
	// fresh table's first seconds were measured at up to three times its
	// later rate: docs/performance.md, "Persisted once, and the cut-over
	// to smearing"); a 10 s burst at twice a steady rate lifts it by a
	// quarter.
	directWindow = 30 * time.Second
)

// trackedCall is admission's record of one planned forward call, from its
// plan to its end: the call's partition, its rows, and the latest due
// time among them. A call whose latest row is overdue (due more than
// OverdueAfter ago) while it waits for a slot or is in flight is late.
type trackedCall struct {
	part partKey
	rows int64
	due  int64
}

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
	// inflight counts the rows of entries a forwarder loaded (in a
	// call, or waiting for one), retrying the rows of entries written
	// back after a failed forward and not loaded: neither is in a
	// bucket nor ever overdue (an unavailable partition must not close
	// admission: refusing inserts would not make it writable).
	inflight, retrying int64
	// accepted counts rows enqueued since lastTick; forwarded rows gone
	// from the queue after an accepted forward (not discarded ones);
	// handled rows settled, requeued ones included (the behind rule
	// compares it with accepted: a requeued row was dealt with, not left
	// waiting).
	accepted, forwarded, handled int64
	// acceptRate, forwardRate and handleRate are their EWMAs, rows/s.
	acceptRate, forwardRate, handleRate float64
	// calls holds the forward calls planned and not ended (waiting for
	// a slot, or in flight), except probes of failing partitions.
	// lateInFlight is, as of the last tick, the rows of those whose
	// latest row is overdue, once they span widespreadLate partitions or
	// more: rows the forwarder loaded on time and has not delivered, as
	// when every replica set of the present confirms slowly. They count
	// with the overdue rows. Calls late to one partition only do not (a
	// partition splitting or catching up must not close admission for
	// the whole server), nor do probes of a failing partition (its
	// unavailability is not the forwarder's capacity).
	calls        map[*trackedCall]struct{}
	lateInFlight int64
	// failingCalls counts the forward calls in flight to partitions
	// whose last call failed; failedTick is set when a call failed since
	// the last tick. While either holds, rows overdue may be the doing
	// of an unavailable partition (calls held until their ack timeout),
	// not of the forwarder's capacity: they neither mark it saturated
	// nor lower the estimate.
	failingCalls int64
	failedTick   bool
	// failedParts counts the partitions whose last forward call failed
	// (Forwarder.release). Rows written back after a failed forward are
	// not overdue while one partition fails (an unavailable partition
	// must not close admission), but from widespreadFailures partitions
	// on, while they grow (retryGrowing), they count as behind: forwards
	// failing all over (replica sets that cannot confirm within their ack
	// timeout, as when replication lags behind the load) are a cluster
	// over its capacity, and rows acknowledged meanwhile would wait for
	// it.
	failedParts int64
	// retryingAtTick is retrying at the last tick; retryGrowing says it
	// grew by more than minSlotRows in that tick.
	retryingAtTick int64
	retryGrowing   bool
	// floor is the least capacity estimate while not saturated
	// (Options.InitialForwardRate).
	floor float64
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
	// peak is the highest estimate of the last minutes: the estimate
	// itself, or an older peak decaying with capacityDecay. An estimate
	// below it is recovering (a stall lowered it; see recovering).
	peak float64
	// direct counts the rows the server wrote straight to their
	// partitions since lastTick (Queue.NoteDirect: inserts not smeared);
	// directRate is its EWMA (time constant directWindow), directPeak
	// the highest directRate of the last minutes, decaying with
	// capacityDecay. The forwarder writes through the same path (the
	// router's insert, at the same consistency), so a rate the server
	// wrote directly is one it has proven it writes: until the forwarder
	// is seen saturated, the estimate is at least directPeak (the
	// direct prior). Without it a queue that starts smearing under a
	// load its server took directly a moment before (the present's
	// partition became narrow) starts from InitialForwardRate, and the
	// slow start takes a minute to find the rate (about 1,600 to 24,000
	// rows/s per server in the load test; docs/smearing.md).
	direct                 int64
	directRate, directPeak float64
	// primed says the direct prior raised the estimate while the
	// forwarder had not been seen saturated (cleared once it is, or once
	// the estimate decays to floor): a rate proven by the write path,
	// probed above by probe and bounded in accepts by acceptProbe as a
	// measured one is (measured), not doubled as in a slow start from a
	// guess.
	primed bool
}

func newAdmission(o *Options) admission {
	return admission{
		tick: int64(o.AdmitTick), window: int64(o.RateWindow),
		overdueAfter: int64(o.OverdueAfter), behindFor: int64(o.BehindFor),
		boundary: math.MinInt64, future: make(map[int64]int64),
		calls:    make(map[*trackedCall]struct{}),
		capacity: o.InitialForwardRate, floor: o.InitialForwardRate,
	}
}

// slotBudget is how many rows may be due in one bucket: the estimated
// capacity over a tick, with the probe's headroom for the buckets due
// within probeTicks of now (near).
func (a *admission) slotBudget(near bool) int64 {
	f := headroom
	if a.probing(near) {
		f = a.probeFactor()
	}
	return max(int64(a.capacity*f*float64(a.tick)/float64(time.Second)), minSlotRows)
}

// probing reports whether a bucket's budget probes above the estimate: a
// near bucket while nothing is overdue or late.
func (a *admission) probing(near bool) bool {
	return near && a.overdue+a.lateInFlight == 0
}

// probeFactor is the near buckets' multiple of the estimate while they
// probe: slowStartProbe until the estimate is measured, probe
// afterwards.
func (a *admission) probeFactor() float64 {
	if a.measured() {
		return probe
	}
	return slowStartProbe
}

// measured reports whether the estimate stands on a measure: the
// forwarder was seen saturated, or the direct prior raised it (primed).
// Before that it is a guess (InitialForwardRate) or what a slow start
// proved so far.
func (a *admission) measured() bool { return a.saturated || a.primed }

// tickRows is the estimate's worth of rows over one tick.
func (a *admission) tickRows() int64 {
	return int64(a.capacity * float64(a.tick) / float64(time.Second))
}

// withEntry raises limit, a probe's bound on rows, so that entries of n
// rows reach at least one whole entry beyond the estimate's worth of a
// tick (tickRows + 2n − 1 holds a multiple of n of at least tickRows +
// n). An entry counts for at most the estimate's worth, so that the
// bound stays under three times the estimate: an insert larger than
// that is taken only as a bucket's or a tick's first.
//
// A probe proves a rate above the estimate only if it lets more rows
// through than the estimate, and entries come whole: with entries as
// large as the probe's margin (the load test's inserts of 1,000 rows,
// against an estimate of 1,000 to 4,000 rows/s and a margin of a quarter)
// the bound let no more than the estimate's worth of entries through
// every tick, the forward rate could not rise above the estimate, and the
// estimate never grew (a server of the load test held at 1,000 rows/s for
// a whole run; TestAdmissionGrowsWithLargeEntries, TestProbeOfWholeEntries).
func (a *admission) withEntry(limit, n int64) int64 {
	x := a.tickRows()
	return max(limit, x+2*min(n, x)-1)
}

// recovering reports whether the estimate is below the forwarder's recent
// peak: a stall (a split storm, replica sets that confirmed slowly for a
// few seconds) lowers the estimate to what the forwarder delivered
// meanwhile, and admission lets it grow back faster than a new capacity
// is probed (recoveryProbe, and a slow start after a closure that emptied
// the queue, in reset).
func (a *admission) recovering() bool { return a.capacity < a.peak }

// acceptFull reports whether n more rows would take the rows accepted in
// the current tick over acceptFactor times the capacity estimate, or over
// one whole entry of n rows beyond the estimate when that is more
// (withEntry), once the estimate is measured (before, it is below the
// truth and the due budget's slow start finds it). The first entry of a
// tick is always taken, however large.
func (a *admission) acceptFull(n int64) bool {
	if !a.measured() || a.accepted == 0 {
		return false
	}
	return a.accepted+n > a.withEntry(a.acceptLimit(), n)
}

// acceptLimit is the most rows acceptFull lets in during one tick:
// acceptFactor times the estimate.
func (a *admission) acceptLimit() int64 {
	return max(int64(a.acceptFactor()*a.capacity*float64(a.tick)/float64(time.Second)), minSlotRows)
}

// acceptFactor is the accept bound's multiple of the estimate:
// acceptProbe, recoveryProbe while recovering.
func (a *admission) acceptFactor() float64 {
	if a.recovering() {
		return recoveryProbe
	}
	return acceptProbe
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
	if have == 0 {
		return false
	}
	near := due-now <= probeTicks*a.tick
	budget := a.slotBudget(near)
	if a.probing(near) {
		budget = a.withEntry(budget, n)
	}
	return have+n > budget
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

// add counts n rows due at due (an enqueue, a requeue, a replayed entry);
// retry says they were written back after a failed forward.
func (a *admission) add(due, n int64, retry bool) {
	if retry {
		a.retrying += n
		return
	}
	if b := a.bucket(due); a.isOverdue(b) {
		a.overdue += n
	} else {
		a.future[b] += n
	}
}

// remove uncounts n rows due at due (settled, quarantined, or loaded by
// the forwarder).
func (a *admission) remove(due, n int64, retry bool) {
	if retry {
		a.retrying = max(a.retrying-n, 0)
		return
	}
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

// load moves n rows due at due from their bucket to the in-flight count:
// a forwarder loaded their entry.
func (a *admission) load(due, n int64, retry bool) {
	a.remove(due, n, retry)
	a.inflight += n
}

// unload moves them back: the forwarder gave their entry up unsettled.
func (a *admission) unload(due, n int64, retry bool) {
	a.inflight = max(a.inflight-n, 0)
	a.add(due, n, retry)
}

// reset forgets every row: the queue is empty (a safety net against a
// count that went wrong). Admission opens: nothing is left to be late.
// It reports whether admission was closed.
func (a *admission) reset() bool {
	a.overdue, a.inflight, a.retrying, a.lateInFlight = 0, 0, 0, 0
	clear(a.future)
	clear(a.calls)
	wasClosed := a.closed
	a.closed, a.behindSince = false, 0
	if wasClosed && a.recovering() {
		// A closure that ends with the queue empty forwarded every row,
		// and no due second holds any: what it measured was the stall,
		// not the forwarder, so probe as from the start (the due budget's
		// slow start, without the accept bound). Without this an estimate
		// lowered to a fraction of the truth grew back by a quarter every
		// few seconds, for minutes. The direct prior, if any, primes the
		// estimate again at the next tick.
		a.saturated, a.primed = false, false
	}
	return wasClosed
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
	nowEmpty // opened because the queue is empty
)

// update runs a tick at now if one is due: updates the rates, the overdue
// count, and (when closing, i.e. admission is on) the admission state. It
// returns what changed.
func (a *admission) update(now int64, closing bool) transition {
	if a.lastTick == 0 {
		a.lastTick = now
		a.advance(now - a.overdueAfter)
		return unchanged
	}
	if now < a.lastTick {
		return a.stepBack(now, closing)
	}
	dt := now - a.lastTick
	if dt < a.tick {
		return unchanged
	}
	secs := float64(dt) / float64(time.Second)
	alpha := 1 - math.Exp(-float64(dt)/float64(a.window))
	a.acceptRate += alpha * (float64(a.accepted)/secs - a.acceptRate)
	a.forwardRate += alpha * (float64(a.forwarded)/secs - a.forwardRate)
	a.handleRate += alpha * (float64(a.handled)/secs - a.handleRate)
	a.directRate += (1 - math.Exp(-float64(dt)/float64(directWindow))) * (float64(a.direct)/secs - a.directRate)
	a.directPeak = max(a.directRate, a.directPeak*math.Exp(-float64(dt)/float64(capacityDecay)))
	a.accepted, a.forwarded, a.handled, a.direct = 0, 0, 0, 0
	a.lastTick = now
	a.advance(now - a.overdueAfter)
	a.lateInFlight = a.countLateCalls()
	late := a.overdue + a.lateInFlight
	failing := a.failingCalls > 0 || a.failedTick
	a.failedTick = false
	// proven is the forward rate as a measure of capacity: no more than
	// the queue accepted meanwhile, or the estimate already says. A
	// server that only forwards, working off a backlog with nothing
	// accepted (admission closed, the load gone), forwards two to three
	// times what it can while it also accepts and writes new rows; such
	// a tick raises the estimate to a quarter of its forward rate
	// (drainShare) at most. Without that floor an estimate that a stall
	// lowered stayed there through the drain that followed.
	proven := max(min(a.forwardRate, max(a.capacity, a.acceptRate)), a.forwardRate/drainShare)
	switch {
	case late > 0 && failing:
		// Overdue, but calls are failing: not a measure of capacity.
	case late > 0:
		// Saturated: what it forwards is what it can (falling by at
		// most half per tick, so that one stalled call does not
		// collapse the estimate at once).
		a.capacity = max(proven, a.capacity/2, minSlotRows)
		a.saturated, a.primed = true, false
	default:
		// Not saturated: the forwarder proved at least its forward
		// rate; an older, higher estimate decays slowly towards
		// idleMargin times it (a capacity that dropped is found
		// again by the saturated rule above once rows are overdue).
		decayed := a.capacity * math.Exp(-float64(dt)/float64(capacityDecay))
		a.capacity = max(proven, min(a.capacity, max(decayed, idleMargin*a.forwardRate, a.floor)))
		if a.capacity <= a.floor {
			// Decayed to where it started (idle): slow start again,
			// without the accept bound, as before any measure (or
			// primed again by the direct prior, below).
			a.saturated, a.primed = false, false
		}
	}
	if !a.saturated && a.directPeak > a.capacity {
		// The direct prior: the server wrote this many rows per
		// second itself through the path the forwarder takes.
		a.capacity, a.primed = a.directPeak, true
	}
	a.peak = max(a.capacity, a.peak*math.Exp(-float64(dt)/float64(capacityDecay)))
	// Rows retrying count as behind (with failures widespread) only while
	// they grow: under overload, forwards into the present's partitions
	// keep failing and their rows pile up; rows of partitions that stay
	// unavailable cycle through their retries without growing (new
	// smeared rows go to the present's partitions), and must not keep
	// admission closed.
	a.retryGrowing = a.retrying > a.retryingAtTick+minSlotRows
	a.retryingAtTick = a.retrying
	if !closing {
		return unchanged
	}
	return a.evaluate(now)
}

// stepBack re-bases the state on a clock stepped backwards (an NTP
// correction): the rates wait for a full tick of the new clock, the
// behind stretch starts over, and the rows counted overdue go back to the
// bucket of the old boundary (they are not overdue by the new clock; the
// counts are exact again once the queue is empty). Admission then opens if
// nothing is overdue.
func (a *admission) stepBack(now int64, closing bool) transition {
	a.lastTick, a.behindSince = now, 0
	a.accepted, a.forwarded, a.handled = 0, 0, 0
	if nb := now - a.overdueAfter; a.boundary != math.MinInt64 && nb < a.boundary {
		if a.overdue > 0 {
			a.future[a.boundary/a.tick] += a.overdue
			a.overdue = 0
		}
		a.boundary = nb
	}
	if !closing {
		return unchanged
	}
	return a.evaluate(now)
}

// behindRows is the backlog the closing rule looks at: the overdue rows,
// and the rows retrying when forwards fail in widespreadFailures
// partitions or more and the rows retrying grew in the last tick.
func (a *admission) behindRows() int64 {
	rows := a.overdue + a.lateInFlight
	if a.failedParts >= widespreadFailures && a.retryGrowing {
		rows += a.retrying
	}
	return rows
}

// countLateCalls returns the rows of the tracked calls whose latest row
// is overdue, or 0 when those calls go to fewer than widespreadLate
// partitions.
func (a *admission) countLateCalls() int64 {
	var rows int64
	var parts []partKey
	for c := range a.calls {
		if !a.isOverdue(a.bucket(c.due)) {
			continue
		}
		rows += c.rows
		if len(parts) < widespreadLate && !slices.Contains(parts, c.part) {
			parts = append(parts, c.part)
		}
	}
	if len(parts) < widespreadLate {
		return 0
	}
	return rows
}

// evaluate applies the closing and opening rules at now.
func (a *admission) evaluate(now int64) transition {
	backlog := a.behindRows()
	if a.closed {
		if backlog == 0 {
			a.closed, a.behindSince = false, 0
			return nowOpen
		}
		return unchanged
	}
	// Behind: rows are overdue, and the queue takes rows in faster than
	// it forwards them, so the backlog is bound to grow, or the backlog
	// is more than maxLag seconds of forwarding.
	lagging := float64(backlog) > maxLag*a.handleRate
	if backlog == 0 || (a.acceptRate <= a.handleRate && !lagging) {
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
	if a.handleRate > 0 {
		d = min(d, time.Duration(float64(a.behindRows())/a.handleRate*float64(time.Second)))
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
	// InFlightRows counts the rows of entries the forwarder loaded,
	// RetryingRows those written back after a failed forward (neither
	// is ever overdue).
	InFlightRows, RetryingRows int64
	// LateInFlightRows counts, as of the last tick, the rows of forward
	// calls (waiting for a slot or in flight) whose latest row is
	// overdue, when such calls go to two partitions or more; they count
	// as behind with OverdueRows.
	LateInFlightRows int64
	// AcceptRate and ForwardRate are the EWMAs of rows enqueued and
	// forwarded per second; HandleRate of rows settled, requeued ones
	// included.
	AcceptRate, ForwardRate, HandleRate float64
	// Capacity is the estimated forward capacity, rows/s, and SlotRows
	// the rows admission lets fall due within one tick (AdmitTick) more
	// than two ticks ahead.
	Capacity float64
	SlotRows int64
	// DirectRate is the EWMA of rows written straight to their
	// partitions per second (NoteDirect), and Primed reports that its
	// recent peak set the estimate before the forwarder was seen
	// saturated (the direct prior).
	DirectRate float64
	Primed     bool
}

// Admission returns the queue's admission state, after a tick if one is
// due.
func (q *Queue) Admission() AdmissionState {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tickLocked()
	a := &q.mu.adm
	return AdmissionState{Closed: a.closed, OverdueRows: a.overdue, InFlightRows: a.inflight, RetryingRows: a.retrying,
		LateInFlightRows: a.lateInFlight, AcceptRate: a.acceptRate, ForwardRate: a.forwardRate, HandleRate: a.handleRate,
		Capacity: a.capacity, SlotRows: a.slotBudget(false), DirectRate: a.directRate, Primed: a.primed}
}

// NoteDirect counts rows this server wrote straight to their partitions
// (an insert, or its part, not smeared, once written): the direct rate,
// whose recent peak is the capacity estimate's least value until the
// forwarder is seen saturated (see admission.direct). It is one atomic
// add, on the insert path; the next tick (the forwarder's Run takes one
// every poll) counts the rows.
func (q *Queue) NoteDirect(rows int) { q.direct.Add(int64(rows)) }

// noteFailing counts a call to a failing partition starting (+1) or
// ending (-1); 0 records that a call failed.
func (q *Queue) noteFailing(delta int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	a := &q.mu.adm
	if delta == 0 {
		a.failedTick = true
		return
	}
	a.failingCalls = max(a.failingCalls+delta, 0)
}

// trackCall starts counting a planned forward call's rows for the late
// rule (see admission.calls), untrackCall stops: the call ended, was given
// up, held, or became a probe of a failing partition. Untracking twice is
// harmless.
func (q *Queue) trackCall(c *trackedCall) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.adm.calls[c] = struct{}{}
}

func (q *Queue) untrackCall(c *trackedCall) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.mu.adm.calls, c)
}

// noteFailedParts records how many partitions' last forward call failed.
func (q *Queue) noteFailedParts(n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.adm.failedParts = int64(n)
}

// tick advances the admission state if a tick is due.
func (q *Queue) tick() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tickLocked()
}

// tickLocked takes the rows NoteDirect counted, advances the admission
// state if a tick is due and updates the metrics. With admission off
// (Options.NoAdmission) the rates, the counts and the estimate are still
// kept (and exported); only the closing rule is skipped.
func (q *Queue) tickLocked() {
	a := &q.mu.adm
	a.direct += q.direct.Swap(0)
	q.noteTransition(a.update(q.now().UnixNano(), !q.opts.NoAdmission))
}

// noteTransition logs a change of the admission state and updates the
// metrics.
func (q *Queue) noteTransition(tr transition) {
	a := &q.mu.adm
	switch tr {
	case nowClosed:
		q.metrics.admissionClosings.Inc()
		q.log.Warn("smear: forwarding is behind; refusing new smeared inserts until the overdue rows are forwarded",
			"overdue_rows", a.overdue, "late_in_flight_rows", a.lateInFlight, "retrying_rows", a.retrying, "failing_partitions", a.failedParts,
			"accept_rows_per_s", int64(a.acceptRate), "forward_rows_per_s", int64(a.forwardRate))
	case nowOpen:
		q.log.Info("smear: overdue rows forwarded; admitting smeared inserts again",
			"forward_rows_per_s", int64(a.forwardRate))
	case nowEmpty:
		q.log.Info("smear: queue empty; admitting smeared inserts again")
	}
	q.metrics.capacity.Set(a.capacity)
	q.metrics.acceptRate.Set(a.acceptRate)
	q.metrics.forwardRate.Set(a.forwardRate)
	q.metrics.directRate.Set(a.directRate)
	q.metrics.overdueRows.Set(float64(a.overdue))
	q.metrics.lateInFlightRows.Set(float64(a.lateInFlight))
	closed := 0.0
	if a.closed {
		closed = 1
	}
	q.metrics.admissionClosed.Set(closed)
}
