package smear

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/model"
)

// stuckPart routes rows by time parity: partition 0 accepts at once and
// records the (synthetic) time of acceptance; partition 1 cannot confirm
// (a replica set past its ack timeout): each of its calls is held until
// the test times it out, then fails as a whole.
type stuckPart struct {
	clk *clock
	mu  struct {
		sync.Mutex
		gate  chan struct{}
		at    map[string]int64 // partition 0: row → acceptance time
		stuck int              // partition 1 calls in the sender
		// maxStuck is the most partition 1 calls in the sender at
		// once since its first failure.
		maxStuck int
		failed   bool
	}
}

func newStuckPart(clk *clock) *stuckPart {
	s := &stuckPart{clk: clk}
	s.mu.gate = make(chan struct{})
	s.mu.at = make(map[string]int64)
	return s
}

func (s *stuckPart) Route(_ context.Context, _ string, rows []model.Row) ([]int, error) {
	return routeByParity(rows), nil
}

// routeByParity routes each row to partition 0 or 1 by its time's parity.
func routeByParity(rows []model.Row) []int {
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = int(r.Time % 2)
	}
	return out
}

func (s *stuckPart) Forward(ctx context.Context, _ string, rows []model.Row) ([]error, error) {
	s.mu.Lock()
	if rows[0].Time%2 == 1 {
		g := s.mu.gate
		s.mu.stuck++
		if s.mu.failed {
			s.mu.maxStuck = max(s.mu.maxStuck, s.mu.stuck)
		}
		s.mu.Unlock()
		defer func() { s.mu.Lock(); s.mu.stuck--; s.mu.Unlock() }()
		select {
		case <-g:
			return nil, errors.New("partition 1: ack timeout")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer s.mu.Unlock()
	for _, r := range rows {
		if _, ok := s.mu.at[rowKey(r)]; !ok {
			s.mu.at[rowKey(r)] = s.clk.ns.Load()
		}
	}
	return nil, nil
}

// timeout fails the partition-1 calls held now.
func (s *stuckPart) timeout() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.mu.gate)
	s.mu.gate = make(chan struct{})
	s.mu.failed = true
}

func (s *stuckPart) stuckCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.stuck
}

// launchNow runs one launch at the clock's now and waits until it has
// started its calls (a launch that waits forever for a slot fails the test
// instead of hanging it).
func launchNow(t *testing.T, f *Forwarder, clk *clock) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := f.launch(context.Background(), clk.ns.Load(), nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLong):
		t.Fatal("launch still waiting for a slot: calls to a failing partition hold the window")
	}
}

// settledBut waits until the only calls in flight are the n held in the
// sender.
func settledBut(t *testing.T, f *Forwarder, s *stuckPart) {
	t.Helper()
	eventually(t, "every call but the failing partition's ended", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.mu.running == s.stuckCalls()
	})
}

