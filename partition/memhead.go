package partition

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// The memory head (docs/storage-plan.md, step 6; docs/storage-format.md,
// "Memory head"): with Options.MemoryHead a data space keeps the rows an
// Apply writes in memory instead of one pebble key per row. The Apply's
// log records (addSeqIndex) carry every row's value, so they are the
// rows' durable form: Open replays the records above each member's
// truncation point into the memory head, and a truncation never passes
// the lowest sequence whose row is still only in memory (memHead.minSeq).
// A seal folds a bucket's rows from memory into its blocks and removes
// them from memory once the blocks are committed; anything that needs the
// rows in pebble (a drop, a series too large for a block) drains them
// into pebble's head first, as merge operands.
//
// Every reader but an Apply's lookups reads the memory head through a
// memView taken before its pebble view (rowIter's third source), so that
// a seal or a drain, which commits to pebble before it removes rows from
// memory, is never seen half: a row is in the view, in pebble, or in both
// (folded by version, rule 2).
//
// Writers hold the data space's lock (applyMu) and mu; readers building a
// view hold mu's read lock. A view holds slice headers: a newer row is
// appended to a series' rows and value arena in place (past every view's
// length), and any other change copies the rows first when a view took
// them since they were made (memSeries.viewed), so a view never sees a row
// change under it. Only the series a view takes are marked: a seal's view
// of a quiet bucket, or a query of one series, costs the late inserts
// into the other series no copy (with one count for the whole head,
// nearly every late insert of the smear load test copied its series'
// rows: 20% of the servers' CPU; docs/performance.md, "Copies and walks
// the smear-on profiles named").
type memHead struct {
	mu      sync.RWMutex
	buckets map[uint32]*memBucket
	// bytes is the memory the series hold (memSeries.footprint): what
	// Options.MemoryHeadBytes bounds.
	bytes atomic.Int64
	// maxTime is the largest row time inserted (math.MinInt64: none);
	// under the space lock.
	maxTime int64
	// low caches minSeq per placement while lowOK (under the space
	// lock): an insert only lowers it, a removal of rows invalidates it
	// (a pusher's truncation check asks every second, and a walk of every
	// series in memory under the apply lock would hold writers back).
	low   map[uuid.UUID]uint64
	lowOK bool
	// shapes interns the series' row shapes (memshape.go); under mu.
	shapes shapeTable
	// touched keeps the sum of insertMem's reads ahead of its inserts,
	// so that the compiler does not drop them.
	touched int64
}

// memBucket holds one storage bucket's rows, per series.
type memBucket struct {
	series map[string]*memSeries
	// sorted is series ordered by name; nil when a series was added, or
	// when removed (memSeries.removed, skipped by views) are half of it.
	// removed counts those in sorted.
	// removed since (view sorts it again, under mu).
	sorted  []*memSeries
	removed int
}

// memSeries holds one series' rows of a storage bucket in time order.
// The fields every insert touches come first, so that they share as few
// cache lines as they can (an insert touches a series of a thousand or
// more at random; not measured apart from the other changes of stop 36).
type memSeries struct {
	rows []memRow
	// arena holds the row values back to back; a value is never changed
	// in place (an overwrite appends the row's value and the new
	// operand).
	arena []byte
	// seqs is, per placement that wrote rows here, the lowest sequence
	// of its log that holds one of them. It starts in seq0, inside the
	// struct, as noteSeq reads it for every row: no allocation of its
	// own and its first element beside the other hot fields. (The
	// harness's profile showed noteSeq's time per row, a cache miss's,
	// both before and after; what remains is the series' own lines.)
	seqs []memSeq
	seq0 [1]memSeq
	// bytes is the memory s holds (footprint), as counted in
	// memHead.bytes; data is the bytes of its rows (their values and
	// times), which sizes count as pebble's estimates count stored rows.
	bytes, data int64
	name        string // its length counts in footprint, read per insert
	// viewed: a view took rows since they were last copied or made, so a
	// change other than an append copies them first. Set by view builders
	// under mu's read lock (several at once, hence atomic), cleared by
	// writers under mu.
	viewed atomic.Bool
	// removed: s left its bucket (sealed or drained) and is skipped in
	// the bucket's sorted list. Under mu.
	removed bool
	// shape is the layout of the rows marked memRowShaped (memshape.go):
	// nil until a row has one, then never changed.
	shape *rowShape
}

