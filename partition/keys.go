package partition

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/google/uuid"
)

// Key layout; docs/storage-format.md is the reference.
const (
	nsData      byte = 0x01 // 0x01|placement|... : all data of a replica
	nsRegistry  byte = 0x02 // 0x02|placement     : JSON ReplicaInfo
	nsTombstone byte = 0x03 // 0x03|placement     : dropped, never re-created
	nsBirth     byte = 0x04 // 0x04               : JSON birth record (the store's origin)
	nsPending   byte = 0x05 // 0x05|table         : a table not yet settled since the store was created empty
	nsLost      byte = 0x06 // 0x06|placement     : JSON ReplicaInfo of a listed placement whose data is gone

	kindBlock  byte = 'b' // sealed column blocks (seal.go)
	kindCursor byte = 'c' // replication cursors
	kindSeq    byte = 'q' // sequence index
	kindRow    byte = 'r' // rows
	kindTrunc  byte = 't' // log truncation point
	kindShared byte = 'x' // a data space shared by several placements (space.go)

	placementLen = 16
	prefixLen    = 1 + placementLen // 0x01|placement
	rowHeaderLen = prefixLen + 1 + 4
	seqKeyLen    = prefixLen + 1 + 8
	cursorKeyLen = prefixLen + 1 + placementLen
	cursorValLen = 8
	timeLen      = 8

	// rowKeyOverhead is the length of a row key minus its series.
	rowKeyOverhead = rowHeaderLen + 1 + timeLen

	// bucketShift gives time buckets of 2^36 ns (about 68.7 s).
	bucketShift = 36
)

// orderedTime maps an int64 time to a uint64 with the same order.
func orderedTime(t int64) uint64 { return uint64(t) ^ (1 << 63) }

// timeFromOrdered inverts orderedTime.
func timeFromOrdered(u uint64) int64 { return int64(u ^ (1 << 63)) }

// timeBucket returns the storage time bucket holding t.
func timeBucket(t int64) uint32 { return uint32(orderedTime(t) >> bucketShift) }

// bucketStart returns the smallest time in bucket b.
func bucketStart(b uint32) int64 { return timeFromOrdered(uint64(b) << bucketShift) }

// maxBucket is the bucket of math.MaxInt64.
const maxBucket = uint32(1<<(64-bucketShift) - 1)

// keyspace holds the precomputed key prefixes and bounds of one replica. It
// is immutable after construction.
//
// A replica's own keys (log, cursors, truncation point) lie under its
// placement's prefix; its rows and tag index under its data space's
// (space.go), which is the same prefix unless the replica shares the rows
// of another local placement.
type keyspace struct {
	prefix   []byte // 0x01|placement
	dataEnd  []byte // successor of prefix
	curLo    []byte // prefix|'c'
	curHi    []byte // prefix|'d'
	seqLo    []byte // prefix|'q'
	seqHi    []byte // prefix|'r'
	trunc    []byte // prefix|'t'
	registry []byte // 0x02|placement
	tomb     []byte // 0x03|placement

	space    []byte // 0x01|data space: rows and tag index
	spaceEnd []byte // successor of space
	rowLo    []byte // space|'r'
	rowHi    []byte // space|'s'
	blkLo    []byte // space|'b'
	blkHi    []byte // space|'c'
	shared   []byte // space|'x'
}

// newKeyspace returns the keyspace of placement p whose rows lie in data
// space d (uuid.Nil: p's own).
func newKeyspace(p, d uuid.UUID) keyspace {
	if d == uuid.Nil {
		d = p
	}
	prefix := append([]byte{nsData}, p[:]...)
	space := append([]byte{nsData}, d[:]...)
	with := func(pre []byte, b byte) []byte { return append(append([]byte(nil), pre...), b) }
	return keyspace{
		prefix:   prefix,
		dataEnd:  prefixSuccessor(prefix),
		curLo:    with(prefix, kindCursor),
		curHi:    with(prefix, kindCursor+1),
		seqLo:    with(prefix, kindSeq),
		seqHi:    with(prefix, kindSeq+1),
		trunc:    with(prefix, kindTrunc),
		registry: registryKey(p),
		tomb:     tombstoneKey(p),
		space:    space,
		spaceEnd: prefixSuccessor(space),
		rowLo:    with(space, kindRow),
		rowHi:    with(space, kindRow+1),
		blkLo:    with(space, kindBlock),
		blkHi:    with(space, kindBlock+1),
		shared:   with(space, kindShared),
	}
}

