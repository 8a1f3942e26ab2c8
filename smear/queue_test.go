package smear

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	dto "github.com/prometheus/client_model/go"

	"github.com/tsdb/tsdb/model"
)

// TestEnqueueReopen: entries survive close and reopen with their exact
// rows (versions included), table, enqueue time and due time, and the
// depth is rebuilt by the replay.
func TestEnqueueReopen(t *testing.T) {
	dir := t.TempDir()
	clk, opts := clockedOptions(t)
	q, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[int][]model.Row{}
	tables := []string{"cpu", "mem", "cpu"}
	for b, table := range tables {
		want[b] = makeRows(b, 5+b)
		if err := q.Enqueue(ctx, table, want[b], clk.Now().Add(time.Duration(b+1)*time.Minute)); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
	}
	rows, bytes := q.Depth()
	if rows != 5+6+7 || bytes <= 0 {
		t.Fatalf("Depth = %d rows, %d bytes", rows, bytes)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, "cpu", want[0], clk.Now()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Enqueue after Close = %v, want ErrClosed", err)
	}

	opts.Metrics = NewMetrics(nil)
	q = openQueue(t, dir, opts)
	if r, b := q.Depth(); r != rows || b != bytes {
		t.Fatalf("Depth after reopen = %d, %d; want %d, %d", r, b, rows, bytes)
	}
	if got := metricValue(q.metrics.queueRows); got != float64(rows) {
		t.Fatalf("queue rows gauge = %v after reopen, want %d", got, rows)
	}
	entries := storedEntries(t, q)
	if len(entries) != len(tables) {
		t.Fatalf("%d entries after reopen, want %d", len(entries), len(tables))
	}
	for b, e := range entries { // due order is enqueue order here
		if e.h.table != tables[b] || e.h.enqueued != clk.Now().UnixNano() || e.h.attempts != 0 {
			t.Fatalf("entry %d header %+v", b, e.h)
		}
		if e.due != clk.Now().Add(time.Duration(b+1)*time.Minute).UnixNano() {
			t.Fatalf("entry %d due %d", b, e.due)
		}
		if !reflect.DeepEqual(e.rows, want[b]) {
			t.Fatalf("entry %d rows %+v, want %+v", b, e.rows, want[b])
		}
	}
	// New keys after the reopen never collide with the replayed ones.
	if err := q.Enqueue(ctx, "cpu", want[0], clk.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := len(storedEntries(t, q)); n != 4 {
		t.Fatalf("%d entries after one more enqueue, want 4", n)
	}
}

// TestDueOrdering: an injected clock shows that no entry is loaded before
// it is due and that entries come in due order whatever the enqueue order.
func TestDueOrdering(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	t0 := clk.Now()
	offsets := []time.Duration{30 * time.Second, 10 * time.Second, 20 * time.Second, 10 * time.Second}
	for i, d := range offsets {
		if err := q.Enqueue(context.Background(), "cpu", makeRows(i, 2), t0.Add(d)); err != nil {
			t.Fatal(err)
		}
	}
	sender := newRecorder()
	f := NewForwarder(q, sender, fastForwarder())
	steps := []struct {
		at      time.Duration
		batches []int // batches accepted so far, in order
	}{
		{0, nil},
		{10*time.Second - 1, nil},
		{10 * time.Second, []int{1, 3}},
		{15 * time.Second, []int{1, 3}},
		{20 * time.Second, []int{1, 3, 2}},
		{time.Hour, []int{1, 3, 2, 0}},
	}
	for _, s := range steps {
		clk.ns.Store(t0.Add(s.at).UnixNano())
		if _, err := f.pass(context.Background(), clk.Now().UnixNano()); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, b := range s.batches {
			for _, r := range makeRows(b, 2) {
				want = append(want, rowKey(r))
			}
		}
		sender.mu.Lock()
		got := append([]string(nil), sender.mu.order...)
		sender.mu.Unlock()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("at +%v forwarded %v, want %v", s.at, got, want)
		}
	}
	if rows, bytes := q.Depth(); rows != 0 || bytes != 0 {
		t.Fatalf("Depth = %d, %d after everything was forwarded", rows, bytes)
	}
	if n := len(storedEntries(t, q)); n != 0 {
		t.Fatalf("%d entries left", n)
	}
	// The delay histogram has one sample per row, measured from the
	// enqueue (at t0) to the pass that forwarded it.
	var m dto.Metric
	if err := q.metrics.delay.Write(&m); err != nil {
		t.Fatal(err)
	}
	wantSum := (2*10 + 2*10 + 2*20 + 2*3600.0)
	if h := m.GetHistogram(); h.GetSampleCount() != 8 || h.GetSampleSum() != wantSum {
		t.Fatalf("delay histogram: %d samples, sum %v; want 8, %v", h.GetSampleCount(), h.GetSampleSum(), wantSum)
	}

	// An entry enqueued overdue after a pass moved the scan hint past its
	// due time (a quorum copy from another server) is still found.
	if err := q.Enqueue(context.Background(), "cpu", makeRows(7, 2), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pass(context.Background(), clk.Now().UnixNano()); err != nil {
		t.Fatal(err)
	}
	if sender.accepted() != 10 {
		t.Fatalf("overdue entry not forwarded: %d rows accepted, want 10", sender.accepted())
	}
}

// TestFull: an Enqueue over MaxRows or MaxBytes fails with ErrFull (or
// ErrTooLarge alone) and leaves the depth and the DB unchanged.
func TestFull(t *testing.T) {
	ctx := context.Background()
	due := time.Now().Add(time.Hour)
	t.Run("rows", func(t *testing.T) {
		opts := testOptions(t)
		opts.MaxRows = 10
		opts.RetryAfter = 3 * time.Second
		q := openQueue(t, t.TempDir(), opts)
		if err := q.Enqueue(ctx, "cpu", makeRows(0, 6), due); err != nil {
			t.Fatal(err)
		}
		rows, bytes := q.Depth()
		err := q.Enqueue(ctx, "cpu", makeRows(1, 5), due)
		if !errors.Is(err, ErrFull) {
			t.Fatalf("Enqueue over MaxRows = %v, want ErrFull", err)
		}
		if r, b := q.Depth(); r != rows || b != bytes {
			t.Fatalf("Depth changed on rejection: %d, %d -> %d, %d", rows, bytes, r, b)
		}
		if err := q.Enqueue(ctx, "cpu", makeRows(2, 11), due); !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrFull) {
			t.Fatalf("Enqueue of more rows than the queue holds = %v, want ErrTooLarge only", err)
		}
		if err := q.Enqueue(ctx, "cpu", makeRows(3, 4), due); err != nil {
			t.Fatalf("Enqueue up to exactly MaxRows: %v", err)
		}
		if n := len(storedEntries(t, q)); n != 2 {
			t.Fatalf("%d entries stored, want 2", n)
		}
		if got := metricValue(q.metrics.fullRejects); got != 2 {
			t.Fatalf("full rejections = %v, want 2", got)
		}
		if q.RetryAfter() != 3*time.Second {
			t.Fatalf("RetryAfter = %v", q.RetryAfter())
		}
	})
	t.Run("bytes", func(t *testing.T) {
		probe := openQueue(t, t.TempDir(), testOptions(t))
		if err := probe.Enqueue(ctx, "cpu", makeRows(0, 3), due); err != nil {
			t.Fatal(err)
		}
		_, one := probe.Depth()
		opts := testOptions(t)
		opts.MaxBytes = 2*one + one/2
		q := openQueue(t, t.TempDir(), opts)
		for i := range 2 {
			if err := q.Enqueue(ctx, "cpu", makeRows(0, 3), due); err != nil {
				t.Fatalf("Enqueue %d: %v", i, err)
			}
		}
		rows, bytes := q.Depth()
		if err := q.Enqueue(ctx, "cpu", makeRows(0, 3), due); !errors.Is(err, ErrFull) {
			t.Fatalf("Enqueue over MaxBytes = %v, want ErrFull", err)
		}
		if r, b := q.Depth(); r != rows || b != bytes || len(storedEntries(t, q)) != 2 {
			t.Fatalf("Depth changed on rejection: %d, %d -> %d, %d", rows, bytes, r, b)
		}
	})
}

