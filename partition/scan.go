package partition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/block"
)

// ValueBytes is a lower bound of a row's size in any encoding that keeps
// its values: 8 bytes per float, 1 per int or bool, a string's length.
// (Series, names and versions are left out: encodings share them between
// rows.)
func ValueBytes(r *model.Row) int {
	n := 0
	for i := range r.Fields {
		switch v := &r.Fields[i].Value; v.Kind {
		case model.KindFloat:
			n += 8
		case model.KindString:
			n += len(v.S)
		default:
			n++
		}
	}
	return n
}

// Scan returns the rows matching q ordered by (Time, Series), and whether
// more rows matched than q.Limit allowed; q.MaxBytes bounds their values
// (model.Query). q.Measurement and q.Tags select series through the tag
// index (newQueryWalker); a malformed q.Tags fails with ErrInvalidQuery.
// The aggregate fields of q are ignored.
//
// Scan reads the latest visible state, which may include changes whose
// WAL sync (and so whose Apply) has not finished yet.
func (r *Replica) Scan(q model.Query) (rows []model.Row, truncated bool, err error) {
	sm, err := q.Matcher()
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrInvalidQuery, err)
	}
	if err := r.enter(); err != nil {
		return nil, false, err
	}
	defer r.store.gate.Exit()
	w, err := r.newQueryWalker(q, sm)
	if err != nil || w == nil {
		return nil, false, err
	}
	defer w.close()
	s := scanner{q: q, keep: fieldFilter(q.Fields), names: interner{}, series: interner{}}
	s.slab.arena = q.Arena
	scratch := scanScratches.Get().(*scanScratch)
	s.colBufs, s.order, s.sorted = scratch.colBufs, scratch.order[:0], scratch.sorted[:0]
	defer func() {
		// endBucket cleared sorted after each use: it holds no row.
		scratch.colBufs, scratch.order, scratch.sorted = s.colBufs, s.order[:0], s.sorted[:0]
		scanScratches.Put(scratch)
	}()
	w.visitBlock, w.visitMem = s.visitBlock, s.visitMem
	if err := w.walk(s.visit, s.endBucket); err != nil {
		return nil, false, err
	}
	if s.err != nil {
		return nil, false, s.err
	}
	return s.out, s.truncated, nil
}

// scanScratch is what a scan keeps for the next one: its blocks' decoded
// columns and its rows' sort keys. A scan that grew them from nothing
// allocated three fifths of BenchmarkScanDense's bytes once the answer's
// rows had an arena (model.RowArena).
type scanScratch struct {
	colBufs []*block.Column
	order   []scanOrder
	sorted  []model.Row
}

var scanScratches = sync.Pool{New: func() any { return new(scanScratch) }}

// scanner collects the rows of one Scan, a bucket at a time.
type scanner struct {
	q      model.Query
	keep   func([]byte) bool
	names  interner
	series interner
	raw    rawRow
	slab   fieldSlab
	// blockRows, name, cols and colBufs are visitBlock's scratch.
	blockRows []model.Row
	name      []byte
	cols      []scanColumn
	colBufs   []*block.Column
	// shaped and shapedNames are visitMem's (selectShape's).
	shaped      []*rowShapeField
	shapedNames []string

	// out[bucketStart:] are the rows of the current storage bucket, in
	// key order until endBucket sorts them (in place: no copy of the
	// rows, which a query of one series' points would make of every
	// one). order holds their sort keys. Inside a bucket rows come in key
	// order, series by series, so the rank of a row's series in the
	// bucket orders series like the strings do and the sort compares
	// integers only.
	bucketStart int
	order       []scanOrder
	sorted      []model.Row // endBucket's scratch
	rank        int32
	lastSeries  string

	out       []model.Row
	full      bool // out holds Limit rows; looking for one more
	truncated bool
	bytes     int   // ValueBytes of out (model.Query.MaxBytes)
	err       error // why the walk was stopped early, if not full
}