// ownsSpace reports whether the replica's placement is its data space's
// id (its own keys and its rows share one prefix).
func (ks *keyspace) ownsSpace() bool { return bytes.Equal(ks.prefix, ks.space) }

func registryKey(p uuid.UUID) []byte  { return append([]byte{nsRegistry}, p[:]...) }
func tombstoneKey(p uuid.UUID) []byte { return append([]byte{nsTombstone}, p[:]...) }
func pendingKey(table string) []byte  { return append([]byte{nsPending}, table...) }
func lostKey(p uuid.UUID) []byte      { return append([]byte{nsLost}, p[:]...) }

// prefixSuccessor returns the smallest key greater than every key starting
// with p, or nil when there is none (p is all 0xff).
func prefixSuccessor(p []byte) []byte {
	out := append([]byte(nil), p...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] != 0xff {
			out[i]++
			return out[:i+1]
		}
	}
	return nil
}

// appendRowKey appends the row key of (series, t) to dst.
func (ks *keyspace) appendRowKey(dst []byte, series string, t int64) []byte {
	u := orderedTime(t)
	dst = append(dst, ks.rowLo...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(u>>bucketShift))
	dst = append(dst, series...)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint64(dst, u)
}

// rowKeyLen is the length of appendRowKey's key of a row of series.
func (ks *keyspace) rowKeyLen(series string) int { return len(ks.rowLo) + 4 + len(series) + 1 + 8 }

// appendBucketSeriesKey appends prefix|'r'|bucket|series (no terminator);
// with an empty series it is the first key of the bucket.
func (ks *keyspace) appendBucketSeriesKey(dst []byte, b uint32, series string) []byte {
	dst = append(dst, ks.rowLo...)
	dst = binary.BigEndian.AppendUint32(dst, b)
	return append(dst, series...)
}

// appendBlockKey appends the key of the sealed block of series in storage
// bucket b: space|'b'|bucket(4)|series|0x00. It is the row key of the
// block's rows with kindBlock for kindRow and without the time, so blocks
// sort like the rows they hold.
func (ks *keyspace) appendBlockKey(dst []byte, b uint32, series string) []byte {
	dst = append(dst, ks.blkLo...)
	dst = binary.BigEndian.AppendUint32(dst, b)
	dst = append(dst, series...)
	return append(dst, 0)
}

// blockKeyParts splits a block key into bucket and series (aliasing key).
func blockKeyParts(key []byte) (bucket uint32, series []byte, err error) {
	if len(key) < prefixLen+1+4+2 || key[prefixLen] != kindBlock || key[len(key)-1] != 0 {
		return 0, nil, fmt.Errorf("%w: bad block key %x", ErrCorrupt, key)
	}
	series = key[rowHeaderLen : len(key)-1]
	if bytes.IndexByte(series, 0) >= 0 {
		return 0, nil, fmt.Errorf("%w: bad block key %x", ErrCorrupt, key)
	}
	return binary.BigEndian.Uint32(key[prefixLen+1:]), series, nil
}

// blockBound maps a bound of the row keyspace (a key at or above rowLo and
// at most rowHi) to the block keyspace: the same bytes after the kind. A
// block whose key is at or above the result holds only rows whose keys
// are at or above the row bound; one below it may still hold some when
// its key is a prefix of the result (readers filter rows by key).
func (ks *keyspace) blockBound(rowBound []byte) []byte {
	return ks.appendBlockBound(nil, rowBound)
}

// appendBlockBound appends blockBound(rowBound) to dst.
func (ks *keyspace) appendBlockBound(dst, rowBound []byte) []byte {
	if bytes.Equal(rowBound, ks.rowHi) {
		return append(dst, ks.blkHi...)
	}
	return append(append(dst, ks.blkLo...), rowBound[len(ks.rowLo):]...)
}

