package partition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/block"
)

// rowIter reads a data space's rows in row-key order from both places a
// row can live: the head (one pebble key per row, 'r') and the sealed
// blocks (one key per series and storage bucket, 'b', seal.go). It shows
// a block's row under the row key it would have in the head, with a row
// value encoded from the block (sequence 0: a sealed row has no live log
// entry of its own), so readers of the head read sealed rows the same
// way. A row in both places (written again after its bucket was sealed)
// is shown once, its value being the block's followed by the head's:
// decodeRaw folds them field by field by version (rule 2), which is the
// row as if it had never been sealed.
//
// Both sources are read from one view of the store (the block iterator is
// a clone of the head's), so a seal that commits while the iterator is
// open is either wholly seen or not at all: a row is never missed between
// the head it left and the block it went to.
//
// Key and Value are valid until the next positioning call.
type rowIter struct {
	ks           *keyspace
	lower, upper []byte // row-key bounds
	head         *headIter
	blk          *pebble.Iterator

	hValid bool

	// The loaded block: its key, times (decoded at their first use,
	// blockTimes), rows (decoded when a value is first asked for) and
	// position.
	bKey     []byte
	bSeries  []byte // the loaded block's series (its string is made by Value only)
	bBucket  uint32
	bPrefix  []byte // rowLo|bucket|series|0x00: its rows' keys without the time
	bTimes   []int64
	bTimesOK bool // bTimes holds the loaded block's times
	bRows    []model.Row
	bDecoded bool
	bPos     int
	bValid   bool
	bBytes   int // the block's key and value bytes
	// bVal is the loaded block's stored bytes, as the block iterator
	// returned them: valid while it stands on the block, and only if
	// its value is not fetched again (pebble may reuse a fetched value's
	// memory at the next fetch: a value block's, for the older version
	// of a block a snapshot keeps). The reader reads from it.
	bVal    []byte
	reader  block.Reader
	scratch []byte // positionIn's keys
	bound   []byte // seekBlock's block bound of the key it seeks
	// sought is the block bound of the last seek that ended with a
	// pebble SeekGE (the key's own block absent), and soughtOK that the
	// block side still stands where that seek left it: on the first row
	// of the first block in bounds above sought, or on none. A later seek
	// at or above sought and below that block then needs no pebble seek:
	// no block lies between (a lookup's monotone seeks over series not
	// sealed yet cost a SeekLT and a SeekGE each, and the decoding of an
	// unrelated block).
	sought   []byte
	soughtOK bool

	// The current row: which sources hold it, its key, its value.
	inHead, inBlock bool
	key             []byte
	val             []byte // the value built here (a sealed row's)
	cur             []byte // Value's answer
	valDone         bool
	enc             valueEncoder
	fields          []encField

	err error
}

// newRowIter returns a rowIter over the rows whose keys lie in [lower,
// upper) (nil: the whole row keyspace of ks), unpositioned, reading the
// memory head's rows from mem (nil: none; memhead.go), which the caller
// takes before db's view.
func newRowIter(db reader, mem *memView, ks *keyspace, lower, upper []byte) (*rowIter, error) {
	if lower == nil {
		lower = ks.rowLo
	}
	if upper == nil {
		upper = ks.rowHi
	}
	pb, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	return withBlocks(newHeadIter(pb, mem, lower, upper), ks, lower, upper)
}

// cloneRange returns an unpositioned rowIter over the rows of [lower,
// upper) as it sees them: the same view of the store (pebble's Clone, the
// same memory view), so that several iterators over parts of a range read
// one state of it.
func (it *rowIter) cloneRange(lower, upper []byte) (*rowIter, error) {
	pb, err := it.head.pb.Clone(pebble.CloneOptions{IterOptions: &pebble.IterOptions{LowerBound: lower, UpperBound: upper}})
	if err != nil {
		return nil, err
	}
	return withBlocks(newHeadIter(pb, it.head.view, lower, upper), it.ks, lower, upper)
}