// TestFailingPartitionKeepsAdmissionOpen: one partition's calls are held
// for an ack timeout and then fail (on the synthetic clock: 10 s each);
// another partition is healthy. The healthy rows are forwarded in the
// second they fall due, admission stays open with nothing overdue, no
// insert is refused, and the failing partition never has more than one
// call in flight. Under the old shared window (halved after each failed
// call) the healthy calls waited behind the held one and rows in its
// hands counted as overdue, closing admission for the whole server.
func TestFailingPartitionKeepsAdmissionOpen(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	o0 := q.Admission().Capacity
	s := newStuckPart(clk)
	t.Cleanup(s.timeout)                        // before the queue closes: no call left held
	f := NewForwarder(q, s, ForwarderOptions{}) // default backoffs (100 ms .. 10 s), on the synthetic clock
	ctx := context.Background()
	acked := map[string]int64{}
	for sec := range 60 {
		for b := range 5 {
			rows := makeRows(sec*10+b, 20) // rows of both partitions in every entry
			if err := q.Enqueue(ctx, "cpu", rows, clk.Now()); err != nil {
				t.Fatalf("second %d: insert refused: %v", sec, err)
			}
			for _, r := range rows {
				if r.Time%2 == 0 {
					acked[rowKey(r)] = clk.ns.Load()
				}
			}
		}
		launchNow(t, f, clk)
		settledBut(t, f, s)
		if sec%10 == 0 { // the held call reaches its ack timeout
			s.timeout()
			settledBut(t, f, s)
		}
		clk.ns.Add(int64(time.Second))
		st := q.Admission()
		if st.Closed || st.OverdueRows != 0 {
			t.Fatalf("second %d: one failing partition: admission %+v, want open with nothing overdue", sec, st)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, at := range acked {
		got, ok := s.mu.at[k]
		if !ok || got != at {
			t.Fatalf("healthy row %s acknowledged at %d, forwarded at %d (%v): held up by the failing partition", k, at, got, ok)
		}
	}
	if s.mu.maxStuck > 1 {
		t.Fatalf("%d calls at once to the failing partition, want at most 1", s.mu.maxStuck)
	}
	if got := metricValue(q.metrics.admissionClosings); got != 0 {
		t.Fatalf("admission closed %v times", got)
	}
	if st := q.Admission(); st.Capacity < o0 {
		t.Fatalf("capacity estimate %.0f fell below the initial %.0f because of the failing partition", st.Capacity, o0)
	}
}

// TestInFlightRowsNotOverdue: rows in a call's hands are counted in flight,
// not overdue, however long the call lasts; given up, they count in their
// due bucket again (and overdue once their time is past).
func TestInFlightRowsNotOverdue(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	ctx := context.Background()
	if err := q.Enqueue(ctx, "cpu", makeRows(0, 10), clk.Now()); err != nil {
		t.Fatal(err)
	}
	sender := newRecorder()
	sender.block = make(chan struct{})
	f := NewForwarder(q, sender, fastForwarder())
	cctx, cancel := context.WithCancel(ctx)
	var own sync.WaitGroup
	if _, err := f.launch(cctx, clk.ns.Load(), &own); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		clk.ns.Add(int64(time.Second))
		if st := q.Admission(); st.OverdueRows != 0 || st.InFlightRows != 10 {
			t.Fatalf("rows in a call: %+v, want 10 in flight, 0 overdue", st)
		}
	}
	cancel() // the call is cut short: its entry is left queued
	own.Wait()
	clk.ns.Add(int64(time.Second))
	if st := q.Admission(); st.OverdueRows != 10 || st.InFlightRows != 0 {
		t.Fatalf("rows given up: %+v, want 10 overdue, 0 in flight", st)
	}
}

// TestAdmissionClockStepBack: admission closed, the wall clock steps back
// an hour (an NTP correction). Admission re-bases at once: the rows
// counted overdue are not overdue by the new clock, so it opens; and an
// empty queue opens it too.
func TestAdmissionClockStepBack(t *testing.T) {
	for _, drain := range []bool{false, true} {
		clk, opts := clockedOptions(t)
		q := openQueue(t, t.TempDir(), opts)
		ctx := context.Background()
		// Nothing forwards: rows due now become overdue, admission closes.
		for i := 0; !q.Admission().Closed; i++ {
			if i > 20 {
				t.Fatal("admission never closed")
			}
			_ = q.Enqueue(ctx, "cpu", makeRows(i, 10), clk.Now())
			clk.ns.Add(int64(time.Second))
		}
		clk.ns.Add(-int64(time.Hour))
		if drain {
			if err := NewForwarder(q, newRecorder(), fastForwarder()).Drain(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if st := q.Admission(); st.Closed || st.OverdueRows != 0 {
			t.Fatalf("drain %v: after the clock stepped back: %+v, want open, nothing overdue", drain, st)
		}
		if err := q.Enqueue(ctx, "cpu", makeRows(999, 1), clk.Now()); err != nil {
			t.Fatalf("drain %v: insert after the clock stepped back: %v", drain, err)
		}
		// Ticks go on on the new clock.
		clk.ns.Add(3 * int64(time.Second))
		if st := q.Admission(); st.AcceptRate <= 0 {
			t.Fatalf("drain %v: rates frozen after the step: %+v", drain, st)
		}
	}
}

// TestAdmissionOpensWhenEmpty: a closed admission opens the moment the
// queue is empty, without waiting for a tick.
func TestAdmissionOpensWhenEmpty(t *testing.T) {
	o := Options{}
	o.EnsureDefaults()
	a := newAdmission(&o)
	a.closed, a.behindSince, a.overdue = true, 5, 10
	if !a.reset() || a.closed || a.behindSince != 0 || a.overdue != 0 {
		t.Fatalf("reset: closed %v behindSince %d overdue %d", a.closed, a.behindSince, a.overdue)
	}
}

// TestOneForwarderPerQueue: a second forwarder on a queue would load and
// settle the entries of the first one's calls (the in-flight set is per
// forwarder): NewForwarder refuses it.
func TestOneForwarderPerQueue(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	NewForwarder(q, newRecorder(), fastForwarder())
	defer func() {
		r := recover()
		if msg, _ := r.(string); !strings.Contains(msg, "already has a forwarder") {
			t.Fatalf("second NewForwarder: recovered %v, want a panic naming the problem", r)
		}
	}()
	NewForwarder(q, newRecorder(), fastForwarder())
}

// TestCapacityDecays: a capacity proven once decays, while not saturated,
// towards 1.5 times the forward rate (not below the initial rate), and a
// saturated tick takes the measured rate.
func TestCapacityDecays(t *testing.T) {
	sec := int64(time.Second)
	now := 1000 * sec
	a := startedAdmission(now)
	a.capacity, a.forwardRate = 8000, 3000
	for range 20 * 60 {
		now += sec
		a.forwarded = 3000
		a.update(now, true)
	}
	if a.capacity < 4490 || a.capacity > 4600 {
		t.Fatalf("capacity %.0f after 20 min forwarding 3000 rows/s unsaturated, want about 4500", a.capacity)
	}
	for range 20 * 60 {
		now += sec
		a.update(now, true) // idle
	}
	if a.capacity != float64(DefaultInitialForwardRate) {
		t.Fatalf("capacity %.0f after 20 idle minutes, want the initial %.0f", a.capacity, float64(DefaultInitialForwardRate))
	}
	a.capacity = 8000
	a.forwardRate = 8000
	for range 10 {
		now += sec
		a.forwarded = 8000
		a.update(now, true)
	}
	if math.Abs(a.capacity-8000) > 800 {
		t.Fatalf("capacity %.0f while forwarding 8000 rows/s, want about 8000", a.capacity)
	}
}

// TestAdmissionOffKeepsMeasuring: with admission off, the rates and the
// gauges are kept (only the closing rule is skipped).
func TestAdmissionOffKeepsMeasuring(t *testing.T) {
	clk := newClock(time.Unix(1_700_000_000, 0))
	opts := testOptions(t)
	opts.Now, opts.NoAdmission = clk.Now, true
	q := openQueue(t, t.TempDir(), opts)
	ctx := context.Background()
	for i := range 20 {
		if err := q.Enqueue(ctx, "cpu", makeRows(i, 100), clk.Now()); err != nil {
			t.Fatalf("admission off: %v", err)
		}
		clk.ns.Add(int64(time.Second))
	}
	st := q.Admission()
	if st.Closed || st.AcceptRate <= 0 || st.OverdueRows == 0 {
		t.Fatalf("admission off, nothing forwarded: %+v, want open, rates and overdue counted", st)
	}
	if metricValue(q.metrics.acceptRate) <= 0 || metricValue(q.metrics.overdueRows) == 0 {
		t.Fatal("admission gauges stay 0 with admission off")
	}
}

// TestDiscardedRowsNotForwarded: rows a Sender reports discarded
// (ErrDiscarded, a dropped table) leave the queue without counting as
// forwarded.
func TestDiscardedRowsNotForwarded(t *testing.T) {
	clk := newClock(time.Unix(1_700_000_000, 0)) // no tick resets the counts
	opts := testOptions(t)
	opts.Now = clk.Now
	q := openQueue(t, t.TempDir(), opts)
	ctx := context.Background()
	if err := q.Enqueue(ctx, "cpu", makeRows(0, 10), clk.Now()); err != nil {
		t.Fatal(err)
	}
	sender := &funcSender{fn: func(_ context.Context, _ string, rows []model.Row) ([]error, error) {
		errs := make([]error, len(rows))
		for i := range errs {
			errs[i] = ErrDiscarded
		}
		return errs, nil
	}}
	if err := NewForwarder(q, sender, fastForwarder()).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if rows, _ := q.Depth(); rows != 0 {
		t.Fatalf("depth %d after discarding, want 0", rows)
	}
	if got := metricValue(q.metrics.forwarded); got != 0 {
		t.Fatalf("forwarded rows %v, want 0 (discarded)", got)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.adm.forwarded != 0 || q.mu.adm.handled != 10 {
		t.Fatalf("admission counts forwarded %d handled %d, want 0 and 10", q.mu.adm.forwarded, q.mu.adm.handled)
	}
}

// TestFailingCallsDoNotMeasureCapacity: rows overdue while a call to a
// failing partition is in flight, or in a tick that saw a call fail, do
// not mark the forwarder saturated nor lower the estimate; without
// failures they do.
func TestFailingCallsDoNotMeasureCapacity(t *testing.T) {
	sec := int64(time.Second)
	now := 1000 * sec
	a := startedAdmission(now)
	a.capacity = 8000
	a.add(now, 5000, false) // overdue from 2 s on, nothing forwarded
	a.failingCalls = 1
	for range 10 {
		now += sec
		a.update(now, true)
	}
	// The first two ticks, before the rows were overdue, decay it a
	// little; from then on it holds.
	c := a.capacity
	if a.overdue != 5000 || a.saturated || c < 7900 {
		t.Fatalf("probe in flight: overdue %d saturated %v capacity %.0f, want 5000 overdue, unsaturated, about 8000", a.overdue, a.saturated, c)
	}
	a.failingCalls = 0
	a.failedTick = true // a call failed in this tick
	now += sec
	a.update(now, true)
	if a.saturated || a.capacity != c {
		t.Fatalf("a call failed in the tick: saturated %v capacity %.0f, want unsaturated, %.0f", a.saturated, a.capacity, c)
	}
	now += sec
	a.update(now, true)
	if !a.saturated || a.capacity != c/2 {
		t.Fatalf("no failure: saturated %v capacity %.0f, want saturated, halved to %.0f", a.saturated, a.capacity, c/2)
	}
}

// TestDrainRaisesCapacityAQuarter: a forwarder working off a backlog
// while nothing is accepted (admission closed) forwards faster than it
// can under load; such ticks may lower the estimate, and raise it to a
// quarter of their forward rate at most (drainShare), nor may the ticks
// right after it opens again, until the queue accepts again. An estimate
// below its recent peak is recovering, with the larger accept bound.
func TestDrainRaisesCapacityAQuarter(t *testing.T) {
	sec := int64(time.Second)
	now := 1000 * sec
	a := startedAdmission(now)
	a.capacity, a.saturated = 5000, true
	a.add(now, 100_000, false) // a backlog, overdue from the next ticks on
	for range 5 {
		now += sec
		a.forwarded = 20_000 // draining, with nothing accepted
		a.update(now, true)
	}
	if a.capacity != 5000 {
		t.Fatalf("capacity %.0f after draining at 20000 rows/s with nothing accepted, want 5000 kept", a.capacity)
	}
	a.remove(now, 100_000, false)
	for range 3 {
		now += sec
		a.forwarded = 20_000 // the rest of the backlog, not overdue
		a.update(now, true)
	}
	if a.capacity != 5000 {
		t.Fatalf("capacity %.0f after opening, still draining, want 5000 kept", a.capacity)
	}
	// Under load (accepting as much as it forwards), the forward rate
	// counts again.
	for range 5 {
		now += sec
		a.forwarded, a.accepted = 9000, 9000
		a.update(now, true)
	}
	if a.capacity < 8000 || a.capacity > 9000 {
		t.Fatalf("capacity %.0f forwarding 9000 rows/s while accepting as much (the drain's 20000 still in the forward rate), want it raised towards 9000 and no further", a.capacity)
	}
	// A drain slower than the estimate lowers it.
	a.add(now, 100_000, false)
	for range 5 {
		now += sec
		a.forwarded, a.accepted = 2000, 0
		a.update(now, true)
	}
	if a.capacity > 3000 {
		t.Fatalf("capacity %.0f after draining at 2000 rows/s, want it lowered", a.capacity)
	}
	// Below its recent peak (about 9000) the estimate is recovering: the
	// accept bound lets in recoveryProbe times it, not acceptProbe.
	if !a.recovering() || a.acceptLimit() != int64(recoveryProbe*a.capacity) {
		t.Fatalf("recovering %v, accept limit %d at capacity %.0f (peak %.0f), want %v times the estimate",
			a.recovering(), a.acceptLimit(), a.capacity, a.peak, recoveryProbe)
	}
	// A stall lowered the estimate to its floor; the drain that follows,
	// at 20000 rows/s with nothing accepted, proves a quarter of that.
	a.capacity = minSlotRows
	for range 8 {
		now += sec
		a.forwarded, a.accepted = 20_000, 0
		a.update(now, true)
	}
	if a.capacity < 4000 || a.capacity > 20_000/drainShare {
		t.Fatalf("capacity %.0f after draining at 20000 rows/s from an estimate a stall lowered, want a quarter of the drain's rate", a.capacity)
	}
}

// TestAcceptBound: once the forwarder was seen saturated, a queue
// accepts at most acceptProbe times its capacity estimate in one tick,
// however much room its due seconds have; before, it does not (the
// estimate is then below the truth).
func TestAcceptBound(t *testing.T) {
	clk, opts := clockedOptions(t)
	opts.InitialForwardRate = 2000
	q := openQueue(t, t.TempDir(), opts)
	ctx := context.Background()
	enqueueSpread := func(rows, from int) (accepted int, err error) {
		for i := range rows / 100 {
			due := clk.Now().Add(time.Duration(3+i%15) * time.Second)
			if err := q.Enqueue(ctx, "cpu", makeRows(from+i, 100), due); err != nil {
				return accepted, err
			}
			accepted += 100
		}
		return accepted, nil
	}
	if n, err := enqueueSpread(4000, 0); err != nil {
		t.Fatalf("not yet saturated: %v after %d rows, want 4000 accepted in a second", err, n)
	}
	clk.ns.Add(int64(time.Second))
	q.Admission() // the tick of this second
	q.mu.Lock()
	q.mu.adm.saturated, q.mu.adm.capacity = true, 2000
	q.mu.Unlock()
	n, err := enqueueSpread(4000, 1000)
	if !errors.Is(err, ErrBehind) || !errors.Is(err, errcode.ErrQueueFull) {
		t.Fatalf("saturated, over 1.25 times the capacity in a second: %v, want ErrBehind (a queue_full)", err)
	}
	if want := int(acceptProbe * 2000); n != want {
		t.Fatalf("accepted %d rows in a second before the refusal, want %d", n, want)
	}
	clk.ns.Add(int64(time.Second))
	if _, err := enqueueSpread(100, 2000); err != nil {
		t.Fatalf("the next second: %v", err)
	}
}

// TestDirectPrior: rows the server wrote straight to their partitions
// (NoteDirect) raise the capacity estimate of a queue that has not seen
// its forwarder saturated to their recent rate, the due budget with it;
// the estimate then counts as measured (the accept bound holds, the near
// seconds probe by a quarter, not twice). A forwarder seen saturated keeps
// its measured estimate whatever the direct rate, and once the direct load
// is gone the prior decays back to the initial rate.
func TestDirectPrior(t *testing.T) {
	// newPrimed opens a queue that wrote 20,000 direct rows/s for two
	// minutes, after setup.
	newPrimed := func(setup func(a *admission)) (*Queue, func()) {
		clk, opts := clockedOptions(t)
		opts.InitialForwardRate = 1000
		q := openQueue(t, t.TempDir(), opts)
		second := func() { clk.ns.Add(int64(time.Second)) }
		q.Admission()
		q.mu.Lock()
		setup(&q.mu.adm)
		q.mu.Unlock()
		for range 120 {
			second()
			q.tick() // as the forwarder's Run does every poll
			q.NoteDirect(20_000)
		}
		second()
		return q, second
	}
	q, _ := newPrimed(func(*admission) {})
	st := q.Admission()
	if !st.Primed || st.Capacity < 19_000 || st.Capacity > 20_000 || st.DirectRate < 19_000 {
		t.Fatalf("after 2 min of 20000 direct rows/s: %+v, want primed, capacity and direct rate about 19600", st)
	}
	if want := int64(headroom * st.Capacity); st.SlotRows < want-1 || st.SlotRows > want+1 {
		t.Fatalf("slot budget %d, want %d (the headroom of the primed estimate)", st.SlotRows, want)
	}
	q.mu.Lock()
	factor, measured := q.mu.adm.probeFactor(), q.mu.adm.measured()
	q.mu.Unlock()
	if factor != probe || !measured {
		t.Fatalf("primed estimate: probe factor %.2f, measured %v; want %.2f, true", factor, measured, probe)
	}
	// The accept bound holds as for a measured estimate.
	ctx := context.Background()
	accepted := 0
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		due := q.now().Add(time.Duration(3+i%15) * time.Second)
		if err = q.Enqueue(ctx, "cpu", makeRows(i, 1000), due); err == nil {
			accepted += 1000
		}
	}
	if !errors.Is(err, ErrBehind) || float64(accepted) > acceptProbe*st.Capacity+2000 {
		t.Fatalf("primed: %d rows accepted in a second, then %v; want ErrBehind after about %.0f", accepted, err, acceptProbe*st.Capacity)
	}

	// Seen saturated, the measure wins over the prior.
	q, _ = newPrimed(func(a *admission) { a.saturated, a.capacity = true, 5000 })
	if st := q.Admission(); st.Primed || st.Capacity > 5000 {
		t.Fatalf("saturated at 5000 rows/s, direct 20000: %+v, want the measure kept, not primed", st)
	}

	// Without direct rows the prior decays back to the initial rate.
	q, second := newPrimed(func(*admission) {})
	for range 30 * 60 {
		second()
		q.Admission()
	}
	if st := q.Admission(); st.Primed || st.Capacity > 1000 {
		t.Fatalf("30 min without direct rows: %+v, want the initial 1000 rows/s, not primed", st)
	}
}

// TestWidespreadFailuresCloseAdmission: rows written back after failed
// forwards do not close admission while one partition fails, but do once
// forwards fail in two partitions or more and the rows retrying keep
// growing (a cluster over its capacity: forwards into the present's
// partitions keep failing); partitions that stay unavailable, whose rows
// only cycle through their retries, do not. Admission opens again once
// the rows retrying stop growing, or the failures are down to one
// partition.
func TestWidespreadFailuresCloseAdmission(t *testing.T) {
	sec := int64(time.Second)
	for _, tc := range []struct {
		failedParts int64
		growth      int64 // rows retrying added per second
		closes      bool
	}{{0, 2000, false}, {1, 2000, false}, {2, 0, false}, {2, 2000, true}, {5, 2000, true}} {
		now := 1000 * sec
		a := startedAdmission(now)
		a.add(now, 20_000, true) // retrying
		a.failedParts = tc.failedParts
		closedAt := 0
		for step := 1; step <= 30 && !a.closed; step++ {
			now += sec
			a.accepted += 2000
			a.add(now+60*sec, 2000, false) // due after the test
			a.add(now, tc.growth, true)
			a.handled += 1000 // rows requeued again
			a.update(now, true)
			if a.closed {
				closedAt = step
			}
		}
		if a.closed != tc.closes {
			t.Fatalf("%d failing partitions, rows retrying growing by %d/s: closed %v (at %d s), want %v",
				tc.failedParts, tc.growth, a.closed, closedAt, tc.closes)
		}
		if !tc.closes {
			continue
		}
		if closedAt < 3 {
			t.Fatalf("closed after %d s, want BehindFor (3 s) of being behind first", closedAt)
		}
		if d := a.retryAfter(time.Second); d <= time.Second {
			t.Fatalf("Retry-After %s while closed with rows retrying, want more than the floor", d)
		}
		// Closed, nothing accepted: the rows retrying stop growing.
		now += sec
		if tr := a.update(now, true); tr != nowOpen || a.closed {
			t.Fatalf("transition %v, closed %v once the rows retrying stopped growing, want open", tr, a.closed)
		}
	}
}

// failingParts routes rows by time modulo 3 (or to part, when set: the
// others split away into it) and fails every call to the partitions in
// its failing set (as a whole).
type failingParts struct {
	mu      sync.Mutex
	failing map[int]bool
	part    int
}

func (s *failingParts) route(r model.Row) int {
	if s.part > 0 {
		return s.part
	}
	return int(r.Time % 3)
}

func (s *failingParts) Route(_ context.Context, _ string, rows []model.Row) ([]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = s.route(r)
	}
	return out, nil
}

func (s *failingParts) Forward(_ context.Context, _ string, rows []model.Row) ([]error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing[s.route(rows[0])] {
		return nil, errors.New("ack timeout")
	}
	return nil, nil
}

// TestForwarderCountsFailingPartitions: the forwarder tells admission how
// many partitions' last call failed, and forgets a partition once a call
// to it succeeds, or once it failed more than failedPartTTL ago with no
// call since (split away: its rows go elsewhere).
func TestForwarderCountsFailingPartitions(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	s := &failingParts{failing: map[int]bool{1: true, 2: true}}
	f := NewForwarder(q, s, fastForwarder())
	ctx := context.Background()
	failedParts := func() int64 {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.mu.adm.failedParts
	}
	if err := q.Enqueue(ctx, "cpu", makeRows(0, 30), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pass(ctx, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if got := failedParts(); got != 2 {
		t.Fatalf("%d failing partitions after calls to partitions 1 and 2 failed, want 2", got)
	}
	s.mu.Lock()
	s.failing[2] = false
	s.mu.Unlock()
	if _, err := f.pass(ctx, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if got := failedParts(); got != 1 {
		t.Fatalf("%d failing partitions after a call to partition 2 succeeded, want 1", got)
	}
	if st := q.Admission(); st.RetryingRows != 10 {
		t.Fatalf("%d rows retrying, want partition 1's 10", st.RetryingRows)
	}
	// Partition 1 splits away: its rows now go to partition 2, which
	// accepts them. A minute later it no longer counts.
	s.mu.Lock()
	s.part = 2
	s.mu.Unlock()
	if _, err := f.pass(ctx, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if got := failedParts(); got != 1 {
		t.Fatalf("%d failing partitions right after partition 1's rows went elsewhere, want 1 (it failed just now)", got)
	}
	clk.ns.Add(int64(failedPartTTL + time.Second))
	if err := q.Enqueue(ctx, "cpu", makeRows(1, 3), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pass(ctx, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if got := failedParts(); got != 0 {
		t.Fatalf("%d failing partitions %s after partition 1's last failure, want 0", got, failedPartTTL+time.Second)
	}
}

// TestLoadBoundedWhateverTheWindow: with a window of 16 calls, one load
// takes at most maxLoadCalls calls' worth of rows; the rest stay queued
// (and count as overdue once late) instead of waiting in memory for a
// slot, where admission would not see them.
func TestLoadBoundedWhateverTheWindow(t *testing.T) {
	clk, opts := clockedOptions(t)
	opts.NoAdmission = true // the counts are kept; 3,000 rows due at once are taken
	q := openQueue(t, t.TempDir(), opts)
	ctx := context.Background()
	for i := range 30 {
		if err := q.Enqueue(ctx, "cpu", makeRows(i, 100), clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	sender := newRecorder()
	sender.block = make(chan struct{})
	fo := fastForwarder()
	fo.MaxInFlight, fo.MaxRowsPerCall = 16, 100
	f := NewForwarder(q, sender, fo)
	cctx, cancel := context.WithCancel(ctx)
	var own sync.WaitGroup
	launched := make(chan error, 1)
	go func() {
		_, err := f.launch(cctx, clk.ns.Load(), &own)
		launched <- err
	}()
	// The calls block in the sender; a load too large would also block
	// launch itself, waiting for slots, until cancel.
	deadline := time.Now().Add(10 * time.Second)
	for q.Admission().InFlightRows == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	st := q.Admission()
	cancel()
	if err := <-launched; err != nil {
		t.Fatal(err)
	}
	own.Wait()
	if want := int64(maxLoadCalls * 100); st.InFlightRows != want {
		t.Fatalf("%d rows loaded by one launch with 16 free calls of 100 rows, want %d (maxLoadCalls calls' worth)", st.InFlightRows, want)
	}
}

// gatedParts routes rows by time parity; the calls to the partitions in
// slow wait until release, then accept every row (replica sets that
// confirm, but late), those to the others accept at once.
type gatedParts struct {
	slow map[int]bool
	gate chan struct{}
	mu   sync.Mutex
	held int // calls waiting on the gate
}

func (s *gatedParts) Route(_ context.Context, _ string, rows []model.Row) ([]int, error) {
	return routeByParity(rows), nil
}

func (s *gatedParts) Forward(ctx context.Context, _ string, rows []model.Row) ([]error, error) {
	if !s.slow[int(rows[0].Time%2)] {
		return nil, nil
	}
	s.mu.Lock()
	s.held++
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.held--; s.mu.Unlock() }()
	select {
	case <-s.gate:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *gatedParts) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// TestLateCallsCloseAdmission: the forwarder loads every row in the second
// it falls due, but the calls of both partitions take far longer than the
// overdue allowance to be confirmed. Nothing is overdue in the queue, yet
// the rows acknowledged meanwhile would wait for those replica sets:
// admission counts the late calls' rows as behind and closes, and opens
// again once the calls are confirmed. Before, rows in a call's hands were
// never behind, and admission stayed open however late they were.
func TestLateCallsCloseAdmission(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	s := &gatedParts{slow: map[int]bool{0: true, 1: true}, gate: make(chan struct{})}
	f := NewForwarder(q, s, ForwarderOptions{})
	ctx := context.Background()
	released := false
	t.Cleanup(func() {
		if !released {
			close(s.gate)
		}
		f.waitIdle()
	})
	if err := q.Enqueue(ctx, "cpu", makeRows(0, 20), clk.Now()); err != nil {
		t.Fatal(err)
	}
	launchNow(t, f, clk)
	eventually(t, "both partitions' calls in the sender", func() bool { return s.waiting() == 2 })
	closedAt := -1
	for sec := 1; sec <= 10 && closedAt < 0; sec++ {
		clk.ns.Add(int64(time.Second))
		err := q.Enqueue(ctx, "cpu", makeRows(sec, 20), clk.Now().Add(time.Hour)) // due later: not loaded
		st := q.Admission()
		if st.OverdueRows != 0 {
			t.Fatalf("second %d: %d rows overdue in the queue, want 0 (every due row is in a call)", sec, st.OverdueRows)
		}
		if st.Closed {
			closedAt = sec
			if st.LateInFlightRows != 20 {
				t.Fatalf("second %d: closed with %d late rows in flight, want 20", sec, st.LateInFlightRows)
			}
		}
		if err != nil && !errors.Is(err, ErrBehind) {
			t.Fatalf("second %d: %v", sec, err)
		}
	}
	if closedAt < 0 {
		t.Fatalf("admission still open after 10 s of calls to two partitions late by 8 s: %+v", q.Admission())
	}
	if err := q.Enqueue(ctx, "cpu", makeRows(99, 1), clk.Now().Add(time.Hour)); !errors.Is(err, ErrBehind) {
		t.Fatalf("insert while closed: %v, want ErrBehind", err)
	}
	close(s.gate)
	released = true
	f.waitIdle()
	clk.ns.Add(int64(time.Second))
	if st := q.Admission(); st.Closed || st.LateInFlightRows != 0 {
		t.Fatalf("late calls confirmed: admission %+v, want open with nothing late", st)
	}
}

// TestOneSlowPartitionKeepsAdmissionOpen: one partition's call waits far
// past its rows' due time (a partition splitting or catching up) while the
// other partition takes its rows at once. Late rows of one partition are
// not the forwarder's capacity, and refusing inserts to every partition
// would not speed that one up: they are not counted late, and admission
// stays open.
func TestOneSlowPartitionKeepsAdmissionOpen(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	s := &gatedParts{slow: map[int]bool{1: true}, gate: make(chan struct{})}
	f := NewForwarder(q, s, ForwarderOptions{})
	ctx := context.Background()
	t.Cleanup(func() { close(s.gate); f.waitIdle() })
	if err := q.Enqueue(ctx, "cpu", makeRows(0, 20), clk.Now()); err != nil {
		t.Fatal(err)
	}
	launchNow(t, f, clk)
	eventually(t, "partition 1's call in the sender", func() bool { return s.waiting() == 1 })
	for sec := 1; sec <= 15; sec++ {
		clk.ns.Add(int64(time.Second))
		even := makeRows(sec, 40)
		rows := even[:0]
		for _, r := range even {
			if r.Time%2 == 0 {
				rows = append(rows, r)
			}
		}
		if err := q.Enqueue(ctx, "cpu", rows, clk.Now()); err != nil {
			t.Fatalf("second %d: insert refused: %v", sec, err)
		}
		launchNow(t, f, clk)
		eventually(t, "partition 0's rows confirmed", func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.mu.running == 1
		})
		if st := q.Admission(); st.Closed || st.LateInFlightRows != 0 || st.OverdueRows != 0 {
			t.Fatalf("second %d: one slow partition: admission %+v, want open with nothing late or overdue", sec, st)
		}
	}
}

// TestProbeOfWholeEntries: once saturated at an estimate of 1,000 rows/s,
// the accept bound and a probing second take a second 1,000-row insert
// (one whole entry beyond the estimate, which a margin of a quarter never
// let through) but not a third, and an insert of 50,000 rows only as the
// first of its tick or second: the whole-entry bound is not a way round
// the estimate for large inserts.
func TestProbeOfWholeEntries(t *testing.T) {
	now := time.Unix(1_700_000_000, 0).UnixNano()
	a := startedAdmission(now)
	a.saturated, a.capacity = true, 1000
	for _, c := range []struct {
		accepted, n int64
		full        bool
	}{
		{1000, 1000, false},
		{2000, 1000, true},
		{50_000, 50_000, true},
		{1000, 50_000, true},
	} {
		a.accepted = c.accepted
		if got := a.acceptFull(c.n); got != c.full {
			t.Errorf("accept bound: %d rows accepted in the tick, %d more: full %v, want %v", c.accepted, c.n, got, c.full)
		}
	}
	due := now + int64(time.Second) // a probing second
	b := a.bucket(due)
	for _, c := range []struct {
		have, n int64
		full    bool
	}{
		{1000, 1000, false},
		{2000, 1000, true},
		{50_000, 50_000, true},
	} {
		a.future[b] = c.have
		if got := a.slotFull(now, due, c.n); got != c.full {
			t.Errorf("probing second holding %d rows, %d more: full %v, want %v", c.have, c.n, got, c.full)
		}
	}
}
