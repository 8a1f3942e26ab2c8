package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
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
// view hold mu's read lock. A view holds slice headers: a series' rows
// and value arena are only appended to while no view was taken since the
// slice was made (memSeries.gen), and are copied before any other change,
// so a view never sees a row change under it.
type memHead struct {
	mu      sync.RWMutex
	buckets map[uint32]*memBucket
	// views counts the views taken: a series whose gen differs has had a
	// view of its rows taken since they were made, and copies them before
	// it changes one.
	views atomic.Uint64
	// bytes is the memory held by rows and their values.
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
type memSeries struct {
	name string
	rows []memRow
	// arena holds the row values back to back; a value is never changed
	// in place (an overwrite appends the row's value and the new
	// operand).
	arena []byte
	// gen is memHead.views when rows was last copied or made.
	gen uint64
	// seqs is, per placement that wrote rows here, the lowest sequence
	// of its log that holds one of them.
	seqs []memSeq
	// bytes is the memory s holds (footprint), as counted in
	// memHead.bytes; data is the bytes of its rows (their values and
	// times), which sizes count as pebble's estimates count stored rows.
	bytes, data int64
	// removed: s left its bucket (sealed or drained) and is skipped in
	// the bucket's sorted list. Under mu.
	removed bool
}

// memRow is one row: its time and its value in the series' arena.
type memRow struct {
	t      int64
	off, n uint32
}

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
// back) that the log record of placement p's sequence seq carries. The
// caller holds the space lock and mu.
func (h *memHead) insertLocked(series string, t int64, val []byte, p uuid.UUID, seq uint64) {
	b := timeBucket(t)
	bk := h.buckets[b]
	if bk == nil {
		bk = &memBucket{series: map[string]*memSeries{}}
		h.buckets[b] = bk
	}
	s := bk.series[series]
	if s == nil {
		s = &memSeries{name: strings.Clone(series), gen: h.views.Load()}
		if prev := h.buckets[b-1]; prev != nil && b > 0 {
			// Room for as many rows as the series took in the bucket
			// before: no growth, and no garbage of the grown slices.
			if p := prev.series[series]; p != nil {
				s.rows = make([]memRow, 0, len(p.rows))
				s.arena = make([]byte, 0, len(p.arena))
			}
		}
		bk.series[s.name] = s
		bk.sorted, bk.removed = nil, 0
	}
	s.data += s.add(t, val, h.views.Load())
	grown := s.footprint() - s.bytes
	s.bytes += grown
	h.bytes.Add(grown)
	s.noteSeq(p, seq)
	if h.lowOK {
		if lo, ok := h.low[p]; !ok || seq < lo {
			h.low[p] = seq
		}
	}
	h.maxTime = max(h.maxTime, t)
}

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
// series' data bytes.
func (s *memSeries) add(t int64, val []byte, views uint64) int64 {
	n := len(s.rows)
	off := len(s.arena)
	if n == 0 || s.rows[n-1].t < t {
		// The usual case: a newer row, appended in place (a view holds
		// the rows below n only).
		s.arena = append(s.arena, val...)
		s.rows = append(s.rows, memRow{t: t, off: uint32(off), n: uint32(len(val))})
		return int64(len(val)) + memRowOverhead
	}
	if s.gen != views {
		// A view holds these rows: change a copy.
		s.rows = slices.Clone(s.rows)
		s.gen = views
	}
	i := sort.Search(n, func(i int) bool { return s.rows[i].t >= t })
	if i < n && s.rows[i].t == t {
		// An overwrite: the row's value and val folded into one value
		// (a row overwritten k times would otherwise hold k operands,
		// and the arena k²/2 of them). The arena beyond off is past
		// every view's.
		old := s.rows[i]
		s.arena = append(s.arena, s.arena[old.off:old.off+old.n]...)
		s.arena = append(s.arena, val...)
		if folded := foldOperands(s.arena[off:]); len(folded) < len(s.arena)-off {
			s.arena = append(s.arena[:off], folded...)
		}
		s.rows[i] = memRow{t: t, off: uint32(off), n: uint32(len(s.arena) - off)}
		return int64(s.rows[i].n) - int64(old.n)
	}
	s.arena = append(s.arena, val...)
	s.rows = slices.Insert(s.rows, i, memRow{t: t, off: uint32(off), n: uint32(len(val))})
	return int64(len(val)) + memRowOverhead
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

// value returns row i's value.
func (s *memSeries) value(i int) []byte {
	r := s.rows[i]
	return s.arena[r.off : r.off+r.n : r.off+r.n]
}

// getLocked returns the value of the row (series, t) in memory, or nil.
// The caller holds the space lock (no writer changes the head meanwhile).
func (h *memHead) getLocked(series []byte, t int64) []byte {
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
	return s.value(i)
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

// bytesIn returns the data bytes of the rows of buckets lo to hi (their
// values and times, not the memory that holds them).
func (h *memHead) bytesIn(lo, hi uint32) uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := int64(0)
	for b, bk := range h.buckets {
		if b >= lo && b <= hi {
			for _, s := range bk.series {
				n += s.data
			}
		}
	}
	return uint64(n)
}

// memView is the memory head's rows of a range of buckets (and series) as
// they were when it was taken: it holds slice headers that no writer
// changes (memSeries.gen). Immutable.
type memView struct {
	rowLo   []byte // the space's row prefix (space|'r')
	buckets []memViewBucket
}

type memViewBucket struct {
	b      uint32
	series []memViewSeries // by name
}

type memViewSeries struct {
	name  string
	rows  []memRow
	arena []byte
}

func (s *memViewSeries) value(i int) []byte {
	r := s.rows[i]
	return s.arena[r.off : r.off+r.n : r.off+r.n]
}

// rowKeyBucket returns the bucket a row-key bound lies in (a bound
// shorter than a bucket reads as its first bucket at or above it) and the
// rest of the bound after the bucket (nil when it has none).
func rowKeyBucket(rowLo, k []byte) (uint32, []byte) {
	if !bytes.HasPrefix(k, rowLo) {
		if bytes.Compare(k, rowLo) < 0 {
			return 0, nil
		}
		return maxBucket, []byte{0xff}
	}
	rest := k[len(rowLo):]
	if len(rest) >= 4 {
		return binary.BigEndian.Uint32(rest), rest[4:]
	}
	var pad [4]byte
	copy(pad[:], rest)
	return binary.BigEndian.Uint32(pad[:]), nil
}

// view returns the rows of [lower, upper) (row keys of the space whose
// row prefix is rowLo; nil: unbounded), taken now: viewOf without a
// selection or a bound. A nil head has an empty view.
func (h *memHead) view(rowLo, lower, upper []byte) *memView {
	v, _ := h.viewOf(rowLo, lower, upper, nil, 0)
	return v
}

// memSel narrows a view to the series a reader walks: one series, the
// series with a prefix, or a sorted list (a nil *memSel: every series).
type memSel struct {
	series string
	prefix bool
	list   [][]byte // sorted; used when series is ""
}

// selFor returns the selection of a walk of series (with prefix, a
// prefix; "": every series) or of list (sorted; nil: no list).
func selFor(series string, prefix bool, list [][]byte) *memSel {
	switch {
	case series != "":
		return &memSel{series: series, prefix: prefix}
	case list != nil:
		return &memSel{list: list}
	}
	return nil
}

// viewOf is view of the series sel selects (nil: all). With maxRows > 0
// it stops after the series that brings its rows to maxRows or more and
// returns the row-key bound of the first series it left out (end: the
// next series in memory after the last taken, as bucket|series, which
// every row key of the series taken sorts below); a reader must not read
// past end, where the rows in memory are not in the view. end is nil when
// nothing was left out.
func (h *memHead) viewOf(rowLo, lower, upper []byte, sel *memSel, maxRows int) (v *memView, end []byte) {
	v = &memView{rowLo: rowLo}
	if h == nil {
		return v, nil
	}
	lo, hi := uint32(0), maxBucket
	var loRest, hiRest []byte
	if lower != nil {
		lo, loRest = rowKeyBucket(rowLo, lower)
	}
	if upper != nil {
		hi, hiRest = rowKeyBucket(rowLo, upper)
	}
	h.mu.RLock()
	if !h.sortedIn(lo, hi) {
		h.mu.RUnlock()
		h.mu.Lock()
		for _, b := range h.bucketRange(lo, hi) {
			bk := h.buckets[b]
			if bk.sorted == nil {
				bk.sorted = sortedSeries(bk)
			}
		}
		h.mu.Unlock()
		h.mu.RLock()
	}
	defer h.mu.RUnlock()
	// Counted under the read lock that the slice headers below are read
	// under: a writer (holding mu) that reads views before this count
	// has finished before the headers are read, and every writer after
	// it sees a count above any series' gen, so it copies before it
	// changes a row. Counted before the lock, a writer could make or
	// copy a series with gen equal to this count and change it in place
	// after this view read it.
	h.views.Add(1)
	rows := 0
	for _, b := range h.bucketRange(lo, hi) {
		bk := h.buckets[b]
		sorted := bk.sorted
		if sorted == nil { // changed while unlocked: a writer added a series
			sorted = sortedSeries(bk)
		}
		from, to := 0, len(sorted)
		if b == lo && len(loRest) > 0 {
			// The series whose keys may lie at or above the bound.
			from = sort.Search(len(sorted), func(i int) bool { return compareSeriesMax(sorted[i].name, loRest) >= 0 })
		}
		if b == hi && upper != nil {
			to = sort.Search(len(sorted), func(i int) bool { return compareSeriesMin(sorted[i].name, hiRest) >= 0 })
		}
		if from >= to {
			continue
		}
		vb := memViewBucket{b: b}
		take := func(s *memSeries) bool {
			if len(s.rows) == 0 || s.removed {
				return true
			}
			if maxRows > 0 && rows >= maxRows {
				end = appendBucketSeries(append([]byte(nil), rowLo...), b, s.name)
				return false
			}
			vb.series = append(vb.series, memViewSeries{name: s.name, rows: s.rows, arena: s.arena})
			rows += len(s.rows)
			return true
		}
		more := sel.each(sorted[from:to], take)
		if len(vb.series) > 0 {
			v.buckets = append(v.buckets, vb)
		}
		if !more {
			return v, end
		}
	}
	return v, nil
}

// each calls take for the series of sorted (ordered by name) that sel
// selects, in order, until take returns false; it returns false then.
func (sel *memSel) each(sorted []*memSeries, take func(*memSeries) bool) bool {
	switch {
	case sel == nil:
		for _, s := range sorted {
			if !take(s) {
				return false
			}
		}
	case sel.series != "":
		i := sort.Search(len(sorted), func(i int) bool { return sorted[i].name >= sel.series })
		for ; i < len(sorted); i++ {
			name := sorted[i].name
			if name != sel.series && (!sel.prefix || !strings.HasPrefix(name, sel.series)) {
				break
			}
			if !take(sorted[i]) {
				return false
			}
		}
	default:
		at := 0
		for _, want := range sel.list {
			rest := sorted[at:]
			i := sort.Search(len(rest), func(i int) bool { return rest[i].name >= string(want) })
			at += i
			if at == len(sorted) {
				break
			}
			if sorted[at].name == string(want) {
				if !take(sorted[at]) {
					return false
				}
				at++
			}
		}
	}
	return true
}

// sortedSeries returns bk's series ordered by name.
func sortedSeries(bk *memBucket) []*memSeries {
	sorted := make([]*memSeries, 0, len(bk.series))
	for _, s := range bk.series {
		sorted = append(sorted, s)
	}
	slices.SortFunc(sorted, func(a, b *memSeries) int { return strings.Compare(a.name, b.name) })
	return sorted
}

// appendBucketSeries appends bucket b and series (the prefix of the
// series' row keys after the space's row prefix) to dst.
func appendBucketSeries(dst []byte, b uint32, series string) []byte {
	return append(binary.BigEndian.AppendUint32(dst, b), series...)
}

// sortedIn reports whether every bucket from lo to hi has its series
// sorted. The caller holds mu.
func (h *memHead) sortedIn(lo, hi uint32) bool {
	for b, bk := range h.buckets {
		if b >= lo && b <= hi && bk.sorted == nil {
			return false
		}
	}
	return true
}

// compareSeriesMax compares the largest key suffix of series name
// (name|0x00|0xff...) with rest, a key suffix after the bucket.
func compareSeriesMax(name string, rest []byte) int {
	n := min(len(name), len(rest))
	if c := strings.Compare(name[:n], string(rest[:n])); c != 0 {
		return c
	}
	if len(rest) <= len(name) {
		return 1 // rest is a prefix of name|0x00|...
	}
	if rest[len(name)] != 0 {
		return -1 // name|0x01... and above
	}
	// name|0x00|ff*8 is at or above every row key of the series; a bound
	// past the largest (time math.MaxInt64 followed by more bytes) reads
	// as at or below: the caller then finds no row there and moves on.
	return 1
}

// compareSeriesMin compares the smallest key suffix of series name
// (name|0x00|0x00...) with rest.
func compareSeriesMin(name string, rest []byte) int {
	n := min(len(name), len(rest))
	if c := strings.Compare(name[:n], string(rest[:n])); c != 0 {
		return c
	}
	if len(rest) <= len(name) {
		return 1 // rest is a prefix of name|0x00|...
	}
	if rest[len(name)] != 0 {
		return -1
	}
	// name|0x00|0x00*8 against name|0x00|tail: at or above it only when
	// tail is at most 8 zero bytes.
	tail := rest[len(name)+1:]
	if len(tail) > 8 {
		return -1
	}
	for _, c := range tail {
		if c != 0 {
			return -1
		}
	}
	return 0
}

// memCursor walks a memView's rows in key order within [lower, upper).
type memCursor struct {
	v            *memView
	lower, upper []byte
	bi, si, ri   int
	valid        bool
	key          []byte
	keySeries    int // len of key up to and including the series' 0x00, -1: to build
}

func newMemCursor(v *memView, lower, upper []byte) *memCursor {
	return &memCursor{v: v, lower: lower, upper: upper, keySeries: -1}
}

func (c *memCursor) series() *memViewSeries { return &c.v.buckets[c.bi].series[c.si] }

// SeekGE positions on the first row whose key is at or above k.
func (c *memCursor) SeekGE(k []byte) bool {
	if c.lower != nil && bytes.Compare(k, c.lower) < 0 {
		k = c.lower
	}
	kb, rest := rowKeyBucket(c.v.rowLo, k)
	bs := c.v.buckets
	c.bi = sort.Search(len(bs), func(i int) bool { return bs[i].b >= kb })
	c.si, c.ri, c.keySeries = 0, 0, -1
	if c.bi < len(bs) && bs[c.bi].b == kb && len(rest) > 0 {
		ss := bs[c.bi].series
		c.si = sort.Search(len(ss), func(i int) bool { return compareSeriesMax(ss[i].name, rest) >= 0 })
		if c.si < len(ss) {
			s := &ss[c.si]
			if len(rest) > len(s.name) && string(rest[:len(s.name)]) == s.name && rest[len(s.name)] == 0 {
				tail := rest[len(s.name)+1:]
				var tb [8]byte
				c.ri = sort.Search(len(s.rows), func(i int) bool {
					binary.BigEndian.PutUint64(tb[:], orderedTime(s.rows[i].t))
					return bytes.Compare(tb[:], tail) >= 0
				})
			}
		}
	}
	return c.settle()
}

// Next moves to the next row.
func (c *memCursor) Next() bool {
	if !c.valid {
		return false
	}
	c.ri++
	return c.settle()
}

// settle moves past exhausted series and buckets and checks upper.
func (c *memCursor) settle() bool {
	c.valid = false
	for c.bi < len(c.v.buckets) {
		ss := c.v.buckets[c.bi].series
		if c.si < len(ss) && c.ri < len(ss[c.si].rows) {
			break
		}
		if c.si < len(ss) {
			c.si++
		} else {
			c.bi++
			c.si = 0
		}
		c.ri, c.keySeries = 0, -1
	}
	if c.bi == len(c.v.buckets) {
		return false
	}
	c.buildKey()
	if c.upper != nil && bytes.Compare(c.key, c.upper) >= 0 {
		return false
	}
	c.valid = true
	return true
}

func (c *memCursor) buildKey() {
	if c.keySeries < 0 {
		c.key = append(c.key[:0], c.v.rowLo...)
		c.key = binary.BigEndian.AppendUint32(c.key, c.v.buckets[c.bi].b)
		c.key = append(append(c.key, c.series().name...), 0)
		c.keySeries = len(c.key)
	}
	c.key = binary.BigEndian.AppendUint64(c.key[:c.keySeries], orderedTime(c.series().rows[c.ri].t))
}

// Key returns the current row's key (valid until the next move).
func (c *memCursor) Key() []byte { return c.key }

// Value returns the current row's value.
func (c *memCursor) Value() []byte { return c.series().value(c.ri) }

// lastBucketWhere returns the last bucket of the view holding a row whose
// time satisfies in.
func (v *memView) lastBucketWhere(in func(int64) bool) (uint32, bool) {
	for i := len(v.buckets) - 1; i >= 0; i-- {
		for _, s := range v.buckets[i].series {
			for _, r := range s.rows {
				if in(r.t) {
					return v.buckets[i].b, true
				}
			}
		}
	}
	return 0, false
}

// memView returns the memory head's rows of [lower, upper) (row keys; nil:
// unbounded), or nil without a memory head. Take it before the pebble view
// it goes with.
func (r *Replica) memView(lower, upper []byte) *memView {
	return r.memViewSel(lower, upper, nil)
}

// memViewBounded is memView of the series up to the one that brings its
// rows to maxRows, and the row-key bound past which its reader must not
// read (nil: the view holds every row in memory up to upper).
func (r *Replica) memViewBounded(lower, upper []byte, maxRows int) (*memView, []byte) {
	h := r.applyMu.mem
	if h == nil {
		return nil, nil
	}
	return h.viewOf(r.ks.rowLo, lower, upper, nil, maxRows)
}

// memViewSel is memView of the series sel selects (nil: every one).
func (r *Replica) memViewSel(lower, upper []byte, sel *memSel) *memView {
	h := r.applyMu.mem
	if h == nil {
		return nil
	}
	if lower == nil {
		lower = r.ks.rowLo
	}
	if upper == nil {
		upper = r.ks.rowHi
	}
	v, _ := h.viewOf(r.ks.rowLo, lower, upper, sel, 0)
	return v
}

// insertMem puts the rows an Apply wrote into the memory head, once its
// batch is visible: written row i (sc.written) at sequence prev+1+i, its
// value as the log record carries it. The caller holds applyMu.
func (r *Replica) insertMem(h *memHead, sc *applyScratch, rows []model.Row, prev uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	start := int32(0)
	for i, ri := range sc.written {
		row := &rows[ri]
		end := sc.valEnds[i]
		h.insertLocked(row.Series, row.Time, sc.vals[start:end], r.info.Placement, prev+uint64(i)+1)
		start = end
	}
}

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
	var key []byte
	for i := range s.rows {
		key = ks.appendRowKey(key[:0], series, s.rows[i].t)
		if err := b.Merge(key, s.value(i), nil); err != nil {
			return err
		}
	}
	return nil
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

// bytesInKeys returns the data bytes of the rows of the storage buckets
// that the row keys [lower, upper) touch (0 for a nil head): the split's
// sizes count rows in memory as their pebble estimates count the rest.
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
	return h.bytesIn(lo, hi)
}

// drainAllOps adds to b every row in memory, as merge operands of
// pebble's head. The caller holds the space lock and clears the head
// (clearLocked) once b is committed.
func (h *memHead) drainAllOps(ks *keyspace, b *pebble.Batch) error {
	var key []byte
	for _, mb := range h.buckets {
		for name, s := range mb.series {
			for i := range s.rows {
				key = ks.appendRowKey(key[:0], name, s.rows[i].t)
				if err := b.Merge(key, s.value(i), nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// clearLocked empties the head. The caller holds the space lock.
func (h *memHead) clearLocked() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buckets = map[uint32]*memBucket{}
	h.lowOK = false
	h.bytes.Store(0)
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
	b := r.store.db.NewBatch()
	defer b.Close()
	if err := h.drainAllOps(&r.ks, b); err != nil {
		return fmt.Errorf("drain the memory head: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("drain the memory head: %w", err)
	}
	r.store.memDrained.Add(int64(b.Count()))
	h.clearLocked()
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
	h.mu.Lock()
	defer h.mu.Unlock()
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
				h.insertLocked(string(e.series), e.t, e.rowValue, p, seq)
			}
			continue
		}
		first, n, body, err := logRecordParts(v, seq)
		if err != nil {
			return fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
		}
		for i := range n {
			var e seqEntry
			if e, body, err = nextRecordEntry(body); err != nil {
				return fmt.Errorf("partition: replica %s: log record %d: %w", r.info.Placement, seq, err)
			}
			if s := first + uint64(i); s > trunc {
				h.insertLocked(string(e.series), e.t, e.rowValue, p, s)
			}
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("partition: replica %s: replay the log: %w", r.info.Placement, err)
	}
	r.applyMu.Lock()
	r.applyMu.maxTime = max(r.applyMu.maxTime, h.maxTime)
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
			b := s.db.NewBatch()
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
	for _, r := range s.Replicas() {
		switch unpinned, err := r.unpinLog(); {
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
		if err := largest.shedOldestBucket(time.Now().UnixNano()); err != nil {
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

// maxPinnedChanges bounds how far the rows still in memory may hold a
// replica's log back from its synced sequence: a row of the present's
// bucket written first (a row seen first by a long-lived series, the
// harness's warm-up tick) keeps every record after it, sealed rows' too,
// until its bucket is sealed; the records take the disk and are replayed
// at the next start. Past the bound unpinLog writes such rows to
// pebble's head. A variable for tests.
var maxPinnedChanges uint64 = 1 << 20

// unpinLog writes to pebble's head the series of the space's memory head
// that hold a change of r's log more than maxPinnedChanges below its
// synced sequence (the older half of the bound's span), so that the log
// may be truncated past them. It reports whether it wrote any.
func (r *Replica) unpinLog() (bool, error) {
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
	cut := synced - maxPinnedChanges/2
	b := r.store.db.NewBatch()
	defer b.Close()
	drained := map[uint32][]string{}
	for bk, mb := range h.buckets {
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
	return len(drained) > 0, nil
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
	b := r.store.db.NewBatch()
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
	return nil
}