func (s *scanner) visit(series []byte, t int64, value []byte) (bool, error) {
	if err := decodeRaw(value, &s.raw); err != nil {
		return false, fmt.Errorf("row of %s at %d: %w", series, t, err)
	}
	if !hasLiveField(&s.raw, s.keep) {
		return true, nil // no selected field, or only tombstones
	}
	if s.full {
		s.truncated = true
		return false, nil
	}
	if len(s.order) == 0 || string(series) != s.lastSeries {
		s.lastSeries = s.series.get(series)
		s.rank++
	}
	s.add(toModelRow(s.lastSeries, t, &s.raw, s.names, s.keep, true, &s.slab))
	return true, nil
}

// visitMem adds the rows lo to hi-1 of a memory head's series that no
// other row overlays (walker.visitMem) as visit would. A shaped row
// (memshape.go) has only its versions decoded: its selected fields are
// read at its shape's offsets.
func (s *scanner) visitMem(series []byte, ms *memViewSeries, lo, hi int) (bool, error) {
	var sel []*rowShapeField
	if ms.shape != nil {
		sel = s.selectShape(ms.shape)
	}
	name := ""
	for j := lo; j < hi; j++ {
		r := ms.rows[j]
		if !r.shaped() {
			if more, err := s.visit(series, r.t, ms.stored(j)); err != nil || !more {
				return more, err
			}
			continue
		}
		if len(sel) == 0 {
			continue // no selected field, or only tombstones
		}
		stored := ms.stored(j) // the value's sequence and versions, then the payloads
		pre := len(stored) - ms.shape.payLen
		if p, ok := s.raw.decodeVersions(stored[:pre]); !ok || p != pre {
			return false, fmt.Errorf("row of %s at %d: %w", series, r.t, corrupt("versions of a shaped row"))
		}
		if name == "" {
			name = s.series.get(series)
		}
		if !s.admit(name) {
			return false, nil
		}
		pays := stored[pre:]
		fields := s.slab.take(len(sel))
		for k, f := range sel {
			fields = append(fields, model.Field{Name: s.shapedNames[k], Value: f.payload(pays), Version: s.raw.versions[f.ver]})
		}
		s.add(model.Row{Series: name, Time: r.t, Fields: fields})
	}
	return true, nil
}

// selectShape returns the live fields of sh that the scan selects, in the
// value's order (toModelRow's), with their interned names in
// s.shapedNames (no lookup per row).
func (s *scanner) selectShape(sh *rowShape) []*rowShapeField {
	s.shaped, s.shapedNames = s.shaped[:0], s.shapedNames[:0]
	for i := range sh.fields {
		if f := &sh.fields[i]; f.kind != model.KindDeleted && (s.keep == nil || s.keep(f.name)) {
			s.shaped = append(s.shaped, f)
			s.shapedNames = append(s.shapedNames, s.names.get(f.name))
		}
	}
	return s.shaped
}

// add adds row to the current storage bucket's rows, with the current
// series rank.
func (s *scanner) add(row model.Row) {
	if len(s.out) == cap(s.out) {
		s.grow(row.Time)
	}
	s.order = append(s.order, scanOrder{t: row.Time, rank: s.rank, idx: int32(len(s.out) - s.bucketStart)})
	s.out = append(s.out, row)
}

