package smear

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tsdb/tsdb/internal/backoff"
	"github.com/tsdb/tsdb/model"
)

// Sender forwards smeared rows to their partitions. The node implements it:
// it routes each row by the METADATA current at the moment of the call (so
// a split since the enqueue is handled) and inserts it with its existing
// version. Forwarding a row twice is harmless, since the merge keeps the
// higher version per field.
type Sender interface {
	// Forward inserts rows, all of table. It returns a nil error and
	// either a nil rowErrs (every row accepted) or one error per row, nil
	// for a row that was accepted; or a non-nil error when no row was
	// accepted. "Accepted" means the row needs no further forwarding:
	// normally that its partition stored it as an insert is acknowledged;
	// the Sender may also report a row of a dropped table as accepted,
	// since the forwarder otherwise retries a row forever. Forward may
	// keep rows after it returns; the forwarder does not reuse them.
	Forward(ctx context.Context, table string, rows []model.Row) (rowErrs []error, err error)
}

// Partitioner is implemented by a Sender that can tell where rows go: the
// forwarder then routes the due rows of a pass once, groups them by
// destination partition and sends each group as its own calls, several
// in flight, so that a call is one partition's insert.
type Partitioner interface {
	// Route returns the destination partition of each row of table under
	// the routing current now, as an ordinal: rows with equal ordinals go
	// to the same partition. An ordinal should name its partition in
	// every call (derived from its id, not its order of appearance): the
	// forwarder keeps per-partition state by table and ordinal (one call
	// at a time to a partition whose last call failed). A negative
	// ordinal marks a row it cannot
	// route: such rows travel together, and Forward reports their
	// failure. An error sends the rows by table instead.
	Route(ctx context.Context, table string, rows []model.Row) ([]int, error)
}

// ForwarderOptions configure a Forwarder.
type ForwarderOptions struct {
	// PollInterval is how often Run looks for due entries when nothing
	// woke it; 0 means 100 ms.
	PollInterval time.Duration
	// MaxRowsPerCall bounds the rows of one Sender call; 0 means 10000.
	MaxRowsPerCall int
	// MaxBytesPerCall bounds one call by the encoded size of its rows
	// (estimated per row from its entry); 0 means 4 MiB. A call always
	// holds at least one row.
	MaxBytesPerCall int64
	// InitialBackoff is the retry delay after a row's first failed
	// forward; it doubles with every further failure; 0 means 100 ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the retry delay; 0 means 10 s.
	MaxBackoff time.Duration
	// Rand returns a uniform integer in [0, n), for jitter; nil is
	// math/rand/v2.Int64N.
	Rand func(n int64) int64
	// Logger receives the forwarder's lines; nil uses the queue's.
	Logger *slog.Logger
	// MaxInFlight bounds the Sender calls in flight at once; 0 means 4.
	// A partition whose last call failed gets one of them at a time.
	MaxInFlight int
	// WarnInterval is the least time between two warnings about failed
	// forwards (the lines in between are counted, not printed); 0 means
	// 10 s.
	WarnInterval time.Duration
}

// Defaults of ForwarderOptions.
const (
	// DefaultPollInterval is how often Run looks for due entries.
	DefaultPollInterval = 100 * time.Millisecond
	// DefaultMaxRowsPerCall bounds the rows of one Sender call.
	DefaultMaxRowsPerCall = 10_000
	// DefaultMaxBytesPerCall bounds the encoded bytes of one Sender call.
	DefaultMaxBytesPerCall = 4 << 20
	// DefaultInitialBackoff is the retry delay after a first failure.
	DefaultInitialBackoff = 100 * time.Millisecond
	// DefaultMaxBackoff caps the retry delay.
	DefaultMaxBackoff = 10 * time.Second
	// DefaultMaxInFlight bounds the Sender calls in flight at once.
	DefaultMaxInFlight = 4
	// DefaultWarnInterval is the least time between two failure warnings.
	DefaultWarnInterval = 10 * time.Second
)

