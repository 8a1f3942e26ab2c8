package partition

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// How rows leave the memory head (memhead.go) other than by a regular
// seal, and how they come back at Open: the budget's early seals and
// drains, the drains before a drop and of pinned logs, the truncation of
// logs nobody reads, and the replay of the log records.

// drainSeriesOps adds to b series' rows of bucket b in memory, as merge
// operands of pebble's head (the rows then live there as before a memory
// head existed). The caller holds the space lock, and removes the series
// from memory once b is committed.
func (h *memHead) drainSeriesOps(ks *keyspace, bk uint32, series string, b *pebble.Batch) error {
	mb := h.buckets[bk]
	if mb == nil {
		return nil
	}
	s := mb.series[series]
	if s == nil {
		return nil
	}
	var key, val []byte
	for i := range s.rows {
		if s.rows[i].persisted() {
			continue // pebble's head holds it
		}
		key = ks.appendRowKey(key[:0], series, s.rows[i].t)
		if err := b.Merge(key, s.appendValue(val[:0], i), nil); err != nil {
			return err
		}
	}
	return nil
}

// The drains write rows as merge operands into one pebble batch made
// with room for all of them (opsBytes): grown by doubling from pebble's
// default, a drop's batch of 500,000 rows of the peer harness's shape
// copied itself again and again into fresh memory, 85% of the drop's
// time under the apply lock (docs/performance.md, "A split parent's
// drop").

// opRecordOverhead bounds what a merge operand's record adds in a pebble
// batch to its key and value: its kind and their two lengths.
const opRecordOverhead = 1 + 2*binary.MaxVarintLen32

// opsBytes returns an upper bound of the bytes that merge operands of
// rows [i, j) of s, series name's, take in a pebble batch, leaving out
// those pebble's head holds already (memRow.persisted).
func (s *memSeries) opsBytes(ks *keyspace, name string, i, j int) int {
	key := ks.rowKeyLen(name)
	n := 0
	for k := i; k < j; k++ {
		if !s.rows[k].persisted() {
			n += opRecordOverhead + key + int(s.valueLen(s.rows[k]))
		}
	}
	return n
}

// newOpsBatch returns a batch with room for n bytes of merge operands
// (opsBytes) and a few more records: its header, a drop's deletions.
func newOpsBatch(db *pebble.DB, n int) *pebble.Batch { return db.NewBatchWithSize(n + 4<<10) }

// bucketOpsBytes is opsBytes of every row of bucket bk in memory.
func (h *memHead) bucketOpsBytes(ks *keyspace, bk uint32) int {
	n := 0
	if mb := h.buckets[bk]; mb != nil {
		for name, s := range mb.series {
			n += s.opsBytes(ks, name, 0, len(s.rows))
		}
	}
	return n
}

// allOpsBytes is opsBytes of every row in memory.
func (h *memHead) allOpsBytes(ks *keyspace) int {
	n := 0
	for bk := range h.buckets {
		n += h.bucketOpsBytes(ks, bk)
	}
	return n
}

// rangeOpsBytes is opsBytes of the rows persistRangeOps writes.
func (h *memHead) rangeOpsBytes(ks *keyspace, begin, end *int64) int {
	n := 0
	_ = h.eachInRange(begin, end, func(name string, s *memSeries, i, j int) error {
		n += s.opsBytes(ks, name, i, j)
		return nil
	})
	return n
}