// withBlocks returns a rowIter over [lower, upper) reading the head with
// head and the blocks with a clone of its pebble iterator.
func withBlocks(head *headIter, ks *keyspace, lower, upper []byte) (*rowIter, error) {
	blkLower := ks.blkLo
	if len(lower) >= len(ks.rowLo)+4 {
		// From the first block of lower's bucket: a block below
		// blockBound(lower) may still hold rows at or above lower.
		blkLower = ks.blockBound(lower[:len(ks.rowLo)+4])
	}
	blk, err := head.pb.Clone(pebble.CloneOptions{IterOptions: &pebble.IterOptions{LowerBound: blkLower, UpperBound: ks.blockBound(upper)}})
	if err != nil {
		_ = head.Close()
		return nil, err
	}
	return &rowIter{ks: ks, lower: lower, upper: upper, head: head, blk: blk}, nil
}

// Close releases the iterators.
func (it *rowIter) Close() error {
	err := it.head.Close()
	if e := it.blk.Close(); err == nil {
		err = e
	}
	return err
}

// Error returns the first error met.
func (it *rowIter) Error() error {
	if it.err != nil {
		return it.err
	}
	if err := it.head.Error(); err != nil {
		return err
	}
	return it.blk.Error()
}

// Valid reports whether the iterator stands on a row.
func (it *rowIter) Valid() bool { return it.inHead || it.inBlock }

// Key returns the current row's key.
func (it *rowIter) Key() []byte { return it.key }

// First positions the iterator on the first row.
func (it *rowIter) First() bool { return it.SeekGE(it.lower) }

// SeekGE positions the iterator on the first row whose key is at or above
// key.
func (it *rowIter) SeekGE(key []byte) bool {
	if bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	it.hValid = it.head.SeekGE(key)
	it.seekBlock(key)
	return it.settle()
}

// Next moves to the next row.
func (it *rowIter) Next() bool {
	if it.inHead {
		it.hValid = it.head.Next()
	}
	if it.inBlock {
		it.bPos++
		if it.bPos == it.reader.Len() {
			it.loadBlock(it.blk.Next(), nil)
		}
	}
	return it.settle()
}

// blockRun reports whether the current row is sealed and no head row of
// its series and bucket lies at or after it: the rest of the loaded
// block can be read from the block alone (Block).
func (it *rowIter) blockRun() bool {
	if !it.inBlock || it.inHead {
		return false
	}
	if !it.hValid {
		return true
	}
	hk := it.head.Key()
	return !bytes.HasPrefix(hk, it.bPrefix) && bytes.Compare(hk, it.bPrefix) > 0
}

// Block returns the loaded block's reader and the current row's position
// in it (its times: blockTimes). Valid while blockRun holds, until the
// next move.
func (it *rowIter) Block() (r *block.Reader, pos int) {
	return &it.reader, it.bPos
}

// blockTimes returns the loaded block's row times, decoding them at the
// first call for the block: a block read whole from its header and
// summaries (an aggregate's bucket wider than a storage bucket, a
// snapshot chunk's block shipped as stored) needs only the header's first
// and last time (docs/performance.md, "Blocks read without their
// times"). After a decoding error it returns nil, and the iterator holds
// the error (Error) and stands on no row at its next move.
func (it *rowIter) blockTimes() []int64 {
	if !it.bTimesOK {
		t, err := it.reader.Times(it.bTimes[:0])
		it.bTimes = t
		if err != nil {
			it.fail(fmt.Errorf("%w: block %x: %w", ErrCorrupt, it.bKey, err))
			return nil
		}
		it.bTimesOK = true
	}
	return it.bTimes
}

// lazyTimes gives a walker's visitBlock the times of the block it
// visits, decoded at the first call (rowIter.blockTimes): a visit that
// reads the block from its header and summaries alone leaves them
// encoded.
type lazyTimes struct{ it *rowIter }