// grow makes room in the output for the rows still to come, t being the
// time of the row about to be added. A scan moves forward in time a
// storage bucket at a time, so the rows so far over the share of a
// bounded query range they cover foretell the answer's size: out grows
// to that (at least twice its length, at most four times, or twice once
// it holds 65,536 rows, so that a range whose rows thin out late wastes
// little of a large answer; and not past the limit while under it).
// append's own growth (twice up to 256 rows, then about a quarter)
// allocated, cleared and copied a raw answer of 10,000 rows about twenty
// times: 13% of series_select's CPU at the peer harness's 10 M points.
func (s *scanner) grow(t int64) {
	n := len(s.out)
	want := max(2*n, 16)
	if n >= 64 && t > s.q.From && t < s.q.To && s.q.To != math.MaxInt64 && s.q.From != math.MinInt64 {
		// In floats: the range may be wider than an int64 holds.
		ratio := (float64(s.q.To) - float64(s.q.From)) / (float64(t) - float64(s.q.From))
		most := 4.0
		if n >= 1<<16 {
			most = 2
		}
		want = max(want, int(float64(n)*min(ratio*1.05, most)))
	}
	if s.q.Limit > n {
		want = min(want, s.q.Limit+1)
	}
	var out []model.Row
	if s.q.Arena != nil {
		out = s.q.Arena.Rows(want)[:n]
	} else {
		out = make([]model.Row, n, want)
	}
	copy(out, s.out)
	s.out = out
}

// visitBlock adds the rows lo to hi-1 of a sealed block that no head row
// overlays (walker.visitBlock) as visit would, decoded from the block
// straight into rows: no row value is built and decoded again.
func (s *scanner) visitBlock(series []byte, br *block.Reader, bt lazyTimes, lo, hi int) (bool, error) {
	times, err := bt.get()
	if err != nil {
		return false, err
	}
	if s.keep != nil {
		return s.visitBlockColumns(series, br, times, lo, hi)
	}
	name := s.series.get(series)
	rows, err := br.Rows(s.blockRows[:0], name)
	if err != nil {
		return false, fmt.Errorf("%w: block of %s: %w", ErrCorrupt, series, err)
	}
	s.blockRows = rows
	for i := lo; i < hi; i++ {
		r := &rows[i]
		n := 0
		for j := range r.Fields {
			if s.keepField(&r.Fields[j]) {
				n++
			}
		}
		if n == 0 {
			continue // no selected field, or only tombstones
		}
		if !s.admit(name) {
			return false, nil
		}
		fields := s.slab.take(n) // copied: the next Rows call reuses the block's
		for j := range r.Fields {
			if s.keepField(&r.Fields[j]) {
				fields = append(fields, r.Fields[j])
			}
		}
		s.add(model.Row{Series: name, Time: r.Time, Fields: fields})
	}
	return true, nil
}

// admit makes room for a row of series name in the bucket: false once
// the output is full (the scan is then truncated and stops).
func (s *scanner) admit(name string) bool {
	if s.full {
		s.truncated = true
		return false
	}
	if len(s.order) == 0 || name != s.lastSeries {
		s.lastSeries = name
		s.rank++
	}
	return true
}

// visitBlockColumns is visitBlock for a projection: only the selected
// fields' columns are decoded (values, and versions unless the query asks
// for none), and the rows are put together from them.
func (s *scanner) visitBlockColumns(series []byte, br *block.Reader, times []int64, lo, hi int) (bool, error) {
	s.cols = s.cols[:0]
	for i := range br.NumFields() {
		fi := br.Field(i)
		s.name = append(s.name[:0], fi.Name...)
		if !s.keep(s.name) {
			continue
		}
		k := len(s.cols)
		if k == len(s.colBufs) {
			s.colBufs = append(s.colBufs, new(block.Column))
		}
		c := s.colBufs[k]
		var err error
		if s.q.NoVersions {
			_, err = br.ColumnValues(fi.Name, c) // c.Versions left empty
		} else {
			_, err = br.Column(fi.Name, c)
		}
		if err != nil {
			return false, fmt.Errorf("%w: block of %s: %w", ErrCorrupt, series, err)
		}
		pos, _ := slices.BinarySearch(c.Rows, int32(lo))
		s.cols = append(s.cols, scanColumn{name: s.names.get(s.name), col: c, pos: pos})
	}
	if len(s.cols) == 0 {
		return true, nil
	}
	name := s.series.get(series)
	if len(s.cols) == 1 {
		if more, ok := s.visitDense(name, times, lo, hi); ok {
			return more, nil
		}
	}
	for i := lo; i < hi; i++ {
		// Each column's pos: its first value at or after row i.
		n := 0
		for k := range s.cols {
			sc := &s.cols[k]
			if sc.pos < len(sc.col.Rows) && int(sc.col.Rows[sc.pos]) == i && sc.col.Values[sc.pos].Kind != model.KindDeleted {
				n++
			}
		}
		if n == 0 {
			for k := range s.cols {
				if sc := &s.cols[k]; sc.pos < len(sc.col.Rows) && int(sc.col.Rows[sc.pos]) == i {
					sc.pos++
				}
			}
			continue // no selected field, or only tombstones
		}
		if !s.admit(name) {
			return false, nil
		}
		fields := s.slab.take(n)
		for k := range s.cols {
			sc := &s.cols[k]
			if sc.pos < len(sc.col.Rows) && int(sc.col.Rows[sc.pos]) == i {
				if v := sc.col.Values[sc.pos]; v.Kind != model.KindDeleted {
					f := model.Field{Name: sc.name, Value: v}
					if len(sc.col.Versions) > 0 {
						f.Version = sc.col.Versions[sc.pos]
					}
					fields = append(fields, f)
				}
				sc.pos++
			}
		}
		s.add(model.Row{Series: name, Time: times[i], Fields: fields})
	}
	return true, nil
}