// appendSeqKey appends the sequence index key of seq to dst.
func (ks *keyspace) appendSeqKey(dst []byte, seq uint64) []byte {
	dst = append(dst, ks.seqLo...)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// appendCursorKey appends the replication cursor key of target to dst.
func (ks *keyspace) appendCursorKey(dst []byte, target uuid.UUID) []byte {
	dst = append(dst, ks.curLo...)
	return append(dst, target[:]...)
}

// appendCursorValue appends the encoding of a confirmed sequence.
func appendCursorValue(dst []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, seq)
}

// cursorParts decodes a replication cursor key and value.
func cursorParts(key, value []byte) (uuid.UUID, uint64, error) {
	if len(key) != cursorKeyLen || key[prefixLen] != kindCursor {
		return uuid.Nil, 0, fmt.Errorf("%w: bad cursor key %x", ErrCorrupt, key)
	}
	if len(value) != cursorValLen {
		return uuid.Nil, 0, fmt.Errorf("%w: bad cursor value %x", ErrCorrupt, value)
	}
	var target uuid.UUID
	copy(target[:], key[prefixLen+1:])
	return target, binary.BigEndian.Uint64(value), nil
}

// rowKeyParts splits a row key (with its replica prefix) into bucket, series
// bytes (aliasing key) and time.
func rowKeyParts(key []byte) (bucket uint32, series []byte, t int64, err error) {
	if len(key) < rowKeyOverhead+1 || key[prefixLen] != kindRow || key[len(key)-timeLen-1] != 0 {
		return 0, nil, 0, fmt.Errorf("%w: bad row key %x", ErrCorrupt, key)
	}
	bucket = binary.BigEndian.Uint32(key[prefixLen+1:])
	series = key[rowHeaderLen : len(key)-timeLen-1]
	t = timeFromOrdered(binary.BigEndian.Uint64(key[len(key)-timeLen:]))
	return bucket, series, t, nil
}

// seqFromKey decodes the sequence of a sequence index key.
func seqFromKey(key []byte) (uint64, error) {
	if len(key) != seqKeyLen || key[prefixLen] != kindSeq {
		return 0, fmt.Errorf("%w: bad sequence key %x", ErrCorrupt, key)
	}
	return binary.BigEndian.Uint64(key[prefixLen+1:]), nil
}

// seqEntryTag is the byte after u(8) in a log entry (sequence index value)
// that carries its row: the form before it (legacyLog) has the first byte
// of the series there, never 0x00.
const seqEntryTag byte = 0x00

// seqFlagOrigin is the flag bit of a log entry that holds an origin.
const seqFlagOrigin byte = 0x01

// seqFlagRecord is the flag bit of a log value that is a record of
// several changes (appendLogRecordHeader), not one entry.
const seqFlagRecord byte = 0x02

// seqFlagCompact is the flag bit of a record's entry that carries only
// its row value's payloads (log format 4, recordWriter): the rest of the
// value is the record's last whole entry's.
const seqFlagCompact byte = 0x04

// appendSeqValue appends the log entry (sequence index value) of the row
// (series, t) whose stored value is rowValue (the 'r' value bytes, its
// sequence included), with origin, when not uuid.Nil, the placement the
// row's value was pushed from:
//
//	u(8, BE) | 0x00 | flags(1) | len(series):uvarint | series | [origin(16)] | rowValue
//
// flags bit 0: origin present; the other bits are 0.
func appendSeqValue(dst []byte, series string, t int64, origin uuid.UUID, rowValue []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, orderedTime(t))
	dst = append(dst, seqEntryTag)
	dst = appendFlagsSeriesOrigin(dst, series, origin)
	return append(dst, rowValue...)
}

// appendFlagsSeriesOrigin appends the part of a log entry that both its
// forms share (appendSeqValue, appendRecordEntry; entrySeriesOrigin reads
// it back): flags(1) | len(series):uvarint | series | [origin(16)].
func appendFlagsSeriesOrigin(dst []byte, series string, origin uuid.UUID) []byte {
	return appendFlagsSeriesOriginWith(dst, 0, series, origin)
}

// appendFlagsSeriesOriginWith is appendFlagsSeriesOrigin with the flag
// bits flags set besides the origin's.
func appendFlagsSeriesOriginWith(dst []byte, flags byte, series string, origin uuid.UUID) []byte {
	if origin != uuid.Nil {
		flags |= seqFlagOrigin
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(len(series)))
	dst = append(dst, series...)
	if origin != uuid.Nil {
		dst = append(dst, origin[:]...)
	}
	return dst
}