// get returns the time of every row of the block, or the error that kept
// them from decoding.
func (bt lazyTimes) get() ([]int64, error) {
	if t := bt.it.blockTimes(); t != nil {
		return t, nil
	}
	return nil, bt.it.Error()
}

// blockTime returns the time of the loaded block's row i (0 <= i < its
// Len), from the header for its first and last rows (the header's
// times are the column's first and last, block.Reader.Times). After a
// decoding error it returns the block's last time, and the iterator
// holds the error.
func (it *rowIter) blockTime(i int) int64 {
	switch i {
	case 0:
		return it.reader.MinTime()
	case it.reader.Len() - 1:
		return it.reader.MaxTime()
	}
	if t := it.blockTimes(); t != nil {
		return t[i]
	}
	return it.reader.MaxTime()
}

// wholeBlock reports whether the current row is the first of a sealed
// block that no head row overlays (blockRun at the block's first row),
// and returns the block's key, its stored bytes (both valid until the
// next move) and its reader (its Len rows, the last at MaxTime).
func (it *rowIter) wholeBlock() (key, value []byte, r *block.Reader, whole bool) {
	if !it.blockRun() || it.bPos != 0 {
		return nil, nil, nil, false
	}
	if !bytes.Equal(it.blk.Key(), it.bKey) {
		return nil, nil, nil, false // not where loadBlock left it: read by rows
	}
	// The bytes loadBlock fetched, not a second fetch: that could reuse
	// the memory the reader reads from (bVal).
	return it.bKey, it.bVal, &it.reader, true
}

// SkipBlock moves past the rest of the loaded block. Only while blockRun
// holds: no head row is then passed over.
func (it *rowIter) SkipBlock() bool {
	it.loadBlock(it.blk.Next(), nil)
	return it.settle()
}

// memRun reports whether the current row is in the memory head alone and
// no other row of its series and bucket, in pebble's head or in a block,
// lies at or after it: the rest of the memory head's series can be read
// from it alone (memSeries).
func (it *rowIter) memRun() bool {
	if !it.inHead || it.inBlock || it.head.mem == nil || len(it.key) < timeLen {
		return false
	}
	prefix := it.key[:len(it.key)-timeLen] // rowLo|bucket|series|0x00
	if !it.head.memOnly(prefix) || bytes.HasPrefix(it.upper, prefix) {
		return false
	}
	// The block side stands on the first block row above this one: in
	// this series and bucket if the blocks hold any there.
	return !it.bValid || !bytes.Equal(it.bPrefix, prefix)
}

// memSeries returns the memory head's series the current row is in and
// the row's position in it. Valid while memRun holds, until the next
// move.
func (it *rowIter) memSeries() (*memViewSeries, int) {
	return it.head.mem.series(), it.head.mem.ri
}

// skipMemSeries moves past the rest of the current memory head's series.
// Only while memRun holds: no other row is then passed over.
func (it *rowIter) skipMemSeries() bool {
	it.hValid = it.head.skipMemSeries()
	return it.settle()
}

// unpositionBlocks forgets the block side's position, for a caller that
// moves the block iterator itself: the next use seeks.
func (it *rowIter) unpositionBlocks() {
	it.bValid, it.soughtOK = false, false
}

