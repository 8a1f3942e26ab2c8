package membership

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is an exponential delay with jitter: each wait is drawn from
// [d/2, d], and d doubles up to max. Reset after progress.
type backoff struct {
	base, max time.Duration
	cur       time.Duration
}

// next returns the next delay and advances.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.base
	}
	d := b.cur
	b.cur = min(2*b.cur, b.max)
	half := d / 2
	return half + rand.N(half+1)
}

// reset returns to the base delay.
func (b *backoff) reset() { b.cur = 0 }

// wait sleeps for the next delay; false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	return sleep(ctx, b.next())
}

// sleep waits d or until ctx ends; false if ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