// maxLoadCalls bounds one load to this many calls' worth of rows,
// whatever the window: rows loaded and waiting for a slot count as in
// flight, never overdue, so a load far ahead of the window would hide a
// backlog from admission (and hold it in memory). Calls are mostly
// smaller than MaxRowsPerCall (a pass's rows split by partition), so 8
// calls' worth still fills a window of 16.
const maxLoadCalls = 8

// fullScanInterval is how often Run scans the whole queue instead of
// starting at the scan hint (see Queue.resetHint).
const fullScanInterval = time.Minute

// EnsureDefaults fills zero fields with their defaults.
func (o *ForwarderOptions) EnsureDefaults() {
	o.PollInterval = orDefault(o.PollInterval, DefaultPollInterval)
	o.MaxRowsPerCall = orDefault(o.MaxRowsPerCall, DefaultMaxRowsPerCall)
	o.MaxBytesPerCall = orDefault(o.MaxBytesPerCall, DefaultMaxBytesPerCall)
	o.InitialBackoff = orDefault(o.InitialBackoff, DefaultInitialBackoff)
	o.MaxBackoff = orDefault(o.MaxBackoff, DefaultMaxBackoff)
	o.WarnInterval = orDefault(o.WarnInterval, DefaultWarnInterval)
	o.MaxInFlight = orDefault(o.MaxInFlight, DefaultMaxInFlight)
	if o.MaxBackoff < o.InitialBackoff {
		o.MaxBackoff = o.InitialBackoff
	}
	if o.Rand == nil {
		o.Rand = rand.Int64N
	}
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Forwarder sends due rows of a Queue through a Sender. Run forwards
// entries as they fall due; Drain forwards everything regardless of due
// time. Both run in the caller's goroutine; the calls they make run in
// goroutines of the forwarder (at most MaxInFlight), which they wait for
// before they return.
//
// Whenever its window of calls has room, the forwarder loads due entries
// in due order (skipping those in flight), routes the rows of each table
// once (Partitioner), groups them by partition into calls bounded by
// MaxRowsPerCall and MaxBytesPerCall, and starts each call as a slot
// frees. A call to a partition whose last call failed while another call
// to it is in flight is not made: its rows are requeued with backoff at
// once (held), so that a failing partition takes one slot and its rows
// do not wait, overdue, in memory. When a call ends, it settles in one synced batch the entries
// none of whose rows is pending any more: deletes them, and writes the
// rows that failed back as one new entry per old entry, due after an
// exponential backoff with jitter that grows with the entry's attempt
// count. No row is ever dropped and there is no attempt limit.
type Forwarder struct {
	q      *Queue
	sender Sender
	opts   ForwarderOptions
	log    *slog.Logger
	// warn throttles the warnings about rows requeued after a failed
	// forward; passErr the errors of whole passes (pebble, the limiter).
	warn, passErr throttle
	// outcomeMu guards the outcome fields of loaded entries (pending,
	// failed, firstErr, interrupted), written by concurrent calls.
	outcomeMu sync.Mutex

	mu struct {
		sync.Mutex
		// changed is signalled (under mu) when a call ends or a
		// launching context ends.
		changed *sync.Cond
		// inflight holds the entries loaded and not yet settled or
		// given up, by key: a load skips them, so no entry is in two
		// calls' hands at once.
		inflight map[string]*entry
		// running counts the calls in flight (at most MaxInFlight).
		running int
		// parts holds the partitions with calls in flight or whose
		// last call failed, by table and Route ordinal.
		parts map[partKey]*partState
	}
	// ended has room for one signal: a call ended (Run may load more).
	ended chan struct{}
	// accepted and requeued count rows over the forwarder's life (Drain
	// reads their progress).
	accepted, requeued atomic.Int64
}

// partKey names a destination partition: a table and its Route ordinal
// (0 for every row without a Partitioner).
type partKey struct {
	table string
	ord   int
}

// partState is the forwarder's view of one destination partition.
type partState struct {
	// running counts its calls in flight.
	running int
	// failed: its last call ended without a row accepted. While it is
	// set and a call is in flight, further calls to it are not made
	// (their rows are requeued with backoff): one probe at a time.
	failed bool
	// failedAt is when its last call failed: a partition that failed
	// longer ago than failedPartTTL plus twice MaxBackoff and has no call
	// in flight is forgotten (split away, its rows routed elsewhere
	// since).
	failedAt time.Time
}

// failedPartTTL is how long a failed partition with no call in flight
// counts as failing (admission's failedParts), beyond twice MaxBackoff: a
// partition that keeps failing is probed again after each backoff and
// its call lasts at most its ack timeout (10 s by default), so it is
// refreshed well within.
const failedPartTTL = time.Minute

// NewForwarder returns the forwarder of q's entries through sender. A
// queue has exactly one forwarder (the set of entries in a call's hands is
// the forwarder's): NewForwarder panics when q already has one, which is
// a programming error.
func NewForwarder(q *Queue, sender Sender, opts ForwarderOptions) *Forwarder {
	if !q.hasForwarder.CompareAndSwap(false, true) {
		panic("smear: NewForwarder: the queue already has a forwarder (one forwarder per queue)")
	}
	opts.EnsureDefaults()
	log := opts.Logger
	if log == nil {
		log = q.log
	}
	f := &Forwarder{q: q, sender: sender, opts: opts, log: log, ended: make(chan struct{}, 1),
		warn: throttle{interval: opts.WarnInterval}, passErr: throttle{interval: opts.WarnInterval}}
	f.mu.changed = sync.NewCond(&f.mu)
	f.mu.inflight = make(map[string]*entry)
	f.mu.parts = make(map[partKey]*partState)
	return f
}

// Kick wakes Run to look for due entries now instead of at its next poll.
func (f *Forwarder) Kick() { f.q.signal() }

// Run forwards entries as they fall due until ctx is done, then waits for
// the calls in flight (they are given ctx; rows they could not deliver
// stay queued) and returns nil. It returns an error wrapping ErrClosed if
// the queue is closed under it. Errors of a pass (pebble, the write
// limiter) are logged and the pass is retried at the next poll.
//
// Run keeps up to the window of calls in flight: whenever one ends it
// loads more due entries (those not in flight), so that a slow call (a
// partition splitting, a replica set catching up) holds one slot, not
// the forwarder.
func (f *Forwarder) Run(ctx context.Context) error {
	defer f.waitIdle()
	timer := time.NewTimer(f.opts.PollInterval)
	defer timer.Stop()
	lastFull := time.Now()
	for {
		if time.Since(lastFull) >= fullScanInterval {
			f.q.resetHint()
			lastFull = time.Now()
		}
		f.q.tick()
		st, err := f.launch(ctx, f.q.now().UnixNano(), nil)
		switch {
		case errors.Is(err, ErrClosed):
			return fmt.Errorf("smear: forwarder: %w", err)
		case ctx.Err() != nil:
			return nil
		case err != nil:
			f.logThrottled(&f.passErr, slog.LevelError, "smear: forwarding pass failed; retrying", "err", err)
		case st.truncated && !st.full:
			continue // more entries are due, and room for their calls
		}
		timer.Reset(f.opts.PollInterval)
		select {
		case <-ctx.Done():
			return nil
		case <-f.q.wake:
		case <-f.ended:
		case <-timer.C:
		}
	}
}

// Drain forwards every queued row now, ignoring due times, and returns nil
// once the queue is empty. Rows that fail are retried, with the pause
// between passes growing up to MaxBackoff while no row gets through. It returns ctx's error (wrapped) if ctx ends first and
// ErrClosed if the queue is closed. A draining or leaving server calls it
// after it stopped smearing new inserts (with Enqueues still arriving,
// the queue may never be empty); it is safe to call while Run runs.
func (f *Forwarder) Drain(ctx context.Context) error {
	pause := time.Duration(0)
	for {
		if rows, _ := f.q.Depth(); rows == 0 {
			return nil
		}
		st, err := f.pass(ctx, math.MaxInt64)
		switch {
		case errors.Is(err, ErrClosed):
			return fmt.Errorf("smear: drain: %w", err)
		case err == nil && st.loaded == 0 && st.busy:
			// Every due entry is in another pass's calls: wait for
			// them rather than scan again.
			pause = 0
		case ctx.Err() != nil:
			return fmt.Errorf("smear: drain: %w", ctx.Err())
		case err != nil:
			f.logThrottled(&f.passErr, slog.LevelError, "smear: draining pass failed; retrying", "err", err)
		case st.loaded > 0 && st.requeued == 0:
			pause = 0
			continue // progress, and nothing to wait for
		case st.loaded == 0:
			f.q.resetHint() // rows counted but none found: look everywhere
		case st.accepted > 0:
			pause = 0 // some got through: wait only the shortest pause
		}
		if rows, _ := f.q.Depth(); rows == 0 {
			return nil
		}
		pause = nextPause(pause, f.opts)
		if err := sleep(ctx, pause); err != nil {
			return fmt.Errorf("smear: drain: %w", err)
		}
	}
}

// nextPause returns the pause before the next drain pass: the smaller of
// InitialBackoff and PollInterval first, then doubling up to MaxBackoff.
func nextPause(p time.Duration, o ForwarderOptions) time.Duration {
	if p == 0 {
		return min(o.InitialBackoff, o.PollInterval)
	}
	return min(2*p, o.MaxBackoff)
}

func sleep(ctx context.Context, d time.Duration) error {
	if !backoff.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// backoff returns the retry delay after the attempts-th failure: the
// initial backoff doubled per earlier failure, capped, with "equal
// jitter" (a uniform draw from the upper half), so retries of many
// entries that failed together spread out but never come back sooner
// than half the nominal delay.
func (f *Forwarder) backoff(attempts uint64) time.Duration {
	p := backoff.Policy{Base: f.opts.InitialBackoff, Max: f.opts.MaxBackoff, Rand: f.opts.Rand}
	return p.Delay(int(min(attempts, 64)))
}

// passStats summarise one pass.
type passStats struct {
	loaded    int  // entries loaded
	accepted  int  // rows accepted (pass only)
	requeued  int  // rows written back for a retry (pass only)
	truncated bool // the load stopped at its row or byte limit
	full      bool // the window was full: nothing was loaded
	busy      bool // calls of other passes were in flight (pass only)
}

// pass forwards the entries due at or before upTo (not in flight) once:
// it launches their calls and waits until they have ended (not for the
// calls of another pass, which Run may keep starting).
func (f *Forwarder) pass(ctx context.Context, upTo int64) (passStats, error) {
	f.mu.Lock()
	busy := f.mu.running > 0
	f.mu.Unlock()
	a0, r0 := f.accepted.Load(), f.requeued.Load()
	var own sync.WaitGroup
	st, err := f.launch(ctx, upTo, &own)
	own.Wait()
	st.accepted, st.requeued = int(f.accepted.Load()-a0), int(f.requeued.Load()-r0)
	st.busy = busy
	return st, err
}

// waitIdle waits until no call is in flight.
func (f *Forwarder) waitIdle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.mu.running > 0 {
		f.mu.changed.Wait()
	}
}

// launch loads the entries due at or before upTo that are not in flight,
// as many rows as twice the free window's calls hold (at most
// maxLoadCalls calls' worth), plans their calls
// and starts them, each as soon as the window has room (or requeues the
// rows of a call whose partition is held, see acquire). It returns once
// every call started (or ctx ended: the calls not started are given up,
// their entries left as they are); the calls settle their entries
// themselves when they end. own, if not nil, counts the calls started.
func (f *Forwarder) launch(ctx context.Context, upTo int64, own *sync.WaitGroup) (passStats, error) {
	var st passStats
	if err := f.q.gate.Enter(ErrClosed); err != nil {
		return st, err
	}
	defer f.q.gate.Exit()
	calls, st, err := f.load(ctx, upTo)
	if err != nil || len(calls) == 0 {
		return st, err
	}
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.mu.changed.Broadcast()
	})
	defer stop()
	for i, c := range calls {
		ok, held := f.acquire(ctx, c)
		if !ok {
			f.giveUp(calls[i:])
			break
		}
		if held {
			// Its partition is failing and probed by another call:
			// requeue the rows with backoff rather than hold them (they
			// would be overdue) or send them (more calls to wait on an
			// ack timeout).
			f.q.untrackCall(c.track)
			resolved, o := f.record(ctx, c, nil, errHeld)
			f.finish(ctx, resolved, o)
			continue
		}
		if err := f.q.gate.Enter(ErrClosed); err != nil {
			f.release(c, callInterrupted)
			f.giveUp(calls[i:])
			return st, err
		}
		if own != nil {
			own.Add(1)
		}
		go func() {
			defer f.q.gate.Exit()
			if own != nil {
				defer own.Done()
			}
			f.call(ctx, c)
		}()
	}
	return st, nil
}

