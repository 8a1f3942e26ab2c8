package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
)

// Log truncation (issue 16). The log (sequence index) of a replica keeps
// every live row's entry until every target confirmed it; TruncateLog then
// deletes the entries at or below a sequence all targets hold, and records
// that sequence, the truncation point, under prefix|'t' in the same batch.
// A read of the log from below the truncation point fails with
// ErrLogTruncated (the entries it needs are gone; skipping them would look
// like rows overwritten since): such a reader takes a row snapshot instead
// (LogSnapshot.ReadRows), the rows read in key order from a pebble
// snapshot. The entry at the high sequence is never truncated (see
// TruncateLog). A LogSnapshot taken before a
// truncation still holds the entries it deleted.

// getter reads one key: a *pebble.DB or a *pebble.Snapshot.
type getter interface {
	Get(key []byte) ([]byte, io.Closer, error)
}

// readTrunc reads the log's truncation point (0 when never truncated).
func readTrunc(db getter, ks *keyspace) (uint64, error) {
	v, closer, err := db.Get(ks.trunc)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read log truncation point: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: bad log truncation point %x", ErrCorrupt, v)
	}
	return binary.BigEndian.Uint64(v), nil
}

// LogStart returns the log's truncation point: ReadLog answers reads from
// at or above it; 0 when the log was never truncated.
func (r *Replica) LogStart() uint64 { return r.trunc.Load() }

// SetLogValues tells Apply whether anyone reads the log: on (the default),
// every change gets an entry carrying its row's value; off, an Apply
// writes the entry of its batch's last change only, in the legacy form
// (read through its row: see readLog), and raises the truncation point to
// the sequence before it in the same batch, deleting the entries below
// (addLogTail). The replication pusher turns the values off while the
// replica has no target and no mark, so that a replica nobody pushes from
// writes each row once and one entry per batch, and back on before it
// snapshots the log for a mark. It is a performance hint only: a reader
// that comes while or after the values are off reads from below the
// truncation point, is refused (ErrLogTruncated) and takes a row
// snapshot, whatever the timing.
func (r *Replica) SetLogValues(on bool) { r.noLogValues.Store(!on) }

// LogValues reports the SetLogValues setting.
func (r *Replica) LogValues() bool { return !r.noLogValues.Load() }

// TruncateLog deletes the log entries at or below upTo and records upTo as
// the truncation point, in one batch (not synced: a crash may lose it,
// which only keeps entries longer). The entry at the high sequence always
// stays: upTo is capped at HighSeq()-1 under the apply lock, so that an
// older build, which takes its high sequence from the last entry, never
// reuses sequences (docs/storage-format.md). upTo at or below the current point
// does nothing; above the synced watermark it fails with ErrCursorAhead
// (only what every target confirmed is truncated, and a cursor never
// passes the watermark). The caller must make sure no reader still needs
// the live log from below upTo, or that such a reader handles
// ErrLogTruncated.
func (r *Replica) TruncateLog(upTo uint64) error {
	_, err := r.truncateLog(upTo, false)
	return err
}

// TryTruncateLog is TruncateLog for a caller that comes back later (a
// pusher, every tick): when the data space's apply lock is held it does
// nothing and returns false at once. A truncation only frees space, and
// waiting for the lock put every pusher of a space in the queue of its
// Applies, seals and drops: goroutine dumps of the smear load test showed
// 35–63 of them there on one server while forward calls stalled
// (docs/performance.md, "Log reads without the apply lock").
func (r *Replica) TryTruncateLog(upTo uint64) (bool, error) {
	return r.truncateLog(upTo, true)
}