// visitDense is visitBlockColumns for one selected field that every row
// from lo to hi-1 has, live and without versions (the HTTP API's query of
// a series' points of one field): its rows take their fields from the
// slab at once, and the series is admitted once (admit answers the same
// for every row of a block). ok is false when the column is not so.
func (s *scanner) visitDense(name string, times []int64, lo, hi int) (more, ok bool) {
	sc := &s.cols[0]
	c, m := sc.col, hi-lo
	if m <= 0 || len(c.Versions) > 0 || sc.pos+m > len(c.Rows) || int(c.Rows[sc.pos]) != lo || int(c.Rows[sc.pos+m-1]) != hi-1 {
		return false, false // c.Rows ascend: lo to hi-1, every one
	}
	vals := c.Values[sc.pos : sc.pos+m]
	for i := range vals {
		if vals[i].Kind == model.KindDeleted {
			return false, false
		}
	}
	if !s.admit(name) {
		return false, true
	}
	fields := s.slab.take(m)[:m]
	for j := range vals {
		fields[j] = model.Field{Name: sc.name, Value: vals[j]}
		s.add(model.Row{Series: name, Time: times[lo+j], Fields: fields[j : j+1 : j+1]})
	}
	sc.pos += m
	return true, true
}

// scanColumn is one selected field of a block (visitBlockColumns): its
// interned name, its decoded column and the position of the next row's
// value in it.
type scanColumn struct {
	name string
	col  *block.Column
	pos  int
}

// keepField reports whether a scan returns f: selected and not a
// tombstone.
func (s *scanner) keepField(f *model.Field) bool {
	if f.Value.Kind == model.KindDeleted {
		return false
	}
	if s.keep == nil {
		return true
	}
	s.name = append(s.name[:0], f.Name...)
	return s.keep(s.name)
}

// scanOrder is the sort key of one row of a bucket.
type scanOrder struct {
	t         int64
	rank, idx int32
}

// compareScanOrder orders rows by time, then series.
func compareScanOrder(a, b scanOrder) int {
	if a.t != b.t {
		return cmpInt64(a.t, b.t)
	}
	return int(a.rank - b.rank)
}

