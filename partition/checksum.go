package partition

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"

	"github.com/tsdb/tsdb/model"
)

// ReplicaChecksum summarizes the live rows of a replica for convergence
// checks and inspection.
type ReplicaChecksum struct {
	// Rows is the number of live rows hashed: stored rows, a row whose
	// fields are all tombstones (model.KindDeleted) included.
	Rows int64
	// Sum is the lowercase hex SHA-256 of the canonical encoding of those
	// rows in key order (docs/storage-format.md, "Checksum").
	Sum string
}

// Checksum hashes every live row of the replica: its series, time, and
// every field's name, kind, value and version, in key order. Sequences are
// not hashed, so two replicas holding the same rows with the same versions
// give the same Sum whatever order, batching or path (Apply, a push) the
// rows arrived by. Floats are hashed by their bits, as model.Value.Equal
// compares them.
//
// Checksum reads one consistent pebble view (like Scan, it may include
// visible changes whose sync is pending) and takes no replica lock, so it
// never blocks Apply.
func (r *Replica) Checksum() (ReplicaChecksum, error) {
	return r.ChecksumRange(math.MinInt64, math.MaxInt64)
}

// ChecksumRange is Checksum over the rows with time in [from, to); to ==
// math.MaxInt64 is an open end, as in model.Query. Rows are hashed in the
// same order as by Checksum, so the checksum of a range equals the
// Checksum of a replica holding exactly the rows of that range (a split
// child and the matching part of its parent, say).
func (r *Replica) ChecksumRange(from, to int64) (ReplicaChecksum, error) {
	if err := r.enter(); err != nil {
		return ReplicaChecksum{}, err
	}
	defer r.store.gate.Exit()
	h := rowHasher{sum: sha256.New()}
	w, err := r.newWalker(from, to, "", false)
	if err != nil {
		return ReplicaChecksum{}, err
	}
	if w != nil {
		defer w.close()
		if err := w.walk(h.visit, func() bool { return true }); err != nil {
			return ReplicaChecksum{}, err
		}
	}
	return ReplicaChecksum{Rows: h.rows, Sum: hex.EncodeToString(h.sum.Sum(nil))}, nil
}

// rowHasher feeds the canonical encoding of each visited row to a hash.
type rowHasher struct {
	sum  hash.Hash
	rows int64
	raw  rawRow
	buf  []byte
}

func (h *rowHasher) visit(series []byte, t int64, value []byte) (bool, error) {
	if err := decodeRaw(value, &h.raw); err != nil {
		return false, err
	}
	h.buf = appendCanonicalRow(h.buf[:0], series, t, &h.raw)
	_, _ = h.sum.Write(h.buf) // a hash.Hash never fails
	h.rows++
	return true, nil
}

// appendCanonicalRow appends the encoding of a row that Checksum hashes.
// It depends only on the row's content (not on its sequence or on how the
// stored value's version table is laid out), and it is prefix-free, so the
// concatenation over the rows determines them:
//
//	row   := len(series):uvarint series time:8 BE nfields:uvarint field*
//	field := len(name):uvarint name kind:1 payload wall:8 BE node:8 BE
//	payload := float bits:8 BE | int:8 BE | bool:1 | len:uvarint bytes | (none: deleted)
//
// Stored fields are already sorted by name without duplicates.
func appendCanonicalRow(dst, series []byte, t int64, r *rawRow) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(series)))
	dst = append(dst, series...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t))
	dst = binary.AppendUvarint(dst, uint64(len(r.fields)))
	for i := range r.fields {
		f := &r.fields[i]
		dst = binary.AppendUvarint(dst, uint64(len(f.name)))
		dst = append(dst, f.name...)
		dst = append(dst, byte(f.kind))
		switch f.kind {
		case model.KindBool:
			dst = append(dst, byte(f.num))
		case model.KindString:
			dst = binary.AppendUvarint(dst, uint64(len(f.str)))
			dst = append(dst, f.str...)
		case model.KindDeleted: // a tombstone has no payload
		default: // float bits, int64 bits
			dst = binary.BigEndian.AppendUint64(dst, f.num)
		}
		v := r.versions[f.ver]
		dst = binary.BigEndian.AppendUint64(dst, uint64(v.Wall))
		dst = binary.BigEndian.AppendUint64(dst, v.Node)
	}
	return dst
}