// drainAllOps adds to b every row in memory, as merge operands of
// pebble's head. The caller holds the space lock and clears the head
// (clearLocked) once b is committed.
func (h *memHead) drainAllOps(ks *keyspace, b *pebble.Batch) error {
	var key, val []byte
	for _, mb := range h.buckets {
		for name, s := range mb.series {
			for i := range s.rows {
				if s.rows[i].persisted() {
					continue // pebble's head holds it
				}
				key = ks.appendRowKey(key[:0], name, s.rows[i].t)
				if err := b.Merge(key, s.appendValue(val[:0], i), nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// persistRangeOps adds to b a merge operand of every row in memory whose
// time is in [begin, end) (nil: open) and that pebble's head does not
// hold yet (memRow.persisted), its value as the memory head holds it,
// keeps the rows in memory, and returns the number of operands (0 for a
// nil head). A drop whose range the other members of its space cover
// deletes no row, only its log, which holds the durable form of the rows
// it wrote: the operands, in the drop's batch, are their durable form from
// then on, and markPersisted marks the rows so once b is committed.
// Readers fold a row in both places by version (rule 2); the seal of its
// bucket folds both into its block. The caller holds the space lock.
func (h *memHead) persistRangeOps(ks *keyspace, b *pebble.Batch, begin, end *int64) (int, error) {
	var key, val []byte
	n := 0
	err := h.eachInRange(begin, end, func(name string, s *memSeries, i, j int) error {
		for ; i < j; i++ {
			if s.rows[i].persisted() {
				continue
			}
			key = ks.appendRowKey(key[:0], name, s.rows[i].t)
			if err := b.Merge(key, s.appendValue(val[:0], i), nil); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// markPersisted marks every row in memory whose time is in [begin, end)
// as held by pebble's head too (memRow.persisted), once the batch of
// persistRangeOps is committed. A series whose rows a view holds marks a
// copy (memSeries.viewed). The caller holds the space lock.
func (h *memHead) markPersisted(begin, end *int64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_ = h.eachInRange(begin, end, func(_ string, s *memSeries, i, j int) error {
		for k := i; k < j; k++ {
			if s.rows[k].persisted() {
				continue
			}
			if s.viewed.Load() {
				s.rows = slices.Clone(s.rows)
				s.viewed.Store(false)
				grown := s.footprint() - s.bytes
				s.bytes += grown
				h.bytes.Add(grown)
			}
			s.rows[k].n |= memRowPersisted
		}
		return nil
	})
}

// eachInRange calls fn with the span [i, j) of each series' rows in
// memory whose time is in [begin, end) (nil: open), stopping at its
// first error (none for a nil head or an empty range).
func (h *memHead) eachInRange(begin, end *int64, fn func(name string, s *memSeries, i, j int) error) error {
	sp, ok := spanOf(begin, end)
	if h == nil || !ok {
		return nil
	}
	from, to := sp.lo, sp.hi
	lo, hi := timeBucket(from), timeBucket(to)
	for bk, mb := range h.buckets {
		if bk < lo || bk > hi {
			continue
		}
		for name, s := range mb.series {
			if i, j := s.timeSpan(from, to); i < j {
				if err := fn(name, s, i, j); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// releaseLogs raises the truncation point of each member of r's data
// space whose log nobody reads (SetLogValues(false)) as far as its rows in
// memory allow (truncateLocked): after a seal, the records of the rows it
// moved into blocks are no longer needed. A replica nobody pushes from
// so keeps the records of its unsealed rows only.
func (r *Replica) releaseLogs() {
	if r.applyMu.mem == nil {
		return
	}
	s := r.store
	s.mu.Lock()
	members := make([]*Replica, 0, len(r.applyMu.members))
	for _, m := range r.applyMu.members {
		members = append(members, m)
	}
	s.mu.Unlock()
	for _, m := range members {
		if !m.noLogValues.Load() {
			continue
		}
		m.applyMu.Lock()
		if high := m.high.Load(); !m.dropped.Load() && high > 0 {
			if err := m.truncateLocked(min(m.SyncedSeq(), high-1)); err != nil {
				s.log.Warn("partition: truncate the log after a seal", "placement", m.info.Placement, "err", err)
			}
		}
		m.applyMu.Unlock()
	}
}

// drainMemForDrop writes every row of the space's memory head to pebble's
// head (one synced batch) and empties the memory head, before a drop:
// the rows' records are in member logs, the dropped replica's among them,
// which the drop deletes, and the drop's deletes of the rows no other
// member covers read pebble (dropSpaceOps). The caller holds the store's
// lock and applyMu, with the replica marked dropped.
func (r *Replica) drainMemForDrop() error {
	if err := r.drainMemLocked(); err != nil {
		return fmt.Errorf("partition: drop replica %s: %w", r.info.Placement, err)
	}
	return nil
}

// drainMemLocked writes every row of r's space's memory head to pebble's
// head in one synced batch and empties it. The caller holds applyMu.
func (r *Replica) drainMemLocked() error {
	h := r.applyMu.mem
	if h == nil || len(h.buckets) == 0 {
		return nil
	}
	b := newOpsBatch(r.store.db, h.allOpsBytes(&r.ks))
	defer b.Close()
	if err := h.drainAllOps(&r.ks, b); err != nil {
		return fmt.Errorf("drain the memory head: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("drain the memory head: %w", err)
	}
	r.store.memDrained.Add(int64(b.Count()))
	h.clearLocked()
	r.applyMu.changed()
	return nil
}

// replayLog puts the rows of the replica's log records above its
// truncation point into its space's memory head (Open): the records are
// the durable form of the rows an Apply kept in memory. Rows a seal or a
// drain already wrote to pebble may come back too (the truncation follows
// them lazily); they read folded with their pebble copy, and the next
// seal of their bucket folds them in again. An entry without a value (the
// legacy form) has its row in pebble.
func (r *Replica) replayLog() error {
	h := r.applyMu.mem
	if h == nil {
		return nil
	}
	trunc := r.trunc.Load()
	it, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.appendSeqKey(nil, trunc+1), UpperBound: r.ks.seqHi})
	if err != nil {
		return fmt.Errorf("partition: replica %s: replay the log: %w", r.info.Placement, err)
	}
	defer it.Close()
	p := r.info.Placement
	grown := int64(0) // added to h.bytes at the end
	h.mu.Lock()
	defer h.mu.Unlock()
	defer func() { h.bytes.Add(grown) }()
	var rec recordReader // the records' compact entries
	for ok := it.First(); ok; ok = it.Next() {
		seq, err := seqFromKey(it.Key())
		if err != nil {
			return err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("partition: replica %s: replay the log: %w", r.info.Placement, err)
		}
		if !isLogRecord(v) {
			e, err := seqValueParts(v)
			if err != nil {
				return fmt.Errorf("partition: replica %s: log entry %d: %w", r.info.Placement, seq, err)
			}
			if e.rowValue != nil {
				grown += h.insertLocked(string(e.series), e.t, e.rowValue, p, seq)
			}
			continue
		}
		first, n, body, err := logRecordParts(v, seq)
		if err != nil {
			return fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
		}
		rec.reset()
		for i := range n {
			var e seqEntry
			if e, body, err = rec.next(body, first+uint64(i)); err != nil {
				return fmt.Errorf("partition: replica %s: log record %d: %w", r.info.Placement, seq, err)
			}
			if s := first + uint64(i); s > trunc {
				grown += h.insertLocked(string(e.series), e.t, e.rowValue, p, s)
			}
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("partition: replica %s: replay the log: %w", r.info.Placement, err)
	}
	r.applyMu.Lock()
	r.applyMu.raiseMaxTime(h.maxTime)
	r.applyMu.changed()
	r.applyMu.Unlock()
	return nil
}

// drainMemHeads writes every space's memory head to pebble's head (one
// synced batch per space) and turns the memory heads off: Open of a store
// whose rows may be in log records only, without Options.MemoryHead.
func (s *Store) drainMemHeads() error {
	for _, sp := range s.mu.spaces {
		h := sp.mem
		if h == nil {
			continue
		}
		var ks keyspace
		for _, m := range sp.members {
			ks = m.ks
			break
		}
		if len(h.buckets) > 0 {
			b := newOpsBatch(s.db, h.allOpsBytes(&ks))
			err := h.drainAllOps(&ks, b)
			if err == nil {
				err = b.Commit(pebble.Sync)
			}
			_ = b.Close()
			if err != nil {
				return fmt.Errorf("partition: data space %s: drain the memory head: %w", sp.id, err)
			}
		}
		sp.mem = nil
	}
	s.memoryHead = false
	return nil
}

// DrainMemoryHeads writes every row of the store's memory heads to
// pebble's head (one synced batch per data space) and empties them; the
// memory heads stay on. The logs of replicas nobody reads are then
// truncated as far as they may be. For tests and tools that need every
// row in pebble's keys, or a log that can be truncated to its end.
func (s *Store) DrainMemoryHeads() error {
	for _, r := range s.Replicas() {
		if err := r.drainMem(); err != nil {
			return err
		}
		r.releaseLogs()
	}
	return nil
}

// drainForClose writes every memory head's rows to pebble's head, a bucket
// at a time, and truncates the logs nobody reads past them, before a clean
// Close: the next Open then replays nothing, and the data directory holds
// the rows once (as rows, like a store without a memory head), not their
// records too. Not synced: the WAL orders the truncations after the
// drains, and Close flushes both. A failure leaves the rows in their
// records, which Open replays.
func (s *Store) drainForClose() {
	if !s.memoryHead {
		return
	}
	for _, r := range s.Replicas() {
		for {
			r.applyMu.Lock()
			ok := false
			if h := r.applyMu.mem; h != nil {
				_, ok = h.firstBucketFrom(0)
			}
			r.applyMu.Unlock()
			if !ok {
				break
			}
			if err := r.drainOldestBucket(); err != nil {
				if !errors.Is(err, ErrDropped) {
					s.log.Warn("partition: drain the memory head at close (its rows stay in their log records)", "placement", r.info.Placement, "err", err)
				}
				break
			}
		}
		r.releaseLogs()
	}
}

// drainMem is drainMemLocked under applyMu (nothing for a dropped
// replica).
func (r *Replica) drainMem() error {
	if err := r.enter(); err != nil {
		if errors.Is(err, ErrDropped) {
			return nil
		}
		return err
	}
	defer r.store.gate.Exit()
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.dropped.Load() {
		return nil
	}
	if err := r.drainMemLocked(); err != nil {
		return fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
	}
	return nil
}

// FitMemoryHeads writes the oldest buckets of the largest memory heads
// to pebble's head until all of them hold at most the budget
// (Options.MemoryHeadBytes); a no-op without memory heads. Seal calls it
// after sealing; a server that never seals calls it on its own.
func (s *Store) FitMemoryHeads() error { return s.fitMemHeads() }

// MemoryHeadDrainedRows returns the rows written from a memory head to
// pebble's head so far (budget and drop drains).
func (s *Store) MemoryHeadDrainedRows() int64 { return s.memDrained.Load() }

// MemoryHeadEarlySealedRows returns the rows sealed before their bucket
// went quiet so far, to keep the memory heads within their budget.
func (s *Store) MemoryHeadEarlySealedRows() int64 { return s.memSealed.Load() }

// fitMemHeads is FitMemoryHeads: while the memory heads hold more than
// the budget, the oldest bucket in the largest one is sealed now when it
// has ended (its later rows are folded in by the next seal, as late rows
// are), and written to pebble's head as rows otherwise (the present's
// bucket: sealed early again and again, its blocks would be rewritten at
// every pass).
func (s *Store) fitMemHeads() error {
	if !s.memoryHead {
		return nil
	}
	now := time.Now().UnixNano()
	for _, r := range s.Replicas() {
		switch unpinned, err := r.unpinLog(now); {
		case err != nil && !errors.Is(err, ErrDropped):
			return err
		case unpinned:
			r.releaseLogs()
		}
	}
	for {
		before := s.MemoryHeadBytes()
		if before <= s.memBudget {
			return nil
		}
		var largest *Replica
		size := int64(0)
		s.mu.Lock()
		for _, sp := range s.mu.spaces {
			if sp.mem == nil || sp.mem.bytes.Load() <= size {
				continue
			}
			for _, m := range sp.members {
				if !m.dropped.Load() {
					largest, size = m, sp.mem.bytes.Load()
					break
				}
			}
		}
		s.mu.Unlock()
		if largest == nil {
			return nil
		}
		if err := largest.shedOldestBucket(now); err != nil {
			if errors.Is(err, ErrDropped) || errors.Is(err, ErrUnloading) {
				continue // picked again without it, or drained (unloading)
			}
			return err
		}
		largest.releaseLogs()
		if s.MemoryHeadBytes() >= before {
			return nil // nothing shed (the space's rows went meanwhile): next time
		}
	}
}

// maxPinnedChanges bounds how far rows of future storage buckets may hold
// a replica's log back from its synced sequence. A row stays in memory
// until its bucket has ended and is sealed, so one row stamped an hour
// ahead (a device whose clock runs fast) would keep every record after
// it, sealed rows' too, for that hour: the records take the disk and are
// replayed at the next start. Past the bound, unpinLog writes the rows of
// future buckets to pebble's head. The present's bucket is sealed about a
// bucket after its first row and is left alone (at real time its rows are
// most of what the log holds). A variable for tests.
var maxPinnedChanges uint64 = 1 << 20

// unpinLog writes to pebble's head the series of future buckets (starting
// after now, ns) in the space's memory head that hold a change of r's log
// more than maxPinnedChanges below its synced sequence, so that the log
// may be truncated past them. It reports whether it wrote any.
func (r *Replica) unpinLog(now int64) (bool, error) {
	if r.applyMu.mem == nil {
		return false, nil
	}
	if err := r.enter(); err != nil {
		return false, err
	}
	defer r.store.gate.Exit()
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	h, p, synced := r.applyMu.mem, r.info.Placement, r.SyncedSeq()
	if lo := h.minSeq(p); lo == math.MaxUint64 || synced < lo || synced-lo <= maxPinnedChanges || r.dropped.Load() {
		return false, nil
	}
	cut := synced - maxPinnedChanges
	b := r.store.db.NewBatch()
	defer b.Close()
	drained := map[uint32][]string{}
	for bk, mb := range h.buckets {
		if bucketStart(bk) <= now {
			continue // ended, or the present's: sealed soon
		}
		for name, ms := range mb.series {
			if ms.lowestOf(p) >= cut {
				continue
			}
			if err := h.drainSeriesOps(&r.ks, bk, name, b); err != nil {
				return false, fmt.Errorf("partition: replica %s: unpin the log: %w", p, err)
			}
			drained[bk] = append(drained[bk], name)
		}
	}
	// Not synced: the records stay until a truncation, which the WAL
	// orders after this batch.
	if err := b.Commit(pebble.NoSync); err != nil {
		return false, fmt.Errorf("partition: replica %s: unpin the log: %w", p, err)
	}
	r.store.memDrained.Add(int64(b.Count()))
	for bk, names := range drained {
		r.removeMem(bk, names)
	}
	r.applyMu.changed()
	return len(drained) > 0, nil
}

// shedOldestBucket seals the oldest bucket in the space's memory head when
// it ended before now (ns), or writes it to pebble's head (also for an
// unloading replica, which seals nothing).
func (r *Replica) shedOldestBucket(now int64) error {
	r.applyMu.Lock()
	b, ok := r.applyMu.mem.firstBucketFrom(0)
	r.applyMu.Unlock()
	if !ok {
		return nil
	}
	if b == maxBucket || bucketStart(b+1) > now || r.unloading.Load() {
		return r.drainOldestBucket()
	}
	var st SealStats
	defer func() { r.store.sealed.add(st) }()
	if err := r.enter(); err != nil {
		return err
	}
	defer r.store.gate.Exit()
	from, since := r.ks.appendBucketSeriesKey(nil, b, ""), time.Now().UnixNano()
	for from != nil {
		st.Buckets = 1
		var err error
		if from, err = r.sealSome(b, from, since, &st); err != nil {
			return err
		}
	}
	r.store.memSealed.Add(int64(st.Rows))
	return nil
}

// drainOldestBucket writes the rows of the oldest bucket in the space's
// memory head to pebble's head and removes them from memory. Not synced:
// their records stay until a truncation, which the WAL orders after it.
func (r *Replica) drainOldestBucket() error {
	if err := r.enter(); err != nil {
		return err
	}
	defer r.store.gate.Exit()
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	h := r.applyMu.mem
	bk, ok := h.firstBucketFrom(0)
	if !ok || r.dropped.Load() {
		return nil
	}
	b := newOpsBatch(r.store.db, h.bucketOpsBytes(&r.ks, bk))
	defer b.Close()
	var names []string
	for name := range h.buckets[bk].series {
		if err := h.drainSeriesOps(&r.ks, bk, name, b); err != nil {
			return fmt.Errorf("partition: replica %s: drain the memory head: %w", r.info.Placement, err)
		}
		names = append(names, name)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("partition: replica %s: drain the memory head: %w", r.info.Placement, err)
	}
	r.store.memDrained.Add(int64(b.Count()))
	r.removeMem(bk, names)
	r.applyMu.changed()
	return nil
}

// minLogCompaction is the fewest truncated changes that make compactLogs
// compact a log's key range during operation (at Close, any). Pebble's
// own compactions drop the deleted records in time; the explicit one
// bounds the disk they hold meanwhile, and costs: at 64 Ki the
// 100,000-series harness spent 3–8 more CPU-s of 26–30 on it (its 10 M
// records are about a GB).
const minLogCompaction = 1 << 22

// compactLogs compacts the key range of every replica's log truncated by
// at least min changes since its last compaction. With a memory head the
// log records carry the rows until they are sealed, so they are most of
// what pebble flushes; a truncation deletes them with a range deletion,
// which leaves their files on disk until a compaction reaches them (the
// harness's data directory held 29 MB after shutdown for 15 of rows).
// Without a memory head a log nobody reads holds one entry, and a
// replicated one's records are compacted with the rest.
func (s *Store) compactLogs(ctx context.Context, min uint64) error {
	if !s.memoryHead {
		return nil
	}
	var errs []error
	for _, r := range s.Replicas() {
		trunc, done := r.trunc.Load(), r.logCompacted.Load()
		if trunc < done+min || trunc == done {
			continue
		}
		if err := r.enter(); err != nil {
			continue // dropped or closed: nothing to compact
		}
		err := s.db.Compact(ctx, r.ks.seqLo, r.ks.appendSeqKey(nil, trunc+1), false)
		r.store.gate.Exit()
		if err != nil {
			errs = append(errs, fmt.Errorf("partition: replica %s: compact the truncated log: %w", r.info.Placement, err))
			continue
		}
		r.logCompacted.Store(trunc)
	}
	return errors.Join(errs...)
}