// truncateLog is TruncateLog, or TryTruncateLog when try is set.
func (r *Replica) truncateLog(upTo uint64, try bool) (bool, error) {
	if err := r.enter(); err != nil {
		return false, err
	}
	defer r.store.gate.Exit()
	if !try {
		r.applyMu.Lock()
	} else if !r.applyMu.TryLock() {
		return false, nil
	}
	defer r.applyMu.Unlock()
	if r.dropped.Load() {
		return false, fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	if synced := r.SyncedSeq(); upTo > synced {
		return false, fmt.Errorf("replica %s: truncate the log to %d above the synced watermark %d: %w", r.info.Placement, upTo, synced, ErrCursorAhead)
	}
	// The entry at the high sequence always stays: an older build (before
	// issue 16) knows no truncation point and takes its high sequence
	// from the last entry, so with every entry gone it would start again
	// from 0 and reuse sequences.
	if high := r.high.Load(); upTo >= high && high > 0 {
		upTo = high - 1
	}
	return true, r.truncateLocked(upTo)
}

// truncateLocked is TruncateLog under applyMu, upTo checked against the
// synced watermark and the high sequence. With a memory head it never
// passes the lowest sequence whose row is only in memory (memhead.go):
// the record is that row's durable form until a seal or a drain writes
// it to pebble.
func (r *Replica) truncateLocked(upTo uint64) error {
	if h := r.applyMu.mem; h != nil {
		if lo := h.minSeq(r.info.Placement); lo <= upTo {
			upTo = lo - 1
		}
	}
	if upTo <= r.trunc.Load() {
		return nil
	}
	b := r.store.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(r.ks.seqLo, r.ks.appendSeqKey(nil, upTo+1), nil); err != nil {
		return fmt.Errorf("partition: replica %s: truncate log: %w", r.info.Placement, err)
	}
	if err := b.Set(r.ks.trunc, binary.BigEndian.AppendUint64(nil, upTo), nil); err != nil {
		return fmt.Errorf("partition: replica %s: truncate log: %w", r.info.Placement, err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("partition: replica %s: truncate log: %w", r.info.Placement, err)
	}
	r.trunc.Store(upTo)
	return nil
}

// RowPos is a row's position in key order: ReadRows goes on after it.
type RowPos struct {
	Series string
	Time   int64
}

// RowRange is a time range [Begin, End) of ReadRows; nil bounds are open.
type RowRange struct {
	Begin, End *int64
}

// within returns rr cut to the replica's own range: its data space may
// hold other replicas' rows around it (space.go).
func (rr RowRange) within(info *ReplicaInfo) RowRange {
	if b := info.Begin; b != nil && (rr.Begin == nil || *rr.Begin < *b) {
		rr.Begin = b
	}
	if e := info.End; e != nil && (rr.End == nil || *rr.End > *e) {
		rr.End = e
	}
	return rr
}

// contains reports whether t lies in the range.
func (rr RowRange) contains(t int64) bool {
	return (rr.Begin == nil || t >= *rr.Begin) && (rr.End == nil || t < *rr.End)
}

// skipKey appends to dst the row key to seek to from key, a row at time t
// outside rr: the first row of its series at rr's start (t before it: in
// rr's first storage bucket) or the first key past its series (t at or
// after rr's end: in rr's last bucket). The rows between lie outside rr
// too, so a reader of a range narrower than its buckets (a pre-split
// child's few seconds of a data space's 68 s bucket) seeks twice a series
// instead of stepping through every row of the bucket. The key is always
// past key: it keeps key's bucket and series.
func (rr RowRange) skipKey(dst, key []byte, t int64) []byte {
	if rr.Begin != nil && t < *rr.Begin {
		dst = append(dst, key[:len(key)-timeLen]...)
		return binary.BigEndian.AppendUint64(dst, orderedTime(*rr.Begin))
	}
	// Keys of the series are series|0x00|time: series|0x01 sorts after
	// them all and before the next series.
	return append(append(dst, key[:len(key)-timeLen-1]...), 1)
}

// ReadRows returns the rows the snapshot holds in the time range rr
// (every field's version and tombstones included, as ReadLog returns
// them) in key order, after the row at after (nil: from the first), at
// most maxRows of them (maxRows <= 0: no limit): a row snapshot of the
// replica at Seq, read sequentially. Only the storage buckets the range
// touches are read (a split child's snapshot reads its part of the
// parent). Like ReadLog it first waits until Seq is synced (rule 1). A
// row snapshot pushed to its end gives a target every row in the range
// live at Seq, which is what the log from 0 up to Seq would give it.
func (s *LogSnapshot) ReadRows(after *RowPos, rr RowRange, maxRows int) ([]model.Row, error) {
	r := s.r
	release, err := s.use()
	if err != nil {
		return nil, err
	}
	defer release()
	if err := r.synced.wait(s.high); err != nil {
		return nil, fmt.Errorf("partition: replica %s: sync: %w", r.info.Placement, err)
	}
	rr = rr.within(&r.info)
	lower, upper, afterKey, empty := r.rowBounds(after, rr)
	if empty {
		return nil, nil
	}
	it, err := newRowIter(s.snap, s.mem, &r.ks, lower, upper)
	if err != nil {
		return nil, fmt.Errorf("partition: replica %s: read rows: %w", r.info.Placement, err)
	}
	defer it.Close()
	var (
		out    []model.Row
		raw    rawRow
		names  = interner{}
		series = interner{}
		slab   fieldSlab
	)
	var seek []byte
	ok := it.First()
	for ok && (maxRows <= 0 || len(out) < maxRows) {
		key := it.Key()
		if afterKey != nil && bytes.Equal(key, afterKey) {
			ok = it.Next()
			continue
		}
		_, sb, t, err := rowKeyParts(key)
		if err != nil {
			return nil, err
		}
		if !rr.contains(t) { // an edge bucket's row outside the range
			seek = rr.skipKey(seek[:0], key, t)
			ok = it.SeekGE(seek)
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("partition: replica %s: read rows: %w", r.info.Placement, err)
		}
		if err := decodeRaw(v, &raw); err != nil {
			return nil, fmt.Errorf("partition: replica %s: row %x: %w", r.info.Placement, key, err)
		}
		out = append(out, toModelRow(series.get(sb), t, &raw, names, nil, false, &slab))
		ok = it.Next()
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("partition: replica %s: read rows: %w", r.info.Placement, err)
	}
	return out, nil
}