// endBucket puts the finished bucket's rows, the end of the output, in
// order and cuts them to the limit. It returns false once the output is
// full.
func (s *scanner) endBucket() bool {
	if s.full {
		return !s.truncated
	}
	rows := s.out[s.bucketStart:]
	if !slices.IsSortedFunc(s.order, compareScanOrder) {
		// Series at interleaved times: put the rows in order. (The
		// rows of one series, or of series whose times follow one
		// another, are in order already.)
		slices.SortFunc(s.order, compareScanOrder)
		s.sorted = append(s.sorted[:0], rows...)
		for i, o := range s.order {
			rows[i] = s.sorted[o.idx]
		}
		clear(s.sorted)
	}
	if s.q.Limit > 0 && len(s.out) >= s.q.Limit {
		n := s.q.Limit - s.bucketStart
		s.truncated = len(rows) > n
		clear(rows[n:]) // no references to the rows cut
		s.out, rows = s.out[:s.q.Limit], rows[:n]
		s.full = true
	}
	for i := range rows {
		s.bytes += ValueBytes(&rows[i])
	}
	s.bucketStart = len(s.out)
	s.order = s.order[:0]
	s.rank = 0
	if s.q.MaxBytes > 0 && s.bytes > s.q.MaxBytes {
		// Checked a storage bucket at a time, once the limit has cut the
		// bucket: rows the limit drops never count.
		s.err = fmt.Errorf("%w: the values of the rows read are over %d bytes", ErrAnswerTooLarge, s.q.MaxBytes)
		return false
	}
	return !s.truncated
}

// fieldFilter returns a projection predicate, or nil for all fields.
func fieldFilter(fields []string) func([]byte) bool {
	switch {
	case len(fields) == 0:
		return nil
	case len(fields) == 1:
		// The usual query: one comparison, no hashing (a head row's
		// fields are each checked, several million a query).
		only := fields[0]
		return func(name []byte) bool { return string(name) == only }
	case len(fields) <= smallFieldSet:
		return func(name []byte) bool {
			for _, f := range fields {
				if string(name) == f {
					return true
				}
			}
			return false
		}
	}
	set := make(map[string]struct{}, len(fields))
	for _, f := range fields {
		set[f] = struct{}{}
	}
	return func(name []byte) bool {
		_, ok := set[string(name)]
		return ok
	}
}

// smallFieldSet is the most fields fieldFilter compares one by one
// rather than hashing.
const smallFieldSet = 8

// walker visits the stored rows (head and sealed, rowIter) of a time
// range and series filter, one storage bucket after another, in key order (series, then time) inside
// each bucket. Empty buckets cost nothing: each seek lands on the next
// stored key.
type walker struct {
	it       *rowIter
	ks       *keyspace
	from, to int64
	toOpen   bool // to is math.MaxInt64: no upper bound
	series   string
	seriesB  []byte
	prefix   bool
	first    uint32 // bucket of from
	last     uint32 // bucket of to-1
	seek     []byte

	// match, when set, keeps the series it matches (model.Query's
	// Measurement and Tags), decided once per series: inside a bucket rows
	// come series by series, so the last decision is cached.
	match     *model.SeriesMatcher
	lastMatch []byte
	lastOK    bool
	// list, when set, holds the only series to visit, sorted (found in
	// the tag index): each bucket seeks to them instead of walking every
	// series. next is the position in list within the current bucket.
	list [][]byte
	next int
	// snap, when set, is the snapshot the walker and the index read
	// share; close releases it.
	snap *pebble.Snapshot
	// visitBlock, when set, is given the rest of a sealed block that no
	// head row overlays, instead of visit for each of its rows: the rows
	// lo to hi-1 of br (bt gives every row's time), all in the walk's
	// range. It returns false to stop.
	visitBlock func(series []byte, br *block.Reader, bt lazyTimes, lo, hi int) (bool, error)
	// visitMem, when set, is given the rest of a memory head's series
	// that no other row of its bucket overlays (rowIter.memRun), instead
	// of visit for each of its rows: the rows lo to hi-1 of s, all in
	// the walk's range. It returns false to stop.
	visitMem func(series []byte, s *memViewSeries, lo, hi int) (bool, error)
}

// newWalker returns a walker, or nil when the range is empty.
func (r *Replica) newWalker(from, to int64, series string, prefix bool) (*walker, error) {
	return r.newWalkerOn(r.store.db, nil, from, to, series, prefix)
}

