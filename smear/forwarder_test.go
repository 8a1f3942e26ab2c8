package smear

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tsdb/tsdb/model"
)

var errUnavailable = errors.New("replica set unavailable")

// TestForwarderRetriesUntilDelivered: one table's replica set is down for
// a while (whole calls fail), another rejects some rows a few times each;
// every row is still delivered, exactly as enqueued, no entry is left, and
// the retry counter moved.
func TestForwarderRetriesUntilDelivered(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	sender := newRecorder()
	var mu sync.Mutex
	downCalls := 0
	rowTries := map[string]int{}
	sender.fail = func(call int, table string, rows []model.Row) error {
		mu.Lock()
		defer mu.Unlock()
		if table == "down" && downCalls < 5 {
			downCalls++
			return errUnavailable
		}
		return nil
	}
	sender.rowFail = func(table string, r model.Row) error {
		mu.Lock()
		defer mu.Unlock()
		k := rowKey(r)
		rowTries[k]++
		if table == "flaky" && r.Time%2 == 1 && rowTries[k] <= 3 {
			return fmt.Errorf("partition of %s moved", k)
		}
		return nil
	}
	f := NewForwarder(q, sender, fastForwarder())
	stop := runForwarder(t, f)

	ctx := context.Background()
	want := map[string][]model.Row{}
	total := 0
	for b := range 12 {
		table := []string{"down", "flaky", "fine"}[b%3]
		rows := makeRows(b, 1+b%4)
		if err := q.Enqueue(ctx, table, rows, time.Now().Add(time.Duration(b)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		want[table] = append(want[table], rows...)
		total += len(rows)
	}
	eventually(t, "every row delivered", func() bool { return sender.accepted() == total })
	eventually(t, "an empty queue", func() bool { rows, bytes := q.Depth(); return rows == 0 && bytes == 0 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	sender.checkDelivered(t, want)
	if n := len(storedEntries(t, q)); n != 0 {
		t.Fatalf("%d entries left", n)
	}
	if got := metricValue(q.metrics.retried); got <= 0 {
		t.Fatalf("retried rows = %v, want > 0", got)
	}
	if got := metricValue(q.metrics.forwarded); got != float64(total) {
		t.Fatalf("forwarded rows = %v, want %d (each row accepted once)", got, total)
	}
	if got := metricValue(q.metrics.callFailures); got != 5 {
		t.Fatalf("failed calls = %v, want 5", got)
	}
	if got := metricValue(q.metrics.queueRows); got != 0 {
		t.Fatalf("queue rows gauge = %v", got)
	}
}

// TestForwarderBatchesCalls: rows of one table from several entries share
// a call, no call exceeds MaxRowsPerCall, and an entry larger than a call
// is split across calls.
func TestForwarderBatchesCalls(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	ctx := context.Background()
	due := time.Now()
	total := 0
	for b := range 6 {
		if err := q.Enqueue(ctx, "cpu", makeRows(b, 4), due); err != nil {
			t.Fatal(err)
		}
		total += 4
	}
	if err := q.Enqueue(ctx, "cpu", makeRows(99, 17), due); err != nil {
		t.Fatal(err)
	}
	total += 17
	sender := newRecorder()
	opts := fastForwarder()
	opts.MaxRowsPerCall = 7
	if err := NewForwarder(q, sender, opts).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if sender.accepted() != total {
		t.Fatalf("%d rows delivered, want %d", sender.accepted(), total)
	}
	sender.mu.Lock()
	defer sender.mu.Unlock()
	grouped := false
	for _, n := range sender.mu.callSize {
		if n > 7 {
			t.Fatalf("call of %d rows, limit 7 (calls %v)", n, sender.mu.callSize)
		}
		grouped = grouped || n > 4
	}
	if !grouped || len(sender.mu.callSize) > (total+6)/7+1 {
		t.Fatalf("calls %v: rows of several entries should share calls", sender.mu.callSize)
	}
	// Each call is observed once, with its rows, and so is its settle.
	var m dto.Metric
	for _, c := range []struct {
		name string
		h    prometheus.Histogram
		sum  float64
	}{{"call seconds", q.metrics.callSeconds, -1}, {"call rows", q.metrics.callRows, float64(total)}, {"settle seconds", q.metrics.settleSecs, -1}} {
		if err := c.h.Write(&m); err != nil {
			t.Fatal(err)
		}
		h := m.GetHistogram()
		if h.GetSampleCount() != uint64(len(sender.mu.callSize)) || (c.sum >= 0 && h.GetSampleSum() != c.sum) {
			t.Fatalf("%s: %d samples summing to %v; want one per call (%d), rows summing to %d", c.name, h.GetSampleCount(), h.GetSampleSum(), len(sender.mu.callSize), total)
		}
	}
}

// TestForwarderBadSenderAnswer: a Sender that answers with the wrong
// number of row errors is treated as a failed call; nothing is lost.
func TestForwarderBadSenderAnswer(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	rows := makeRows(0, 3)
	if err := q.Enqueue(context.Background(), "cpu", rows, time.Now()); err != nil {
		t.Fatal(err)
	}
	bad := &funcSender{fn: func(context.Context, string, []model.Row) ([]error, error) {
		return []error{nil}, nil
	}}
	f := NewForwarder(q, bad, fastForwarder())
	if _, err := f.pass(context.Background(), time.Now().UnixNano()); err != nil {
		t.Fatal(err)
	}
	entries := storedEntries(t, q)
	if len(entries) != 1 || len(entries[0].rows) != 3 || entries[0].h.attempts != 1 {
		t.Fatalf("after a bad answer: %d entries %+v", len(entries), entries)
	}
	if r, _ := q.Depth(); r != 3 {
		t.Fatalf("Depth rows %d", r)
	}
}

type funcSender struct {
	fn func(ctx context.Context, table string, rows []model.Row) ([]error, error)
}

func (s *funcSender) Forward(ctx context.Context, table string, rows []model.Row) ([]error, error) {
	return s.fn(ctx, table, rows)
}

// TestRequeueKeepsHistory: a failed row is written back with its attempt
// count incremented, its first enqueue time kept and a due time after the
// backoff; accepted rows of the same entry are gone.
func TestRequeueKeepsHistory(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	enqueued := clk.Now().UnixNano()
	rows := makeRows(0, 4)
	if err := q.Enqueue(context.Background(), "cpu", rows, clk.Now()); err != nil {
		t.Fatal(err)
	}
	sender := newRecorder()
	sender.rowFail = func(_ string, r model.Row) error {
		if r.Time == rows[2].Time {
			return errUnavailable
		}
		return nil
	}
	fopts := fastForwarder()
	fopts.InitialBackoff, fopts.MaxBackoff = time.Second, time.Minute
	fopts.Rand = func(n int64) int64 { return n - 1 } // the top of the jitter range
	f := NewForwarder(q, sender, fopts)
	for attempt := uint64(1); attempt <= 3; attempt++ {
		if _, err := f.pass(context.Background(), clk.Now().UnixNano()); err != nil {
			t.Fatal(err)
		}
		entries := storedEntries(t, q)
		if len(entries) != 1 {
			t.Fatalf("%d entries after attempt %d", len(entries), attempt)
		}
		e := entries[0]
		wantDue := clk.Now().Add(time.Second << (attempt - 1)).UnixNano()
		if e.h.attempts != attempt || e.h.enqueued != enqueued || e.due != wantDue {
			t.Fatalf("attempt %d: header %+v due %d, want due %d", attempt, e.h, e.due, wantDue)
		}
		if len(e.rows) != 1 || rowKey(e.rows[0]) != rowKey(rows[2]) {
			t.Fatalf("requeued rows %+v", e.rows)
		}
		// Not due yet: a pass now forwards nothing.
		if _, err := f.pass(context.Background(), clk.Now().UnixNano()); err != nil {
			t.Fatal(err)
		}
		if n := len(storedEntries(t, q)); n != 1 {
			t.Fatalf("an entry was forwarded before its retry was due")
		}
		clk.ns.Store(e.due)
	}
	if got := metricValue(q.metrics.retried); got != 3 {
		t.Fatalf("retried = %v, want 3", got)
	}
	if r, _ := q.Depth(); r != 1 {
		t.Fatalf("Depth rows %d, want 1", r)
	}
}

func TestBackoff(t *testing.T) {
	opts := ForwarderOptions{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second}
	cases := []struct {
		attempts uint64
		nominal  time.Duration
	}{
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{7, 6400 * time.Millisecond},
		{8, 10 * time.Second},
		{63, 10 * time.Second},
		{64, 10 * time.Second},
		{1 << 40, 10 * time.Second},
	}
	for _, c := range cases {
		for _, pick := range []string{"low", "high"} {
			o := opts
			o.Rand = func(n int64) int64 {
				if pick == "low" {
					return 0
				}
				return n - 1
			}
			o.EnsureDefaults()
			f := &Forwarder{opts: o} // one forwarder per queue: backoff needs only opts
			got := f.backoff(c.attempts)
			want := c.nominal / 2
			if pick == "high" {
				want = c.nominal
			}
			if got != want {
				t.Fatalf("backoff(%d) with the %s draw = %v, want %v", c.attempts, pick, got, want)
			}
		}
	}
}

// TestDrain: Drain forwards entries long before they are due, retries
// failures, and returns once the queue is empty.
func TestDrain(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	ctx := context.Background()
	want := map[string][]model.Row{}
	for b := range 5 {
		rows := makeRows(b, 3)
		if err := q.Enqueue(ctx, "cpu", rows, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		want["cpu"] = append(want["cpu"], rows...)
	}
	sender := newRecorder()
	sender.fail = func(call int, _ string, _ []model.Row) error {
		if call < 3 {
			return errUnavailable
		}
		return nil
	}
	if err := NewForwarder(q, sender, fastForwarder()).Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	sender.checkDelivered(t, want)
	if rows, bytes := q.Depth(); rows != 0 || bytes != 0 || len(storedEntries(t, q)) != 0 {
		t.Fatalf("queue not empty after Drain: %d rows, %d bytes", rows, bytes)
	}
}

// TestDrainGivesUpOnlyWithContext: when nothing can be delivered, Drain
// retries until its context ends and loses nothing.
func TestDrainGivesUpOnlyWithContext(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	if err := q.Enqueue(context.Background(), "cpu", makeRows(0, 3), time.Now()); err != nil {
		t.Fatal(err)
	}
	calls := 0
	var mu sync.Mutex
	down := &funcSender{fn: func(context.Context, string, []model.Row) ([]error, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return nil, errUnavailable
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewForwarder(q, down, fastForwarder()).Drain(ctx) }()
	eventually(t, "several failed drain passes", func() bool { mu.Lock(); defer mu.Unlock(); return calls >= 3 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain = %v, want context.Canceled", err)
	}
	if rows, _ := q.Depth(); rows != 3 {
		t.Fatalf("Depth rows %d after a failed drain, want 3", rows)
	}
	entries := storedEntries(t, q)
	if len(entries) != 1 || len(entries[0].rows) != 3 {
		t.Fatalf("entries after a failed drain: %+v", entries)
	}
}

// TestRunInterruptedCall: a call cut short by shutdown leaves its entry
// as it was (no attempt counted) for the next run, which delivers it.
func TestRunInterruptedCall(t *testing.T) {
	dir := t.TempDir()
	q, err := Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	rows := makeRows(0, 2)
	if err := q.Enqueue(context.Background(), "cpu", rows, time.Now()); err != nil {
		t.Fatal(err)
	}
	blocked := newRecorder()
	blocked.block = make(chan struct{}) // never released
	entered := make(chan struct{})
	var once sync.Once
	blocked.fail = func(int, string, []model.Row) error { return nil }
	wrapper := &funcSender{fn: func(ctx context.Context, table string, rows []model.Row) ([]error, error) {
		once.Do(func() { close(entered) })
		return blocked.Forward(ctx, table, rows)
	}}
	stop := runForwarder(t, NewForwarder(q, wrapper, fastForwarder()))
	<-entered
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	entries := storedEntries(t, q)
	if len(entries) != 1 || entries[0].h.attempts != 0 || len(entries[0].rows) != 2 {
		t.Fatalf("entry after an interrupted call: %+v", entries)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	q = openQueue(t, dir, testOptions(t)) // and replay after restart
	sender := newRecorder()
	stop = runForwarder(t, NewForwarder(q, sender, fastForwarder()))
	eventually(t, "delivery after restart", func() bool { r, _ := q.Depth(); return r == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	sender.checkDelivered(t, map[string][]model.Row{"cpu": rows})
}

// TestRunReturnsWhenQueueCloses: Run notices a closed queue and returns
// ErrClosed rather than spinning.
func TestRunReturnsWhenQueueCloses(t *testing.T) {
	q, err := Open(t.TempDir(), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	f := NewForwarder(q, newRecorder(), fastForwarder())
	done := make(chan error, 1)
	go func() { done <- f.Run(context.Background()) }()
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Run = %v, want ErrClosed", err)
		}
	case <-time.After(waitLong):
		t.Fatal("Run did not return after Close")
	}
	if err := f.Drain(context.Background()); !errors.Is(err, ErrClosed) && err != nil {
		t.Fatalf("Drain on a closed queue = %v", err)
	}
}

// TestEnqueueWhileForwarding: inserts keep arriving, some already overdue
// (like copies enqueued by another server), while Run forwards; the scan
// hint never makes the forwarder skip one, and the queue ends empty.
func TestEnqueueWhileForwarding(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	sender := newRecorder()
	sender.fail = func(call int, _ string, _ []model.Row) error {
		if call%7 == 3 {
			return errUnavailable
		}
		return nil
	}
	f := NewForwarder(q, sender, fastForwarder())
	stop := runForwarder(t, f)
	const goroutines, perG = 8, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	want := map[string][]model.Row{}
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				rows := makeRows(g*perG+i, 2)
				due := time.Now().Add(time.Duration(i%5-2) * time.Millisecond) // some in the past
				if err := q.Enqueue(context.Background(), "cpu", rows, due); err != nil {
					t.Errorf("Enqueue: %v", err)
					return
				}
				mu.Lock()
				want["cpu"] = append(want["cpu"], rows...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	eventually(t, "every row delivered", func() bool { return sender.accepted() == goroutines*perG*2 })
	deadline := time.Now().Add(10 * time.Second)
	for r, b := q.Depth(); r != 0 || b != 0; r, b = q.Depth() {
		if time.Now().After(deadline) {
			f.mu.Lock()
			var fl []string
			for k, e := range f.mu.inflight {
				fl = append(fl, fmt.Sprintf("%x due %d pending %d int %v", k, e.due, e.pending, e.interrupted))
			}
			run, win := f.mu.running, len(f.mu.parts)
			f.mu.Unlock()
			q.mu.Lock()
			hint := q.mu.scanFrom
			q.mu.Unlock()
			var st []string
			for _, e := range storedEntries(t, q) {
				st = append(st, fmt.Sprintf("%x due %d att %d rows %d", e.key, e.due, e.h.attempts, len(e.rows)))
			}
			t.Fatalf("depth %d/%d; hint %d; running %d failing parts %d; inflight %v; stored %v", r, b, hint, run, win, fl, st)
		}
		time.Sleep(time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	sender.checkDelivered(t, want)
	if n := len(storedEntries(t, q)); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}
