package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/block"
)

// Sealing (issue 17, docs/storage-plan.md step 4; the layout in
// docs/storage-format.md, "Sealed blocks"): the head rows of a storage
// bucket that no longer takes the present's writes are folded, series by
// series, into one column block per series and bucket
// (space|'b'|bucket|series|0x00 → a partition/block block), and the head
// rows deleted, in one batch. A block holds each row with every field's
// value and version, tombstones included, so a read that merges it with
// the head (rowIter) answers exactly as the head rows did: sealing changes
// how rows are stored, never what they say, and it seals a data space's
// rows whichever member's range they lie in. A row written to a sealed
// bucket later goes to the head again; reads fold it over the block, and
// the next seal of the bucket folds it in.
//
// Each batch of a seal commits under the data space's apply lock, and
// only if no write landed between the read of its series' head rows and
// the deletion of exactly those: a write is either read into the block
// or stays in the head. A batch (about sealBatchRows rows read, or passed
// over in blocks; a series is never cut, but one over a block's limits
// is read no further) is read and encoded outside the lock after a stamp
// of the space, and committed under it if the stamp still holds; else it
// is read again under the lock (sealSome).
//
// A sealed row has no sequence of its own (its value reads with sequence
// 0): the log keeps what it kept, each entry carrying its change, and an
// overwrite of a sealed row deletes no entry.

// sealBatchRows bounds the rows one batch of a seal reads (a series is
// never cut), and so how long a batch read again under the data space's
// apply lock holds it. A variable for the tests of seals in many batches
// only.
var sealBatchRows = 50_000

// SealStats counts what a seal did.
type SealStats struct {
	// Buckets is the number of storage buckets whose head rows were
	// read, Series the series (blocks) written, Rows the rows in them.
	Buckets, Series, Rows int
	// Skipped counts the series left in the head because their rows in
	// one bucket exceed a block's limits (block.MaxRows, MaxValues,
	// MaxFields) or the block encoder refused them (logged).
	Skipped int
	// HeadBytes is the key and value bytes of the head rows removed,
	// BlockBytes those of the blocks written (replacing HeadBytes and the
	// blocks they were merged with).
	HeadBytes, BlockBytes int64
	// StoredRows counts the head rows read from pebble's head rather
	// than the memory head. Only their range deletions leave deleted
	// keys on disk for the compaction after the seal (compactSealed) to
	// reclaim: a seal of memory rows alone writes no range deletion and
	// compacts nothing.
	StoredRows int
}

// Add adds o's counts to s.
func (s *SealStats) Add(o SealStats) {
	s.Buckets += o.Buckets
	s.Series += o.Series
	s.Rows += o.Rows
	s.Skipped += o.Skipped
	s.HeadBytes += o.HeadBytes
	s.BlockBytes += o.BlockBytes
	s.StoredRows += o.StoredRows
}

// SealPolicy says which storage buckets a seal folds: those that ended at
// or before Before, and, with Quiet > 0, those that ended at or before Now
// and took no write in the Quiet before it (a bucket filled with older
// data, by a backfill say, need not wait Before's margin for late rows).
// With Idle > 0 (and Quiet > 0), an ended bucket is also sealed once its
// data space took no write at all, into any bucket, in the Idle before
// Now: a burst of writes that ended leaves nothing to wait for. Times are
// wall clock ns. The writes are known since the store opened; a bucket
// not written since is taken as written at the opening.
type SealPolicy struct {
	Before int64
	Now    int64
	Quiet  time.Duration
	// Idle, shorter than Quiet to be of use, is how long a whole data
	// space must have taken no write for its ended buckets to be sealed
	// without waiting for Quiet. While a space takes writes anywhere (a
	// backfill moving from one bucket to the next, smeared rows arriving
	// late), Quiet alone decides; once they stop, the buckets they left
	// are sealed Idle after the last one rather than Quiet after, so the
	// seal's work is done before the reads that follow a write, not among
	// them (docs/performance.md, "A seal when the writes stop").
	Idle time.Duration
	// QuietOnly marks a pass a sealer makes between its regular ones for
	// the buckets that just went quiet (Before being then of no use): it
	// leaves the memory budget and the compaction of truncated logs to the
	// regular passes. Fitted at every such pass, a budget the writes keep
	// exceeding sealed the oldest bucket again and again while it still
	// took rows, each time merging its block anew (docs/performance.md,
	// "Aggregates over the memory head").
	QuietOnly bool
}