// memRow is one row: its time and its value in the series' arena.
type memRow struct {
	t   int64
	off uint32
	// n is the value's length (len), with memRowPersisted set while
	// pebble's head holds the value too, and memRowShaped when the value
	// has its series' shape.
	n uint32
}

// memRowPersisted marks, in memRow.n, a row whose value a covered drop
// wrote to pebble's head (persistRangeOps) and that has not changed
// since: its durable form is that operand, and a later drop or drain
// need not write it again. An overwrite makes a new memRow, without the
// mark. (A chain of splits would otherwise write the rows of its first
// parent's range once per drop, and readers fold every copy.)
const memRowPersisted = 1 << 31

// len returns the length of the row's value.
func (r memRow) len() uint32 { return r.n &^ (memRowPersisted | memRowShaped) }

// shaped reports whether the row's value has its series' shape.
func (r memRow) shaped() bool { return r.n&memRowShaped != 0 }

// valueLen returns the length of the row's value, sh being its series'
// shape: a compact row's expanded length.
func (r memRow) valueLen(sh *rowShape) uint32 {
	if r.shaped() {
		return sh.valueLen(r.len())
	}
	return r.len()
}

// persisted reports whether pebble's head holds the row's value too.
func (r memRow) persisted() bool { return r.n&memRowPersisted != 0 }

// memSeq is the lowest sequence of placement p's log among a series' rows.
type memSeq struct {
	p  uuid.UUID
	lo uint64
}

// memRowOverhead is what a row costs in memory besides its value.
const memRowOverhead = 16

func newMemHead() *memHead {
	return &memHead{buckets: map[uint32]*memBucket{}, maxTime: math.MinInt64}
}

// insertLocked adds one row change: val, a row value (or several back to
// back) that the log record of placement p's sequence seq carries, and
// returns how many bytes the head grew by, which the caller adds to
// h.bytes once for its rows: an atomic add per row waited, at 10 M points
// of the peer harness, for the stores of the row's copy before it (5% of
// the server's CPU on the add). The caller holds the space lock and mu.
func (h *memHead) insertLocked(series string, t int64, val []byte, p uuid.UUID, seq uint64) int64 {
	return h.insertSeriesLocked(nil, series, t, val, p, seq)
}

// insertSeriesLocked is insertLocked with the row's series in its bucket
// already looked up: s (nil: look it up, and make it if it is new).
func (h *memHead) insertSeriesLocked(s *memSeries, series string, t int64, val []byte, p uuid.UUID, seq uint64) int64 {
	var hint *rowShape // a new series' shape in the bucket before
	if s == nil {
		s, hint = h.seriesForInsert(series, t)
	}
	s.data += s.add(t, val, &h.shapes, hint)
	grown := s.footprint() - s.bytes
	s.bytes += grown
	s.noteSeq(p, seq)
	if h.lowOK {
		if lo, ok := h.low[p]; !ok || seq < lo {
			h.low[p] = seq
		}
	}
	h.maxTime = max(h.maxTime, t)
	return grown
}

