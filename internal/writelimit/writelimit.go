// Package writelimit paces and counts the bytes one server writes to its
// stores (tsdb server --write-limit): the partition store and the smear
// queue call Wait before each write. Invariants: every byte waited for is
// counted in tsdb_store_write_bytes_total, limited or not; the burst is a
// tenth of a second's worth (at least 64 KiB), so an idle server does not
// bank a second of bandwidth to spend at once, as a disk would not; a write
// larger than the burst waits for it in parts. The package starts no
// goroutine; Wait blocks its caller.
package writelimit

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// Limiter paces this server's store writes and counts them.
type Limiter struct {
	lim   *rate.Limiter // nil: no limit
	bytes prometheus.Counter
}

// New paces writes at bytesPerSec (0: no limit), with a tenth of a
// second's worth of burst (at least 64 KiB).
func New(bytesPerSec int64) *Limiter {
	w := &Limiter{bytes: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tsdb_store_write_bytes_total",
		Help: "Bytes this server wrote to its stores (partition replicas and smear queue), what --write-limit caps.",
	})}
	if bytesPerSec > 0 {
		w.lim = rate.NewLimiter(rate.Limit(bytesPerSec), int(min(max(bytesPerSec/10, 64<<10), 1<<30)))
	}
	return w
}

// Wait counts n bytes and, under a limit, blocks until they may be
// written. A write larger than the burst waits for it in parts.
func (w *Limiter) Wait(ctx context.Context, n int) error {
	w.bytes.Add(float64(n))
	if w.lim == nil {
		return nil
	}
	for burst := w.lim.Burst(); n > 0; n -= burst {
		if err := w.lim.WaitN(ctx, min(n, burst)); err != nil {
			return fmt.Errorf("write limit: %w", err)
		}
	}
	return nil
}

// Register registers the byte counter with reg.
func (w *Limiter) Register(reg prometheus.Registerer) { reg.MustRegister(w.bytes) }