// TestConcurrentEnqueue: many goroutines enqueue at once (run with -race);
// the depth adds up, survives a reopen, and a drain delivers every row
// exactly once.
func TestConcurrentEnqueue(t *testing.T) {
	const goroutines, perG, rowsPer = 16, 10, 3
	dir := t.TempDir()
	q, err := Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string][]model.Row{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			table := fmt.Sprintf("t%d", g%3)
			for i := range perG {
				rows := makeRows(g*perG+i, rowsPer)
				if err := q.Enqueue(ctx, table, rows, time.Now().Add(time.Duration(i)*time.Second)); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				want[table] = append(want[table], rows...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Enqueue: %v", err)
	}
	rows, bytes := q.Depth()
	if rows != goroutines*perG*rowsPer {
		t.Fatalf("Depth = %d rows, want %d", rows, goroutines*perG*rowsPer)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q = openQueue(t, dir, testOptions(t))
	if r, b := q.Depth(); r != rows || b != bytes {
		t.Fatalf("Depth after reopen = %d, %d; want %d, %d", r, b, rows, bytes)
	}
	sender := newRecorder()
	if err := NewForwarder(q, sender, fastForwarder()).Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	sender.checkDelivered(t, want)
	if n := sender.accepted(); n != int(rows) {
		t.Fatalf("%d distinct rows delivered, want %d", n, rows)
	}
	sender.mu.Lock()
	defer sender.mu.Unlock()
	for k, got := range sender.mu.rows {
		if len(got) != 1 {
			t.Fatalf("row %s delivered %d times", k, len(got))
		}
	}
}

// TestEnqueueCopiesRows: the caller may reuse its rows (fasthttp reuses
// request memory) as soon as Enqueue returns.
func TestEnqueueCopiesRows(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	rows := makeRows(1, 4)
	want := makeRows(1, 4)
	if err := q.Enqueue(context.Background(), "cpu", rows, time.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i].Time = -1
		rows[i].Series = "overwritten"
		for j := range rows[i].Fields {
			rows[i].Fields[j] = model.Field{Name: "x", Value: model.Int(99), Version: model.Version{Wall: 1}}
		}
	}
	sender := newRecorder()
	if err := NewForwarder(q, sender, fastForwarder()).Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	sender.checkDelivered(t, map[string][]model.Row{"cpu": want})
}

// TestBeforeWrite: the hook sees every write with its size, and its error
// aborts the Enqueue without a trace.
func TestBeforeWrite(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	fail := errors.New("limited")
	failing := false
	opts := testOptions(t)
	opts.BeforeWrite = func(ctx context.Context, n int) error {
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, n)
		if failing {
			return fail
		}
		return nil
	}
	q := openQueue(t, t.TempDir(), opts)
	ctx := context.Background()
	if err := q.Enqueue(ctx, "cpu", makeRows(0, 3), time.Now()); err != nil {
		t.Fatal(err)
	}
	rows, bytes := q.Depth()
	if len(sizes) != 1 || int64(sizes[0]) != bytes {
		t.Fatalf("BeforeWrite sizes %v, want [%d]", sizes, bytes)
	}
	failing = true
	if err := q.Enqueue(ctx, "cpu", makeRows(1, 3), time.Now()); !errors.Is(err, fail) {
		t.Fatalf("Enqueue with a failing hook = %v", err)
	}
	if r, b := q.Depth(); r != rows || b != bytes || len(storedEntries(t, q)) != 1 {
		t.Fatalf("a refused write changed the queue: %d, %d", r, b)
	}
	failing = false
	if err := NewForwarder(q, newRecorder(), fastForwarder()).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 3 || sizes[2] != keyLen {
		t.Fatalf("BeforeWrite sizes %v; want the drain's delete of one %d-byte key last", sizes, keyLen)
	}
}