// load loads due entries not in flight under the queue's pass lock,
// registers them as in flight and plans their calls.
func (f *Forwarder) load(ctx context.Context, upTo int64) ([]*call, passStats, error) {
	var st passStats
	f.q.passMu.Lock()
	defer f.q.passMu.Unlock()
	f.mu.Lock()
	room := f.opts.MaxInFlight - f.mu.running
	f.mu.Unlock()
	if room <= 0 {
		st.full = true
		return nil, st, nil
	}
	calls := int64(min(2*room, maxLoadCalls))
	maxRows := int64(f.opts.MaxRowsPerCall) * calls
	maxBytes := f.opts.MaxBytesPerCall * calls
	entries, next, truncated, err := f.q.load(upTo, maxRows, maxBytes, f.inFlight)
	if err != nil {
		return nil, st, err
	}
	st.loaded, st.truncated = len(entries), truncated
	f.mu.Lock()
	for _, e := range entries {
		f.mu.inflight[string(e.key)] = e
	}
	// The scan hint must not pass an entry still in flight: it may be
	// requeued, or left as it is.
	for _, e := range f.mu.inflight {
		next = min(next, e.due)
	}
	f.mu.Unlock()
	f.q.endPass(next)
	var planned []*call
	for _, g := range groupByTable(entries) {
		planned = append(planned, f.plan(ctx, g)...)
	}
	for _, c := range planned {
		c.track = &trackedCall{part: c.part, rows: int64(len(c.rows)), due: math.MinInt64}
		for _, r := range c.refs {
			c.track.due = max(c.track.due, r.e.due)
		}
		f.q.trackCall(c.track)
	}
	return planned, st, nil
}

