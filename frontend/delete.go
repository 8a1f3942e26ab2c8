package frontend

import (
	"context"
	"fmt"
	"math"

	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/model"
)

// Deletes (InfluxQL's DELETE FROM and DROP SERIES, POST
// /api/v1/tables/{t}/delete): a delete is a write of tombstones
// (model.KindDeleted), one per field of every matching row, which the
// per-field last-writer-wins merge orders against every other write
// (docs/influx.md, "Deletes").

// deleteBatchRows is how many rows one page of a delete reads and
// tombstones: the tombstones of a page are one insert.
const deleteBatchRows = 1000

// maxDeletePageRows bounds the page a delete grows to when more rows than
// a page share one timestamp (see deleteRows); past it the delete fails
// rather than hold them all.
const maxDeletePageRows = 1 << 20

// DeleteRows deletes the rows of table that q selects: its time range
// [From, To), Series/Prefix, Measurement and Tags (its other fields are
// ignored; every field of a selected row is deleted). It returns once
// every tombstone is acknowledged by a quorum of its partition's replicas.
func (fe *Frontend) DeleteRows(ctx context.Context, table string, q model.Query) error {
	return publicError(fe.deleteRows(ctx, table, q))
}

// deleteRows pages through the rows q selects, in (time, series) order,
// reading each partition at quorum consistency (so every row acknowledged
// at quorum before the delete began is seen), and writes a tombstone for
// every field each row holds, stamped here with a version newer than
// every value it deletes, at quorum and never through the smear queue.
//
// The pages advance on a (time, series) cursor: a row at or before it was
// handled already. The Measurement/Tags filter is applied here too, after
// the scan, so that a replica that does not filter (an older server)
// never makes the delete wider than asked.
func (fe *Frontend) deleteRows(ctx context.Context, table string, q model.Query) error {
	m, err := q.Matcher()
	if err != nil {
		return fmt.Errorf("%w: %w", errcode.ErrInvalidQuery, err)
	}
	if q.From >= q.To && q.To != math.MaxInt64 {
		return nil
	}
	scan := model.Query{From: q.From, To: q.To, Series: q.Series, Prefix: q.Prefix, Measurement: q.Measurement,
		Tags: q.Tags, Limit: deleteBatchRows, Consistency: api.ConsistencyQuorum}
	var (
		cur    deleteCursor
		tombs  []model.Row
		fields []model.Field
	)
	for {
		rows, truncated, err := fe.router.Query(ctx, table, scan)
		if err != nil {
			return fmt.Errorf("delete from %q: read: %w", table, err)
		}
		tombs, fields = tombs[:0], fields[:0]
		var newest model.Version
		for i := range rows {
			r := &rows[i]
			if cur.done(r) || (m != nil && !m.Match(r.Series)) {
				continue
			}
			start := len(fields)
			for _, f := range r.Fields {
				if newest.Less(f.Version) {
					newest = f.Version
				}
				fields = append(fields, model.Field{Name: f.Name, Value: model.Deleted()})
			}
			tombs = append(tombs, model.Row{Time: r.Time, Series: r.Series, Fields: fields[start:len(fields):len(fields)]})
		}
		if err := fe.writeTombstones(ctx, table, tombs, newest); err != nil {
			return err
		}
		if !truncated || len(rows) == 0 {
			return nil
		}
		last := &rows[len(rows)-1]
		prevT, prevSet := cur.t, cur.set
		switch {
		case !cur.advance(last):
			// Every row of the page is at the cursor's time and handled
			// already (rows the partition did not filter out, or rows
			// whose tombstones the replica read has not seen yet): read
			// a larger page at that time.
			if scan.Limit *= 2; scan.Limit > maxDeletePageRows {
				return fmt.Errorf("%w: delete from %q: more than %d rows at time %d", errcode.ErrTooLarge, table, maxDeletePageRows, last.Time)
			}
		case !prevSet || cur.t != prevT:
			scan.Limit = deleteBatchRows // a new time: back to small pages
		}
		scan.From = cur.t
	}
}

// deleteCursor is the (time, series) of the last row a delete handled.
type deleteCursor struct {
	set    bool
	t      int64
	series string
}

// done reports whether r is at or before the cursor.
func (c *deleteCursor) done(r *model.Row) bool {
	return c.set && (r.Time < c.t || r.Time == c.t && r.Series <= c.series)
}

// advance moves the cursor to r and reports whether it moved.
func (c *deleteCursor) advance(r *model.Row) bool {
	if c.done(r) {
		return false
	}
	c.set, c.t, c.series = true, r.Time, r.Series
	return true
}

// writeTombstones inserts one page's tombstones, stamped with one version
// of this server's clock after it observed newest (the newest version of
// the values deleted), so the tombstones win over every value read. The
// clock refuses a version too far ahead of its wall clock
// (Clock.Observe): such a value cannot be deleted now, and the delete
// fails rather than leave it silently.
func (fe *Frontend) writeTombstones(ctx context.Context, table string, tombs []model.Row, newest model.Version) error {
	if len(tombs) == 0 {
		return nil
	}
	if err := fe.clockCheck.CheckClock(); err != nil {
		return fmt.Errorf("%w: %w", errUnavailable, err)
	}
	if !fe.clock.Observe(newest) {
		return fmt.Errorf("%w: delete from %q: a value's version (wall %d) is further ahead of this server's clock than the max clock offset",
			errUnavailable, table, newest.Wall)
	}
	v := fe.clock.Now()
	for i := range tombs {
		tombs[i].SetVersion(v)
	}
	opts := model.InsertOptions{Consistency: api.ConsistencyQuorum, Versioned: true}
	if err := fe.router.Insert(ctx, table, tombs, opts); err != nil {
		return fmt.Errorf("delete from %q: write %d tombstoned rows: %w", table, len(tombs), err)
	}
	return nil
}