// newWalkerOn is newWalker reading db, and the memory head's rows from
// mem (taken before db's view; nil: a view of the walk's series taken
// now, db being the live store).
func (r *Replica) newWalkerOn(db reader, mem *memView, from, to int64, series string, prefix bool) (*walker, error) {
	w, lower, upper := r.walkBounds(from, to, series, prefix)
	if w == nil {
		return nil, nil
	}
	if mem == nil {
		mem = r.memViewSel(lower, upper, selFor(series, prefix, nil))
	}
	it, err := newRowIter(db, mem, &r.ks, lower, upper)
	if err != nil {
		return nil, fmt.Errorf("partition: replica %s: scan: %w", r.info.Placement, err)
	}
	w.it = it
	return w, nil
}

// walkBounds returns a walker of [from, to) cut to the replica's range,
// without its iterator, and the row-key bounds of its storage buckets; a
// nil walker when the range is empty.
func (r *Replica) walkBounds(from, to int64, series string, prefix bool) (w *walker, lower, upper []byte) {
	// Only the replica's range: its data space may hold other replicas'
	// rows around it (space.go).
	if b := r.info.Begin; b != nil && from < *b {
		from = *b
	}
	if e := r.info.End; e != nil && to > *e {
		to = *e
	}
	toOpen := to == math.MaxInt64
	if from >= to && !toOpen {
		return nil, nil, nil
	}
	w = &walker{ks: &r.ks, from: from, to: to, toOpen: toOpen, series: series, seriesB: []byte(series),
		prefix: prefix, first: timeBucket(from), last: maxBucket}
	if !toOpen {
		w.last = timeBucket(to - 1)
	}
	lower = r.ks.appendBucketSeriesKey(nil, w.first, "")
	upper = r.ks.rowHi
	if w.last < maxBucket {
		upper = r.ks.appendBucketSeriesKey(nil, w.last+1, "")
	}
	return w, lower, upper
}

func (w *walker) close() {
	_ = w.it.Close()
	if w.snap != nil {
		_ = w.snap.Close()
	}
}

// split returns up to n walkers over consecutive stretches of w's storage
// buckets, with w's range, series filter and series list, each reading the
// view of the store w reads (rowIter.cloneRange), for walks on several
// goroutines; nil when w is not worth splitting: fewer than two buckets,
// an open end (how its rows spread over the buckets is unknown), or one
// exact series (a few thousand rows at most per bucket). The caller
// closes them; w stays open, holding the view, and is not walked.
func (w *walker) split(n int) ([]*walker, error) {
	if n < 2 || w.toOpen || w.first == 0 || w.last == maxBucket || w.last <= w.first ||
		(w.series != "" && !w.prefix) || len(w.list) == 1 {
		return nil, nil
	}
	span := uint64(w.last-w.first) + 1
	if uint64(n) > span {
		n = int(span)
	}
	parts := make([]*walker, 0, n)
	for i := range n {
		first := w.first + uint32(span*uint64(i)/uint64(n))
		last := w.first + uint32(span*uint64(i+1)/uint64(n)) - 1
		it, err := w.it.cloneRange(w.ks.appendBucketSeriesKey(nil, first, ""), w.ks.appendBucketSeriesKey(nil, last+1, ""))
		if err != nil {
			for _, p := range parts {
				_ = p.it.Close()
			}
			return nil, err
		}
		parts = append(parts, &walker{it: it, ks: w.ks, from: w.from, to: w.to, series: w.series, seriesB: w.seriesB,
			prefix: w.prefix, first: first, last: last, match: w.match, list: w.list})
	}
	return parts, nil
}