// inFlight reports whether the entry of key is in a call's hands.
func (f *Forwarder) inFlight(key []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.mu.inflight[string(key)]
	return ok
}

// acquire takes a slot of the window (MaxInFlight calls) for a call to
// part, waiting for one; ok is false when ctx ended first. held reports,
// instead of a slot, that part's last call failed and another call to it
// is in flight: the call is not to be made.
func (f *Forwarder) acquire(ctx context.Context, c *call) (ok, held bool) {
	part := c.part
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		if ctx.Err() != nil {
			return false, false
		}
		if ps := f.mu.parts[part]; ps != nil && ps.failed && ps.running > 0 {
			return true, true
		}
		if f.mu.running < f.opts.MaxInFlight {
			break
		}
		f.mu.changed.Wait()
	}
	f.mu.running++
	ps := f.mu.parts[part]
	if ps == nil {
		ps = &partState{}
		f.mu.parts[part] = ps
	}
	ps.running++
	if ps.failed {
		// A probe of a failing partition: while it is in flight,
		// rows overdue may be its doing, not the forwarder's
		// capacity (admission does not measure the capacity then),
		// and its own rows are not late for the forwarder's sake.
		c.probe = true
		f.q.noteFailing(1)
		f.q.untrackCall(c.track)
	}
	return true, false
}

