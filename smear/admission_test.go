package smear

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/model"
)

// TestAdmissionStateMachine drives the admission state with synthetic
// counts on a synthetic clock: rows overdue while the queue accepts
// faster than it forwards close it only after BehindFor; a forwarder that
// drains (forwarding faster than accepting) keeps it open; it opens again
// once nothing is overdue.
func TestAdmissionStateMachine(t *testing.T) {
	o := Options{}
	o.EnsureDefaults()
	a := newAdmission(&o)
	sec := int64(time.Second)
	now := 1000 * sec
	a.update(now, true) // first tick: starts the clock
	// 1000 rows due at now, accepted; nothing forwarded.
	a.add(now, 1000, false)
	a.accepted += 1000
	steps := 0
	for !a.closed {
		now += sec
		steps++
		a.accepted += 1000
		a.add(now+60*sec, 1000, false) // future rows: accepted, not yet due
		a.update(now, true)
		if steps > 10 {
			t.Fatalf("admission still open after %d s with %d rows overdue and nothing forwarded", steps, a.overdue)
		}
	}
	// Overdue from OverdueAfter (2 s) on, closed BehindFor (3 s) later.
	if steps != 5 {
		t.Fatalf("closed after %d s, want 5 (overdue after 2 s, behind for 3 s)", steps)
	}
	if d := a.retryAfter(time.Second); d != maxBehindRetryAfter {
		t.Fatalf("Retry-After %s with nothing forwarded, want the cap %s", d, maxBehindRetryAfter)
	}
	// The forwarder settles the overdue rows: open at the next tick.
	a.remove(1000*sec, 1000, false)
	a.forwarded += 1000
	a.handled += 1000
	now += sec
	if tr := a.update(now, true); tr != nowOpen || a.closed {
		t.Fatalf("transition %v, closed %v after the overdue rows went, want open", tr, a.closed)
	}

	// A small backlog (less than two seconds of forwarding) that holds
	// steady, the queue accepting as fast as it forwards: stays open
	// however long it lasts. A larger one closes it, even so.
	for _, tc := range []struct {
		backlog int64
		closes  bool
	}{{1500, false}, {5000, true}} {
		b := newAdmission(&o)
		now = 5000 * sec
		b.update(now, true)
		b.add(now, tc.backlog, false)
		b.acceptRate, b.forwardRate, b.handleRate = 1000, 1000, 1000
		closedAt := 0
		for step := 1; step <= 30 && !b.closed; step++ {
			now += sec
			b.accepted += 1000
			b.forwarded += 1000
			b.handled += 1000
			b.update(now, true)
			if b.closed {
				closedAt = step
			}
		}
		if b.overdue != tc.backlog {
			t.Fatalf("backlog %d: %d overdue, want all of it", tc.backlog, b.overdue)
		}
		if b.closed != tc.closes {
			t.Fatalf("backlog %d of rows overdue, forwarding 1000 rows/s: closed %v (at %d s), want %v", tc.backlog, b.closed, closedAt, tc.closes)
		}
		if tc.closes && closedAt != 5 {
			t.Fatalf("closed after %d s, want 5 (overdue after 2 s, behind for 3 s)", closedAt)
		}
	}
}

// slowSender holds every call until released: a forwarder far slower than
// the rate of inserts.
type slowSender struct {
	*recorder
	release chan struct{}
}

func (s *slowSender) Forward(ctx context.Context, table string, rows []model.Row) ([]error, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.recorder.Forward(ctx, table, rows)
}