// sealable reports whether bucket b is to be sealed now, and stop when no
// later bucket is (b has not ended by Before or Now). The caller holds
// applyMu.
func (p SealPolicy) sealable(b uint32, sp *dataSpace, opened int64) (seal, stop bool) {
	if b == maxBucket {
		return false, true
	}
	end := bucketStart(b + 1)
	switch {
	case end <= p.Before:
		return true, false
	case p.Quiet <= 0 || end > p.Now:
		return false, end > max(p.Before, p.Now)
	}
	last, ok := sp.lastWrite[b]
	if !ok {
		last = opened
	}
	return p.quiet(last, sp.lastAny), false
}

// quiet reports whether a bucket whose last write was at last, in a space
// whose last write was at spaceLast, has gone quiet by p.Now (quietAt).
func (p SealPolicy) quiet(last, spaceLast int64) bool {
	return p.Now >= p.quietAt(last, spaceLast)
}

// quietAt returns when (wall clock ns) a bucket whose last write was at
// last, in a space whose last write was at spaceLast, goes quiet: Quiet
// after its own last write, or Idle after the space's if that is sooner;
// math.MaxInt64 when neither falls within an int64. The caller checked
// that p.Quiet is on.
func (p SealPolicy) quietAt(last, spaceLast int64) int64 {
	at := addClamped(last, p.Quiet)
	if p.Idle > 0 {
		at = min(at, addClamped(max(last, spaceLast), p.Idle))
	}
	return at
}

// addClamped returns t+d, or math.MaxInt64 where that would overflow.
func addClamped(t int64, d time.Duration) int64 {
	if d > 0 && t > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return t + int64(d)
}

// Seal seals the head rows of every storage bucket of the replica's data
// space that ends at or before `before` (a time in ns: bucket b is sealed
// when bucketStart(b+1) <= before): SealWith(SealPolicy{Before: before}).
func (r *Replica) Seal(ctx context.Context, before int64) (SealStats, error) {
	return r.SealWith(ctx, SealPolicy{Before: before})
}

// SealWith seals the head rows of the storage buckets of the replica's
// data space that p names. It returns what it did; on an error (ctx's
// among them, checked between batches) the batches committed before it
// stand (each is whole). A seal of a dropped replica fails with
// ErrDropped, of an unloading one with ErrUnloading (Store.Seal then seals
// the space through another member).
func (r *Replica) SealWith(ctx context.Context, p SealPolicy) (SealStats, error) {
	st, lo, hi, err := r.sealWith(ctx, p)
	if err != nil || st.Series == 0 || st.StoredRows == 0 || r.enter() != nil {
		return st, err // nothing to compact, or the replica is gone
	}
	defer r.store.gate.Exit()
	return st, r.compactSealed(ctx, lo, hi)
}