// seriesForInsert returns the series of the row (series, t) in its
// bucket, made when it is new, and then its shape in the bucket before
// (nil: none).
func (h *memHead) seriesForInsert(series string, t int64) (s *memSeries, hint *rowShape) {
	b := timeBucket(t)
	bk := h.buckets[b]
	if bk == nil {
		bk = &memBucket{series: map[string]*memSeries{}}
		h.buckets[b] = bk
	}
	s = bk.series[series]
	if s == nil {
		s = &memSeries{name: strings.Clone(series)}
		s.seqs = s.seq0[:0]
		if prev := h.buckets[b-1]; prev != nil && b > 0 {
			// Room for as many rows as the series took in the bucket
			// before, and an eighth more: no growth, and no garbage of
			// the grown slices. (The bucket before is often still taking
			// its last rows when this one takes its first: concurrent
			// writers' batches overlap in time. Sized at its length, at
			// 10 M points of the peer harness series grew their slices
			// once a bucket, under the apply lock: growslice was 8% of
			// the server's CPU.)
			if p := prev.series[series]; p != nil {
				s.rows = make([]memRow, 0, withHeadroom(len(p.rows)))
				s.arena = make([]byte, 0, withHeadroom(len(p.arena)))
				hint = p.shape
			}
		}
		bk.series[s.name] = s
		bk.sorted, bk.removed = nil, 0
	}
	return s, hint
}

// withHeadroom returns n and an eighth more: the capacity a series'
// slices take from its rows in the bucket before.
func withHeadroom(n int) int { return n + n/8 }

// memSeriesOverhead is what a series of a bucket costs in memory besides
// its rows, values and name: the struct, its map entry, its place in the
// sorted list and its sequences (measured with a heap profile at 100,000
// series: about 200 bytes).
const memSeriesOverhead = 200

// footprint returns the memory s holds: its slices' capacity, not their
// length, and its overhead (memHead.bytes counts it, so that the budget
// bounds what the process holds).
func (s *memSeries) footprint() int64 {
	return int64(cap(s.rows))*memRowOverhead + int64(cap(s.arena)) + memSeriesOverhead + int64(len(s.name))
}

// add stores val as row t's change and returns how much it changed the
// series' data bytes (counted as values, not as what memory keeps of
// them). A row whose value has the series' shape is kept compact and
// marked (memRowShaped; shapes interns a new shape, hint is the shape a
// series without one tries first: memSeries.shapeFor).
func (s *memSeries) add(t int64, val []byte, shapes *shapeTable, hint *rowShape) int64 {
	n := len(s.rows)
	if n == 0 || s.rows[n-1].t < t {
		// The usual case: a newer row, appended in place (a view holds
		// the rows below n only).
		s.rows = append(s.rows, s.put(val, shapes, hint))
		s.rows[n].t = t
		return int64(len(val)) + memRowOverhead
	}
	if s.viewed.Load() {
		// A view holds these rows: change a copy, with room for the rows
		// to come (a copy at the length would be copied again at once,
		// grown by this very insert: at 10 M points of the peer harness,
		// whose late rows meet the seal's views, the two copies were 7%
		// of the insert's CPU).
		s.rows = append(make([]memRow, 0, n+n/4+1), s.rows...)
		s.viewed.Store(false)
	}
	i := s.searchLate(t)
	if i < n && s.rows[i].t == t {
		// An overwrite: the row's value and val folded into one value
		// (a row overwritten k times would otherwise hold k operands,
		// and the arena k²/2 of them), appended to the arena (past
		// every view's).
		oldLen := s.valueLen(s.rows[i])
		shapes.buf = append(s.appendValue(shapes.buf[:0], i), val...)
		folded := foldOperands(shapes.buf)
		s.rows[i] = s.put(folded, shapes, nil)
		s.rows[i].t = t
		return int64(len(folded)) - int64(oldLen)
	}
	s.rows = slices.Insert(s.rows, i, s.put(val, shapes, nil))
	s.rows[i].t = t
	return int64(len(val)) + memRowOverhead
}

