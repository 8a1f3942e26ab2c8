package smear

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tsdb/tsdb/model"
)

// partitioned is a recorder that is also a Partitioner: a row's partition
// is its time modulo parts. It records the Route calls, checks that every
// Forward call holds rows of one partition, and counts the calls in
// flight.
type partitioned struct {
	*recorder
	parts int64

	mu struct {
		sync.Mutex
		routeCalls []int // rows per Route call
		mixed      []string
		inFlight   int
		maxFlight  int
	}
	// hold, when set, makes Forward wait until it is closed (or ctx ends)
	// after counting itself in flight.
	hold chan struct{}
}

func newPartitioned(parts int64) *partitioned {
	return &partitioned{recorder: newRecorder(), parts: parts}
}

func (p *partitioned) partOf(r model.Row) int { return int(r.Time % p.parts) }

func (p *partitioned) Route(_ context.Context, _ string, rows []model.Row) ([]int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.routeCalls = append(p.mu.routeCalls, len(rows))
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = p.partOf(r)
	}
	return out, nil
}

func (p *partitioned) Forward(ctx context.Context, table string, rows []model.Row) ([]error, error) {
	p.mu.Lock()
	for _, r := range rows[1:] {
		if p.partOf(r) != p.partOf(rows[0]) {
			p.mu.mixed = append(p.mu.mixed, fmt.Sprintf("call of %d rows mixes partitions %d and %d", len(rows), p.partOf(rows[0]), p.partOf(r)))
			break
		}
	}
	p.mu.inFlight++
	p.mu.maxFlight = max(p.mu.maxFlight, p.mu.inFlight)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.mu.inFlight--
		p.mu.Unlock()
	}()
	if p.hold != nil {
		select {
		case <-p.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return p.recorder.Forward(ctx, table, rows)
}

func (p *partitioned) flight() (now, most int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.inFlight, p.mu.maxFlight
}

// checkOnce fails unless every row of want was accepted exactly once.
func (p *partitioned) checkOnce(t *testing.T, want map[string][]model.Row) {
	t.Helper()
	p.checkDelivered(t, want)
	p.recorder.mu.Lock()
	defer p.recorder.mu.Unlock()
	n := 0
	for _, rows := range want {
		n += len(rows)
	}
	for k, got := range p.recorder.mu.rows {
		if len(got) != 1 {
			t.Fatalf("row %s accepted %d times, want once", k, len(got))
		}
	}
	if len(p.recorder.mu.rows) != n {
		t.Fatalf("%d distinct rows accepted, want %d", len(p.recorder.mu.rows), n)
	}
}

// enqueueMixed enqueues entries whose rows fall in every partition, and
// returns them by table.
func enqueueMixed(t *testing.T, q *Queue, entries, rowsEach int, due time.Time) map[string][]model.Row {
	t.Helper()
	want := map[string][]model.Row{}
	for b := range entries {
		table := []string{"cpu", "mem"}[b%2]
		rows := makeRows(b, rowsEach)
		if err := q.Enqueue(context.Background(), table, rows, due); err != nil {
			t.Fatal(err)
		}
		want[table] = append(want[table], rows...)
	}
	return want
}

// TestForwarderGroupsByPartition: a pass routes the rows of each table
// once, sends each partition's rows as their own calls (no call mixes
// partitions, none exceeds MaxRowsPerCall), and every row arrives once.
func TestForwarderGroupsByPartition(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	want := enqueueMixed(t, q, 6, 10, time.Now()) // 60 rows, 2 tables, 3 partitions each
	sender := newPartitioned(3)
	opts := fastForwarder()
	opts.MaxRowsPerCall = 8
	if err := NewForwarder(q, sender, opts).Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	sender.checkOnce(t, want)
	sender.mu.Lock()
	defer sender.mu.Unlock()
	if len(sender.mu.mixed) > 0 {
		t.Fatalf("calls mix partitions: %v", sender.mu.mixed)
	}
	// One pass (60 rows fit in it): one Route call per table, for all
	// of that table's rows.
	if fmt.Sprint(sender.mu.routeCalls) != "[30 30]" {
		t.Fatalf("Route calls of %v rows, want one per table, [30 30]", sender.mu.routeCalls)
	}
	sender.recorder.mu.Lock()
	defer sender.recorder.mu.Unlock()
	// Each table's 30 rows are 10 per partition: two calls (8 + 2) per
	// partition, 12 in all; without grouping a call of 8 would mix.
	if n := len(sender.recorder.mu.callSize); n != 12 {
		t.Fatalf("%d calls (%v), want 12: two per partition and table", n, sender.recorder.mu.callSize)
	}
	for _, n := range sender.recorder.mu.callSize {
		if n > 8 {
			t.Fatalf("call of %d rows, limit 8", n)
		}
	}
}

// TestForwarderPipelinesCalls: the calls of a pass are in flight at once,
// up to MaxInFlight and no more. The sender holds every call until three
// are in flight together, so a forwarder that sent them one after another
// would never get there (and the test would time out).
func TestForwarderPipelinesCalls(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	want := enqueueMixed(t, q, 4, 12, time.Now())
	sender := newPartitioned(4)
	sender.hold = make(chan struct{})
	opts := fastForwarder()
	opts.MaxRowsPerCall = 4
	opts.MaxInFlight = 3
	f := NewForwarder(q, sender, opts)
	done := make(chan error, 1)
	go func() { done <- f.Drain(context.Background()) }()
	eventually(t, "three calls in flight at once", func() bool { now, _ := sender.flight(); return now == 3 })
	if got := metricValue(q.metrics.inFlight); got != 3 {
		t.Fatalf("in-flight gauge %v, want 3", got)
	}
	close(sender.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, most := sender.flight(); most != 3 {
		t.Fatalf("at most %d calls in flight, want MaxInFlight = 3", most)
	}
	sender.checkOnce(t, want)
}

// TestForwarderRetriesOnePartition: the calls of one partition fail
// twice (whole calls) and single rows of another are refused once; the
// rows of the other partitions are settled at once, the failed ones are
// requeued and delivered later, and in the end every row was accepted
// exactly once, with its version, and the queue is empty.
func TestForwarderRetriesOnePartition(t *testing.T) {
	q := openQueue(t, t.TempDir(), testOptions(t))
	want := enqueueMixed(t, q, 6, 9, time.Now())
	sender := newPartitioned(3)
	var mu sync.Mutex
	failedCalls := 0
	refused := map[string]bool{}
	sender.fail = func(_ int, _ string, rows []model.Row) error {
		mu.Lock()
		defer mu.Unlock()
		if sender.partOf(rows[0]) == 1 && failedCalls < 2 {
			failedCalls++
			return errUnavailable
		}
		return nil
	}
	sender.rowFail = func(_ string, r model.Row) error {
		mu.Lock()
		defer mu.Unlock()
		if sender.partOf(r) == 2 && r.Time%2 == 0 && !refused[rowKey(r)] {
			refused[rowKey(r)] = true
			return fmt.Errorf("row %s: replica moved", rowKey(r))
		}
		return nil
	}
	opts := fastForwarder()
	opts.MaxRowsPerCall = 5
	f := NewForwarder(q, sender, opts)
	stop := runForwarder(t, f)
	eventually(t, "an empty queue", func() bool { rows, _ := q.Depth(); return rows == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	sender.checkOnce(t, want)
	if n := len(storedEntries(t, q)); n != 0 {
		t.Fatalf("%d entries left", n)
	}
	if got := metricValue(q.metrics.callFailures); got != 2 {
		t.Fatalf("failed calls %v, want 2", got)
	}
	if got := metricValue(q.metrics.retried); got <= 0 {
		t.Fatalf("retried rows %v, want > 0", got)
	}
}

// TestForwarderMarksFailedPartitions: after calls that failed, as a
// whole or with every row refused, their partitions are marked failed
// (one call in flight to each until one succeeds); calls that succeed
// clear the marks.
func TestForwarderMarksFailedPartitions(t *testing.T) {
	for _, whole := range []bool{true, false} {
		q := openQueue(t, t.TempDir(), testOptions(t))
		enqueueMixed(t, q, 2, 8, time.Now())
		sender := newPartitioned(4)
		if whole {
			sender.fail = func(int, string, []model.Row) error { return errUnavailable }
		} else {
			sender.rowFail = func(string, model.Row) error { return errUnavailable }
		}
		opts := fastForwarder()
		opts.MaxRowsPerCall = 4
		opts.MaxInFlight = 4
		f := NewForwarder(q, sender, opts)
		if _, err := f.pass(context.Background(), time.Now().UnixNano()); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		failed := 0
		for _, ps := range f.mu.parts {
			if ps.failed && ps.running == 0 {
				failed++
			}
		}
		f.mu.Unlock()
		if failed != 8 { // 2 tables × 4 partitions
			t.Fatalf("whole %v: %d partitions marked failed, want 8", whole, failed)
		}
		sender.fail, sender.rowFail = nil, nil
		if err := f.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		left := len(f.mu.parts)
		f.mu.Unlock()
		if left != 0 {
			t.Fatalf("whole %v: %d partitions still marked after calls succeeded", whole, left)
		}
	}
}