// outcome is how a call ended, for its partition's state.
type outcome int

const (
	callOK          outcome = iota // at least one row accepted
	callFailed                     // no row accepted
	callInterrupted                // cut short by ctx, or never made
)

// release gives a slot back and records the call's outcome for its
// partition: after a call with no row accepted (a replica set that cannot
// confirm within its ack timeout, an unavailable partition), at most one
// call to that partition is in flight until one succeeds; the others'
// rows are requeued with backoff. The window is per partition, so that a
// failing partition holds one slot and no healthy partition waits for
// it.
func (f *Forwarder) release(c *call, o outcome) {
	part := c.part
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.running--
	f.q.untrackCall(c.track)
	if c.probe {
		f.q.noteFailing(-1)
	}
	if o == callFailed {
		f.q.noteFailing(0)
	}
	if ps := f.mu.parts[part]; ps != nil {
		ps.running--
		switch o {
		case callOK:
			ps.failed = false
		case callFailed:
			ps.failed, ps.failedAt = true, f.q.now()
		}
		if ps.running <= 0 && !ps.failed {
			delete(f.mu.parts, part)
		}
	}
	if o != callInterrupted {
		f.q.noteFailedParts(f.countFailedLocked())
	}
	f.mu.changed.Broadcast()
	select {
	case f.ended <- struct{}{}:
	default:
	}
}