// put appends row value v to the arena, compact when it has the series'
// shape, and returns its row (without its time).
func (s *memSeries) put(v []byte, shapes *shapeTable, hint *rowShape) memRow {
	off := len(s.arena)
	if p, ok := s.shapeFor(v, shapes, hint); ok {
		s.arena = s.shape.compact(s.arena, v, p)
		return memRow{off: uint32(off), n: uint32(len(s.arena)-off) | memRowShaped}
	}
	s.arena = append(s.arena, v...)
	return memRow{off: uint32(off), n: uint32(len(v))}
}

// lateProbe is how many rows searchLate steps back over before it
// searches: concurrent inserts of consecutive ticks arrive a tick or two
// out of order, so a late row usually belongs just before the last rows.
const lateProbe = 4

// searchLate returns the index of the first row at or after t, for a t
// not after the last row's time.
func (s *memSeries) searchLate(t int64) int {
	n := len(s.rows)
	for i := n - 1; i >= max(0, n-lateProbe); i-- {
		if s.rows[i].t < t {
			return i + 1
		}
	}
	return sort.Search(n, func(i int) bool { return s.rows[i].t >= t })
}

// noteSeq records that placement p's sequence seq holds a row of s.
func (s *memSeries) noteSeq(p uuid.UUID, seq uint64) {
	for i := range s.seqs {
		if s.seqs[i].p == p {
			s.seqs[i].lo = min(s.seqs[i].lo, seq)
			return
		}
	}
	s.seqs = append(s.seqs, memSeq{p: p, lo: seq})
}

// appendValue appends row i's value to dst.
func (s *memSeries) appendValue(dst []byte, i int) []byte {
	r := s.rows[i]
	stored := s.arena[r.off : r.off+r.len()]
	if r.shaped() {
		return s.shape.expand(dst, stored)
	}
	return append(dst, stored...)
}

// valueLen returns the length of row r's value (not of what memory
// keeps of it).
func (s *memSeries) valueLen(r memRow) uint32 { return r.valueLen(s.shape) }

// getLocked appends to dst the value of the row (series, t) in memory and
// returns it, or nil when there is none. The caller holds the space lock
// (no writer changes the head meanwhile).
func (h *memHead) getLocked(dst, series []byte, t int64) []byte {
	bk := h.buckets[timeBucket(t)]
	if bk == nil {
		return nil
	}
	s := bk.series[string(series)]
	if s == nil {
		return nil
	}
	i := sort.Search(len(s.rows), func(i int) bool { return s.rows[i].t >= t })
	if i == len(s.rows) || s.rows[i].t != t {
		return nil
	}
	return s.appendValue(dst, i)
}

// removeSeriesLocked removes series' rows of bucket b. The caller holds
// the space lock and mu.
func (h *memHead) removeSeriesLocked(b uint32, series string) {
	bk := h.buckets[b]
	if bk == nil {
		return
	}
	s := bk.series[series]
	if s == nil {
		return
	}
	h.bytes.Add(-s.bytes)
	h.lowOK = false
	delete(bk.series, series)
	s.removed = true
	if bk.sorted != nil {
		// Left in the sorted list, skipped by views, until half of it
		// is gone (a seal removes a bucket's series a batch at a time,
		// and every view after each batch would sort them again).
		if bk.removed++; bk.removed*2 > len(bk.sorted) {
			bk.sorted, bk.removed = nil, 0
		}
	}
	if len(bk.series) == 0 {
		delete(h.buckets, b)
	}
}

// minSeq returns the lowest sequence of placement p's log that holds a
// row still in memory, or math.MaxUint64. The caller holds the space
// lock.
func (h *memHead) minSeq(p uuid.UUID) uint64 {
	if !h.lowOK {
		h.low = map[uuid.UUID]uint64{}
		for _, bk := range h.buckets {
			for _, s := range bk.series {
				for i := range s.seqs {
					if lo, ok := h.low[s.seqs[i].p]; !ok || s.seqs[i].lo < lo {
						h.low[s.seqs[i].p] = s.seqs[i].lo
					}
				}
			}
		}
		h.lowOK = true
	}
	if lo, ok := h.low[p]; ok {
		return lo
	}
	return math.MaxUint64
}