// seekBlock positions the block side on the first block row at or above
// key.
func (it *rowIter) seekBlock(key []byte) {
	if it.err != nil {
		it.bValid = false
		return
	}
	it.bound = it.ks.appendBlockBound(it.bound[:0], key)
	bk := it.bound
	if it.soughtOK && bytes.Compare(it.sought, bk) <= 0 &&
		(!it.bValid || it.bPos == 0 && bytes.Compare(bk, it.bKey) < 0) {
		// No block from sought to the loaded one (or to the end): the
		// block side already stands on the first block row above key.
		return
	}
	if it.bValid && bytes.HasPrefix(bk, it.bKey) {
		// In the loaded block (a lookup's monotone seeks mostly are).
		it.soughtOK = false
		switch {
		case it.positionIn(key):
		case it.bPos < it.reader.Len():
			it.bValid = false // past upper
		default:
			it.loadBlock(it.blk.Next(), nil)
		}
		return
	}
	// A block key (blkLo|bucket|series|0x00; a series holds no 0x00) is
	// a prefix of bk only if bk has a 0x00 past its bucket: a row key
	// with its time. Without one (a walk's seek to a series, or to a
	// bucket) no block below bk holds rows at or above key, and SeekLT
	// would cost a seek to find none.
	if len(bk) > rowHeaderLen && bytes.IndexByte(bk[rowHeaderLen:], 0) >= 0 &&
		it.blk.SeekLT(bk) && bytes.HasPrefix(bk, it.blk.Key()) {
		// The block of key's series and bucket: rows below key and at or
		// above it. The blocks after it follow.
		it.loadBlock(true, key)
		return
	}
	it.loadBlock(it.blk.SeekGE(bk), nil)
	it.sought, it.soughtOK = append(it.sought[:0], bk...), it.err == nil
}

// loadBlock decodes the block the block iterator stands on (valid) and
// positions on its first row at or above from (nil: its first row).
// Blocks holding no row in bounds are skipped.
func (it *rowIter) loadBlock(valid bool, from []byte) {
	it.soughtOK = false
	for ; valid; valid = it.blk.Next() {
		k := it.blk.Key()
		b, series, err := blockKeyParts(k)
		if err != nil {
			it.fail(err)
			return
		}
		v, err := it.blk.ValueAndErr()
		if err != nil {
			it.fail(err)
			return
		}
		it.bVal = v
		it.bTimesOK = false
		if err := it.reader.ResetStored(v); err != nil {
			it.fail(fmt.Errorf("%w: block %x: %w", ErrCorrupt, k, err))
			return
		}
		it.bKey = append(it.bKey[:0], k...)
		it.bBucket = b
		it.bSeries = append(it.bSeries[:0], series...)
		it.bPrefix = append(it.bPrefix[:0], it.ks.rowLo...)
		it.bPrefix = binary.BigEndian.AppendUint32(it.bPrefix, b)
		it.bPrefix = append(append(it.bPrefix, series...), 0)
		it.bBytes = len(k) + len(v)
		it.bDecoded = false
		it.bValid = true
		start := it.lower
		if from != nil && bytes.Compare(from, start) > 0 {
			start = from
		}
		if it.positionIn(start) {
			return
		}
		if it.err != nil {
			return // the times did not decode (positionIn failed the iterator)
		}
		from = nil
		if it.bPos < it.reader.Len() {
			break // a row at or past upper: every later block is past it too
		}
	}
	it.bValid = false
}

// positionIn positions on the loaded block's first row at or above key
// and reports whether there is one below upper.
func (it *rowIter) positionIn(key []byte) bool {
	n := it.reader.Len()
	if bytes.Compare(key, it.bPrefix) < 0 {
		// Below every row key of the block (each is bPrefix|time): its
		// first row, as a walk over many series finds most blocks.
		it.bPos = 0
	} else {
		times := it.blockTimes()
		if times == nil {
			it.bPos = n
			return false // failed
		}
		it.bPos = sort.Search(n, func(i int) bool {
			it.scratch = it.blockRowKey(it.scratch[:0], i)
			return bytes.Compare(it.scratch, key) >= 0
		})
	}
	if it.bPos == n {
		return false
	}
	it.scratch = it.blockRowKey(it.scratch[:0], it.bPos)
	return bytes.Compare(it.scratch, it.upper) < 0
}

// blockRowKey appends the row key of the loaded block's row i to dst.
func (it *rowIter) blockRowKey(dst []byte, i int) []byte {
	dst = append(dst, it.bPrefix...)
	return binary.BigEndian.AppendUint64(dst, orderedTime(it.blockTime(i)))
}