// appendLegacySeqValue appends a log entry of the legacy form, which does
// not carry the row: u(8, BE) | series [ 0x00 | origin(16) ]. Stores
// before issue 16 hold only this form; Apply still writes it, for its
// batch's last change, while the replica's log has no reader
// (Replica.SetLogValues).
func appendLegacySeqValue(dst []byte, series string, t int64, origin uuid.UUID) []byte {
	dst = binary.BigEndian.AppendUint64(dst, orderedTime(t))
	dst = append(dst, series...)
	if origin != uuid.Nil {
		dst = append(append(dst, 0), origin[:]...)
	}
	return dst
}

// seqEntry is a decoded log entry. series and rowValue alias the encoded
// bytes; rowValue is nil in a legacy entry (the row must be read from the
// row keyspace).
type seqEntry struct {
	t        int64
	series   []byte
	origin   uuid.UUID
	rowValue []byte
	// payloads are a compact record entry's (recordReader), rowValue
	// being rebuilt from them; nil for any other entry.
	payloads []byte
}

// appendLogRecordHeader appends the header of a log record: the log value
// of a batch's n >= 2 changes, at sequences k-n+1, ..., k, stored under
// the key of the last one, k. The header is followed by n entries
// (appendRecordEntry), in sequence order:
//
//	0(8) | 0x00 | 0x02 | n:uvarint | entry * n
//
// The zero u and the tag byte make the record's flags sit where an
// entry's do, so that a record is never read as an entry: seqValueParts
// refuses a set flag bit 1.
func appendLogRecordHeader(dst []byte, n int) []byte {
	dst = binary.BigEndian.AppendUint64(dst, 0)
	dst = append(dst, seqEntryTag, seqFlagRecord)
	return binary.AppendUvarint(dst, uint64(n))
}

// appendRecordEntry appends one change of a log record: an entry as
// appendSeqValue writes it, with the row value's length before it.
//
//	u(8, BE) | flags(1) | len(series):uvarint | series | [origin(16)] | len(value):uvarint | row value
func appendRecordEntry(dst []byte, series string, t int64, origin uuid.UUID, rowValue []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, orderedTime(t))
	dst = appendFlagsSeriesOrigin(dst, series, origin)
	dst = binary.AppendUvarint(dst, uint64(len(rowValue)))
	return append(dst, rowValue...)
}

// isLogRecord reports whether the log value v is a record of several
// changes (appendLogRecordHeader) rather than one entry.
func isLogRecord(v []byte) bool {
	return len(v) > timeLen+1 && v[timeLen] == seqEntryTag && v[timeLen+1]&seqFlagRecord != 0
}

// logRecordParts decodes the header of the log record v stored under the
// sequence key last: the sequence of its first change and the entries
// that follow (read them with nextRecordEntry).
func logRecordParts(v []byte, last uint64) (first uint64, n int, body []byte, err error) {
	if !isLogRecord(v) || binary.BigEndian.Uint64(v) != 0 || v[timeLen+1] != seqFlagRecord {
		return 0, 0, nil, fmt.Errorf("%w: bad log record at sequence %d", ErrCorrupt, last)
	}
	rest := v[timeLen+2:]
	c, w := binary.Uvarint(rest)
	// Every entry takes at least 13 bytes (u, flags, a series length
	// and byte, a value length and byte).
	if w <= 0 || c < 2 || c > last || c > uint64(len(rest)-w)/13 {
		return 0, 0, nil, fmt.Errorf("%w: bad log record at sequence %d", ErrCorrupt, last)
	}
	return last - c + 1, int(c), rest[w:], nil
}

// recordWriter appends the entries of one log record (log format 4). A
// change whose row value has the field layout (rowShape) and the very
// versions of the record's last whole entry's value is written compact
// (seqFlagCompact): its payloads only, back to back, instead of the whole
// value. The sequence the value starts with is the entry's own, which its
// place in the record gives. A batch of one request's rows of one schema
// is one whole entry and compact ones: 61 bytes a change of the peer
// harness's instead of 124, which is what pebble's WAL writes and syncs
// (docs/storage-format.md, "Records").
type recordWriter struct {
	shape rowShape
	vers  []byte // the versions section of the last whole entry's value
	ok    bool   // shape and vers are the last whole entry's
}

