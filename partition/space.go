package partition

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/block"
)

// A data space is the row keyspace (rows and tag index) that a group of
// local replicas share: a replica created while live local replicas of the
// same table hold an overlapping range, and rows at or after its begin,
// joins their space instead of starting an empty one, so a split child on
// a server that holds the parent (or a placement re-added beside its own
// UNLOAD predecessor) has the parent's rows at once and copies nothing
// (issue 16, item 3; docs/storage-format.md, "Data spaces";
// docs/safety.md, rule 4).
//
// Each replica keeps its own log, cursors and truncation point under its
// placement's prefix, and reads only the rows of its range. A space's id
// is the placement of the replica that created it, so a replica alone in
// its space lays out its keys exactly as before spaces existed.
//
// Ranges of one table are nested or disjoint (they are all cut from the
// table's first partitions by splits), so the replicas whose ranges
// overlap a new one belong to at most one space in practice; when they
// belong to several the new replica starts its own (a copy, always safe).
type dataSpace struct {
	// Mutex is the apply lock of every member: merges of one row by two
	// members are serialized (rule 2), and a drop's deletes run under it
	// (rule 3).
	sync.Mutex
	id uuid.UUID
	// maxTime is an upper bound of the time of every row stored in the
	// space (math.MinInt64 while there is none): Apply skips the lookup
	// of a row newer than it, which cannot exist. Raised under the lock
	// (raiseMaxTime); read under it by Apply and without it by the size
	// estimates, which must not wait behind merges.
	maxTime atomic.Int64
	// index records what the space's tag index holds; nil until the first
	// Apply loads it (index.go). Under the lock.
	index *indexState
	// shared is set once a second placement joined the space, and stays
	// set (persisted as the 'x' key): a row's stored sequence may then be
	// another member's, so a legacy log entry's row may carry a later
	// sequence (readlog.go). Set under the lock.
	shared atomic.Bool
	// oversized names the series of storage buckets whose rows are too
	// many for a block (seal.go): seals leave them in the head unread.
	// Under the lock.
	oversized map[string]struct{}
	// lastWrite is the wall clock (ns) of the last write into each storage
	// bucket since the store opened, for the sealer's quiet buckets
	// (SealPolicy.Quiet). An entry older than Quiet is forgotten by the
	// next seal (a bucket not in the map counts as written at the opening,
	// which is older still), and the whole map past maxLastWrite entries
	// (buckets then look quiet sooner: a re-seal at worst). Under the lock.
	lastWrite map[uint32]int64
	// lastAny is the wall clock (ns) of the space's latest write into any
	// bucket since the store opened (0: none), for the sealer's idle
	// spaces (SealPolicy.Idle). Under the lock.
	lastAny int64
	// writes counts the writes noteWrite noted, and writeN holds, per
	// bucket in lastWrite, the count at its last one; gen counts every
	// other change of the space's rows (a seal's commit, a drain, a
	// chunk ingest, a drop, a replay, an unload or resume) and every loss
	// of a bucket's writeN. A seal that read a bucket outside the lock
	// commits only if neither moved meanwhile (seal.go, sealStamp).
	// Under the lock.
	writes uint64
	writeN map[uint32]uint64
	gen    uint64
	// settled holds, for a bucket whose seal left series too large for a
	// block in the head, when that seal ended: seals pass the bucket over
	// until a later write. Under the lock.
	settled map[uint32]int64
	// members are the live replicas in the space, by placement. Guarded
	// by Store.mu.
	members map[uuid.UUID]*Replica
	// mem is the space's memory head (memhead.go), nil without
	// Options.MemoryHead.
	mem *memHead
}

// newDataSpace returns an empty space (no row stored yet).
func newDataSpace(id uuid.UUID) *dataSpace {
	sp := &dataSpace{id: id}
	sp.maxTime.Store(math.MinInt64)
	return sp
}

// raiseMaxTime raises the bound of stored times to t. Under the lock.
func (sp *dataSpace) raiseMaxTime(t int64) {
	if t > sp.maxTime.Load() {
		sp.maxTime.Store(t)
	}
}