// sealWith is SealWith without the compaction: it returns the first and
// last bucket sealed (when st.Series > 0) for compactSealed.
func (r *Replica) sealWith(ctx context.Context, p SealPolicy) (st SealStats, lo, hi uint32, err error) {
	if err := r.enter(); err != nil {
		return st, 0, 0, err
	}
	defer r.store.gate.Exit()
	defer func() { r.store.sealed.add(st) }()
	defer r.forgetQuietWrites(p)
	defer r.releaseLogs()
	from := r.ks.rowLo
	counted := uint32(0)
	first := true
	var bucketSince int64 // when the seal of the current bucket began
	for {
		if err := ctx.Err(); err != nil {
			return st, lo, hi, err
		}
		b, ok, err := r.nextHeadBucket(from)
		if err != nil {
			return st, lo, hi, err
		}
		if !ok {
			return st, lo, hi, nil
		}
		r.applyMu.Lock()
		seal, stop := p.sealable(b, r.applyMu, r.store.opened)
		if at, ok := r.applyMu.settled[b]; ok && seal {
			last, written := r.applyMu.lastWrite[b]
			seal = written && last > at // written since its oversized series were left
		}
		r.applyMu.Unlock()
		if stop {
			return st, lo, hi, nil
		}
		if !seal {
			from = r.ks.appendBucketSeriesKey(nil, b+1, "") // b < maxBucket: not stop
			continue
		}
		if bucketStart := r.ks.appendBucketSeriesKey(nil, b, ""); bytes.Compare(from, bucketStart) < 0 {
			// The head's next row is in a later bucket than from: start
			// there, or the blocks in between would be read as b's.
			from = bucketStart
		}
		if first || b != counted {
			st.Buckets++
			counted, first = b, false
			bucketSince = time.Now().UnixNano()
		}
		series := st.Series
		next, err := r.sealSome(b, from, bucketSince, &st)
		if err != nil {
			return st, lo, hi, err
		}
		if st.Series > series {
			if series == 0 {
				lo = b
			}
			hi = b
		}
		if next == nil {
			next = r.ks.appendBucketSeriesKey(nil, b+1, "")
		}
		from = next
	}
}

// NextQuietSeal returns when (wall clock ns) the next storage bucket goes
// quiet under p: the earliest, over the buckets whose writes the store
// noted and no seal has forgotten since, of the later of its end and its
// last write plus p.Quiet, or its space's last write plus p.Idle if that
// is sooner (at or before p.Now: quiet already, to seal now; a write
// meanwhile moves the idle time, so a sleeper looks again). False when
// there is none (or p.Quiet is off). A sealer sleeping
// until then seals a bucket as soon as it went quiet; a seal forgets the
// notes of quiet buckets (forgetQuietWrites), so it is not woken for them
// again.
func (s *Store) NextQuietSeal(p SealPolicy) (int64, bool) {
	if p.Quiet <= 0 {
		return 0, false
	}
	var (
		next  int64
		found bool
	)
	done := map[uuid.UUID]bool{}
	for _, r := range s.Replicas() {
		space := r.DataSpace()
		if done[space] || r.dropped.Load() || r.unloading.Load() {
			continue // Seal skips them too: their notes would wake it for nothing
		}
		done[space] = true
		r.applyMu.Lock()
		for b, last := range r.applyMu.lastWrite {
			quiet := p.quietAt(last, r.applyMu.lastAny)
			if b >= maxBucket || quiet == math.MaxInt64 {
				continue
			}
			at := max(bucketStart(b+1), quiet)
			if !found || at < next {
				next, found = at, true
			}
		}
		r.applyMu.Unlock()
	}
	return next, found
}

// forgetQuietWrites drops the notes of the buckets quiet under p (all of
// them when p.Quiet is off): a bucket without one counts as written at the
// opening, which is older still, so it is as quiet. Settled buckets whose
// note is gone stay settled.
func (r *Replica) forgetQuietWrites(p SealPolicy) {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	for b, last := range r.applyMu.lastWrite {
		if p.Quiet <= 0 || p.quiet(last, r.applyMu.lastAny) {
			r.applyMu.forgetWrite(b)
		}
	}
}

// compactSealed compacts the head key range of the buckets lo to hi that
// a seal emptied, so that the deleted head rows leave the
// disk now rather than when pebble's own compactions reach them: the data
// directory is then about the size of the blocks (issue 17, item 5). The
// files pebble rewrites are those holding the range, mostly deleted keys.
func (r *Replica) compactSealed(ctx context.Context, lo, hi uint32) error {
	upper := r.ks.rowHi
	if hi < maxBucket {
		upper = r.ks.appendBucketSeriesKey(nil, hi+1, "")
	}
	if err := r.store.db.Compact(ctx, r.ks.appendBucketSeriesKey(nil, lo, ""), upper, false); err != nil {
		return fmt.Errorf("partition: replica %s: compact the sealed rows: %w", r.info.Placement, err)
	}
	return nil
}

