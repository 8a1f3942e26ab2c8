package partition

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/partition/block"
)

// Choosing a split point (DESIGN.md section 6; docs/storage-format.md,
// "Split point"). Rows are keyed (bucket, series, time), so bytes are cheap
// to weigh per storage bucket but not per time. SplitPoint works in two
// steps:
//
//  1. Weigh the buckets and find the one holding the byte median. Pebble's
//     EstimateDiskUsage of [first bucket, end of bucket b] grows with b, so
//     a binary search over bucket numbers finds the median bucket in at most
//     28 estimates (buckets are 28 bits), whatever the number of rows. Estimates see sstables
//     only (memtable data counts 0), so when the data is small or the
//     unflushed bytes could be a large part of it, the buckets are weighed
//     by one pass over the keys instead (key length + value length).
//  2. Scan only that bucket (series-first inside it), add up the bytes per
//     distinct time, and cut between two times where the left side's bytes
//     come closest to the median; the cut may also fall at the bucket's
//     start (the left side is everything before it) or after its end (t is
//     then the first time of the next bucket).
//
// Every step reads one pebble iterator, so all steps see one consistent
// view; no replica lock is taken and Apply is never blocked.

const (
	// splitMaxSlots bounds the distinct times aggregated while scanning the
	// median bucket: beyond it, times are grouped into slots of 16× the
	// width (repeatedly), and the cut falls on the first time of a slot. A
	// bucket spans 2^36 ns, so a cut is still within about 1 ms of the
	// exact one.
	splitMaxSlots = 1 << 16
	// splitCoarsenBits widens the slots by 2^splitCoarsenBits each time the
	// slot map overflows.
	splitCoarsenBits = 4
	// splitScanBelow is the estimated size below which the estimates are too
	// coarse (they count whole sstable blocks) and a key scan is cheap:
	// SplitPoint then weighs the buckets by scanning.
	splitScanBelow = 4 << 20
	// splitUnflushedRatio: the estimates are used only when the DB's live
	// WAL bytes (an upper bound of the replica's bytes that are still in
	// memtables, which the estimates miss) are at most 1/splitUnflushedRatio
	// of the estimate, so the median moves by at most about 6% of the data.
	splitUnflushedRatio = 8
)

// splitMode is how SplitPoint weighs the storage buckets.
type splitMode uint8

const (
	// splitAuto picks splitEstimate or splitScan (see splitScanBelow and
	// splitUnflushedRatio).
	splitAuto splitMode = iota
	// splitEstimate weighs buckets with pebble's EstimateDiskUsage.
	splitEstimate
	// splitScan weighs buckets by scanning every row key.
	splitScan
)

func (m splitMode) String() string {
	switch m {
	case splitEstimate:
		return "estimate"
	case splitScan:
		return "scan"
	}
	return "auto"
}

// SplitPoint returns a time t that divides the replica's live rows into
// two non-empty sides, [begin, t) and [t, end), each holding as close to
// half of the data by bytes as the row times allow. t is the time of a
// stored row, above the first row's time (so never the replica's begin)
// and at most the last row's time. Only rows inside the replica's range
// count. It fails with ErrCannotSplit when the replica has no rows or all
// of them are at one time.
//
// SplitPoint takes no replica lock: it reads one pebble iterator view,
// plus pebble's size estimates of the sstables, and never blocks Apply.
// Its cost is a few dozen size estimates and one scan of the storage
// bucket (about 68.7 s of data) holding the median; for a small replica,
// or while unflushed data could be a large part of it, one pass over its
// row keys.
func (r *Replica) SplitPoint() (int64, error) {
	t, _, err := r.splitPoint(splitAuto)
	return t, err
}

