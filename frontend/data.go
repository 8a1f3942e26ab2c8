package frontend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/router"
	"github.com/tsdb/tsdb/smear"
)

// The data path: inserts, queries and aggregates, and the smear queue's
// part of inserts.

// Insert writes validated rows (smeared or straight to their partitions)
// and returns once they are queued or as durable as opts asks.
func (fe *Frontend) Insert(ctx context.Context, table string, rows []model.Row, opts model.InsertOptions) error {
	return publicError(fe.insert(ctx, table, rows, opts))
}

// publicError turns the router's routing failures into the public API's
// 503: no replica could take or answer the request.
func publicError(err error) error {
	if errors.Is(err, router.ErrOffline) {
		return fmt.Errorf("%w: %w", errOffline, err)
	}
	if err != nil && (errors.Is(err, router.ErrUnavailable) || errors.Is(err, router.ErrMoved) || errors.Is(err, router.ErrNotLocal)) &&
		!errors.Is(err, errInsertOutcomeUnknown) {
		return fmt.Errorf("%w: %w", errUnavailable, err)
	}
	return err
}

// Query answers a raw query through the router, its range clipped to the
// table's retention (clipRetention).
func (fe *Frontend) Query(ctx context.Context, table string, q model.Query) ([]model.Row, bool, error) {
	q, empty, err := fe.clipRetention(ctx, table, q)
	if err != nil || empty {
		return []model.Row{}, false, publicError(err)
	}
	rows, truncated, err := fe.router.Query(ctx, table, q)
	return rows, truncated, publicError(err)
}

// Aggregate answers an aggregate query through the router, its range
// clipped to the table's retention (clipRetention).
func (fe *Frontend) Aggregate(ctx context.Context, table string, q model.Query) ([]model.SeriesAgg, error) {
	from := q.From
	q, empty, err := fe.clipRetention(ctx, table, q)
	if err != nil || empty {
		return []model.SeriesAgg{}, publicError(err)
	}
	aggs, err := fe.router.Aggregate(ctx, table, q)
	if q.Step == 0 && q.From != from {
		// The single bucket starts where the query does, as asked, not
		// where the retention clipped it.
		for i := range aggs {
			for j := range aggs[i].Buckets {
				aggs[i].Buckets[j].Start = from
			}
		}
	}
	return aggs, publicError(err)
}

// checkRetention refuses the whole insert when a row is older than the
// table's retention floor (retentionFloor: now - retention, and the
// METADATA's retention horizon), naming how many and the floor: nothing
// of it is written. InfluxDB writes the other points of such a batch
// ("partial write: points beyond retention policy dropped"); tsdb never
// half-applies a write. Only a front end's first acceptance checks:
// forwarded and smeared rows passed it when they were accepted.
func checkRetention(cfg metadata.TableConfig, file *metadata.File, rows []model.Row, now time.Time) error {
	floor := retentionFloor(cfg, file, now)
	if floor == math.MinInt64 {
		return nil
	}
	n, oldest := 0, int64(math.MaxInt64)
	for i := range rows {
		if t := rows[i].Time; t < floor {
			n++
			oldest = min(oldest, t)
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d of %d rows are older than table %q keeps (the oldest at %s; rows from %s on are kept, retention %s); nothing was written",
		ErrBeyondRetention, n, len(rows), cfg.Name, time.Unix(0, oldest).UTC().Format(time.RFC3339Nano),
		time.Unix(0, floor).UTC().Format(time.RFC3339Nano), time.Duration(cfg.Retention))
}

// SmearSender forwards the smear queue's due rows (smear.Sender): routed
// by the METADATA current now, with the versions stamped when they were
// first accepted, at quorum.
type SmearSender struct {
	Router Router
	Logger *slog.Logger
}

// Forward inserts rows of table with their versions. Rows of a table that
// no longer exists are reported discarded (smear.ErrDiscarded: there is
// nowhere to deliver them; they leave the queue without counting as
// forwarded), and logged.
func (s SmearSender) Forward(ctx context.Context, table string, rows []model.Row) ([]error, error) {
	err := s.Router.Insert(ctx, table, rows, model.InsertOptions{Consistency: api.ConsistencyQuorum, Versioned: true})
	if errors.Is(err, metadata.ErrTableNotFound) {
		s.Logger.Warn("smear: table gone; its queued rows are discarded", "table", table, "rows", len(rows))
		errs := make([]error, len(rows))
		for i := range errs {
			errs[i] = smear.ErrDiscarded
		}
		return errs, nil
	}
	return nil, err
}

// Route names the destination partition of each row under the METADATA
// this server holds now (smear.Partitioner): the forwarder routes a
// pass's due rows once and sends each partition's rows as their own
// calls, so that Forward's router.Insert finds one partition (its fast
// path) and a call is one partition's pipelined insert. The ordinal is
// taken from the partition's id, so that it names the same partition in
// every pass (the forwarder keeps per-partition state by it: one call at
// a time to a partition whose last call failed). A row no partition
// covers gets -1 (Forward then fails it, and it is retried).
func (s SmearSender) Route(ctx context.Context, table string, rows []model.Row) ([]int, error) {
	_, file, err := s.Router.Table(ctx, table)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(rows))
	ord := make(map[*metadata.Partition]int)
	var last *metadata.Partition
	lastOrd := -1
	for i := range rows {
		if last != nil && last.Contains(rows[i].Time) {
			out[i] = lastOrd
			continue
		}
		p, ok := file.Find(rows[i].Time)
		if !ok {
			out[i] = -1
			continue
		}
		o, seen := ord[p]
		if !seen {
			o = partitionOrdinal(p)
			ord[p] = o
		}
		out[i], last, lastOrd = o, p, o
	}
	return out, nil
}

