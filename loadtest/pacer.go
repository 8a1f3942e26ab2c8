package loadtest

import (
	"context"
	"sync"
	"time"
)

// pacer holds the workers to a rate of rows per second: a token bucket in
// virtual time. Each take of n rows reserves the slot starting at the
// later of now and the end of the previous reservation, and waits for its
// start, so the long-run rate is exact and there is no burst beyond one
// batch per worker. A nil pacer never waits.
type pacer struct {
	perRow time.Duration // time one row's token takes to accrue
	mu     struct {
		sync.Mutex
		next time.Time // guarded by mu: end of the last reservation
	}
}

// newPacer returns a pacer of rate rows/s, or nil for rate <= 0 (no limit).
func newPacer(rate float64) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{perRow: time.Duration(float64(time.Second) / rate)}
}

// wait blocks until n rows may be sent or ctx ends.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p == nil {
		return ctx.Err()
	}
	now := time.Now()
	p.mu.Lock()
	at := p.mu.next
	if at.Before(now) {
		at = now
	}
	p.mu.next = at.Add(time.Duration(n) * p.perRow)
	p.mu.Unlock()
	return sleepCtx(ctx, at.Sub(now))
}

// sleepCtx sleeps for d or until ctx ends, whichever is first, and returns
// ctx's error if it ended.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