// nextHeadBucket returns the bucket of the first head row at or above key,
// in pebble or in memory (the bucket of key counts as holding one when
// the memory head holds a row of it).
func (r *Replica) nextHeadBucket(key []byte) (uint32, bool, error) {
	mb, mok := r.applyMu.mem.nextBucket(r.ks.rowLo, key)
	it, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: key, UpperBound: r.ks.rowHi})
	if err != nil {
		return 0, false, fmt.Errorf("partition: replica %s: seal: %w", r.info.Placement, err)
	}
	defer it.Close()
	if !it.First() {
		return mb, mok, it.Error()
	}
	b, _, _, err := rowKeyParts(it.Key())
	if err != nil {
		return 0, false, err
	}
	if mok {
		b = min(b, mb)
	}
	return b, true, nil
}

// sealScratch holds one series' rows while a batch of a seal reads them.
type sealScratch struct {
	// delFrom is where the head rows to delete start: the batch's first
	// key, or just past the last series kept in the head; deletes is set
	// once a series after it was sealed.
	delFrom []byte
	deletes bool
	// stored is set once the batch read a row of pebble's head (not of
	// the memory head): without one, the stretches it seals hold no key
	// in pebble's head, and it writes no range deletion.
	stored bool
	kept   bool // a series was left in the head
	// outside: the seal runs outside the apply lock (sealSomeOutside),
	// and a series to leave in the head stops it (errSealUnderLock).
	outside bool
	series  string
	rows    []model.Row
	dense   sealDense // the rows while they are columns (sealdense.go)
	values  int
	head    bool  // a row of the series is in the head
	headLen int64 // the key and value bytes of its head rows
	raw     rawRow
	names   interner
	shapes  map[*rowShape][]string // shapeNames
	slab    fieldSlab
	enc     block.Encoder
	buf     []byte
	key     []byte
	// memDone are the series whose rows in the memory head the batch
	// seals or drains into pebble's head: removed from memory once it is
	// committed.
	memDone []string
}

// keep leaves the current series' head rows where they are: the range
// deletion before it ends at the series, the next starts after it.
func (sc *sealScratch) keep(r *Replica, b uint32, batch *pebble.Batch) error {
	if h := r.applyMu.mem; h != nil {
		// Its rows in memory go to pebble's head, where series too
		// large for a block stay (they would pin the log otherwise).
		if err := h.drainSeriesOps(&r.ks, b, sc.series, batch); err != nil {
			return err
		}
		sc.memDone = append(sc.memDone, sc.series)
	}
	lo := r.ks.appendBucketSeriesKey(nil, b, sc.series)
	hi := append(append([]byte(nil), lo...), 1) // past series|0x00|time
	lo = append(lo, 0)
	if sc.deletes && sc.stored && bytes.Compare(sc.delFrom, lo) < 0 {
		if err := batch.DeleteRange(sc.delFrom, lo, nil); err != nil {
			return err
		}
	}
	sc.delFrom, sc.deletes, sc.kept = hi, false, true
	return nil
}

// sealSome seals the series of bucket b from the row key from on, until
// about sealBatchRows rows are read. It returns the key to go on from, or
// nil when the bucket is done. since is when the bucket's seal began: a
// bucket left with oversized series only is marked settled as of then, so
// a write that landed during the seal, behind its batches, still brings
// the bucket back.
//
// It first reads and encodes the batch outside the apply lock, on a
// pebble iterator and a memory view taken after a stamp of the space's
// changes (sealStamp), and takes the lock only to check that nothing
// changed the space's rows meanwhile (no write into b, no other change)
// and to commit: inserts into the space's other buckets (the present's)
// do not wait for the reading and encoding. When something did change,
// or the batch meets a series that stays in the head (too large for a
// block), it seals the batch again under the lock, as it always did
// before stop 36: a mutex profile of the peer harness had put a quarter
// of the inserts' waits for the apply lock on the seal.
func (r *Replica) sealSome(b uint32, from []byte, since int64, st *SealStats) ([]byte, error) {
	next, done, err := r.sealSomeOutside(b, from, st)
	if done || err != nil {
		return next, err
	}
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	return r.sealPass(b, from, since, st, nil)
}