// walk calls visit for every row in range whose series matches, and
// endBucket after each storage bucket that had keys. visit returns false
// to stop; endBucket returns false to stop.
func (w *walker) walk(visit func(series []byte, t int64, value []byte) (bool, error), endBucket func() bool) error {
	b := w.first
	for {
		start := w.seriesB
		if w.list != nil {
			start = w.list[0]
		}
		w.seek = w.ks.appendBucketSeriesKey(w.seek[:0], b, "")
		w.seek = append(w.seek, start...)
		if !w.it.SeekGE(w.seek) {
			break
		}
		kb, _, _, err := rowKeyParts(w.it.Key())
		if err != nil {
			return err
		}
		if kb != b {
			b = kb // skip empty buckets; seek to the series in kb
			continue
		}
		w.next = 0
		more, err := w.walkBucket(b, visit)
		if err != nil {
			return err
		}
		if !endBucket() || !more || b >= w.last {
			break
		}
		b++
	}
	return w.it.Error()
}

// walkBucket visits the matching rows of bucket b, starting at the
// iterator's position. It returns false when visit asked to stop.
func (w *walker) walkBucket(b uint32, visit func([]byte, int64, []byte) (bool, error)) (bool, error) {
	for valid := w.it.Valid(); valid; {
		kb, series, t, err := rowKeyParts(w.it.Key())
		if err != nil {
			return false, err
		}
		if kb != b || !w.seriesMatches(series) {
			return true, nil
		}
		if w.list != nil && !bytes.Equal(series, w.list[w.next]) {
			// Seek to the first listed series not before this one.
			for w.next < len(w.list) && bytes.Compare(w.list[w.next], series) < 0 {
				w.next++
			}
			if w.next == len(w.list) {
				return true, nil
			}
			if !bytes.Equal(series, w.list[w.next]) {
				w.seek = w.ks.appendBucketSeriesKey(w.seek[:0], b, "")
				w.seek = append(append(w.seek, w.list[w.next]...), 0)
				valid = w.it.SeekGE(w.seek)
				continue
			}
		}
		if w.match != nil && !w.matches(series) {
			valid = w.it.Next()
			continue
		}
		switch {
		case t < w.from:
			// Only in the first bucket, which is from's bucket: jump to
			// the series' first row in range.
			key := w.it.Key()
			w.seek = append(w.seek[:0], key[:len(key)-timeLen]...)
			w.seek = binary.BigEndian.AppendUint64(w.seek, orderedTime(w.from))
			valid = w.it.SeekGE(w.seek)
			continue
		case t >= w.to && !w.toOpen:
			// Only in the last bucket: jump to the next series.
			key := w.it.Key()
			w.seek = append(append(w.seek[:0], key[:len(key)-timeLen-1]...), 1)
			valid = w.it.SeekGE(w.seek)
			continue
		}
		if w.visitBlock != nil && w.it.blockRun() {
			br, lo := w.it.Block()
			hi := br.Len()
			if !w.toOpen && br.MaxTime() >= w.to {
				times := w.it.blockTimes()
				if times == nil {
					return false, w.it.Error()
				}
				hi = lo + sort.Search(hi-lo, func(i int) bool { return times[lo+i] >= w.to })
			}
			if more, err := w.visitBlock(series, br, lazyTimes{w.it}, lo, hi); err != nil || !more {
				return false, err
			}
			if w.exact() {
				// The series' last row of the bucket in range: its next
				// rows are in the next bucket, where walk seeks. Loading
				// the block of the series after it would be wasted.
				return true, nil
			}
			valid = w.it.SkipBlock() // the rows from hi on are past the range
			continue
		}
		if w.visitMem != nil && w.it.memRun() {
			s, lo := w.it.memSeries()
			hi := len(s.rows)
			if !w.toOpen {
				hi = lo + sort.Search(hi-lo, func(i int) bool { return s.rows[lo+i].t >= w.to })
			}
			if more, err := w.visitMem(series, s, lo, hi); err != nil || !more {
				return false, err
			}
			if w.exact() {
				return true, nil // as after a block
			}
			valid = w.it.skipMemSeries() // the rows from hi on are past the range
			continue
		}
		v, err := w.it.ValueAndErr()
		if err != nil {
			return false, err
		}
		if more, err := visit(series, t, v); err != nil || !more {
			return false, err
		}
		valid = w.it.Next()
	}
	return true, nil
}