// bucketRange returns the buckets in memory from lo to hi (inclusive), in
// order. The caller holds mu (either way) or the space lock.
func (h *memHead) bucketRange(lo, hi uint32) []uint32 {
	out := make([]uint32, 0, len(h.buckets))
	for b := range h.buckets {
		if b >= lo && b <= hi {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// firstBucketFrom returns the first bucket at or above lo holding rows.
// The caller holds the space lock.
func (h *memHead) firstBucketFrom(lo uint32) (uint32, bool) {
	found, best := false, uint32(0)
	for b := range h.buckets {
		if b >= lo && (!found || b < best) {
			found, best = true, b
		}
	}
	return best, found
}

// rowKeyExtra is what a row key holds besides its space's row prefix and
// its series: the storage bucket (4 bytes), the series' terminator (1) and
// the time (8) (keyspace.appendRowKey).
const rowKeyExtra = 13

// rowWeight is what a row of series in memory weighs in a size: its key
// (rowLo, the row prefix of its space) and its value of n bytes, as the
// size scan weighs a row (rowIter.rowBytes), so that the estimates and the
// scan of the split checker and the pre-split's rate measure one thing.
func rowWeight(rowLo []byte, series string, n uint32) uint64 {
	return uint64(len(rowLo)+len(series)+rowKeyExtra) + uint64(n)
}

// bytesIn returns the weight (rowWeight) of the rows of buckets lo to hi,
// not the memory that holds them.
func (h *memHead) bytesIn(rowLo []byte, lo, hi uint32) uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := uint64(0)
	for b, bk := range h.buckets {
		if b >= lo && b <= hi {
			for _, s := range bk.series {
				// data is the values' bytes plus memRowOverhead a row.
				rows := uint64(len(s.rows))
				n += uint64(s.data) - rows*memRowOverhead + rows*rowWeight(rowLo, s.name, 0)
			}
		}
	}
	return n
}

// insertMem puts the rows an Apply wrote into the memory head, once its
// batch is visible: written row i (sc.written) at sequence prev+1+i, its
// value as the log record carries it. The caller holds applyMu.
//
// It goes over the rows three times. The first looks up each row's
// series, the second reads the memory each series' insert will read or
// write (its struct, its last row, the slot and the arena bytes its row
// will take), and the third inserts. Each series' memory was last
// touched a batch before, so it is out of the core's nearer caches; in
// one loop per row the insert waited for each miss in turn, while the
// loads of the first two passes do not depend on each other and the
// core overlaps their misses (BenchmarkMemHeadInsert: 0.49 of the time
// a row with 8 MiB of other memory written between batches, 0.63
// without).
func (r *Replica) insertMem(h *memHead, sc *applyScratch, rows []model.Row, prev uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	found := sc.memSeries[:0]
	var (
		bk     *memBucket
		bkID   uint32
		bkRead bool
	)
	for _, ri := range sc.written {
		row := &rows[ri]
		if b := timeBucket(row.Time); !bkRead || b != bkID {
			bk, bkID, bkRead = h.buckets[b], b, true
		}
		var s *memSeries
		if bk != nil {
			s = bk.series[row.Series]
		}
		found = append(found, s)
	}
	var touched int64
	for _, s := range found {
		if s == nil {
			continue
		}
		if n := len(s.rows); n > 0 {
			touched += s.rows[n-1].t
		}
		// The room past the slices' ends is written, not read: no view
		// sees past the length it took, and the first touch of a page
		// by a read would map the zero page, to be faulted again by the
		// insert's write.
		if n := len(s.rows); n < cap(s.rows) {
			s.rows[:n+1][n].t = 0
		}
		if n := len(s.arena); n > 0 {
			touched += int64(s.arena[n-1])
		}
		if n, c := len(s.arena), cap(s.arena); n+63 < c {
			s.arena[:n+64][n+63] = 0
		}
	}
	h.touched = touched
	start, grown := int32(0), int64(0)
	for i, ri := range sc.written {
		row := &rows[ri]
		end := sc.valEnds[i]
		grown += h.insertSeriesLocked(found[i], row.Series, row.Time, sc.vals[start:end], r.info.Placement, prev+uint64(i)+1)
		start = end
	}
	clear(found)
	sc.memSeries = found[:0]
	h.bytes.Add(grown)
}

// nextBucket returns the first bucket at or above the one the row key
// bound from lies in that holds rows in memory.
func (h *memHead) nextBucket(rowLo, from []byte) (uint32, bool) {
	if h == nil {
		return 0, false
	}
	lo, _ := rowKeyBucket(rowLo, from)
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.firstBucketFrom(lo)
}

// removeMem removes the given series' rows of bucket b from the memory
// head, after the batch that sealed or drained them was committed. The
// caller holds applyMu.
func (r *Replica) removeMem(b uint32, series []string) {
	h := r.applyMu.mem
	if h == nil || len(series) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range series {
		h.removeSeriesLocked(b, s)
	}
}

// bytesInTime returns the weight (rowWeight) of the rows of storage bucket
// b whose time is in [from, to] (0 for a nil head): a range's part of a
// bucket its data space shares with the members beside it, counted row by
// row without reading a value (each series' rows are in time order).
func (h *memHead) bytesInTime(rowLo []byte, b uint32, from, to int64) uint64 {
	if h == nil || to < from {
		return 0
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	bk := h.buckets[b]
	if bk == nil {
		return 0
	}
	n := uint64(0)
	for _, s := range bk.series {
		i, j := s.timeSpan(from, to)
		for _, row := range s.rows[i:j] {
			n += rowWeight(rowLo, s.name, s.valueLen(row))
		}
	}
	return n
}

// timeSpan returns the indexes [i, j) of s's rows whose time is in
// [from, to] (its rows are in time order).
func (s *memSeries) timeSpan(from, to int64) (i, j int) {
	i = sort.Search(len(s.rows), func(k int) bool { return s.rows[k].t >= from })
	j = i + sort.Search(len(s.rows)-i, func(k int) bool { return s.rows[i+k].t > to })
	return i, j
}

// bytesInKeys returns the weight (rowWeight) of the rows of the storage
// buckets that the row keys [lower, upper) touch (0 for a nil head): the
// split's sizes count rows in memory beside pebble's estimates of the rest.
func (h *memHead) bytesInKeys(rowLo, lower, upper []byte) uint64 {
	if h == nil {
		return 0
	}
	lo, _ := rowKeyBucket(rowLo, lower)
	hi, rest := rowKeyBucket(rowLo, upper)
	if len(rest) == 0 {
		if hi == 0 {
			return 0
		}
		hi-- // upper is the first key of its bucket
	}
	if hi < lo {
		return 0
	}
	return h.bytesIn(rowLo, lo, hi)
}

// clearLocked empties the head. The caller holds the space lock.
func (h *memHead) clearLocked() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buckets = map[uint32]*memBucket{}
	h.lowOK = false
	h.bytes.Store(0)
}

// MemoryHeadBytes returns the memory the store's memory heads hold.
func (s *Store) MemoryHeadBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int64(0)
	for _, sp := range s.mu.spaces {
		if sp.mem != nil {
			n += sp.mem.bytes.Load()
		}
	}
	return n
}

// lowestOf returns the lowest sequence of placement p's log holding a row
// of s, or math.MaxUint64.
func (s *memSeries) lowestOf(p uuid.UUID) uint64 {
	for i := range s.seqs {
		if s.seqs[i].p == p {
			return s.seqs[i].lo
		}
	}
	return math.MaxUint64
}