// noteWrite records a write into storage bucket b at wall time now (ns).
// The caller holds the lock.
func (sp *dataSpace) noteWrite(b uint32, now int64) {
	if sp.lastWrite == nil || len(sp.lastWrite) >= maxLastWrite {
		sp.lastWrite = map[uint32]int64{}
		sp.writeN = map[uint32]uint64{}
		sp.gen++
	}
	sp.lastWrite[b] = now
	sp.lastAny = max(sp.lastAny, now)
	sp.writes++
	sp.writeN[b] = sp.writes
}

// forgetWrite drops bucket b's note. The caller holds the lock.
func (sp *dataSpace) forgetWrite(b uint32) {
	delete(sp.lastWrite, b)
	delete(sp.writeN, b)
	sp.gen++
}

// changed records a change of the space's rows other than an Apply's
// (noteWrite): a seal reading outside the lock then starts again under
// it. The caller holds the lock.
func (sp *dataSpace) changed() { sp.gen++ }

// maxLastWrite bounds dataSpace.lastWrite (a store that never seals, or
// writes spread over years of buckets).
const maxLastWrite = 1 << 14

// spaceLocked returns the space id, created empty if unknown. The caller
// holds s.mu.
func (s *Store) spaceLocked(id uuid.UUID) *dataSpace {
	sp := s.mu.spaces[id]
	if sp == nil {
		sp = newDataSpace(id)
		sp.members = map[uuid.UUID]*Replica{}
		if s.memoryHead {
			sp.mem = newMemHead()
		}
		s.mu.spaces[id] = sp
	}
	return sp
}

// chooseSpaceLocked returns the data space a new replica joins: the one
// space of the live replicas of the same table (same creation time) whose
// ranges overlap info's, or uuid.Nil to start its own (none overlaps,
// several spaces do, the space holds no row at or after info's begin, or
// the table's creation time is unknown). The caller holds s.mu, which
// every creation and drop holds: the members it sees stay live until the
// new replica is registered.
func (s *Store) chooseSpaceLocked(info ReplicaInfo) uuid.UUID {
	if info.TableCreatedAt.IsZero() || s.noShare {
		return uuid.Nil
	}
	var found *dataSpace
	for _, o := range s.mu.replicas {
		if o.info.Table != info.Table || !o.info.TableCreatedAt.Equal(info.TableCreatedAt) ||
			!rangesOverlap(o.info.Begin, o.info.End, info.Begin, info.End) || o.dropped.Load() {
			continue
		}
		if found != nil && found != o.applyMu {
			return uuid.Nil
		}
		found = o.applyMu
	}
	if found == nil {
		return uuid.Nil
	}
	// A range the space holds no row of (a pre-split child of a table's
	// tail, ahead of every stored time) starts its own space: sharing
	// would save no copy, and would put the child's Applies, seals and
	// drops behind the same lock as every other partition of the lineage
	// (in the smear load test, every partition at "now" of a server:
	// docs/performance.md, "Own spaces for empty ranges"). A row the
	// parent takes in the range after this check reaches the child as it
	// reaches a child on another server, by the parent's pushes, which the
	// split's end waits for.
	if own, ok := spanOf(info.Begin, info.End); ok && found.maxTime.Load() < own.lo {
		return uuid.Nil
	}
	return found.id
}

// rangesOverlap reports whether [b1,e1) and [b2,e2) intersect (nil is
// unbounded).
func rangesOverlap(b1, e1, b2, e2 *int64) bool {
	if e1 != nil && b2 != nil && *e1 <= *b2 {
		return false
	}
	if e2 != nil && b1 != nil && *e2 <= *b1 {
		return false
	}
	return true
}

// span is an inclusive time interval [lo, hi].
type span struct{ lo, hi int64 }

// otherMembers returns the ranges of the other members of r's space, and
// alone when it has none. The caller holds applyMu.
func (r *Replica) otherMembers() (others []span, alone bool) {
	alone = true
	for p, o := range r.applyMu.members {
		if p == r.info.Placement {
			continue
		}
		alone = false
		if os, ok := spanOf(o.info.Begin, o.info.End); ok {
			others = append(others, os)
		}
	}
	return others, alone
}

// coveredByOthers reports whether the other members of r's space cover its
// whole range (a split parent beside all its children): its drop deletes
// none of its rows. The caller holds applyMu.
func (r *Replica) coveredByOthers() bool {
	others, alone := r.otherMembers()
	own, ok := spanOf(r.info.Begin, r.info.End)
	return !alone && (!ok || len(uncovered(own, others)) == 0)
}