// sealStamp is what a seal outside the apply lock compares before it
// commits: the space's count of other changes and bucket b's last noted
// write (0: none noted; noteWrite's counts start at 1).
type sealStamp struct {
	gen, writeN uint64
}

// stampLocked returns bucket b's stamp. The caller holds the lock.
func (sp *dataSpace) stampLocked(b uint32) sealStamp {
	return sealStamp{gen: sp.gen, writeN: sp.writeN[b]}
}

// errSealUnderLock stops a seal outside the apply lock that met what only
// the locked seal handles (a series left in the head).
var errSealUnderLock = errors.New("partition: seal: again under the apply lock")

// sealOutside is a seal's pass outside the apply lock: its stamp, and the
// batch and rows to commit under the lock once the stamp still holds.
type sealOutside struct {
	stamp sealStamp
	batch *pebble.Batch
	st    SealStats
	done  []string // sealScratch.memDone
}

// sealSomeOutside is sealSome's pass outside the apply lock. done reports
// that it committed (next is then sealSome's answer); false: seal under
// the lock instead.
func (r *Replica) sealSomeOutside(b uint32, from []byte, st *SealStats) (next []byte, done bool, err error) {
	r.applyMu.Lock()
	stamp, oversized := r.applyMu.stampLocked(b), len(r.applyMu.oversized) > 0
	r.applyMu.Unlock()
	if oversized || r.dropped.Load() || r.unloading.Load() {
		return nil, false, nil // the locked seal knows what to pass over, or fails
	}
	out := &sealOutside{stamp: stamp, batch: r.store.db.NewBatch()}
	defer out.batch.Close()
	next, err = r.sealPass(b, from, 0, &out.st, out)
	if errors.Is(err, errSealUnderLock) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if r.hookSealOutside != nil {
		r.hookSealOutside()
	}
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.applyMu.stampLocked(b) != out.stamp || r.dropped.Load() || r.unloading.Load() {
		r.store.sealRetries.Add(1)
		return nil, false, nil
	}
	if err := r.commitSeal(b, out.batch, out.done); err != nil {
		return nil, false, err
	}
	st.Add(out.st)
	return next, true, nil
}

// SealRetries returns how many seal batches read outside the apply lock
// were read again under it, their data space having changed meanwhile.
func (s *Store) SealRetries() int64 { return s.sealRetries.Load() }

// commitSeal commits a seal's batch and removes the series it sealed from
// the memory head. The caller holds the apply lock.
func (r *Replica) commitSeal(b uint32, batch *pebble.Batch, done []string) error {
	if !batch.Empty() {
		// Not synced: the batch changes how rows are stored, not what
		// they say, and applies atomically or not at all after a crash.
		if err := batch.Commit(pebble.NoSync); err != nil {
			return fmt.Errorf("partition: replica %s: seal: %w", r.info.Placement, err)
		}
	}
	r.removeMem(b, done)
	r.applyMu.changed()
	return nil
}

