package replica

import (
	"testing"
	"time"
)

// TestChangeRetrySchedule pins RequestChange's wait before each re-plan to
// the schedule it had before internal/backoff: 25 ms << attempt capped at
// 1 s (50, 100, 200, 400, 800 ms, then 1 s), equal jitter in [d/2, d].
func TestChangeRetrySchedule(t *testing.T) {
	for attempt := 1; attempt < maxChangeAttempts; attempt++ {
		want := min(25*time.Millisecond<<min(attempt, 6), time.Second)
		if got := changeRetry.Ceiling(attempt); got != want {
			t.Errorf("attempt %d: ceiling %v, want %v", attempt, got, want)
		}
		lo, hi := changeRetry, changeRetry
		var n int64
		lo.Rand = func(k int64) int64 { n = k; return 0 }
		hi.Rand = func(k int64) int64 { return k - 1 }
		if got := lo.Delay(attempt); got != want/2 || n != int64(want/2)+1 {
			t.Errorf("attempt %d: least wait %v drawn from %d values, want %v from %d", attempt, got, n, want/2, want/2+1)
		}
		if got := hi.Delay(attempt); got != want {
			t.Errorf("attempt %d: most wait %v, want %v", attempt, got, want)
		}
	}
}