// TestAdmissionRefusesWhenBehind: a queue whose forwarder is stuck in a
// slow call, on a synthetic clock, while inserts keep coming: once rows
// are overdue and the queue has accepted faster than it forwards for
// BehindFor, Enqueue fails with ErrBehind (a queue_full refusal, with a
// Retry-After of at least Options.RetryAfter) and writes nothing; once
// the sender is released and the overdue rows are forwarded, Enqueue
// admits again. Every acknowledged row is delivered exactly once, and the
// refused ones never.
func TestAdmissionRefusesWhenBehind(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	sender := &slowSender{recorder: newRecorder(), release: make(chan struct{})}
	f := NewForwarder(q, sender, fastForwarder())
	stop := runForwarder(t, f)
	ctx := context.Background()

	want := map[string][]model.Row{}
	batch := 0
	enqueue := func() error {
		rows := makeRows(batch, 10)
		batch++
		err := q.Enqueue(ctx, "cpu", rows, clk.Now())
		if err == nil {
			want["cpu"] = append(want["cpu"], rows...)
		}
		return err
	}
	var refusal error
	for step := 0; refusal == nil; step++ {
		if step > 20 {
			t.Fatalf("no refusal after %d s with the forwarder stuck (%+v)", step, q.Admission())
		}
		for range 5 {
			if err := enqueue(); err != nil {
				refusal = err
				break
			}
		}
		clk.ns.Add(int64(time.Second))
	}
	if !errors.Is(refusal, ErrBehind) || !errors.Is(refusal, errcode.ErrQueueFull) {
		t.Fatalf("refusal %v, want ErrBehind (a queue_full)", refusal)
	}
	st := q.Admission()
	if !st.Closed || st.OverdueRows == 0 || metricValue(q.metrics.admissionClosed) != 1 {
		t.Fatalf("admission %+v, gauge %v: want closed with overdue rows", st, metricValue(q.metrics.admissionClosed))
	}
	if d := q.RetryAfter(); d < q.opts.RetryAfter {
		t.Fatalf("Retry-After %s, want at least %s", d, q.opts.RetryAfter)
	}
	rowsBefore, _ := q.Depth()
	if err := enqueue(); !errors.Is(err, ErrBehind) {
		t.Fatalf("enqueue while closed: %v, want ErrBehind", err)
	}
	if rows, _ := q.Depth(); rows != rowsBefore {
		t.Fatalf("a refused enqueue changed the depth from %d to %d", rowsBefore, rows)
	}

	// Release the forwarder: it forwards everything due; the next tick
	// sees nothing overdue and opens.
	close(sender.release)
	eventually(t, "the queue to drain", func() bool { rows, _ := q.Depth(); return rows == 0 })
	clk.ns.Add(int64(time.Second))
	if st := q.Admission(); st.Closed || st.OverdueRows != 0 {
		t.Fatalf("admission %+v after the backlog drained, want open", st)
	}
	if err := enqueue(); err != nil {
		t.Fatalf("enqueue after the backlog drained: %v", err)
	}
	eventually(t, "the queue to drain", func() bool { rows, _ := q.Depth(); return rows == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	sender.checkDelivered(t, want)
	sender.recorder.mu.Lock()
	defer sender.recorder.mu.Unlock()
	n := 0
	for _, rows := range want {
		n += len(rows)
	}
	if len(sender.recorder.mu.rows) != n {
		t.Fatalf("%d distinct rows delivered, want the %d acknowledged", len(sender.recorder.mu.rows), n)
	}
	for k, got := range sender.recorder.mu.rows {
		if len(got) != 1 {
			t.Fatalf("row %s delivered %d times", k, len(got))
		}
	}
	if metricValue(q.metrics.behindRejects) < 2 || metricValue(q.metrics.admissionClosings) != 1 {
		t.Fatalf("rejections %v, closings %v", metricValue(q.metrics.behindRejects), metricValue(q.metrics.admissionClosings))
	}
}

// TestAdmissionOpenWhileFilling: a queue that accepts far more than it
// forwards because its rows are not due yet (the first max_delay of a
// load) is not behind: nothing is overdue, so admission stays open.
func TestAdmissionOpenWhileFilling(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	ctx := context.Background()
	for b := range 30 {
		if err := q.Enqueue(ctx, "cpu", makeRows(b, 100), clk.Now().Add(time.Hour)); err != nil {
			t.Fatalf("second %d: %v", b, err)
		}
		clk.ns.Add(int64(time.Second))
	}
	st := q.Admission()
	if st.Closed || st.OverdueRows != 0 || st.AcceptRate <= st.ForwardRate {
		t.Fatalf("admission %+v: want open, nothing overdue, accepting faster than forwarding", st)
	}
}

// TestAdmissionCountsSurviveRestart: the overdue rows are counted from
// the queue's entries at Open, so a restarted server that is behind
// knows it.
func TestAdmissionCountsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	clk, opts := clockedOptions(t)
	q, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(context.Background(), "cpu", makeRows(0, 7), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	clk.ns.Add(int64(10 * time.Second))
	opts.Metrics = NewMetrics(nil)
	q = openQueue(t, dir, opts)
	q.Admission() // first tick
	clk.ns.Add(int64(time.Second))
	if st := q.Admission(); st.OverdueRows != 7 {
		t.Fatalf("overdue rows %d after a restart, want 7", st.OverdueRows)
	}
}

// TestAdmissionDueBudget: the rows due in one second may not exceed 80% of
// the estimated forward capacity (twice it, before the forwarder was seen
// saturated, in the next two seconds): an entry that would take its second over fails with
// ErrDueFull (a queue_full) and writes nothing, one that fits or falls in
// another second is admitted, and a second's first entry always is.
func TestAdmissionDueBudget(t *testing.T) {
	clk, opts := clockedOptions(t)
	opts.InitialForwardRate = 2000 // 1600 rows per second of due times, 4000 in the next two
	q := openQueue(t, t.TempDir(), opts)
	ctx := context.Background()
	due := clk.Now().Add(10 * time.Second)
	if st := q.Admission(); st.SlotRows != 1600 {
		t.Fatalf("budget %d rows per second, want 1600", st.SlotRows)
	}
	if err := q.Enqueue(ctx, "cpu", makeRows(0, 2500), due); err != nil {
		t.Fatalf("a second's first entry, larger than the budget: %v", err)
	}
	soon := clk.Now().Add(time.Second)
	if err := q.Enqueue(ctx, "cpu", makeRows(10, 2500), soon); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, "cpu", makeRows(11, 1500), soon); err != nil {
		t.Fatalf("up to twice the capacity in the next two seconds: %v", err)
	}
	if err := q.Enqueue(ctx, "cpu", makeRows(12, 1), soon); !errors.Is(err, ErrDueFull) {
		t.Fatalf("over twice the capacity in the next two seconds: %v, want ErrDueFull", err)
	}
	err := q.Enqueue(ctx, "cpu", makeRows(1, 1), due)
	if !errors.Is(err, ErrDueFull) || !errors.Is(err, errcode.ErrQueueFull) {
		t.Fatalf("an entry over the budget: %v, want ErrDueFull (a queue_full)", err)
	}
	if rows, _ := q.Depth(); rows != 6500 {
		t.Fatalf("depth %d after the refusals, want 6500", rows)
	}
	later := due.Add(time.Second)
	if err := q.Enqueue(ctx, "cpu", makeRows(2, 1500), later); err != nil {
		t.Fatalf("another second: %v", err)
	}
	if err := q.Enqueue(ctx, "cpu", makeRows(3, 100), later); err != nil {
		t.Fatalf("up to exactly the budget: %v", err)
	}
	if err := q.Enqueue(ctx, "cpu", makeRows(4, 1), later); !errors.Is(err, ErrDueFull) {
		t.Fatalf("one row over the budget: %v, want ErrDueFull", err)
	}
	// Refused draws are not refused inserts: the caller draws again and
	// counts an insert it gives up on.
	if got := metricValue(q.metrics.behindRejects); got != 0 {
		t.Fatalf("rejections %v after refused draws, want 0", got)
	}
	q.RefusedDueFull()
	if got := metricValue(q.metrics.behindRejects); got != 1 {
		t.Fatalf("rejections %v, want 1", got)
	}
}

// clockedSender accepts every row and records when (on the test's clock).
type clockedSender struct {
	clk *clock
	at  map[string]int64 // rowKey → acceptance time, ns
	dup int
}

func (s *clockedSender) Forward(_ context.Context, _ string, rows []model.Row) ([]error, error) {
	for _, r := range rows {
		k := rowKey(r)
		if _, ok := s.at[k]; ok {
			s.dup++
			continue
		}
		s.at[k] = s.clk.ns.Load()
	}
	return nil, nil
}

// TestVisibilityBoundUnderOverload simulates, on a synthetic clock, a
// server offered three times what its forwarder can deliver: every
// simulated second, 60 inserts of 100 rows each draw a due time uniformly
// from [now, now+20 s] (up to four draws, as the front end does), and one
// forwarding pass delivers at most 2,000 rows. Admission starts from its
// default estimate (1,000 rows/s), below the truth, and must find the
// capacity. Every acknowledged row must be forwarded within max_delay +
// 5 s of its acknowledgement (the guarantee of docs/smearing.md), exactly
// once, and admission must not buy that by refusing everything: the rows
// acknowledged must come to most of the capacity.
func TestVisibilityBoundUnderOverload(t *testing.T) {
	const (
		maxDelay = 20 * time.Second
		capacity = 2000 // rows per simulated second
		perSec   = 60   // inserts offered per second, of 100 rows
		loadSecs = 240
	)
	clk, opts := clockedOptions(t)
	q, sender, f := simForwarder(t, clk, opts, capacity)
	load := newSimLoad(t, q, clk, maxDelay, 1)
	step := func(offer bool) {
		clk.ns.Add(int64(time.Second))
		if offer {
			load.offer(perSec)
		}
		if _, err := f.pass(context.Background(), clk.Now().UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	for range loadSecs {
		step(true)
	}
	load.drain(func() { step(false) })
	acked := load.acked
	worst := load.worstDelivery(sender, math.MinInt64)
	if worst > maxDelay+5*time.Second {
		t.Fatalf("a row became visible %s after its acknowledgement, beyond max_delay + 5 s", worst)
	}
	if min := loadSecs * capacity / 2; len(acked) < min {
		t.Fatalf("%d rows acknowledged in %d s, want at least half the capacity (%d): admission refuses too much", len(acked), loadSecs, min)
	}
	t.Logf("acknowledged %d rows in %d s (capacity %d rows/s, offered %d); worst visibility %s; %+v",
		len(acked), loadSecs, capacity, perSec*100, worst, q.Admission())
}

// TestAdmissionRecoversAfterStall simulates, on a synthetic clock, a
// server whose forwarder delivers 6,000 rows/s, offered 9,000, and stalls
// for 15 s (one pass in five: a split storm, replica sets confirming
// slowly): admission closes, the estimate falls to what was delivered
// meanwhile, and once the backlog is forwarded the queue must take most
// of the capacity again within a minute, not grow back by a quarter every
// few seconds (before the recovery rules it acknowledged 92,200 rows, a
// quarter of the capacity, in the minute counted here). The
// guarantee holds throughout: every row acknowledged after the stall is
// forwarded within max_delay + 5 s, and every row exactly once.
func TestAdmissionRecoversAfterStall(t *testing.T) {
	const (
		maxDelay   = 20 * time.Second
		capacity   = 6000 // rows per simulated second
		perSec     = 90   // inserts offered per second, of 100 rows
		stallFrom  = 60
		stallUntil = 75
		measure    = 100 // acknowledgements counted from here to the end
		loadSecs   = 160
	)
	clk, opts := clockedOptions(t)
	// An initial estimate well below the capacity, as in a real cluster
	// (1,000 rows/s against 15,000 or more): the estimate a stall leaves
	// lies between the two, where it used to stay.
	opts.InitialForwardRate = 200
	q, sender, f := simForwarder(t, clk, opts, capacity)
	load := newSimLoad(t, q, clk, maxDelay, 3)
	start := clk.ns.Load()
	ackedLate, closed := 0, false // acknowledged from measure on
	step := func(sec int, offer bool) {
		clk.ns.Add(int64(time.Second))
		if offer {
			if n := load.offer(perSec); sec >= measure {
				ackedLate += n
			}
		}
		closed = closed || q.Admission().Closed
		if sec >= stallFrom && sec < stallUntil && sec%5 != 0 {
			return // stalled: no pass this second
		}
		if _, err := f.pass(context.Background(), clk.Now().UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	for sec := range loadSecs {
		step(sec, true)
	}
	if !closed {
		t.Fatal("admission never closed: the stall did not put the forwarder behind")
	}
	extra := loadSecs
	load.drain(func() { step(extra, false); extra++ })
	worst := load.worstDelivery(sender, start+int64(measure)*int64(time.Second))
	if worst > maxDelay+5*time.Second {
		t.Fatalf("a row acknowledged after the stall became visible %s after its acknowledgement, beyond max_delay + 5 s", worst)
	}
	want := (loadSecs - measure) * capacity * 3 / 4
	if ackedLate < want {
		t.Fatalf("%d rows acknowledged in the %d s after the stall, want at least 3/4 of the capacity (%d): the estimate grows back too slowly", ackedLate, loadSecs-measure, want)
	}
	t.Logf("acknowledged %d rows in the %d s after the stall (capacity %d rows/s); worst visibility since %s; %+v",
		ackedLate, loadSecs-measure, capacity, worst, q.Admission())
}

// TestAdmissionGrowsWithLargeEntries simulates, on a synthetic clock, the
// load test's shape: inserts of 1,000 rows (as large as the due budget's
// least, minSlotRows), few of them (6 a second, as when clients wait out
// refusals), offered to a forwarder that delivers 15,000 rows/s and
// stalls for 8 s after 20 s. The estimate the stall leaves is saturated
// and a few thousand rows/s: a probe of a quarter of it is less than one
// insert, so before withEntry the queue let through no more entries than
// the estimate, refused most inserts, and acknowledged 1,800 of the 6,000
// rows/s offered to the end of the run (109,000 rows in the last minute).
// The queue must take most of what is offered again, and every row
// acknowledged after the stall must be forwarded within max_delay + 5 s,
// every row exactly once.
func TestAdmissionGrowsWithLargeEntries(t *testing.T) {
	const (
		maxDelay   = 20 * time.Second
		capacity   = 15000 // rows per simulated second
		perSec     = 6     // inserts offered per second, of 1,000 rows
		stallFrom  = 20
		stallUntil = 28
		measure    = 60 // acknowledgements counted from here to the end
		loadSecs   = 120
	)
	clk, opts := clockedOptions(t)
	q, sender, f := simForwarder(t, clk, opts, capacity)
	load := newSimLoad(t, q, clk, maxDelay, 5)
	load.size = 1000
	start := clk.ns.Load()
	ackedLate := 0
	step := func(sec int, offer bool) {
		clk.ns.Add(int64(time.Second))
		if offer {
			if n := load.offer(perSec); sec >= measure {
				ackedLate += n
			}
		}
		if sec >= stallFrom && sec < stallUntil {
			return // stalled: no pass this second
		}
		if _, err := f.pass(context.Background(), clk.Now().UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	for sec := range loadSecs {
		step(sec, true)
	}
	extra := loadSecs
	load.drain(func() { step(extra, false); extra++ })
	worst := load.worstDelivery(sender, start+int64(stallUntil)*int64(time.Second))
	if worst > maxDelay+5*time.Second {
		t.Fatalf("a row acknowledged after the stall became visible %s after its acknowledgement, beyond max_delay + 5 s", worst)
	}
	offered := (loadSecs - measure) * perSec * load.size
	if ackedLate < offered*2/3 {
		t.Fatalf("%d rows acknowledged of the %d offered in the last %d s (capacity %d rows/s): the estimate does not grow with entries this large; %+v",
			ackedLate, offered, loadSecs-measure, capacity, q.Admission())
	}
	t.Logf("acknowledged %d of %d rows offered in the last %d s; worst visibility since the stall %s; %+v",
		ackedLate, offered, loadSecs-measure, worst, q.Admission())
}

// simForwarder opens a queue with opts and a forwarder that delivers at
// most capacity rows a pass (one call slot, capacity/2 rows a call) to a
// clockedSender on clk.
func simForwarder(t *testing.T, clk *clock, opts Options, capacity int) (*Queue, *clockedSender, *Forwarder) {
	q := openQueue(t, t.TempDir(), opts)
	sender := &clockedSender{clk: clk, at: map[string]int64{}}
	fopts := fastForwarder()
	fopts.MaxInFlight, fopts.MaxRowsPerCall, fopts.MaxBytesPerCall = 1, capacity/2, 1<<30
	return q, sender, NewForwarder(q, sender, fopts)
}

// simLoad offers inserts to a queue on a synthetic clock as a front end
// does (each insert of 100 rows draws a due time up to four times while
// its second is full) and records when each acknowledged row was
// acknowledged.
type simLoad struct {
	t        *testing.T
	q        *Queue
	clk      *clock
	rnd      *rand.Rand
	maxDelay time.Duration
	acked    map[string]int64 // rowKey → acknowledgement time
	batch    int
	size     int // rows per insert; 0: 100
}

func newSimLoad(t *testing.T, q *Queue, clk *clock, maxDelay time.Duration, seed uint64) *simLoad {
	return &simLoad{t: t, q: q, clk: clk, rnd: rand.New(rand.NewPCG(seed, seed+1)),
		maxDelay: maxDelay, acked: map[string]int64{}}
}

// offer sends n inserts at the clock's now and returns the rows
// acknowledged; a refusal other than a full second or admission is fatal.
func (l *simLoad) offer(n int) (acked int) {
	for range n {
		size := l.size
		if size == 0 {
			size = 100
		}
		rows := makeRows(l.batch, size)
		l.batch++
		var err error
		for range 4 {
			due := DueTime(l.clk.Now(), l.maxDelay, l.rnd.Int64N)
			if err = l.q.Enqueue(context.Background(), "cpu", rows, due); !errors.Is(err, ErrDueFull) {
				break
			}
		}
		switch {
		case err == nil:
			for _, r := range rows {
				l.acked[rowKey(r)] = l.clk.ns.Load()
			}
			acked += len(rows)
		case !errors.Is(err, ErrDueFull) && !errors.Is(err, ErrBehind):
			l.t.Fatalf("enqueue: %v", err)
		}
	}
	return acked
}

// drain runs step (a simulated second without inserts) until the queue
// is empty.
func (l *simLoad) drain(step func()) {
	for i := 0; ; i++ {
		if rows, _ := l.q.Depth(); rows == 0 {
			return
		}
		if i > 1000 {
			l.t.Fatal("the queue does not drain")
		}
		step()
	}
}

// worstDelivery checks that every acknowledged row was forwarded exactly
// once and returns the longest time from acknowledgement to forwarding
// of the rows acknowledged at or after from.
func (l *simLoad) worstDelivery(sender *clockedSender, from int64) time.Duration {
	if len(sender.at) != len(l.acked) || sender.dup != 0 {
		l.t.Fatalf("%d rows forwarded (%d twice), %d acknowledged", len(sender.at), sender.dup, len(l.acked))
	}
	var worst time.Duration
	for k, at := range l.acked {
		got, ok := sender.at[k]
		if !ok {
			l.t.Fatalf("acknowledged row %s never forwarded", k)
		}
		if at >= from {
			worst = max(worst, time.Duration(got-at))
		}
	}
	return worst
}