// matches applies w.match to series, once per series.
func (w *walker) matches(series []byte) bool {
	if w.lastMatch != nil && bytes.Equal(series, w.lastMatch) {
		return w.lastOK
	}
	w.lastMatch = append(w.lastMatch[:0], series...)
	w.lastOK = w.match.Match(string(series))
	return w.lastOK
}

// exact reports whether the walk visits one series, named exactly: once
// a visitBlock or visitMem call has taken its rows of a bucket, the bucket
// holds no more of them (blockRun and memRun: no other row of the series
// and bucket lies after them, and the rows past the run are past the
// range).
func (w *walker) exact() bool {
	return w.series != "" && !w.prefix && w.list == nil && w.match == nil
}

func (w *walker) seriesMatches(series []byte) bool {
	switch {
	case w.series == "":
		return true
	case w.prefix:
		return bytes.HasPrefix(series, w.seriesB)
	}
	return string(series) == w.series
}

// indexSeekRatio: a query with a measurement or tag predicate seeks to the
// series the tag index lists when they are at most 1/indexSeekRatio of the
// series it read in the index; otherwise it walks every series and tests
// each once per storage bucket. Measured (BenchmarkTagFilter, 100 series,
// 7 rows per series and storage bucket): seeking is 22x faster for 1 series
// in 100, 2-5x for 11 in 100, and even with walking at 50 in 100
// (docs/storage-format.md, "Tag index").
var indexSeekRatio = 2 // a variable for the benchmarks only (BenchmarkTagFilter)

// newQueryWalker returns a walker for q's time range and series selection
// (Series/Prefix and the matcher sm), or nil when nothing can match.
func (r *Replica) newQueryWalker(q model.Query, sm *model.SeriesMatcher) (*walker, error) {
	if sm == nil {
		return r.newWalker(q.From, q.To, q.Series, q.Prefix)
	}
	// The series come from one snapshot of the index, the rows from a
	// view of the memory head of those series and a snapshot taken after
	// it: a series first written after the index's snapshot is left out
	// of a list (or tested against sm when the walk needs no list), never
	// read in part.
	isnap := r.store.db.NewSnapshot()
	list, any, err := r.indexedList(isnap, q, sm)
	_ = isnap.Close()
	if err != nil || !any {
		return nil, err
	}
	_, lower, upper := r.walkBounds(q.From, q.To, q.Series, q.Prefix)
	if lower == nil {
		return nil, nil
	}
	mem := r.memViewSel(lower, upper, selFor(q.Series, q.Prefix, list)) // before the snapshot
	snap := r.store.db.NewSnapshot()
	w, err := r.newWalkerOn(snap, mem, q.From, q.To, q.Series, q.Prefix)
	if err != nil || w == nil {
		_ = snap.Close()
		return nil, err
	}
	w.snap = snap
	w.match, w.list = sm, list
	return w, nil
}

// indexedList returns the sorted series the tag index lists for q and
// sm when the walk is to seek to them (nil when it is to walk every
// series and test each), and whether any series matches at all.
func (r *Replica) indexedList(snap *pebble.Snapshot, q model.Query, sm *model.SeriesMatcher) (list [][]byte, any bool, err error) {
	series, read, err := r.matchingSeries(snap, q, sm)
	if err != nil || len(series) == 0 {
		return nil, false, err
	}
	if _, narrowed := narrowingTag(q.Tags); narrowed && q.Measurement != "" {
		// The index read was one tag value's entries: weigh the
		// matches against the measurement's series.
		read = 0
		err := r.scanIndex(snap, kindSeriesIx, append([]byte(q.Measurement), 0), func([]byte) bool {
			read++
			return true
		})
		if err != nil {
			return nil, false, err
		}
	}
	if len(series)*indexSeekRatio <= read {
		list = make([][]byte, len(series))
		for i, s := range series {
			list[i] = []byte(s)
		}
	}
	return list, true, nil
}