// spanOf returns a range's times as an inclusive interval; ok is false
// for an empty range.
func spanOf(begin, end *int64) (sp span, ok bool) {
	sp = span{lo: math.MinInt64, hi: math.MaxInt64}
	if begin != nil {
		sp.lo = *begin
	}
	if end != nil {
		if *end == math.MinInt64 {
			return span{}, false
		}
		sp.hi = *end - 1
	}
	return sp, sp.lo <= sp.hi
}

// uncovered returns the parts of own that none of others covers, in
// order.
func uncovered(own span, others []span) []span {
	out := []span{own}
	for _, o := range others {
		var next []span
		for _, p := range out {
			if o.hi < p.lo || o.lo > p.hi {
				next = append(next, p)
				continue
			}
			if o.lo > p.lo {
				next = append(next, span{p.lo, o.lo - 1})
			}
			if o.hi < p.hi {
				next = append(next, span{o.hi + 1, p.hi})
			}
		}
		out = next
	}
	return out
}

// dropSpaceOps adds to b the deletes of a drop of r (rule 3, and rule 4's
// form with data spaces): r's own keys, and either its whole space when r
// is its last live member, or the rows of r's range that no other live
// member covers. The tag index stays while other members live (it may
// list series that no longer have rows, which every reader of it
// tolerates: it is read as a superset). The caller holds s.mu and the
// space's lock.
func (r *Replica) dropSpaceOps(b *pebble.Batch) error {
	others, alone := r.otherMembers()
	if alone {
		if err := b.DeleteRange(r.ks.space, r.ks.spaceEnd, nil); err != nil {
			return err
		}
		if r.ks.ownsSpace() {
			return nil
		}
		return b.DeleteRange(r.ks.prefix, r.ks.dataEnd, nil)
	}
	if err := r.deleteOwnKeys(b); err != nil {
		return err
	}
	own, ok := spanOf(r.info.Begin, r.info.End)
	if !ok {
		return nil
	}
	cuts := map[uint32][]span{} // the sealed blocks' part, per bucket
	for _, u := range uncovered(own, others) {
		if err := r.deleteRowsIn(b, u, cuts); err != nil {
			return err
		}
	}
	for bk, spans := range cuts {
		if err := r.cutBlocksInBucket(b, bk, spans); err != nil {
			return err
		}
	}
	return nil
}

// deleteOwnKeys adds the deletes of r's own keys: its whole prefix when
// its rows lie elsewhere, else the kinds that are r's alone.
func (r *Replica) deleteOwnKeys(b *pebble.Batch) error {
	if !r.ks.ownsSpace() {
		return b.DeleteRange(r.ks.prefix, r.ks.dataEnd, nil)
	}
	for _, k := range []byte{kindCursor, kindSeq, kindTrunc} {
		lo := append(append([]byte(nil), r.ks.prefix...), k)
		if err := b.DeleteRange(lo, prefixSuccessor(lo), nil); err != nil {
			return err
		}
	}
	return nil
}

// deleteRowsIn adds the deletes of the space's rows with a time in u:
// one range deletion over the storage buckets u covers whole (head rows
// and blocks), and in a bucket it covers in part one per series found in
// the head there; the part of such a bucket is added to cuts, for
// cutBlocksInBucket to rewrite its blocks once every span is known (two
// spans may cut one bucket).
func (r *Replica) deleteRowsIn(b *pebble.Batch, u span, cuts map[uint32][]span) error {
	first, last := timeBucket(u.lo), timeBucket(u.hi)
	whole := func(bk uint32) bool { return u.lo <= bucketStart(bk) && u.hi >= bucketLast(bk) }
	lo, hi := first, last
	if !whole(first) {
		if err := r.deleteInBucket(b, first, u.lo, min(u.hi, bucketLast(first))); err != nil {
			return err
		}
		cuts[first] = append(cuts[first], span{lo: u.lo, hi: min(u.hi, bucketLast(first))})
		if first == last {
			return nil
		}
		lo++
	}
	if !whole(last) {
		if err := r.deleteInBucket(b, last, max(u.lo, bucketStart(last)), u.hi); err != nil {
			return err
		}
		cuts[last] = append(cuts[last], span{lo: max(u.lo, bucketStart(last)), hi: u.hi})
		if last == 0 {
			return nil
		}
		hi--
	}
	if lo > hi {
		return nil
	}
	lower, upper := r.ks.appendBucketSeriesKey(nil, lo, ""), r.ks.rowHi
	if hi < maxBucket {
		upper = r.ks.appendBucketSeriesKey(nil, hi+1, "")
	}
	if err := b.DeleteRange(lower, upper, nil); err != nil {
		return err
	}
	return b.DeleteRange(r.ks.blockBound(lower), r.ks.blockBound(upper), nil) // their blocks
}