// reset starts a record.
func (w *recordWriter) reset() { w.ok, w.vers = false, nil }

// appendEntry appends the entry of the change of sequence seq to the row
// (series, t), with row value v and origin (uuid.Nil: none), compact when
// it can be: a value that does not start with seq (which the reader gives
// a compact entry's) is written whole. v must stay unchanged until the
// record is complete.
func (w *recordWriter) appendEntry(dst []byte, seq uint64, series string, t int64, origin uuid.UUID, v []byte) []byte {
	if w.ok {
		if p, ok := w.shape.matches(v); ok && bytes.Equal(versionsSection(v, p), w.vers) && valueSeq(v) == seq {
			dst = binary.BigEndian.AppendUint64(dst, orderedTime(t))
			dst = appendFlagsSeriesOriginWith(dst, seqFlagCompact, series, origin)
			dst = binary.AppendUvarint(dst, uint64(w.shape.payLen))
			for i := range w.shape.fields {
				f := &w.shape.fields[i]
				dst = append(dst, v[p+f.off:p+f.to]...)
			}
			return dst
		}
	}
	dst = appendRecordEntry(dst, series, t, origin, v)
	w.vers, w.ok = parseTemplate(&w.shape, v)
	w.ok = w.ok && w.shape.payLen > 0
	return dst
}

// parseTemplate makes sh the field layout of row value v, a record's whole
// entry that compact entries may follow, and returns v's versions section;
// false when v has no such layout (rowShape.parse).
func parseTemplate(sh *rowShape, v []byte) ([]byte, bool) {
	p, _, ok := fieldSection(v)
	if !ok || !sh.parse(v) {
		return nil, false
	}
	return versionsSection(v, p), true
}

// valueSeq returns the sequence a row value starts with (0 when it holds
// none).
func valueSeq(v []byte) uint64 {
	seq, n := binary.Uvarint(v)
	if n <= 0 {
		return 0
	}
	return seq
}

// versionsSection returns the versions of row value v, whose field
// section starts at p: the bytes after its sequence and before p.
func versionsSection(v []byte, p int) []byte {
	_, n := binary.Uvarint(v)
	return v[n:p:p]
}

// recordReader reads the entries of one log record in order (next),
// expanding each compact entry (recordWriter) from the record's last
// whole entry before it.
type recordReader struct {
	last   []byte // the row value of the last whole entry (aliases the record)
	parsed bool   // shape and vers are last's
	shape  rowShape
	vers   []byte
	val    []byte // the last compact entry's value, expanded
	// gen changes with every record and every whole entry: the compact
	// entries read under one gen have the field names and versions of
	// its whole entry's value, and shape's fields.
	gen uint64
}

// reset starts a record.
func (rr *recordReader) reset() { rr.last, rr.parsed, rr.gen = nil, false, rr.gen+1 }