func (it *rowIter) fail(err error) {
	if it.err == nil {
		it.err = err
	}
	it.bValid = false
}

// settle makes the smaller of the two sources' rows the current one.
func (it *rowIter) settle() bool {
	it.inHead, it.inBlock, it.valDone = false, false, false
	if it.err != nil {
		return false
	}
	if it.bValid {
		it.key = it.blockRowKey(it.key[:0], it.bPos)
		if bytes.Compare(it.key, it.upper) >= 0 {
			// Past upper: the block side no longer stands where a seek
			// left it (a seek below it must look again).
			it.bValid, it.soughtOK = false, false
		}
	}
	switch {
	case it.hValid && it.bValid:
		switch c := bytes.Compare(it.head.Key(), it.key); {
		case c < 0:
			it.inHead = true
		case c > 0:
			it.inBlock = true
		default:
			it.inHead, it.inBlock = true, true
		}
	case it.hValid:
		it.inHead = true
	case it.bValid:
		it.inBlock = true
	}
	if it.inHead {
		it.key = append(it.key[:0], it.head.Key()...)
	}
	return it.Valid()
}

// Value returns the current row's value (see rowIter).
func (it *rowIter) Value() ([]byte, error) {
	if it.valDone {
		return it.cur, nil
	}
	if it.inHead && !it.inBlock {
		v, err := it.head.ValueAndErr()
		if err != nil {
			return nil, err
		}
		it.cur, it.valDone = v, true // pebble's: valid until the next move
		return v, nil
	}
	it.val = it.val[:0]
	if it.inBlock {
		if !it.bDecoded {
			rows, err := it.reader.Rows(it.bRows[:0], string(it.bSeries))
			if err != nil {
				return nil, fmt.Errorf("%w: block %x: %w", ErrCorrupt, it.bKey, err)
			}
			it.bRows, it.bDecoded = rows, true
		}
		r := &it.bRows[it.bPos]
		it.fields = it.fields[:0]
		for i := range r.Fields {
			it.fields = append(it.fields, encFromModel(&r.Fields[i]))
		}
		it.val = it.enc.appendValue(it.val, 0, it.fields)
	}
	if it.inHead {
		v, err := it.head.ValueAndErr()
		if err != nil {
			return nil, err
		}
		it.val = append(it.val, v...)
	}
	it.cur, it.valDone = it.val, true
	return it.cur, nil
}

// ValueAndErr is Value, named as pebble's iterator method.
func (it *rowIter) ValueAndErr() ([]byte, error) { return it.Value() }

// sealed reports whether the current row is held by a block (and maybe
// written again in the head since).
func (it *rowIter) sealed() bool { return it.inBlock }

// headOnly reports whether the current row is in the head alone.
func (it *rowIter) headOnly() bool { return it.inHead && !it.inBlock }

// rowBytesHead returns the current row's head key and value bytes (0 when
// it is sealed alone).
func (it *rowIter) rowBytesHead() int {
	if !it.inHead {
		return 0
	}
	return len(it.head.Key()) + it.head.valueLen()
}

// rowBytes weighs the current row for split sizing: a head row its key and
// value bytes, a sealed row an equal share of its block's bytes.
func (it *rowIter) rowBytes() uint64 {
	n := uint64(it.rowBytesHead())
	if it.inBlock && it.reader.Len() > 0 {
		n += uint64(max(1, it.bBytes/it.reader.Len()))
	}
	return n
}

// estimateRows is pebble's estimate of the disk usage of the rows in
// [lower, upper) of the row keyspace: their head keys and the blocks that
// hold sealed rows of the same buckets and series.
func estimateRows(db *pebble.DB, mem *memHead, ks *keyspace, lower, upper []byte) (uint64, error) {
	head, err := db.EstimateDiskUsage(lower, upper)
	if err != nil {
		return 0, err
	}
	sealed, err := db.EstimateDiskUsage(ks.blockBound(lower), ks.blockBound(upper))
	if err != nil {
		return 0, err
	}
	return head + sealed + mem.bytesInKeys(ks.rowLo, lower, upper), nil
}

