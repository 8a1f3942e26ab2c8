package replica

import (
	"testing"
	"time"
)

// TestClockCheck: the offset estimate is the smallest skew (network and
// queueing delays only add), a majority of all peers must disagree, and
// stale samples stop counting.
func TestClockCheck(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	sent := func(at time.Time, peerAhead time.Duration) int64 { return at.Add(peerAhead).UnixNano() }

	c := NewClockCheck(500 * time.Millisecond)
	// s1 is in sync but its pushes arrive late under load (up to 3 s of
	// queueing); one quick push shows the clocks agree.
	for i, delay := range []time.Duration{3 * time.Second, 2 * time.Second, time.Millisecond} {
		now := t0.Add(time.Duration(i) * time.Second)
		c.Observe("s1", sent(now.Add(-delay), 0), now)
	}
	if err := c.Check(t0.Add(3*time.Second), 2); err != nil {
		t.Fatalf("delays mistaken for an offset: %v", err)
	}
	// s2's clock is 2 s behind ours: one bad peer of two is not a majority.
	c.Observe("s2", sent(t0.Add(3*time.Second), -2*time.Second), t0.Add(3*time.Second))
	if err := c.Check(t0.Add(3*time.Second), 2); err != nil {
		t.Fatalf("one of two peers off: %v", err)
	}
	// With both off (s1 now 1 s ahead), this server is the odd one out.
	c2 := NewClockCheck(500 * time.Millisecond)
	c2.Observe("s1", sent(t0, time.Second), t0)
	c2.Observe("s2", sent(t0, -2*time.Second), t0)
	if err := c2.Check(t0, 2); err == nil {
		t.Fatal("two of two peers off: not refused")
	}
	// Only one of four peers heard, and it is off: not a majority of four.
	c3 := NewClockCheck(500 * time.Millisecond)
	c3.Observe("s1", sent(t0, time.Second), t0)
	if err := c3.Check(t0, 4); err != nil {
		t.Fatalf("one of four peers: %v", err)
	}
	// Samples older than the window stop counting.
	if err := c2.Check(t0.Add(clockWindow+time.Second), 2); err != nil {
		t.Fatalf("stale samples still count: %v", err)
	}
}
