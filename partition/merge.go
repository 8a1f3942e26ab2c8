package partition

import (
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// rowMerger is the store's pebble merger: it folds the operands of a row
// key (the changes Apply writes without reading the row, format 2) into
// one row value, by decodeRaw's rule 2 fold, during reads, flushes and
// compactions. Without it a row written blind again and again (a retried
// batch, a point overwritten in place) would keep every operand for good.
//
// It keeps the name of pebble's default merger, which concatenates the
// operands oldest first: every store was created with that name, pebble
// records it in the OPTIONS file and in every sstable and refuses to open
// a store, or read an sstable, under another. The two are interchangeable
// for this store: decodeRaw reads a concatenation as the fold of its
// operands, so a value merged either way reads the same, and a value this
// merger cannot decode is concatenated as the default would (a corrupt
// value is reported by its readers, never by a compaction).
var rowMerger = &pebble.Merger{Name: pebble.DefaultMerger.Name, Merge: newRowFolder}

// rowFolder collects a key's operands, oldest first, and folds them in
// Finish.
type rowFolder struct {
	ops  []byte // the operands back to back, oldest first
	more bool   // more than the first operand was added
}

func newRowFolder(_, value []byte) (pebble.ValueMerger, error) {
	return &rowFolder{ops: append([]byte(nil), value...)}, nil
}

// MergeNewer adds an operand newer than the others.
func (f *rowFolder) MergeNewer(value []byte) error {
	f.ops = append(f.ops, value...)
	f.more = true
	return nil
}

// MergeOlder adds an operand older than the others.
func (f *rowFolder) MergeOlder(value []byte) error {
	ops := make([]byte, 0, len(value)+len(f.ops))
	f.ops = append(append(ops, value...), f.ops...)
	f.more = true
	return nil
}

// Finish returns the folded value: one row value, or the operands as
// they are when they are one already or do not decode. A lone operand
// (pebble merges every merge-operand key it flushes, most of them written
// once) is handed back without decoding it.
func (f *rowFolder) Finish(bool) ([]byte, io.Closer, error) {
	if !f.more {
		return f.ops, nil, nil
	}
	return foldOperands(f.ops), nil, nil
}

// foldOperands returns ops, row values back to back (oldest first), as
// one row value by decodeRaw's fold, in a new slice; or ops itself when it
// is one value already or does not decode.
func foldOperands(ops []byte) []byte {
	var raw rawRow
	rest, err := raw.decodeOne(ops)
	if err != nil || len(rest) == 0 {
		return ops
	}
	if err := decodeRaw(ops, &raw); err != nil {
		return ops
	}
	fields := make([]encField, len(raw.fields))
	for i := range raw.fields {
		fields[i] = encFromRaw(&raw, &raw.fields[i])
	}
	var enc valueEncoder
	return enc.appendValue(nil, raw.seq, fields)
}
