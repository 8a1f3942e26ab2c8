package loadtest

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/tsdb/tsdb/internal/backoff"
)

// pacer holds the workers to a rate of rows per second: a token bucket
// (golang.org/x/time/rate) whose burst is one batch, so there is no burst
// beyond one batch per worker and the long-run rate is exact. A nil pacer
// never waits.
type pacer struct {
	lim *rate.Limiter
}

// newPacer returns a pacer of rate rows/s that lets batches of up to
// batch rows through, or nil for r <= 0 (no limit).
func newPacer(r float64, batch int) *pacer {
	if r <= 0 {
		return nil
	}
	return &pacer{lim: rate.NewLimiter(rate.Limit(r), max(batch, 1))}
}

// wait blocks until n rows may be sent or ctx ends.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p == nil {
		return ctx.Err()
	}
	return p.lim.WaitN(ctx, min(n, p.lim.Burst()))
}

// sleepCtx sleeps for d or until ctx ends, whichever is first, and returns
// ctx's error if it ended.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if !backoff.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}
