package smear

import (
	"context"
	"time"
)

// DrainForStop is Drain for a server that stops: it forwards everything
// still queued, bounded by limit and by half the time left before ctx's
// deadline (the rest of the stop needs its time). What it could not
// forward stays durable, is forwarded after a restart, and is logged.
func (f *Forwarder) DrainForStop(ctx context.Context, limit time.Duration) {
	if rows, _ := f.q.Depth(); rows == 0 {
		return
	}
	if d, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(d)/2)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := f.Drain(ctx); err != nil {
		left, _ := f.q.Depth()
		f.log.Warn("smear: queue not emptied before stop; the rest is forwarded after a restart", "rows_left", left, "err", err)
	}
}