// headIter reads the head rows of a range from both places they live:
// pebble (one key per row) and the memory head's view (memhead.go). A
// row in both reads as pebble's value followed by memory's (decodeRaw
// folds them by version, rule 2). Key and ValueAndErr are valid until the
// next move.
type headIter struct {
	pb   *pebble.Iterator
	view *memView // nil: pebble alone
	mem  *memCursor

	pValid, mValid bool
	inP, inM       bool
	buf            []byte
}

func newHeadIter(pb *pebble.Iterator, view *memView, lower, upper []byte) *headIter {
	h := &headIter{pb: pb, view: view}
	if view != nil && len(view.buckets) > 0 {
		h.mem = newMemCursor(view, lower, upper)
	}
	return h
}

// SeekGE positions on the first head row at or above key.
func (h *headIter) SeekGE(key []byte) bool {
	h.pValid = h.pb.SeekGE(key)
	if h.mem != nil {
		h.mValid = h.mem.SeekGE(key)
	}
	return h.settle()
}

// Next moves to the next head row.
func (h *headIter) Next() bool {
	if h.inP {
		h.pValid = h.pb.Next()
	}
	if h.inM {
		h.mValid = h.mem.Next()
	}
	return h.settle()
}

func (h *headIter) settle() bool {
	h.inP, h.inM = false, false
	switch {
	case h.pValid && h.mValid:
		switch c := bytes.Compare(h.pb.Key(), h.mem.Key()); {
		case c < 0:
			h.inP = true
		case c > 0:
			h.inM = true
		default:
			h.inP, h.inM = true, true
		}
	case h.pValid:
		h.inP = true
	case h.mValid:
		h.inM = true
	}
	return h.inP || h.inM
}

// memCompact returns the current row's shape and compact form
// (rowShape.compact) when it lies in the memory head alone, neither in
// pebble's head nor in a block, and is kept compact.
func (it *rowIter) memCompact() (*rowShape, []byte, bool) {
	h := it.head
	if !it.headOnly() || !h.inM || h.inP {
		return nil, nil, false
	}
	s := h.mem.series()
	if !s.rows[h.mem.ri].shaped() {
		return nil, nil, false
	}
	return s.shape, s.stored(h.mem.ri), true
}

// memOnly reports whether the current head row is in memory alone and
// pebble's head holds no row under prefix after it.
func (h *headIter) memOnly(prefix []byte) bool {
	return h.inM && !h.inP && (!h.pValid || !bytes.HasPrefix(h.pb.Key(), prefix))
}

// skipMemSeries moves the memory side past its current series (memOnly
// holding: pebble's side stands past it already).
func (h *headIter) skipMemSeries() bool {
	h.mValid = h.mem.skipSeries()
	return h.settle()
}

// Key returns the current row's key.
func (h *headIter) Key() []byte {
	if h.inP {
		return h.pb.Key()
	}
	return h.mem.Key()
}

// ValueAndErr returns the current row's value.
func (h *headIter) ValueAndErr() ([]byte, error) {
	if !h.inM {
		return h.pb.ValueAndErr()
	}
	if !h.inP {
		return h.mem.Value(), nil
	}
	v, err := h.pb.ValueAndErr()
	if err != nil {
		return nil, err
	}
	h.buf = append(append(h.buf[:0], v...), h.mem.Value()...)
	return h.buf, nil
}

// valueLen returns the current row's value length.
func (h *headIter) valueLen() int {
	n := 0
	if h.inP {
		lv := h.pb.LazyValue()
		n += lv.Len()
	}
	if h.inM {
		n += h.mem.valueLen()
	}
	return n
}

// Error returns pebble's error.
func (h *headIter) Error() error { return h.pb.Error() }

// Close closes the pebble iterator.
func (h *headIter) Close() error { return h.pb.Close() }
