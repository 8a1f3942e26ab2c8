package smear

import (
	"sync"
	"time"
)

// throttle lets a repeated log line through at most once per interval and
// counts the ones it held back, so that a replica set that stays down does
// not flood the log (a retry happens every backoff for every entry).
type throttle struct {
	interval time.Duration
	mu       struct {
		sync.Mutex
		last       time.Time // when a line was last let through
		suppressed int       // lines held back since then
	}
}

// allow reports whether a line may be logged at now, and how many were
// held back since the last one that was.
func (t *throttle) allow(now time.Time) (ok bool, suppressed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.mu.last.IsZero() && now.Sub(t.mu.last) < t.interval {
		t.mu.suppressed++
		return false, 0
	}
	suppressed = t.mu.suppressed
	t.mu.last, t.mu.suppressed = now, 0
	return true, suppressed
}
