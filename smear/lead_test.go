package smear

import (
	"context"
	"testing"
	"time"

	"github.com/tsdb/tsdb/model"
)

// TestLatenessWindow: the lateness DueLead uses is the largest of the last
// 30 s, forgotten after them.
func TestLatenessWindow(t *testing.T) {
	var l lateness
	t0 := time.Unix(1_700_000_000, 0)
	l.note(t0, int64(3*time.Second))
	l.note(t0.Add(500*time.Millisecond), int64(time.Second)) // same second, smaller
	l.note(t0.Add(10*time.Second), int64(2*time.Second))
	for _, c := range []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, 3 * time.Second},
		{29 * time.Second, 3 * time.Second},
		{30 * time.Second, 2 * time.Second}, // t0's second has left the window
		{39 * time.Second, 2 * time.Second},
		{40 * time.Second, 0},
		{5 * time.Minute, 0}, // slots reused by later seconds do not count
	} {
		if got := l.recent(t0.Add(c.at)); got != c.want {
			t.Errorf("at +%v: recent lateness %v, want %v", c.at, got, c.want)
		}
	}
	// A slot is reused by the second 30 s later: its old maximum is gone.
	l.note(t0.Add(60*time.Second), int64(time.Second))
	if got := l.recent(t0.Add(60 * time.Second)); got != time.Second {
		t.Errorf("after reuse of the slot: %v, want 1s", got)
	}
}

// TestDueLeadFromSlowForwards: rows delivered 3 s past their due time make
// the next due times fall 3 s earlier (at most a quarter of max_delay),
// and the lead goes back to zero once forwards have been on time for 30 s.
func TestDueLeadFromSlowForwards(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	sender := newRecorder()
	const slow = 3 * time.Second
	sender.fail = func(int, string, []model.Row) error {
		clk.ns.Add(int64(slow)) // the call takes 3 s of the queue's clock
		return nil
	}
	f := NewForwarder(q, sender, fastForwarder())
	runForwarder(t, f)
	if lead := q.DueLead(20 * time.Second); lead != 0 {
		t.Fatalf("lead before any forward: %v, want 0", lead)
	}
	rows := makeRows(1, 5)
	if err := q.Enqueue(context.Background(), "t", rows, clk.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rows delivered", func() bool { return sender.accepted() == len(rows) })
	eventually(t, "the queue empty", func() bool { n, _ := q.Depth(); return n == 0 })
	if lead := q.DueLead(20 * time.Second); lead != slow {
		t.Fatalf("lead after a forward 3 s late: %v, want %v", lead, slow)
	}
	if got := metricValue(q.metrics.dueLead); got != slow.Seconds() {
		t.Fatalf("due lead gauge %v, want %v", got, slow.Seconds())
	}
	if lead := q.DueLead(8 * time.Second); lead != 2*time.Second {
		t.Fatalf("lead at max_delay 8s: %v, want the cap 2s", lead)
	}
	clk.ns.Add(int64(leadWindow))
	if lead := q.DueLead(20 * time.Second); lead != 0 {
		t.Fatalf("lead 30 s after the late forward: %v, want 0", lead)
	}
}