// countFailedLocked counts the partitions whose last call failed, and
// forgets those that failed more than failedPartTTL plus twice MaxBackoff
// ago with no call in flight. f.mu is held.
func (f *Forwarder) countFailedLocked() int {
	now := f.q.now()
	ttl := failedPartTTL + 2*f.opts.MaxBackoff
	n := 0
	for k, ps := range f.mu.parts {
		if !ps.failed || k.ord < 0 {
			// Rows no partition covers (ordinal -1) are not a replica
			// set that cannot keep up.
			continue
		}
		if ps.running <= 0 && now.Sub(ps.failedAt) > ttl {
			delete(f.mu.parts, k)
			continue
		}
		n++
	}
	return n
}

// giveUp leaves the entries of calls never made as they are: their rows
// count as answered, the entries as interrupted, and those with nothing
// else pending leave the in-flight set unsettled.
func (f *Forwarder) giveUp(calls []*call) {
	var resolved []*entry
	for _, c := range calls {
		f.q.untrackCall(c.track)
	}
	f.outcomeMu.Lock()
	for _, c := range calls {
		for _, r := range c.refs {
			r.e.interrupted = true
			if r.e.pending--; r.e.pending == 0 {
				resolved = append(resolved, r.e)
			}
		}
	}
	f.outcomeMu.Unlock()
	f.forget(resolved)
}

// forget removes entries from the in-flight set, counting those left
// unsettled back in their due buckets (admission). It holds the queue's pass
// lock, so that no load is scanning meanwhile: a load's iterator is a
// snapshot taken when it began, which may still hold an entry settled
// since; the entry is skipped while in flight, and must stay so until
// that load is over (else it would be loaded, sent and settled again, and
// the depth counted down twice).
func (f *Forwarder) forget(entries []*entry) {
	if len(entries) == 0 {
		return
	}
	f.q.passMu.Lock()
	defer f.q.passMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	var unsettled []*entry
	for _, e := range entries {
		delete(f.mu.inflight, string(e.key))
		if !e.settled {
			unsettled = append(unsettled, e)
		}
	}
	f.q.unload(unsettled)
}

// call makes one call and settles, in one synced batch, the entries whose
// rows all have an outcome once it ended: deleted, their failed rows
// requeued. An entry cut short (interrupted) leaves the in-flight set as
// it is. A settle that fails leaves its entries queued: they are loaded
// and sent again (a repeat is harmless).
func (f *Forwarder) call(ctx context.Context, c *call) {
	resolved, o := f.send(ctx, c)
	f.release(c, f.finish(ctx, resolved, o))
}

// finish settles the entries a call resolved and returns the call's
// outcome.
func (f *Forwarder) finish(ctx context.Context, resolved []*entry, o outcome) outcome {
	var done []*entry
	for _, e := range resolved {
		if !e.interrupted {
			done = append(done, e)
		}
	}
	now := f.q.now().UnixNano()
	retryDue := func(attempts uint64) int64 { return now + int64(f.backoff(attempts)) }
	// Settling records what the Sender already accepted: done even when
	// ctx ended during the call.
	start := time.Now()
	requeued, err := f.q.settle(context.WithoutCancel(ctx), done, retryDue)
	f.q.metrics.settleSecs.Observe(time.Since(start).Seconds())
	if err != nil {
		f.logThrottled(&f.passErr, slog.LevelError, "smear: settling forwarded entries failed; they are sent again", "err", err)
	} else {
		f.requeued.Add(int64(requeued))
		f.q.metrics.retried.Add(float64(requeued))
		f.reportFailures(done)
	}
	f.forget(resolved)
	return o
}