// splitPoint is SplitPoint with a chosen weighing mode; it also returns the
// mode used.
func (r *Replica) splitPoint(mode splitMode) (int64, splitMode, error) {
	if err := r.enter(); err != nil {
		return 0, mode, err
	}
	defer r.store.gate.Exit()
	sr, err := r.newSplitReader()
	if err != nil {
		return 0, mode, err
	}
	defer sr.close()
	first, ok, err := sr.nextRowBucket(sr.lo)
	if err != nil {
		return 0, mode, r.splitErr(err)
	}
	if !ok {
		return 0, mode, fmt.Errorf("replica %s: no rows: %w", r.info.Placement, ErrCannotSplit)
	}
	last, _, err := sr.lastRowBucket()
	if err != nil {
		return 0, mode, r.splitErr(err)
	}
	if first == last {
		// Every row in one storage bucket (a partition narrower than a
		// bucket, as the pre-split makes at "now"): the median falls in
		// the middle of that bucket's bytes, which cut weighs row by row
		// itself, so no bucket is weighed first (bucketSizer's scan read
		// every row once more: 44% of splitPoint's CPU in the smear load
		// test; docs/performance.md, "A split point reads its own rows").
		t, ok, err := sr.cut(oneBucket{}, first, first, last, 1)
		if err != nil {
			return 0, mode, r.splitErr(err)
		}
		if !ok {
			return 0, mode, fmt.Errorf("replica %s: every row is at one time: %w", r.info.Placement, ErrCannotSplit)
		}
		return t, mode, nil
	}
	sz, mode, err := r.bucketSizer(sr, mode, first, last)
	if err != nil {
		return 0, mode, r.splitErr(err)
	}
	b, total, err := medianBucket(sz, first, last)
	if err != nil {
		return 0, mode, r.splitErr(err)
	}
	t, ok, err := sr.cut(sz, b, first, last, total)
	if err != nil {
		return 0, mode, r.splitErr(err)
	}
	if !ok {
		return 0, mode, fmt.Errorf("replica %s: every row is at one time: %w", r.info.Placement, ErrCannotSplit)
	}
	return t, mode, nil
}

func (r *Replica) splitErr(err error) error {
	return fmt.Errorf("partition: replica %s: split point: %w", r.info.Placement, err)
}

// bucketSizer chooses how to weigh the buckets (mode splitAuto decides
// from the estimate and the unflushed bytes) and returns the sizer.
func (r *Replica) bucketSizer(sr *splitReader, mode splitMode, first, last uint32) (bucketSizer, splitMode, error) {
	est := &estimateSizer{db: r.store.db, mem: r.applyMu.mem, sr: sr, start: sr.bucketKey(first)}
	if mode == splitAuto {
		n, err := est.upTo(last)
		if err != nil {
			return nil, mode, err
		}
		mode = splitEstimate
		if n < splitScanBelow || r.store.db.Metrics().WAL.Size > n/splitUnflushedRatio {
			mode = splitScan
		}
	}
	if mode == splitEstimate {
		return est, mode, nil
	}
	sz, err := sr.scanSizes()
	return sz, mode, err
}

// bucketSizer weighs storage buckets.
type bucketSizer interface {
	// upTo returns the bytes of the in-range rows in buckets <= b, for b
	// from the first to the last bucket holding a row.
	upTo(b uint32) (uint64, error)
}

// oneBucket is the sizer of a range whose rows all lie in one bucket: the
// bucket weighs 1, so cut looks for the middle of its bytes.
type oneBucket struct{}

func (oneBucket) upTo(uint32) (uint64, error) { return 1, nil }

// estimateSizer weighs buckets with pebble's EstimateDiskUsage (sstables
// only, counting whole blocks at the edges).
type estimateSizer struct {
	db    *pebble.DB
	mem   *memHead
	sr    *splitReader
	start []byte // first key of the first bucket holding a row
}

func (e *estimateSizer) upTo(b uint32) (uint64, error) {
	n, err := estimateRows(e.db, e.mem, e.sr.ks, e.start, e.sr.bucketEnd(b))
	if err != nil {
		return 0, fmt.Errorf("estimate disk usage: %w", err)
	}
	return n, nil
}

// scanSizer weighs buckets by the exact key and value bytes of their
// in-range rows. It holds one entry per non-empty bucket.
type scanSizer struct {
	buckets []uint32 // ascending
	cum     []uint64 // cum[i]: bytes of buckets[0..i]
}