// deleteInBucket adds, for every series stored in bucket bk, the range
// deletion of its rows with a time in [from, to].
func (r *Replica) deleteInBucket(b *pebble.Batch, bk uint32, from, to int64) error {
	upper := r.ks.rowHi
	if bk < maxBucket {
		upper = r.ks.appendBucketSeriesKey(nil, bk+1, "")
	}
	it, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.appendBucketSeriesKey(nil, bk, ""), UpperBound: upper})
	if err != nil {
		return err
	}
	var seek []byte
	ok := it.First()
	for ok {
		_, series, _, err := rowKeyParts(it.Key())
		if err != nil {
			return errors.Join(err, it.Close())
		}
		lo := r.ks.appendRowKey(nil, string(series), from)
		hi := append(r.ks.appendRowKey(nil, string(series), to), 0) // just past the row at to
		if err := b.DeleteRange(lo, hi, nil); err != nil {
			return errors.Join(err, it.Close())
		}
		// The next series: every key of this one is series|0x00|time.
		seek = append(r.ks.appendBucketSeriesKey(seek[:0], bk, string(series)), 1)
		ok = it.SeekGE(seek)
	}
	return errors.Join(it.Error(), it.Close())
}

// cutBlocksInBucket adds, for every block of bucket bk, its rewrite
// without the rows with a time in any of spans (bounds included; its
// delete when none is left).
func (r *Replica) cutBlocksInBucket(b *pebble.Batch, bk uint32, spans []span) error {
	in := func(t int64) bool {
		return slices.ContainsFunc(spans, func(u span) bool { return t >= u.lo && t <= u.hi })
	}
	lower := r.ks.appendBlockKey(nil, bk, "")
	lower = lower[:len(lower)-1] // the bucket's first block key
	upper := r.ks.blkHi
	if bk < maxBucket {
		upper = r.ks.appendBlockKey(nil, bk+1, "")
		upper = upper[:len(upper)-1]
	}
	it, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	var (
		br   block.Reader
		rows []model.Row
		buf  []byte
	)
	for ok := it.First(); ok; ok = it.Next() {
		_, series, err := blockKeyParts(it.Key())
		if err != nil {
			return errors.Join(err, it.Close())
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return errors.Join(err, it.Close())
		}
		if err := br.Reset(v); err != nil {
			return errors.Join(fmt.Errorf("%w: block %x: %w", ErrCorrupt, it.Key(), err), it.Close())
		}
		if rows, err = br.Rows(nil, string(series)); err != nil {
			return errors.Join(fmt.Errorf("%w: block %x: %w", ErrCorrupt, it.Key(), err), it.Close())
		}
		kept := slices.DeleteFunc(slices.Clone(rows), func(row model.Row) bool { return in(row.Time) })
		if len(kept) == len(rows) {
			continue // no row in the spans
		}
		if len(kept) == 0 {
			err = b.Delete(it.Key(), nil)
		} else if buf, err = block.Encode(buf[:0], kept); err == nil {
			err = b.Set(it.Key(), buf, nil)
		}
		if err != nil {
			return errors.Join(err, it.Close())
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// markSharedOps adds to b the write of the space's shared marker, unless
// the space is marked already. The caller holds s.mu.
func (sp *dataSpace) markSharedOps(b *pebble.Batch, ks *keyspace) error {
	if sp.shared.Load() {
		return nil
	}
	return b.Set(ks.shared, nil, nil)
}

// loadShared reads whether the space was ever shared.
func (s *Store) loadShared(sp *dataSpace, ks *keyspace) error {
	_, closer, err := s.db.Get(ks.shared)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("partition: data space %s: read shared marker: %w", sp.id, err)
	}
	_ = closer.Close()
	sp.shared.Store(true)
	return nil
}

// RowsAllLogged reports whether every row the replica's data space holds
// was written by the replica itself, so that each is a fold of changes of
// its own log: the space was never shared (no other placement ever
// joined it, a marker kept in the store). A reader that took a snapshot
// of the rows before asking gets a true answer for the snapshot too: the
// marker is set before a second member can write, and never cleared.
func (r *Replica) RowsAllLogged() bool { return !r.applyMu.shared.Load() }

// DataSpace returns the id of the data space the replica's rows lie in:
// its own placement unless it shares another local replica's rows.
func (r *Replica) DataSpace() uuid.UUID { return r.applyMu.id }

// SharesData reports whether the live local replica of placement p reads
// the same rows as r (the same data space): every row r stores in p's
// range is p's too, so a push from r to p has nothing to carry.
//
// It reads the store's published copy of the live replicas, not its lock:
// a pusher asks at every step, and the lock is held through the synced
// commit of every creation and drop (docs/performance.md, "Log reads
// without the apply lock"). A replica's space is set when it is made; one
// being dropped is marked so before its drop begins.
func (r *Replica) SharesData(p uuid.UUID) bool {
	if p == r.info.Placement {
		return false
	}
	o, ok := r.store.Replica(p)
	return ok && o.applyMu == r.applyMu && !o.dropped.Load()
}

// CoveringSharers returns the live local replicas other than r that share
// r's data space and whose ranges cover r's, in no particular order: every
// row such a replica holds in r's range is r's too, and stays while r
// lives (a drop deletes only rows no live member covers), so a sender that
// knows one of them holds its rows up to some sequence may count r as
// holding them (replication's alias confirmation). nil when r shares with
// none.
func (r *Replica) CoveringSharers() []uuid.UUID {
	return r.sharers(func(o *Replica) bool { return o.info.Covers(r.info) })
}

// CoveredSharers returns the live local replicas other than r that share
// r's data space and whose ranges r's covers, in no particular order: the
// members in whose ranges r's rows stay once r is dropped (a drop deletes
// only rows no live member covers). nil when r shares with none.
func (r *Replica) CoveredSharers() []uuid.UUID {
	return r.sharers(func(o *Replica) bool { return r.info.Covers(o.info) })
}

// sharers returns the live local replicas other than r in r's data space
// for which match holds; nil when r's range is empty or r never shared.
func (r *Replica) sharers(match func(o *Replica) bool) []uuid.UUID {
	if _, ok := spanOf(r.info.Begin, r.info.End); !ok || !r.applyMu.shared.Load() { // never shared: nothing to look at (every push asks)
		return nil
	}
	// The members are the live replicas of the space, read from the
	// store's published copy as SharesData reads it, not under the
	// store's lock.
	var out []uuid.UUID
	for p, o := range *r.store.live.Load() {
		if o != r && o.applyMu == r.applyMu && !o.dropped.Load() && match(o) {
			out = append(out, p)
		}
	}
	return out
}

// Covers reports whether i's range holds all of o's, both non-empty.
func (i ReplicaInfo) Covers(o ReplicaInfo) bool {
	outer, ok := spanOf(i.Begin, i.End)
	inner, ok2 := spanOf(o.Begin, o.End)
	return ok && ok2 && outer.lo <= inner.lo && inner.hi <= outer.hi
}

// ownRowBounds returns the iterator bounds of the storage buckets r's
// range touches (rows of other members may lie in its first and last).
func (r *Replica) ownRowBounds() (lower, upper []byte) {
	lower, upper = r.ks.rowLo, r.ks.rowHi
	if r.info.Begin != nil {
		lower = r.ks.appendBucketSeriesKey(nil, timeBucket(*r.info.Begin), "")
	}
	if r.info.End != nil && *r.info.End != math.MinInt64 {
		if bk := timeBucket(*r.info.End - 1); bk < maxBucket {
			upper = r.ks.appendBucketSeriesKey(nil, bk+1, "")
		}
	}
	if bytes.Compare(lower, upper) > 0 {
		upper = lower
	}
	return lower, upper
}