// next decodes the first entry of body, the rest of a log record, as the
// change of sequence seq, and returns the bytes after it. Its series, and
// the row value of a whole entry, alias body; the value of a compact one
// is valid until the next call.
func (rr *recordReader) next(body []byte, seq uint64) (seqEntry, []byte, error) {
	var e seqEntry
	if len(body) < timeLen+1 {
		return e, nil, fmt.Errorf("%w: log record entry cut short", ErrCorrupt)
	}
	e.t = timeFromOrdered(binary.BigEndian.Uint64(body))
	flags := body[timeLen]
	if flags&^(seqFlagOrigin|seqFlagCompact) != 0 {
		return e, nil, fmt.Errorf("%w: log record entry with flags %#x", ErrCorrupt, flags)
	}
	rest, err := entrySeriesOrigin(&e, flags, body[timeLen+1:])
	if err != nil {
		return e, nil, err
	}
	n, w := binary.Uvarint(rest)
	if w <= 0 || n == 0 || n > uint64(len(rest)-w) {
		return e, nil, fmt.Errorf("%w: log record entry of %q without its row", ErrCorrupt, e.series)
	}
	rest = rest[w:]
	if flags&seqFlagCompact == 0 {
		e.rowValue = rest[:n:n]
		rr.last, rr.parsed, rr.gen = e.rowValue, false, rr.gen+1
		return e, rest[n:], nil
	}
	if !rr.parsed {
		if rr.last == nil {
			return e, nil, fmt.Errorf("%w: compact log record entry of %q before any whole one", ErrCorrupt, e.series)
		}
		vers, ok := parseTemplate(&rr.shape, rr.last)
		if !ok {
			return e, nil, fmt.Errorf("%w: compact log record entry of %q after a value without a layout", ErrCorrupt, e.series)
		}
		rr.vers, rr.parsed = vers, true
	}
	if n != uint64(rr.shape.payLen) {
		return e, nil, fmt.Errorf("%w: compact log record entry of %q with %d bytes of payloads, its layout has %d", ErrCorrupt, e.series, n, rr.shape.payLen)
	}
	rr.val = binary.AppendUvarint(rr.val[:0], seq)
	rr.val = append(rr.val, rr.vers...)
	rr.val = rr.shape.expand(rr.val, rest[:n])
	e.rowValue, e.payloads = rr.val, rest[:n:n]
	return e, rest[n:], nil
}

// entrySeriesOrigin decodes the series and, when flags say so, the origin
// of a log entry from rest, into e, and returns the bytes after them.
func entrySeriesOrigin(e *seqEntry, flags byte, rest []byte) ([]byte, error) {
	n, w := binary.Uvarint(rest)
	if w <= 0 || n == 0 || n > uint64(len(rest)-w) {
		return nil, fmt.Errorf("%w: log entry with a bad series length", ErrCorrupt)
	}
	rest = rest[w:]
	e.series, rest = rest[:n], rest[n:]
	if bytes.IndexByte(e.series, 0) >= 0 {
		return nil, fmt.Errorf("%w: log entry with a NUL byte in its series %q", ErrCorrupt, e.series)
	}
	if flags&seqFlagOrigin != 0 {
		if len(rest) < placementLen {
			return nil, fmt.Errorf("%w: log entry of %q cut short in its origin", ErrCorrupt, e.series)
		}
		copy(e.origin[:], rest)
		rest = rest[placementLen:]
	}
	return rest, nil
}

// seqValueParts decodes a log entry of either form: the current one
// (appendSeqValue) or the legacy one written before log entries carried
// their row (before issue 16: u(8, BE) | series [ 0x00 | origin(16) ]).
func seqValueParts(v []byte) (seqEntry, error) {
	var e seqEntry
	if len(v) < timeLen+1 {
		return e, fmt.Errorf("%w: bad sequence index value %x", ErrCorrupt, v)
	}
	e.t = timeFromOrdered(binary.BigEndian.Uint64(v))
	if v[timeLen] != seqEntryTag {
		return legacySeqValueParts(v)
	}
	rest := v[timeLen+1:]
	if len(rest) < 1 || rest[0]&^seqFlagOrigin != 0 {
		return e, fmt.Errorf("%w: bad sequence index value %x", ErrCorrupt, v)
	}
	rest, err := entrySeriesOrigin(&e, rest[0], rest[1:])
	if err != nil {
		return e, fmt.Errorf("%w (value %x)", err, v)
	}
	if len(rest) == 0 {
		return e, fmt.Errorf("%w: sequence index value %x without its row", ErrCorrupt, v)
	}
	e.rowValue = rest
	return e, nil
}

// legacySeqValueParts decodes a legacy log entry: its rowValue is nil.
func legacySeqValueParts(v []byte) (seqEntry, error) {
	var e seqEntry
	if len(v) < timeLen+1 {
		return e, fmt.Errorf("%w: bad sequence index value %x", ErrCorrupt, v)
	}
	e.t = timeFromOrdered(binary.BigEndian.Uint64(v))
	e.series = v[timeLen:]
	if i := bytes.IndexByte(e.series, 0); i >= 0 {
		if i == 0 || len(e.series)-i-1 != placementLen {
			return e, fmt.Errorf("%w: bad sequence index value %x", ErrCorrupt, v)
		}
		copy(e.origin[:], e.series[i+1:])
		e.series = e.series[:i]
	}
	return e, nil
}