// sealPass reads and encodes a batch of sealSome. Under the apply lock
// (out nil) it commits the batch too; outside it (out set: no series of
// the space is oversized) it leaves the batch and the series to remove
// from memory in out, and fails with errSealUnderLock at a series that
// would stay in the head.
func (r *Replica) sealPass(b uint32, from []byte, since int64, st *SealStats, out *sealOutside) ([]byte, error) {
	if r.dropped.Load() {
		return nil, fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	if r.unloading.Load() {
		return nil, fmt.Errorf("replica %s: %w", r.info.Placement, ErrUnloading)
	}
	end := r.ks.rowHi
	if b < maxBucket {
		end = r.ks.appendBucketSeriesKey(nil, b+1, "")
	}
	// The rows in memory of about a batch of series (the view would
	// copy every series of the bucket otherwise, at every batch); the
	// batch reads no further than the view's end.
	mem, memEnd := r.memViewBounded(from, end, sealBatchRows)
	upper := end
	if memEnd != nil {
		upper = memEnd
	}
	it, err := newRowIter(r.store.db, mem, &r.ks, from, upper)
	if err != nil {
		return nil, fmt.Errorf("partition: replica %s: seal: %w", r.info.Placement, err)
	}
	defer it.Close()
	var batch *pebble.Batch
	if out != nil {
		batch = out.batch
	} else {
		batch = r.store.db.NewBatch()
		defer batch.Close()
	}
	sc := &sealScratch{names: interner{}, delFrom: from, outside: out != nil}
	yield := sealYielder{last: time.Now()}
	var next []byte
	read, started := 0, false
	ok := it.First()
	for ok {
		kb, series, t, err := rowKeyParts(it.Key())
		if err != nil {
			return nil, err
		}
		if kb != b {
			// from and end bound the read to bucket b: a row of another
			// bucket would be sealed into b's block under the wrong keys.
			return nil, fmt.Errorf("partition: replica %s: seal of storage bucket %d read a row of bucket %d", r.info.Placement, b, kb)
		}
		if !started || string(series) != sc.series {
			if started {
				if err := r.sealSeries(b, sc, batch, st); err != nil {
					return nil, err
				}
				if sc.outside {
					yield.maybe()
				}
			}
			if read >= sealBatchRows {
				next = r.ks.appendBucketSeriesKey(nil, b, string(series))
				break
			}
			sc.series, started = string(series), true
			// Outside the lock the map is not read (another seal may
			// write it): no series was oversized when the stamp was
			// taken, and one noted since changes the stamp.
			if !sc.outside && r.oversizedLocked(b, series) {
				// Too large for a block, found so before: not read again.
				if err := sc.keep(r, b, batch); err != nil {
					return nil, err
				}
				ok = it.SeekGE(sc.delFrom)
				continue
			}
		}
		if !it.inHead && !sc.head && it.blockRun() {
			read += it.reader.Len() - it.bPos // loaded under the lock: counts
			ok = it.SkipBlock()               // sealed already, nothing written since
			continue
		}
		if it.inHead {
			sc.head = true
			sc.headLen += int64(it.rowBytesHead())
			if it.head.inP {
				sc.stored = true
				st.StoredRows++
			}
		}
		nf, err := sc.read(it, t)
		if err != nil {
			return nil, fmt.Errorf("partition: replica %s: seal: row %x: %w", r.info.Placement, it.Key(), err)
		}
		if nf > 0 {
			sc.values += nf
			read++
			if sc.count() > block.MaxRows || sc.values > block.MaxValues {
				// Too large for a block: not read further, left in the head.
				if sc.outside {
					return nil, errSealUnderLock
				}
				st.Skipped++
				r.noteOversized(b, sc.series)
				if err := sc.keep(r, b, batch); err != nil {
					return nil, err
				}
				sc.resetSeries()
				ok = it.SeekGE(sc.delFrom)
				continue
			}
		}
		ok = it.Next()
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("partition: replica %s: seal: %w", r.info.Placement, err)
	}
	if next == nil && started {
		if err := r.sealSeries(b, sc, batch, st); err != nil {
			return nil, err
		}
	}
	if next == nil && memEnd != nil {
		next = memEnd // the bucket goes on past the view
	}
	if next == nil && sc.kept {
		// Series too large for a block stay in the head: the bucket is
		// passed over until it is written again.
		if r.applyMu.settled == nil {
			r.applyMu.settled = map[uint32]int64{}
		}
		r.applyMu.settled[b] = since
	}
	// The head rows read, but those of the series left in the head: one
	// range deletion per stretch between them (one per range deletion
	// and series would burden every iterator over the memtable).
	delTo := next
	if delTo == nil {
		delTo = end
	}
	if bytes.Compare(sc.delFrom, delTo) < 0 && sc.deletes && sc.stored {
		if err := batch.DeleteRange(sc.delFrom, delTo, nil); err != nil {
			return nil, err
		}
	}
	if out != nil {
		out.done = sc.memDone
		return next, nil
	}
	if err := r.commitSeal(b, batch, sc.memDone); err != nil {
		return nil, err
	}
	return next, nil
}

// readRow returns the row under it at time t, every field with its
// version, tombstones included (a row without fields has none). A compact
// row of the memory head is read at its shape's offsets: its fields are
// the shape's, so nothing is expanded or parsed (in a profile of the
// seal after the peer harness's write, expanding and decoding the rows
// in memory had been a third of its CPU).
func (sc *sealScratch) readRow(it *rowIter, t int64) (model.Row, error) {
	if sh, c, ok := it.memCompact(); ok {
		row, ok := sh.modelRow(sc.series, t, c, sc.shapeNames(sh), &sc.raw, &sc.slab)
		if !ok {
			return model.Row{}, corrupt("compact row in memory without its sequence and versions")
		}
		return row, nil
	}
	v, err := it.Value()
	if err != nil {
		return model.Row{}, err
	}
	if err := decodeRaw(v, &sc.raw); err != nil {
		return model.Row{}, err
	}
	return toModelRow(sc.series, t, &sc.raw, sc.names, nil, false, &sc.slab), nil
}

// shapeNames returns sh's field names in order, interned.
func (sc *sealScratch) shapeNames(sh *rowShape) []string {
	if names, ok := sc.shapes[sh]; ok {
		return names
	}
	names := make([]string, len(sh.fields))
	for i := range sh.fields {
		names[i] = sc.names.get(sh.fields[i].name)
	}
	if sc.shapes == nil {
		sc.shapes = map[*rowShape][]string{}
	}
	sc.shapes[sh] = names
	return names
}

// sealSeries adds to batch the block of the series sc holds, replacing its
// head rows in bucket b, when it has any, and resets sc for the next one.
// The head rows are deleted by sealSome's range deletion, which leaves
// out the series kept in the head here (sc.keep).
func (r *Replica) sealSeries(b uint32, sc *sealScratch, batch *pebble.Batch, st *SealStats) error {
	defer sc.resetSeries() // the rows are encoded: their memory reused
	if !sc.head {
		return nil // sealed already, nothing written since
	}
	// Columns hold one shape's fields, at most maxShapeFields: only rows
	// can name too many.
	if sc.count() > block.MaxRows || sc.values > block.MaxValues || tooManyNames(sc.rows, sc.values) {
		if sc.outside {
			return errSealUnderLock
		}
		st.Skipped++
		r.noteOversized(b, sc.series)
		return sc.keep(r, b, batch)
	}
	sc.key = r.ks.appendBlockKey(sc.key[:0], b, sc.series)
	sc.deletes = true
	if r.applyMu.mem != nil {
		sc.memDone = append(sc.memDone, sc.series)
	}
	if sc.count() == 0 {
		// Rows without fields (none are written): nothing to keep.
		return batch.Delete(sc.key, nil)
	}
	if err := sc.encode(); err != nil {
		if errors.Is(err, block.ErrInvalid) {
			if sc.outside {
				return errSealUnderLock
			}
			st.Skipped++
			r.store.log.Error("partition: seal: rows refused by the block encoder; left in the head",
				"placement", r.info.Placement, "series", sc.series, "bucket", b, "err", err)
			r.noteOversized(b, sc.series)
			return sc.keep(r, b, batch)
		}
		return err
	}
	if err := batch.Set(sc.key, sc.buf, nil); err != nil {
		return err
	}
	st.Series++
	st.Rows += sc.count()
	st.HeadBytes += sc.headLen
	st.BlockBytes += int64(len(sc.key) + len(sc.buf))
	return nil
}

// oversizedKey names a series of a storage bucket in dataSpace.oversized.
func oversizedKey(b uint32, series []byte) string {
	return string(binary.BigEndian.AppendUint32(nil, b)) + string(series)
}

// oversizedLocked reports whether series' rows of bucket b are known to
// be too many for a block. The caller holds applyMu.
func (r *Replica) oversizedLocked(b uint32, series []byte) bool {
	_, known := r.applyMu.oversized[oversizedKey(b, series)]
	return known
}

// noteOversized records that series' rows of bucket b stay in the head, so
// that the next seals pass over them unread. In memory: after a restart
// they are read once more. The caller holds applyMu.
func (r *Replica) noteOversized(b uint32, series string) {
	if r.applyMu.oversized == nil {
		r.applyMu.oversized = map[string]struct{}{}
	}
	r.applyMu.oversized[oversizedKey(b, []byte(series))] = struct{}{}
}

// tooManyNames reports whether rows, holding values fields in all, name
// more fields than a block may (block.MaxFields). Only a row whose names
// differ from the row before it adds to the set: a series' rows mostly
// share one schema, and a map insert per value had been a tenth of the
// seal's CPU in the peer harness's 10 M write (docs/performance.md).
func tooManyNames(rows []model.Row, values int) bool {
	if values <= block.MaxFields {
		return false
	}
	var names map[string]struct{}
	var prev []model.Field
	for i := range rows {
		fs := rows[i].Fields
		if sameFieldNames(prev, fs) {
			continue
		}
		if names == nil {
			names = make(map[string]struct{}, len(fs))
		}
		for j := range fs {
			names[fs[j].Name] = struct{}{}
		}
		if len(names) > block.MaxFields {
			return true
		}
		prev = fs
	}
	return false
}

// sameFieldNames reports whether a and b name the same fields in the same
// order.
func sameFieldNames(a, b []model.Field) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

// sealCounters are the store's running totals of SealStats (metrics).
type sealCounters struct {
	series, rows, skipped, headBytes, blockBytes atomic.Int64
}

func (c *sealCounters) add(st SealStats) {
	c.series.Add(int64(st.Series))
	c.rows.Add(int64(st.Rows))
	c.skipped.Add(int64(st.Skipped))
	c.headBytes.Add(st.HeadBytes)
	c.blockBytes.Add(st.BlockBytes)
}

// Seal seals every data space of the store (through one live member of
// each) as p says, then compacts the head ranges emptied (after all the
// spaces: the first compaction flushes the memtable that holds every
// space's range deletions), and returns the sum of what it did. A member
// dropped or unloading meanwhile leaves its space to the next one; a space
// whose seal fails does not stop the others (the errors are joined).
func (s *Store) Seal(ctx context.Context, p SealPolicy) (SealStats, error) {
	var (
		total SealStats
		errs  []error
	)
	type sealed struct {
		r      *Replica
		lo, hi uint32
	}
	var compact []sealed
	done := map[uuid.UUID]bool{}
	for _, r := range s.Replicas() {
		space := r.DataSpace()
		if done[space] {
			continue
		}
		st, lo, hi, err := r.sealWith(ctx, p)
		total.Add(st)
		if st.Series > 0 && st.StoredRows > 0 {
			compact = append(compact, sealed{r, lo, hi})
		}
		switch {
		case errors.Is(err, ErrDropped), errors.Is(err, ErrUnloading):
			continue
		case ctx.Err() != nil:
			return total, ctx.Err()
		case err != nil:
			errs = append(errs, err)
		}
		done[space] = true
	}
	if !p.QuietOnly {
		if err := s.fitMemHeads(); err != nil {
			errs = append(errs, err)
		}
		if err := s.compactLogs(ctx, minLogCompaction); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range compact {
		if err := c.r.enter(); err != nil {
			continue // dropped or closed since: nothing to compact
		}
		err := c.r.compactSealed(ctx, c.lo, c.hi)
		c.r.store.gate.Exit()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// sealYieldAfter is how long a seal outside the apply lock encodes
// before it lets other goroutines run (runtime.Gosched), between two
// series. A seal is a server's longest CPU-bound loop: at 100,000 series
// the buckets that go quiet together after a write take seconds of CPU
// to seal, and a query that arrived meanwhile could wait for a processor
// until Go preempted the seal (10 ms): the peer harness's series_select
// p50 was 2.9 and 0.6 ms in two of three rounds without the yield, 0.20 to
// 0.30 ms with it (docs/performance.md, "A seal yields to queries"). Under
// the apply lock a seal does not yield: it would hold the lock longer.
const sealYieldAfter = 100 * time.Microsecond

// sealYielder yields the processor every sealYieldAfter of a seal pass.
type sealYielder struct{ last time.Time }

// maybe yields when sealYieldAfter has passed since the last yield.
func (y *sealYielder) maybe() {
	if now := time.Now(); now.Sub(y.last) >= sealYieldAfter {
		runtime.Gosched()
		y.last = time.Now()
	}
}