func (s *scanSizer) upTo(b uint32) (uint64, error) {
	i, found := slices.BinarySearch(s.buckets, b)
	if found {
		return s.cum[i], nil
	}
	if i == 0 {
		return 0, nil
	}
	return s.cum[i-1], nil
}

// medianBucket returns the first bucket in [first, last] whose upTo reaches
// half of the total, and the total.
func medianBucket(sz bucketSizer, first, last uint32) (uint32, uint64, error) {
	total, err := sz.upTo(last)
	if err != nil {
		return 0, 0, err
	}
	lo, hi := first, last // the answer is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		n, err := sz.upTo(mid)
		if err != nil {
			return 0, 0, err
		}
		if 2*n >= total {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, total, nil
}

// cutFraction returns where in a bucket the median falls, as a fraction of
// the bucket's bytes: before and through are the bytes up to the bucket's
// start and end. Estimates can give a bucket 0 bytes (all of it in a
// memtable, or less than a block); the middle is then as good a guess as
// any unless the median is clearly on one side.
func cutFraction(total, before, through uint64) float64 {
	half := float64(total) / 2
	if through <= before {
		switch {
		case half < float64(before):
			return 0
		case half > float64(before):
			return 1
		}
		return 0.5
	}
	f := (half - float64(before)) / float64(through-before)
	return min(max(f, 0), 1)
}

// cut picks the split time around bucket b (the median bucket; it may hold
// no row when the estimates blur a gap, and the next bucket holding one is
// used). first and last are the first and last buckets holding a row. It
// returns false when no cut leaves both sides non-empty.
func (sr *splitReader) cut(sz bucketSizer, b, first, last uint32, total uint64) (int64, bool, error) {
	b, ok, err := sr.nextRowBucket(b)
	if err != nil {
		return 0, false, err
	}
	if !ok { // cannot happen: last holds a row and b <= last
		b = last
	}
	var before uint64
	if b > first {
		if before, err = sz.upTo(b - 1); err != nil {
			return 0, false, err
		}
	}
	through, err := sz.upTo(b)
	if err != nil {
		return 0, false, err
	}
	slots := newTimeSlots(splitMaxSlots)
	if err := sr.forBucket(b, slots.add); err != nil {
		return 0, false, err
	}
	times := slots.sorted()
	j, ok := chooseCut(times, cutFraction(total, before, through), b > first, b < last)
	if !ok {
		return 0, false, nil
	}
	if j < len(times) {
		return times[j].min, true, nil
	}
	// The cut is after b: t is the first time of the next bucket.
	nb, ok, err := sr.nextRowBucket(b + 1) // b < last, so b+1 does not wrap
	if err != nil || !ok {
		return 0, false, err
	}
	t := int64(math.MaxInt64)
	err = sr.forBucket(nb, func(rt int64, _ uint64) { t = min(t, rt) })
	return t, err == nil, err
}

// chooseCut picks j in [0, len(slots)]: the left side is everything before
// the bucket plus slots[:j] (j == len(slots) cuts after the bucket), and t
// is slots[j].min (for j == len(slots), the next bucket's first time).
// frac is where the median falls, as a fraction of the slots' bytes. A cut
// must leave both sides non-empty: j == 0 needs rows before the bucket,
// j == len(slots) rows after it. Among valid cuts it returns the one whose
// left side comes closest to the median (the earliest on a tie), and false
// when there is none.
func chooseCut(slots []timeSlot, frac float64, hasBefore, hasAfter bool) (int, bool) {
	var sum uint64
	for _, s := range slots {
		sum += s.bytes
	}
	target := frac * float64(sum)
	best, bestDist := -1, math.Inf(1)
	var left uint64
	for j := 0; j <= len(slots); j++ {
		valid := (j > 0 || hasBefore) && (j < len(slots) || hasAfter)
		if d := math.Abs(float64(left) - target); valid && d < bestDist {
			best, bestDist = j, d
		}
		if j < len(slots) {
			left += slots[j].bytes
		}
	}
	return best, best >= 0
}

// timeSlot is the aggregate of the rows of one slot of time.
type timeSlot struct {
	min   int64  // the slot's first row time
	bytes uint64 // key and value bytes of its rows
}

// timeSlots adds up row bytes per distinct time, in at most max slots:
// when there are more distinct times, slots are widened (times grouped by
// their high bits) until they fit.
type timeSlots struct {
	shift uint
	max   int
	m     map[uint64]timeSlot // orderedTime >> shift → slot
}

func newTimeSlots(max int) *timeSlots {
	return &timeSlots{max: max, m: make(map[uint64]timeSlot)}
}

func (s *timeSlots) add(t int64, n uint64) {
	k := orderedTime(t) >> s.shift
	sl, ok := s.m[k]
	if !ok || t < sl.min {
		sl.min = t
	}
	sl.bytes += n
	s.m[k] = sl
	if len(s.m) > s.max {
		s.coarsen()
	}
}

// coarsen widens the slots until they fit in max. Go defines shifts of 64
// or more as 0, so it ends with one slot at worst.
func (s *timeSlots) coarsen() {
	for len(s.m) > s.max {
		s.shift += splitCoarsenBits
		m := make(map[uint64]timeSlot, len(s.m)>>splitCoarsenBits+1)
		for k, sl := range s.m {
			k >>= splitCoarsenBits
			if old, ok := m[k]; ok {
				sl.min = min(sl.min, old.min)
				sl.bytes += old.bytes
			}
			m[k] = sl
		}
		s.m = m
	}
}

// sorted returns the slots in time order.
func (s *timeSlots) sorted() []timeSlot {
	out := make([]timeSlot, 0, len(s.m))
	for _, sl := range s.m {
		out = append(out, sl)
	}
	slices.SortFunc(out, func(a, b timeSlot) int { return cmp.Compare(a.min, b.min) })
	return out
}

// splitReader reads a replica's rows inside its range [from, to) through
// one iterator, so every step of SplitPoint sees one consistent view. Rows
// outside the range (the router never sends them, and pushes to split
// children are filtered) can only lie in the two edge buckets; they are
// skipped.
type splitReader struct {
	ks     *keyspace
	it     *rowIter // the head and the sealed rows
	from   int64
	to     int64
	toOpen bool     // to is +inf
	lo, hi uint32   // buckets of from and of the range's last time
	rng    RowRange // the range, for skipOutside's seeks
	seek   []byte   // skipOutside's key
}

func (r *Replica) newSplitReader() (*splitReader, error) {
	sr := r.rangeBounds()
	it, err := newRowIter(r.store.db, r.memView(sr.bucketKey(sr.lo), sr.bucketEnd(sr.hi)), &r.ks, sr.bucketKey(sr.lo), sr.bucketEnd(sr.hi))
	if err != nil {
		return nil, r.splitErr(err)
	}
	sr.it = it
	return &sr, nil
}

func (sr *splitReader) close() { _ = sr.it.Close() }

// bucketKey returns the first row key of bucket b.
func (sr *splitReader) bucketKey(b uint32) []byte { return sr.ks.appendBucketSeriesKey(nil, b, "") }

// bucketEnd returns the key just past bucket b's rows.
func (sr *splitReader) bucketEnd(b uint32) []byte {
	if b == maxBucket {
		return sr.ks.rowHi
	}
	return sr.bucketKey(b + 1)
}

func (sr *splitReader) inRange(t int64) bool { return t >= sr.from && (sr.toOpen || t < sr.to) }

// skipOutside moves the iterator past its row, whose key is key and whose
// time t is outside the range: to the range's first time in the row's
// series when t is before it, else to the next series, and reports whether
// it is still valid. A data space's storage bucket holds the rows of every
// member, and a partition narrower than a bucket (the pre-split's at
// "now", children of splits that copied nothing) has a small part of
// them: read row by row, the rows of the other members were most of a
// split point's reads (docs/performance.md, "A split point reads its own
// rows").
func (sr *splitReader) skipOutside(key []byte, t int64) bool {
	sr.seek = sr.rng.skipKey(sr.seek[:0], key, t)
	return sr.it.SeekGE(sr.seek)
}

// rowBytes is the key and value length of the current row.
func (sr *splitReader) rowBytes() uint64 {
	return sr.it.rowBytes()
}

// nextRowBucket returns the first bucket >= b holding an in-range row.
func (sr *splitReader) nextRowBucket(b uint32) (uint32, bool, error) {
	for valid := sr.it.SeekGE(sr.bucketKey(b)); valid; {
		key := sr.it.Key()
		kb, _, t, err := rowKeyParts(key)
		if err != nil {
			return 0, false, err
		}
		if sr.inRange(t) {
			return kb, true, nil
		}
		valid = sr.skipOutside(key, t)
	}
	return 0, false, sr.it.Error()
}

// lastRowBucket returns the last bucket holding an in-range row, in the
// head or sealed.
func (sr *splitReader) lastRowBucket() (uint32, bool, error) {
	hb, hok, err := sr.lastHeadBucket()
	if err != nil {
		return 0, false, err
	}
	bb, bok, err := sr.lastBlockBucket()
	if err != nil {
		return 0, false, err
	}
	switch {
	case hok && bok:
		return max(hb, bb), true, nil
	case bok:
		return bb, true, nil
	}
	return hb, hok, nil
}

// lastHeadBucket returns the last bucket holding an in-range head row, in
// pebble or in memory.
func (sr *splitReader) lastHeadBucket() (uint32, bool, error) {
	mb, mok := uint32(0), false
	if v := sr.it.head.view; v != nil {
		mb, mok = v.lastBucketWhere(sr.inRange)
	}
	it := sr.it.head.pb
	for valid := it.Last(); valid; valid = it.Prev() {
		kb, _, t, err := rowKeyParts(it.Key())
		if err != nil {
			return 0, false, err
		}
		if sr.inRange(t) {
			if mok {
				kb = max(kb, mb)
			}
			return kb, true, nil
		}
	}
	return mb, mok, it.Error()
}

// lastBlockBucket returns the last bucket whose block holds an in-range
// row. It leaves the rowIter's block side unpositioned: the next use
// seeks.
func (sr *splitReader) lastBlockBucket() (uint32, bool, error) {
	it := sr.it.blk
	sr.it.unpositionBlocks()
	var br block.Reader
	var times []int64
	for valid := it.Last(); valid; valid = it.Prev() {
		kb, _, err := blockKeyParts(it.Key())
		if err != nil {
			return 0, false, err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return 0, false, err
		}
		if err := br.Reset(v); err != nil {
			return 0, false, fmt.Errorf("%w: block %x: %w", ErrCorrupt, it.Key(), err)
		}
		if !sr.inRange(br.MinTime()) || !sr.inRange(br.MaxTime()) {
			if times, err = br.Times(times[:0]); err != nil {
				return 0, false, fmt.Errorf("%w: block %x: %w", ErrCorrupt, it.Key(), err)
			}
			if !slices.ContainsFunc(times, sr.inRange) {
				continue
			}
		}
		return kb, true, nil
	}
	return 0, false, it.Error()
}

// forBucket calls fn with the time and bytes of every in-range row of
// bucket b.
func (sr *splitReader) forBucket(b uint32, fn func(t int64, n uint64)) error {
	for valid := sr.it.SeekGE(sr.bucketKey(b)); valid; {
		key := sr.it.Key()
		kb, _, t, err := rowKeyParts(key)
		if err != nil {
			return err
		}
		if kb != b {
			break
		}
		if !sr.inRange(t) {
			valid = sr.skipOutside(key, t)
			continue
		}
		fn(t, sr.rowBytes())
		valid = sr.it.Next()
	}
	return sr.it.Error()
}

// scanSizes weighs every bucket by one pass over the in-range rows.
func (sr *splitReader) scanSizes() (*scanSizer, error) {
	s := &scanSizer{}
	for valid := sr.it.First(); valid; {
		key := sr.it.Key()
		kb, _, t, err := rowKeyParts(key)
		if err != nil {
			return nil, err
		}
		if !sr.inRange(t) {
			valid = sr.skipOutside(key, t)
			continue
		}
		n := sr.rowBytes()
		valid = sr.it.Next()
		if k := len(s.buckets); k > 0 && s.buckets[k-1] == kb {
			s.cum[k-1] += n
			continue
		}
		if k := len(s.cum); k > 0 {
			n += s.cum[k-1]
		}
		s.buckets = append(s.buckets, kb)
		s.cum = append(s.cum, n)
	}
	return s, sr.it.Error()
}

// SizeOver reports whether the replica holds more than limit bytes, and
// the size it measured (DESIGN.md section 6's trigger). The measure is
// pebble's EstimateDiskUsage over the replica's rows (the row keyspace,
// not the log whose entries repeat the rows' values), which counts only
// sstables; when that alone cannot decide (the estimate is below limit but
// the DB's unflushed WAL bytes could make up the difference), the in-range
// rows' key and value bytes are counted by a scan that stops as soon as it
// passes limit. So the scan reads at most about limit bytes, and only near
// the threshold; callers choose how often to ask.
//
// The two measures differ: the estimate is compressed bytes on disk, the
// scan counts uncompressed keys and values. A replica may so be measured
// over its limit by a scan and under it once flushed; either answer is a
// fair trigger for a split, which halves the data.
func (r *Replica) SizeOver(limit uint64) (bool, uint64, error) {
	if err := r.enter(); err != nil {
		return false, 0, err
	}
	defer r.store.gate.Exit()
	if r.applyMu.shared.Load() {
		return r.sharedSizeOver(limit)
	}
	est, err := r.rowDiskUsage()
	if err != nil {
		return false, 0, fmt.Errorf("partition: replica %s: disk usage: %w", r.info.Placement, err)
	}
	if est > limit {
		return true, est, nil
	}
	if est+r.store.db.Metrics().WAL.Size <= limit {
		return false, est, nil
	}
	n, err := r.scanSize(limit)
	if err != nil {
		return false, 0, err
	}
	return n > limit, max(n, est), nil
}

// sharedSizeOver is SizeOver in a shared data space, whose storage
// buckets at the range's ends also hold the rows of the members beside
// it: the buckets the range covers whole decide alone when they are over
// the limit, and the estimate of every bucket it touches (an upper bound
// of its rows on disk) with the WAL when even that stays under it; only
// in between (near the limit, or beside large siblings) the range's rows
// are counted by the scan, which stops past the limit.
func (r *Replica) sharedSizeOver(limit uint64) (bool, uint64, error) {
	whole, err := r.wholeBucketUsage()
	if err != nil {
		return false, 0, err
	}
	if whole > limit {
		return true, whole, nil
	}
	lower, upper := r.ownRowBounds()
	cover, err := estimateRows(r.store.db, r.applyMu.mem, &r.ks, lower, upper)
	if err != nil {
		return false, 0, fmt.Errorf("partition: replica %s: disk usage: %w", r.info.Placement, err)
	}
	if cover+r.store.db.Metrics().WAL.Size <= limit {
		return false, whole, nil
	}
	n, err := r.scanSize(limit)
	if err != nil {
		return false, 0, err
	}
	return n > limit, max(n, whole), nil
}

// Size measures the replica for a rate estimate (pre-split).
//
// With a memory head, where every unsealed row lives and the estimate
// counts it, Size is that estimate of its rows (the row keyspace, not the
// log; a shared space's edge buckets by the share of time the range
// covers): no row is read. (Sealed blocks not yet
// flushed from pebble's memtable are missed; the master keeps the largest
// size it measured of a partition, taken before its seal.)
//
// Without one: pebble's estimate of its rows' disk usage (the row
// keyspace, not the log) when that is at least scanLimit, else the larger
// of the estimate and a key scan that stops just past scanLimit, so rows
// still in the memtable count too. The scan reads at most about scanLimit
// bytes.
func (r *Replica) Size(scanLimit uint64) (uint64, error) {
	if err := r.enter(); err != nil {
		return 0, err
	}
	defer r.store.gate.Exit()
	if r.applyMu.mem != nil {
		n, err := r.rowDiskUsage()
		if err != nil {
			return 0, fmt.Errorf("partition: replica %s: disk usage: %w", r.info.Placement, err)
		}
		return n, nil
	}
	var est uint64
	var err error
	if r.applyMu.shared.Load() {
		// The buckets the range covers whole: exact, a lower bound.
		est, err = r.wholeBucketUsage()
	} else {
		est, err = r.rowDiskUsage()
	}
	if err != nil {
		return 0, fmt.Errorf("partition: replica %s: disk usage: %w", r.info.Placement, err)
	}
	if est >= scanLimit {
		return est, nil
	}
	n, err := r.scanSize(scanLimit)
	if err != nil {
		return 0, err
	}
	return max(n, est), nil
}

// rowDiskUsage is pebble's estimate of the disk usage of the replica's
// rows (the 'r' keyspace): the log (whose entries carry their rows' values
// too), the cursors and the tag index do not count towards a split, which
// moves rows. Only the storage buckets of the replica's range count (the
// rows of its data space outside them are other replicas'). In a shared
// data space a bucket the range covers in part also holds the rows of the
// members beside it (all the partitions of the last 68 s at "now"), which
// would make every one of them look as large as all of them together: the
// buckets it covers whole count whole, and of a bucket it covers in part
// the share of the bucket's time span its range covers, up to the newest
// row stored, of its rows in pebble (an estimate; SizeOver and Size count
// those rows by a scan when it matters), and its rows in the memory head
// exactly (memHead.bytesInTime). The caller holds the store's gate.
func (r *Replica) rowDiskUsage() (uint64, error) {
	if !r.applyMu.shared.Load() {
		lower, upper := r.ownRowBounds()
		return estimateRows(r.store.db, r.applyMu.mem, &r.ks, lower, upper)
	}
	whole, err := r.wholeBucketUsage()
	if err != nil {
		return 0, err
	}
	newest := r.applyMu.maxTime.Load()
	sr := r.rangeBounds()
	edges := []uint32{sr.lo}
	if sr.hi != sr.lo {
		edges = append(edges, sr.hi)
	}
	for _, b := range edges {
		first, last := bucketStart(b), bucketLast(b)
		if sr.from <= first && (sr.toOpen || sr.to > last) {
			continue // covered whole: counted above
		}
		last = min(last, newest)
		lo, hi := max(first, sr.from), last
		if !sr.toOpen {
			hi = min(hi, sr.to-1)
		}
		if last < first || hi < lo {
			continue // nothing stored in the range's part of the bucket
		}
		usage, err := estimateRows(r.store.db, nil, &r.ks, sr.bucketKey(b), sr.bucketEnd(b))
		if err != nil {
			return 0, err
		}
		share := float64(uint64(hi)-uint64(lo)+1) / float64(uint64(last)-uint64(first)+1)
		whole += uint64(float64(usage)*share) + r.applyMu.mem.bytesInTime(r.ks.rowLo, b, lo, hi)
	}
	return whole, nil
}

// wholeBucketUsage is pebble's estimate of the buckets r's range covers
// whole (0 when there is none); every row there is in the range.
func (r *Replica) wholeBucketUsage() (uint64, error) {
	lower, upper := r.wholeBucketBounds()
	if bytes.Compare(lower, upper) >= 0 {
		return 0, nil
	}
	n, err := estimateRows(r.store.db, r.applyMu.mem, &r.ks, lower, upper)
	if err != nil {
		return 0, fmt.Errorf("partition: replica %s: disk usage: %w", r.info.Placement, err)
	}
	return n, nil
}

// rangeBounds returns r's range as a splitReader's bounds (no iterator).
func (r *Replica) rangeBounds() splitReader {
	sr := splitReader{ks: &r.ks, from: math.MinInt64, to: math.MaxInt64, toOpen: r.info.End == nil, hi: maxBucket,
		rng: RowRange{Begin: r.info.Begin, End: r.info.End}}
	if r.info.Begin != nil {
		sr.from = *r.info.Begin
	}
	if !sr.toOpen {
		sr.to = *r.info.End
		sr.hi = timeBucket(sr.to - 1) // validate keeps begin < end, so to > MinInt64
	}
	sr.lo = timeBucket(sr.from)
	return sr
}

// bucketLast returns the largest time in bucket b.
func bucketLast(b uint32) int64 {
	if b == maxBucket {
		return math.MaxInt64
	}
	return bucketStart(b+1) - 1
}

// wholeBucketBounds returns the key bounds of the storage buckets r's
// range covers whole (lower >= upper when there is none).
func (r *Replica) wholeBucketBounds() (lower, upper []byte) {
	sr := r.rangeBounds()
	lo, hi := sr.lo, sr.hi
	if bucketStart(lo) < sr.from {
		if lo == maxBucket {
			return r.ks.rowHi, r.ks.rowHi
		}
		lo++
	}
	if !sr.toOpen && bucketLast(hi) >= sr.to {
		if hi == 0 {
			return r.ks.rowLo, r.ks.rowLo
		}
		hi--
	}
	if lo > hi {
		return r.ks.rowLo, r.ks.rowLo
	}
	return sr.bucketKey(lo), sr.bucketEnd(hi)
}

// scanSize sums the uncompressed key and value bytes of the replica's rows
// in its range, stopping once the sum passes limit. It skips what lies
// outside the range in the storage buckets at its ends (the rows of the
// members beside it in a shared data space) with a seek per series rather
// than reading them. A scan that found the range under its limit is
// remembered, and the checks that follow project from it while they can
// (sizememo.go) instead of scanning again. The caller holds the store's
// gate.
func (r *Replica) scanSize(limit uint64) (uint64, error) {
	now, seq := time.Now(), r.HighSeq()
	if n, ok := r.sizeMemo.project(seq, limit, now); ok {
		return n, nil
	}
	n, rows, err := r.countSize(limit)
	if err == nil && n <= limit {
		r.sizeMemo.remember(now, seq, n, rows)
	}
	return n, err
}

// countSize counts the in-range rows' bytes (rowIter.rowBytes) and the
// rows, stopping once the bytes pass limit.
func (r *Replica) countSize(limit uint64) (n, rows uint64, err error) {
	r.sizeScans.Add(1)
	sr, err := r.newSplitReader()
	if err != nil {
		return 0, 0, err
	}
	defer sr.close()
	var seek []byte
	valid := sr.it.First()
	for valid && n <= limit {
		bk, series, t, err := rowKeyParts(sr.it.Key())
		if err != nil {
			return 0, 0, r.splitErr(err)
		}
		switch {
		case t < sr.from:
			// Only in the first bucket: on to this series' first row in
			// the range.
			seek = r.ks.appendRowKey(seek[:0], string(series), sr.from)
		case !sr.inRange(t):
			// Past the range's end (only in the last bucket): on to the
			// next series, whose keys follow series|0x00|time.
			seek = append(r.ks.appendBucketSeriesKey(seek[:0], bk, string(series)), 1)
		default:
			n += sr.rowBytes()
			rows++
			valid = sr.it.Next()
			continue
		}
		if bytes.Compare(seek, sr.it.Key()) <= 0 {
			// A key whose bucket does not match its time: the seek would
			// not move forward.
			return 0, 0, r.splitErr(fmt.Errorf("%w: row key %x in the wrong storage bucket", ErrCorrupt, sr.it.Key()))
		}
		valid = sr.it.SeekGE(seek)
	}
	if err := sr.it.Error(); err != nil {
		return 0, 0, fmt.Errorf("partition: replica %s: size scan: %w", r.info.Placement, err)
	}
	return n, rows, nil
}
