package partition

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sort"
	"strings"
)

// Views of the memory head (memhead.go): what a reader reads of it, taken
// before its pebble view, and the cursor rowIter walks it with.

// memView is the memory head's rows of a range of buckets (and series) as
// they were when it was taken: it holds slice headers that no writer
// changes (memSeries.viewed). Immutable.
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
	shape *rowShape // the layout of the rows marked shaped
}

// stored returns what memory keeps of row i's value: the value, or for a
// shaped row its compact form (rowShape.compact).
func (s *memViewSeries) stored(i int) []byte {
	r := s.rows[i]
	return s.arena[r.off : r.off+r.len() : r.off+r.len()]
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
			// Marked under the read lock that the header is read under:
			// every writer (holding mu) after it sees the mark and copies
			// the rows before it changes one of them.
			s.viewed.Store(true)
			vb.series = append(vb.series, memViewSeries{name: s.name, rows: s.rows, arena: s.arena, shape: s.shape})
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
	if c, ok := compareSeriesName(name, rest); ok {
		return c
	}
	// name|0x00|ff*8 is at or above every row key of the series; a bound
	// past the largest (time math.MaxInt64 followed by more bytes) reads
	// as at or below: the caller then finds no row there and moves on.
	return 1
}

// compareSeriesMin compares the smallest key suffix of series name
// (name|0x00|0x00...) with rest.
func compareSeriesMin(name string, rest []byte) int {
	if c, ok := compareSeriesName(name, rest); ok {
		return c
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

// compareSeriesName compares name|0x00 with the start of rest, what
// compareSeriesMax and compareSeriesMin share: ok false when rest starts
// with name|0x00 (the time decides).
func compareSeriesName(name string, rest []byte) (c int, ok bool) {
	n := min(len(name), len(rest))
	// Compared with operators, string(rest[:n]) is not copied (as an
	// argument of strings.Compare it was: an allocation per seek).
	switch a, b := name[:n], rest[:n]; {
	case a < string(b):
		return -1, true
	case a > string(b):
		return 1, true
	}
	if len(rest) <= len(name) {
		return 1, true // rest is a prefix of name|0x00|...
	}
	if rest[len(name)] != 0 {
		return -1, true // name|0x01... and above
	}
	return 0, false
}

// memCursor walks a memView's rows in key order within [lower, upper).
type memCursor struct {
	v            *memView
	lower, upper []byte
	bi, si, ri   int
	valid        bool
	key          []byte
	keySeries    int    // len of key up to and including the series' 0x00, -1: to build
	chunk        []byte // Value's expanded values
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

// skipSeries moves past the rest of the current series' rows.
func (c *memCursor) skipSeries() bool {
	if !c.valid {
		return false
	}
	c.si, c.ri, c.keySeries = c.si+1, 0, -1
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

// Value returns the current row's value. A shaped row's is expanded
// into the cursor's chunk, which is never written over (a new one is
// made when it is full), so that every value returned stays valid as
// long as it is held, as the arena's do.
func (c *memCursor) Value() []byte {
	s := c.series()
	if !s.rows[c.ri].shaped() {
		return s.stored(c.ri)
	}
	stored := s.stored(c.ri)
	n := int(s.shape.valueLen(uint32(len(stored))))
	if cap(c.chunk)-len(c.chunk) < n {
		c.chunk = make([]byte, 0, max(memCursorChunk, n))
	}
	at := len(c.chunk)
	c.chunk = s.shape.expand(c.chunk, stored)
	return c.chunk[at:len(c.chunk):len(c.chunk)]
}

// valueLen returns the length of the current row's value (Value's),
// without expanding a compact one.
func (c *memCursor) valueLen() int {
	s := c.series()
	return int(s.rows[c.ri].valueLen(s.shape))
}

// memCursorChunk is the size of a memCursor's chunks of expanded values.
const memCursorChunk = 32 << 10

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
