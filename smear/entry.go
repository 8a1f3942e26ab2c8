package smear

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Key layout (see doc.go): every queue entry lives under
//
//	0x01 | due (8 bytes, big-endian ns with the sign bit flipped) | seq (8 bytes, big-endian)
//
// so that a forward scan returns entries in due-time order and a range
// scan up to key(now) finds exactly the due ones. Quarantined entries keep
// the same suffix under 0x02.
const (
	nsEntry      = 0x01
	nsQuarantine = 0x02
	keyLen       = 17
)

// entryFormat is the first byte of every entry value.
const entryFormat = 1

// sortableTime maps an int64 to a uint64 whose unsigned order is the
// signed order of the input.
func sortableTime(ns int64) uint64 { return uint64(ns) ^ (1 << 63) }

func appendKey(dst []byte, due int64, seq uint64) []byte {
	dst = append(dst, nsEntry)
	dst = binary.BigEndian.AppendUint64(dst, sortableTime(due))
	return binary.BigEndian.AppendUint64(dst, seq)
}

// parseKey returns the due time and sequence of an entry key.
func parseKey(k []byte) (due int64, seq uint64, err error) {
	if len(k) != keyLen || k[0] != nsEntry {
		return 0, 0, fmt.Errorf("%w: key %x", ErrCorrupt, k)
	}
	due = int64(binary.BigEndian.Uint64(k[1:9]) ^ (1 << 63))
	return due, binary.BigEndian.Uint64(k[9:]), nil
}

// dueBound returns the smallest key of entries due at or after due. Used
// as an exclusive upper bound it selects entries due strictly before due.
func dueBound(due int64) []byte {
	b := make([]byte, 0, 9)
	b = append(b, nsEntry)
	return binary.BigEndian.AppendUint64(b, sortableTime(due))
}

// upperBoundAt returns the exclusive upper bound of the entries due at or
// before now; math.MaxInt64 selects every entry.
func upperBoundAt(now int64) []byte {
	if now == math.MaxInt64 {
		return []byte{nsEntry + 1}
	}
	return dueBound(now + 1)
}

// quarantineKey moves an entry key into the quarantine namespace.
func quarantineKey(k []byte) []byte {
	q := append([]byte{nsQuarantine}, k[1:]...)
	return q
}

// header is the fixed part of an entry value, before the encoded rows:
//
//	format byte (1) | enqueued (varint ns) | attempts (uvarint) |
//	table (uvarint length, bytes) | row count (uvarint) | rows (RowCodec)
//
// The row count is kept apart from the codec's bytes so that Open rebuilds
// the queue depth without decoding rows.
type header struct {
	// enqueued is when the rows were first enqueued (Options.Now, ns); a
	// retry keeps it, so the delay histogram measures the whole wait.
	enqueued int64
	// attempts is how many forwards of these rows failed so far.
	attempts uint64
	table    string
	rows     int
}

func appendHeader(dst []byte, h *header) []byte {
	dst = append(dst, entryFormat)
	dst = binary.AppendVarint(dst, h.enqueued)
	dst = binary.AppendUvarint(dst, h.attempts)
	dst = binary.AppendUvarint(dst, uint64(len(h.table)))
	dst = append(dst, h.table...)
	return binary.AppendUvarint(dst, uint64(h.rows))
}

// parseHeader decodes the header of an entry value and returns the rest
// (the codec's bytes). The table name is copied.
func parseHeader(v []byte) (h header, body []byte, err error) {
	if len(v) == 0 || v[0] != entryFormat {
		return h, nil, fmt.Errorf("%w: unknown entry format", ErrCorrupt)
	}
	p := v[1:]
	var n int
	if h.enqueued, n = binary.Varint(p); n <= 0 {
		return h, nil, fmt.Errorf("%w: bad enqueue time", ErrCorrupt)
	}
	p = p[n:]
	if h.attempts, n = binary.Uvarint(p); n <= 0 {
		return h, nil, fmt.Errorf("%w: bad attempt count", ErrCorrupt)
	}
	p = p[n:]
	tl, n := binary.Uvarint(p)
	if n <= 0 || tl > uint64(len(p)-n) {
		return h, nil, fmt.Errorf("%w: bad table name", ErrCorrupt)
	}
	h.table = string(p[n : n+int(tl)])
	p = p[n+int(tl):]
	rows, n := binary.Uvarint(p)
	if n <= 0 || rows == 0 || rows > uint64(len(p)) {
		return h, nil, fmt.Errorf("%w: bad row count", ErrCorrupt)
	}
	h.rows = int(rows)
	return h, p[n:], nil
}