// TestEnqueueArguments: empty batches are no-ops; bad table names, done
// contexts and bad options are refused.
func TestEnqueueArguments(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	if err := q.Enqueue(context.Background(), "cpu", nil, time.Now()); err != nil {
		t.Fatalf("empty Enqueue: %v", err)
	}
	if err := q.Enqueue(context.Background(), "Bad-Name", makeRows(0, 1), time.Now()); !errors.Is(err, model.ErrInvalidTable) {
		t.Fatalf("bad table: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Enqueue(ctx, "cpu", makeRows(0, 1), time.Now()); !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: %v", err)
	}
	if rows, bytes := q.Depth(); rows != 0 || bytes != 0 {
		t.Fatalf("Depth %d, %d", rows, bytes)
	}
	if _, err := Open(t.TempDir(), Options{MaxRows: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open without a codec: %v", err)
	}
	if _, err := Open("", testOptions(t)); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open without a dir: %v", err)
	}
}

// TestQuarantine: an entry that does not decode is moved aside, not
// deleted and not forwarded, whether found at Open (bad header) or by the
// forwarder (bad rows); the good entries around it still go through.
func TestQuarantine(t *testing.T) {
	dir := t.TempDir()
	q, err := Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	good := makeRows(0, 2)
	if err := q.Enqueue(ctx, "cpu", good, time.Now()); err != nil {
		t.Fatal(err)
	}
	badHeader := appendKey(nil, 5, 1<<40)
	badRows := appendKey(nil, 6, 1<<40)
	rowsValue := appendHeader(nil, &header{table: "cpu", rows: 1})
	rowsValue = append(rowsValue, "not the codec's format"...)
	if err := q.db.Set(badHeader, []byte{99, 1, 2}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := q.db.Set(badRows, rowsValue, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	opts := testOptions(t)
	q = openQueue(t, dir, opts)
	if got := metricValue(q.metrics.quarantined); got != 1 {
		t.Fatalf("quarantined at Open = %v, want 1", got)
	}
	if rows, _ := q.Depth(); rows != 3 { // 2 good rows + the header's claim of 1
		t.Fatalf("Depth rows = %d, want 3", rows)
	}
	sender := newRecorder()
	if err := NewForwarder(q, sender, fastForwarder()).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	sender.checkDelivered(t, map[string][]model.Row{"cpu": good})
	if got := metricValue(q.metrics.quarantined); got != 2 {
		t.Fatalf("quarantined = %v, want 2", got)
	}
	if rows, bytes := q.Depth(); rows != 0 || bytes != 0 {
		t.Fatalf("Depth = %d, %d after the drain", rows, bytes)
	}
	for _, k := range [][]byte{badHeader, badRows} {
		v, closer, err := q.db.Get(quarantineKey(k))
		if err != nil {
			t.Fatalf("quarantined entry %x: %v", k, err)
		}
		if len(v) == 0 {
			t.Fatalf("quarantined entry %x is empty", k)
		}
		_ = closer.Close()
		if _, _, err := q.db.Get(k); !errors.Is(err, pebble.ErrNotFound) {
			t.Fatalf("entry %x still queued: %v", k, err)
		}
	}
}

// TestEnqueueTombstones: the queue's entries keep tombstones
// (model.KindDeleted) exactly, through a reopen: the row codec it shares
// with the internal paths carries them.
func TestEnqueueTombstones(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(t)
	q := openQueue(t, dir, opts)
	ver := model.Version{Wall: 7, Node: 3}
	want := []model.Row{{Time: 5, Series: "cpu,host=a", Fields: []model.Field{
		{Name: "a", Value: model.Deleted(), Version: ver}, {Name: "b", Value: model.Float(1), Version: ver}}}}
	if err := q.Enqueue(context.Background(), "cpu", want, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Metrics = NewMetrics(nil)
	q = openQueue(t, dir, opts)
	entries := storedEntries(t, q)
	if len(entries) != 1 || !reflect.DeepEqual(entries[0].rows, want) {
		t.Fatalf("entries after reopen %+v, want one holding %+v", entries, want)
	}
}