// tableGroup is the loaded entries of one table, in due order.
type tableGroup struct {
	table   string
	entries []*entry
}

func groupByTable(entries []*entry) []tableGroup {
	var groups []tableGroup
	idx := make(map[string]int)
	for _, e := range entries {
		i, ok := idx[e.h.table]
		if !ok {
			i = len(groups)
			idx[e.h.table] = i
			groups = append(groups, tableGroup{table: e.h.table})
		}
		groups[i].entries = append(groups[i].entries, e)
	}
	return groups
}

// rowRef names one row of a loaded entry.
type rowRef struct {
	e *entry
	i int
}

// call is one Sender call: rows of one table (and, with a Partitioner,
// of one partition), and the entry row each comes from.
type call struct {
	part  partKey
	probe bool // sent to a partition whose last call failed
	// track is the call's record in admission's late rule, from its plan
	// to its end (Queue.trackCall).
	track *trackedCall
	table string
	rows  []model.Row
	refs  []rowRef
	bytes int64
}

// plan cuts the rows of g's entries into calls: grouped by destination
// partition when the Sender is a Partitioner (routed once for the whole
// group), each group in due order cut into calls within MaxRowsPerCall
// and MaxBytesPerCall. A Sender that is no Partitioner, or whose Route
// fails, gets calls of the table's rows in due order.
func (f *Forwarder) plan(ctx context.Context, g tableGroup) []*call {
	var n int
	for _, e := range g.entries {
		n += len(e.rows)
	}
	rows := make([]model.Row, 0, n)
	refs := make([]rowRef, 0, n)
	for _, e := range g.entries {
		for i := range e.rows {
			rows = append(rows, e.rows[i])
			refs = append(refs, rowRef{e: e, i: i})
		}
	}
	parts := f.route(ctx, g.table, rows)
	// Bucket the rows by partition, keeping due order within each.
	var groups [][]int // row indexes, per partition in order of first appearance
	idx := make(map[int]int)
	for i, p := range parts {
		gi, ok := idx[p]
		if !ok {
			gi = len(groups)
			idx[p] = gi
			groups = append(groups, nil)
		}
		groups[gi] = append(groups[gi], i)
	}
	var calls []*call
	for _, members := range groups {
		part := partKey{table: g.table, ord: parts[members[0]]}
		c := &call{part: part, table: g.table}
		for _, i := range members {
			ref := refs[i]
			perRow := max(ref.e.size/int64(len(ref.e.rows)), 1)
			if len(c.rows) > 0 && (len(c.rows) >= f.opts.MaxRowsPerCall || c.bytes+perRow > f.opts.MaxBytesPerCall) {
				calls = append(calls, c)
				c = &call{part: part, table: g.table}
			}
			c.rows = append(c.rows, rows[i])
			c.refs = append(c.refs, ref)
			c.bytes += perRow
		}
		if len(c.rows) > 0 {
			calls = append(calls, c)
		}
	}
	return calls
}

// route returns the partition ordinal of every row (all 0 without a
// Partitioner or when routing fails: the calls then go by table, and the
// Sender routes them).
func (f *Forwarder) route(ctx context.Context, table string, rows []model.Row) []int {
	p, ok := f.sender.(Partitioner)
	if ok {
		parts, err := p.Route(ctx, table, rows)
		if err == nil && len(parts) == len(rows) {
			return parts
		}
		if err == nil {
			err = fmt.Errorf("smear: Route returned %d partitions for %d rows", len(parts), len(rows))
		}
		f.logThrottled(&f.passErr, slog.LevelWarn, "smear: routing due rows failed; forwarding them by table", "table", table, "err", err)
	}
	return make([]int, len(rows))
}

