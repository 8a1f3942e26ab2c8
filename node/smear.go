package node

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/replication"
	"github.com/tsdb/tsdb/router"
	"github.com/tsdb/tsdb/smear"
)

// Insert smearing (DESIGN.md section 7) and the server's write limit. An
// insert whose rows fall in a partition narrower than the table's
// keyrange_threshold is stamped with its version here, written to this
// server's durable smear queue with a due time drawn from [0, max_delay],
// and acknowledged; the forwarder sends the rows when due, routed by the
// METADATA current then, with their versions. The write limit paces every
// write to this server's stores, the queue's included.

// Bounds of one forward call of the smear forwarder.
const (
	smearCallRows  = 2000
	smearCallBytes = 1 << 20
)

// writeLimiter paces this server's store writes (--write-limit) and counts
// them (tsdb_store_write_bytes_total).
type writeLimiter struct {
	lim   *rate.Limiter // nil: no limit
	bytes prometheus.Counter
}

// newWriteLimiter paces writes at bytesPerSec (0: no limit), with a tenth
// of a second's worth of burst (at least 64 KiB): like a disk, an idle
// server does not bank a second of bandwidth to spend at once.
func newWriteLimiter(bytesPerSec int64) *writeLimiter {
	w := &writeLimiter{bytes: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tsdb_store_write_bytes_total",
		Help: "Bytes this server wrote to its stores (partition replicas and smear queue), what --write-limit caps.",
	})}
	if bytesPerSec > 0 {
		w.lim = rate.NewLimiter(rate.Limit(bytesPerSec), int(min(max(bytesPerSec/10, 64<<10), 1<<30)))
	}
	return w
}

// wait counts n bytes and, under a limit, blocks until they may be
// written. A write larger than the burst waits for it in parts.
func (w *writeLimiter) wait(ctx context.Context, n int) error {
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

// openSmear opens this server's smear queue and its forwarder.
func (n *Node) openSmear() error {
	q, err := smear.Open(filepath.Join(n.cfg.DataDir, "smear"), smear.Options{
		Codec:       smear.CodecFuncs{Append: replication.AppendRows, Decode: replication.DecodeRows},
		MaxRows:     n.cfg.SmearMaxRows,
		MaxBytes:    n.cfg.SmearMaxBytes,
		BeforeWrite: n.limiter.wait,
		Logger:      n.log,
		Metrics:     smear.NewMetrics(n.registry),
	})
	if err != nil {
		return fmt.Errorf("node: open smear queue: %w", err)
	}
	n.smearQ = q
	// Calls of at most 2,000 rows: a forward is an insert at quorum, and
	// one that a write-limited replica set cannot confirm within the ack
	// timeout is sent again whole.
	n.smearFwd = smear.NewForwarder(q, smearSender{n}, smear.ForwarderOptions{Logger: n.log,
		MaxRowsPerCall: smearCallRows, MaxBytesPerCall: smearCallBytes})
	return nil
}

// smearSender forwards due rows: routed by the METADATA current now, with
// the versions stamped when they were first accepted, at quorum.
type smearSender struct{ n *Node }

// Forward inserts rows of table with their versions. Rows of a table that
// no longer exists are reported delivered (there is nowhere to deliver
// them), and logged.
func (s smearSender) Forward(ctx context.Context, table string, rows []model.Row) ([]error, error) {
	err := s.n.router.Insert(ctx, table, rows, router.WriteOptions{Consistency: api.ConsistencyQuorum, Versioned: true})
	if errors.Is(err, metadata.ErrTableNotFound) {
		s.n.log.Warn("smear: table gone; its queued rows are discarded", "table", table, "rows", len(rows))
		return nil, nil
	}
	return nil, err
}

// insert writes an insert's rows: those aimed at a partition the table's
// smear settings call narrow into the smear queue (unless the request or
// the server opts out), the others straight to their partitions. The
// queued part is written first, so a full queue refuses the whole insert
// with nothing written.
func (n *Node) insert(ctx context.Context, table string, rows []model.Row, opts tsdbhttp.InsertOptions) error {
	wopts := router.WriteOptions{Consistency: opts.Consistency}
	if n.smearQ == nil || opts.NoSmear || n.cfg.NoSmear {
		return n.router.Insert(ctx, table, rows, wopts)
	}
	cfg, file, err := n.router.Table(ctx, table)
	if err != nil {
		return err
	}
	if !cfg.Smear.Enabled {
		return n.router.Insert(ctx, table, rows, wopts)
	}
	smeared, direct := splitSmeared(cfg.Smear, file, rows)
	if len(smeared) > 0 {
		// This front end stamps the smeared rows itself (no other server
		// can take over): with its clock off, it refuses them (rule 2).
		if err := n.checkClock(); err != nil {
			return fmt.Errorf("%w: %w", tsdbhttp.ErrUnavailable, err)
		}
		v := n.clock.Now()
		for i := range smeared {
			smeared[i].SetVersion(v)
		}
		due := smear.DueTime(time.Now(), time.Duration(cfg.Smear.MaxDelay), rand.Int64N)
		if n.cfg.smearDelay != nil {
			due = time.Now().Add(n.cfg.smearDelay(time.Duration(cfg.Smear.MaxDelay)))
		}
		err := n.smearQ.Enqueue(ctx, table, smeared, due)
		switch {
		case errors.Is(err, smear.ErrFull):
			return &tsdbhttp.RetryError{Err: fmt.Errorf("%w: %w", tsdbhttp.ErrQueueFull, err), After: n.smearQ.RetryAfter()}
		case errors.Is(err, smear.ErrTooLarge):
			direct = append(direct, smeared...) // never fits: written now instead
		case err != nil:
			return fmt.Errorf("%w: smear queue: %w", tsdbhttp.ErrUnavailable, err)
		}
	}
	if len(direct) == 0 {
		return nil
	}
	return n.router.Insert(ctx, table, direct, wopts)
}

// splitSmeared splits rows into those a partition of file narrower than
// the table's threshold covers (to smear) and the others. When nothing is
// smeared, direct is rows itself.
func splitSmeared(sc metadata.SmearConfig, file *metadata.File, rows []model.Row) (smeared, direct []model.Row) {
	narrow := func(t int64) bool {
		p, ok := file.Find(t)
		return ok && smear.Decide(smear.PolicyInput{Enabled: true, Table: sc, Begin: p.Begin, End: p.End})
	}
	first := -1
	for i := range rows {
		if narrow(rows[i].Time) {
			first = i
			break
		}
	}
	if first < 0 {
		return nil, rows
	}
	direct = append(make([]model.Row, 0, len(rows)), rows[:first]...)
	for i := first; i < len(rows); i++ {
		if narrow(rows[i].Time) {
			smeared = append(smeared, rows[i])
		} else {
			direct = append(direct, rows[i])
		}
	}
	return smeared, direct
}

// drainSmear forwards everything still queued, for a server that stops:
// bounded by SmearDrainTimeout; what is left stays durable and is
// forwarded after a restart.
func (n *Node) drainSmear(ctx context.Context) {
	if n.smearFwd == nil {
		return
	}
	rows, _ := n.smearQ.Depth()
	if rows == 0 {
		return
	}
	limit := n.cfg.SmearDrainTimeout
	if d, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(d)/2) // leave the rest of Stop its time
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := n.smearFwd.Drain(ctx); err != nil {
		left, _ := n.smearQ.Depth()
		n.log.Warn("smear: queue not emptied before stop; the rest is forwarded after a restart", "rows_left", left, "err", err)
	}
}
