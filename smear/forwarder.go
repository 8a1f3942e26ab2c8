package smear

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
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
	// DefaultWarnInterval is the least time between two failure warnings.
	DefaultWarnInterval = 10 * time.Second
)

// passFactor: a pass loads at most this many calls' worth of rows.
const passFactor = 8

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
// time. Neither starts goroutines: they run in the caller's.
//
// Each pass loads the due entries in due order, groups the rows of one
// table from several entries into calls bounded by MaxRowsPerCall and
// MaxBytesPerCall, and then, in one synced batch, deletes every entry
// whose rows all have an outcome and writes the rows that failed back as
// one new entry per old entry, due after an exponential backoff with
// jitter that grows with the entry's attempt count. No row is ever dropped
// and there is no attempt limit.
type Forwarder struct {
	q      *Queue
	sender Sender
	opts   ForwarderOptions
	log    *slog.Logger
	// warn throttles the warnings about rows requeued after a failed
	// forward; passErr the errors of whole passes (pebble, the limiter).
	warn, passErr throttle
}

// NewForwarder returns a forwarder of q's entries through sender. Use one
// forwarder per queue (several are safe, as passes are serialized, but
// pointless).
func NewForwarder(q *Queue, sender Sender, opts ForwarderOptions) *Forwarder {
	opts.EnsureDefaults()
	log := opts.Logger
	if log == nil {
		log = q.log
	}
	return &Forwarder{q: q, sender: sender, opts: opts, log: log,
		warn: throttle{interval: opts.WarnInterval}, passErr: throttle{interval: opts.WarnInterval}}
}

// Kick wakes Run to look for due entries now instead of at its next poll.
func (f *Forwarder) Kick() { f.q.signal() }

// Run forwards entries as they fall due until ctx is done, then returns
// nil; a call in flight is given ctx, and rows it could not deliver stay
// queued. It returns an error wrapping ErrClosed if the queue is closed
// under it. Errors of a pass (pebble, the write limiter) are logged and
// the pass is retried at the next poll.
func (f *Forwarder) Run(ctx context.Context) error {
	timer := time.NewTimer(f.opts.PollInterval)
	defer timer.Stop()
	lastFull := time.Now()
	for {
		if time.Since(lastFull) >= fullScanInterval {
			f.q.resetHint()
			lastFull = time.Now()
		}
		st, err := f.pass(ctx, f.q.now().UnixNano())
		switch {
		case errors.Is(err, ErrClosed):
			return fmt.Errorf("smear: forwarder: %w", err)
		case ctx.Err() != nil:
			return nil
		case err != nil:
			f.logThrottled(&f.passErr, slog.LevelError, "smear: forwarding pass failed; retrying", "err", err)
		case st.truncated:
			continue // more entries are due
		}
		timer.Reset(f.opts.PollInterval)
		select {
		case <-ctx.Done():
			return nil
		case <-f.q.wake:
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
	accepted  int  // rows accepted
	requeued  int  // rows written back for a retry
	truncated bool // the pass stopped at its row or byte limit
}

// pass forwards the entries due at or before upTo once.
func (f *Forwarder) pass(ctx context.Context, upTo int64) (passStats, error) {
	var st passStats
	if err := f.q.gate.Enter(ErrClosed); err != nil {
		return st, err
	}
	defer f.q.gate.Exit()
	f.q.passMu.Lock()
	defer f.q.passMu.Unlock()

	maxRows := int64(f.opts.MaxRowsPerCall) * passFactor
	maxBytes := f.opts.MaxBytesPerCall * passFactor
	entries, next, truncated, err := f.q.load(upTo, maxRows, maxBytes)
	if err != nil {
		return st, err
	}
	st.loaded, st.truncated = len(entries), truncated
	for _, g := range groupByTable(entries) {
		if ctx.Err() != nil {
			break
		}
		st.accepted += f.forwardTable(ctx, g)
	}
	done := make([]*entry, 0, len(entries))
	for _, e := range entries {
		if e.settleable() {
			done = append(done, e)
		} else {
			next = min(next, e.due)
		}
	}
	now := f.q.now().UnixNano()
	retryDue := func(attempts uint64) int64 { return now + int64(f.backoff(attempts)) }
	// Settling is a local write that records what the Sender already
	// accepted; it is done even when ctx ended during the calls.
	st.requeued, err = f.q.settle(context.WithoutCancel(ctx), done, retryDue)
	if err != nil {
		return st, err
	}
	f.q.endPass(next)
	f.q.metrics.retried.Add(float64(st.requeued))
	f.reportFailures(done)
	return st, nil
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

// span is a run of one entry's rows inside a call.
type span struct {
	e        *entry
	from, to int
}

// call is one Sender call being assembled.
type call struct {
	rows  []model.Row
	bytes int64
	spans []span
}

// forwardTable sends the rows of g's entries in calls within the limits,
// splitting an entry across calls when it does not fit, and returns the
// rows accepted. It stops early when ctx ends.
func (f *Forwarder) forwardTable(ctx context.Context, g tableGroup) int {
	accepted := 0
	var c call
	flush := func() {
		if len(c.rows) > 0 {
			accepted += f.send(ctx, g.table, &c)
		}
		c = call{rows: c.rows[:0], spans: c.spans[:0]}
	}
	for _, e := range g.entries {
		perRow := max(e.size/int64(len(e.rows)), 1)
		for off := 0; off < len(e.rows); {
			if ctx.Err() != nil {
				return accepted
			}
			room := min(f.opts.MaxRowsPerCall-len(c.rows), int((f.opts.MaxBytesPerCall-c.bytes)/perRow))
			if room <= 0 && len(c.rows) > 0 {
				flush()
				continue
			}
			n := min(max(room, 1), len(e.rows)-off)
			c.rows = append(c.rows, e.rows[off:off+n]...)
			c.bytes += int64(n) * perRow
			c.spans = append(c.spans, span{e: e, from: off, to: off + n})
			off += n
		}
	}
	flush()
	return accepted
}

// send makes one Sender call and records each row's outcome in its entry.
// The call's rows slice is reused afterwards, so it is copied for the
// Sender (which may keep it).
func (f *Forwarder) send(ctx context.Context, table string, c *call) int {
	rows := append([]model.Row(nil), c.rows...)
	rowErrs, err := f.sender.Forward(ctx, table, rows)
	if err == nil && rowErrs != nil && len(rowErrs) != len(rows) {
		err = fmt.Errorf("smear: sender returned %d row errors for %d rows", len(rowErrs), len(rows))
	}
	if err != nil {
		f.q.metrics.callFailures.Inc()
	}
	if ctx.Err() != nil && (err != nil || anyError(rowErrs)) {
		// Cut short by shutdown: leave the entries for the next run
		// rather than count a failure against them.
		for _, s := range c.spans {
			s.e.interrupted = true
		}
		return 0
	}
	now := f.q.now().UnixNano()
	accepted, i := 0, 0
	for _, s := range c.spans {
		e := s.e
		for j := s.from; j < s.to; j, i = j+1, i+1 {
			rerr := err
			if rerr == nil && rowErrs != nil {
				rerr = rowErrs[i]
			}
			if rerr != nil {
				e.failed = append(e.failed, e.rows[j])
				if e.firstErr == nil {
					e.firstErr = rerr
				}
				continue
			}
			accepted++
			f.q.metrics.delay.Observe(time.Duration(max(now-e.h.enqueued, 0)).Seconds())
		}
		e.pending -= s.to - s.from
	}
	f.q.metrics.forwarded.Add(float64(accepted))
	return accepted
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