// send makes one Sender call and records each row's outcome (record).
func (f *Forwarder) send(ctx context.Context, c *call) ([]*entry, outcome) {
	f.q.metrics.inFlight.Inc()
	start := time.Now()
	rowErrs, err := f.sender.Forward(ctx, c.table, c.rows)
	f.q.metrics.callSeconds.Observe(time.Since(start).Seconds())
	f.q.metrics.callRows.Observe(float64(len(c.rows)))
	f.q.metrics.inFlight.Dec()
	if err == nil && rowErrs != nil && len(rowErrs) != len(c.rows) {
		err = fmt.Errorf("smear: sender returned %d row errors for %d rows", len(rowErrs), len(c.rows))
	}
	if err != nil {
		f.q.metrics.callFailures.Inc()
	}
	return f.record(ctx, c, rowErrs, err)
}

// record records each row's outcome of a call in its entry (under
// f.outcomeMu: calls run concurrently and may share entries). It returns
// the entries that have no row pending any more and the call's outcome.
func (f *Forwarder) record(ctx context.Context, c *call, rowErrs []error, err error) ([]*entry, outcome) {
	f.outcomeMu.Lock()
	defer f.outcomeMu.Unlock()
	var resolved []*entry
	if ctx.Err() != nil && (err != nil || anyError(rowErrs)) {
		// Cut short by shutdown: leave the entries for the next run
		// rather than count a failure against them.
		for _, r := range c.refs {
			r.e.interrupted = true
			if r.e.pending--; r.e.pending == 0 {
				resolved = append(resolved, r.e)
			}
		}
		return resolved, callInterrupted
	}
	now := f.q.now().UnixNano()
	accepted, dropped := 0, 0
	var maxLate int64 // the most late accepted row's lateness, ns
	for k, r := range c.refs {
		e := r.e
		if e.pending--; e.pending == 0 {
			resolved = append(resolved, e)
		}
		rerr := err
		if rerr == nil && rowErrs != nil {
			rerr = rowErrs[k]
		}
		if errors.Is(rerr, ErrDiscarded) {
			e.discarded++
			dropped++
			continue
		}
		if rerr != nil {
			e.failed = append(e.failed, e.rows[r.i])
			if e.firstErr == nil {
				e.firstErr = rerr
			}
			continue
		}
		accepted++
		f.q.metrics.delay.Observe(time.Duration(max(now-e.h.enqueued, 0)).Seconds())
		late := max(now-e.due, 0)
		f.q.metrics.lateness.Observe(time.Duration(late).Seconds())
		maxLate = max(maxLate, late)
	}
	f.q.late.note(time.Unix(0, now), maxLate)
	f.q.metrics.forwarded.Add(float64(accepted))
	f.accepted.Add(int64(accepted + dropped))
	if accepted+dropped == 0 {
		return resolved, callFailed // err, or every row failed
	}
	return resolved, callOK
}

func anyError(errs []error) bool {
	for _, err := range errs {
		if err != nil {
			return true
		}
	}
	return false
}

// reportFailures logs, rate-limited, the requeued rows of a pass.
func (f *Forwarder) reportFailures(done []*entry) {
	var rows int
	var worst *entry
	for _, e := range done {
		if len(e.failed) == 0 {
			continue
		}
		rows += len(e.failed)
		if worst == nil || e.h.attempts > worst.h.attempts {
			worst = e
		}
	}
	if worst == nil {
		return
	}
	f.logThrottled(&f.warn, slog.LevelWarn, "smear: forward failed; rows requeued with backoff",
		"rows", rows, "table", worst.h.table, "attempts", worst.h.attempts+1,
		"queued_for", time.Duration(f.q.now().UnixNano()-worst.h.enqueued).String(), "err", worst.firstErr)
}

// logThrottled logs through t, adding how many lines t held back.
func (f *Forwarder) logThrottled(t *throttle, level slog.Level, msg string, args ...any) {
	ok, suppressed := t.allow(time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	f.log.Log(context.Background(), level, msg, args...)
}