// partitionOrdinal is a non-negative int naming p stably: the first 31
// bits of its id (ids are random UUIDs; a collision only puts two
// partitions' rows in one call, which Router.Insert handles).
func partitionOrdinal(p *metadata.Partition) int {
	return int(binary.BigEndian.Uint32(p.ID[:4]) >> 1)
}

// insert writes an insert's rows: those aimed at a partition the table's
// smear settings call narrow into the smear queue (unless the request or
// the server opts out), the others straight to their partitions. The
// queued part is written first, so a full queue refuses the whole insert
// with nothing written.
func (fe *Frontend) insert(ctx context.Context, table string, rows []model.Row, opts model.InsertOptions) error {
	wopts := model.InsertOptions{Consistency: opts.Consistency}
	cfg, file, err := fe.router.Table(ctx, table)
	if err != nil {
		return err
	}
	if err := checkRetention(cfg, file, rows, time.Now()); err != nil {
		return err
	}
	if fe.queue == nil || opts.NoSmear || fe.cfg.NoSmear || !cfg.Smear.Enabled {
		return fe.writeDirect(ctx, table, rows, wopts)
	}
	smeared, direct := splitSmeared(cfg.Smear, file, rows)
	if len(smeared) > 0 {
		// This front end stamps the smeared rows itself (no other server
		// can take over): with its clock off, it refuses them (rule 2).
		if err := fe.clockCheck.CheckClock(); err != nil {
			return fmt.Errorf("%w: %w", errUnavailable, err)
		}
		v := fe.clock.Now()
		for i := range smeared {
			smeared[i].SetVersion(v)
		}
		err := fe.enqueue(ctx, table, cfg.Smear, smeared)
		switch {
		case errors.Is(err, smear.ErrFull), errors.Is(err, smear.ErrBehind), errors.Is(err, smear.ErrDueFull):
			return &retryError{Err: fmt.Errorf("%w: %w", errQueueFull, err), After: fe.queue.RetryAfter()}
		case errors.Is(err, smear.ErrTooLarge):
			direct = append(direct, smeared...) // never fits: written now instead
		case err != nil:
			return fmt.Errorf("%w: smear queue: %w", errUnavailable, err)
		}
	}
	if len(direct) == 0 {
		return nil
	}
	return fe.writeDirect(ctx, table, direct, wopts)
}

// writeDirect writes rows straight to their partitions and, once they are
// written, counts them for the smear queue's admission control: the rate
// at which this server writes rows itself is the least it assumes its
// forwarder can write (smear.Queue.NoteDirect).
func (fe *Frontend) writeDirect(ctx context.Context, table string, rows []model.Row, wopts model.InsertOptions) error {
	if err := fe.router.Insert(ctx, table, rows, wopts); err != nil {
		return err
	}
	if fe.queue != nil {
		fe.queue.NoteDirect(len(rows))
	}
	return nil
}

// dueDraws is how many due times a smeared insert tries before it is
// refused because the rows already due then use up what the forwarder
// can forward (smear.ErrDueFull).
const dueDraws = 4

// enqueue writes smeared rows to the queue, due at a time drawn from
// [now, now+max delay−lead], lead being what the forwarder's recent
// forwards took past their due time (smear.Queue.DueLead); when the queue
// refuses that time as full (smear.ErrDueFull) it draws again, up to
// dueDraws times in all.
func (fe *Frontend) enqueue(ctx context.Context, table string, sc metadata.SmearConfig, rows []model.Row) error {
	var err error
	maxDelay := time.Duration(sc.MaxDelay)
	window := maxDelay - fe.queue.DueLead(maxDelay)
	for range dueDraws {
		due := smear.DueTime(time.Now(), window, rand.Int64N)
		if fe.cfg.SmearDelay != nil {
			due = time.Now().Add(fe.cfg.SmearDelay(time.Duration(sc.MaxDelay)))
		}
		err = fe.queue.Enqueue(ctx, table, rows, due)
		if !errors.Is(err, smear.ErrDueFull) {
			return err
		}
	}
	fe.queue.RefusedDueFull() // counted once per refused insert
	return err
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
