package partition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/tsdb/tsdb/model"
)

// rawRow is a decoded row value whose names and strings alias the encoded
// bytes: decoding allocates nothing once the slices have grown.
type rawRow struct {
	seq      uint64
	versions []model.Version
	fields   []rawField
	// op and folded are decodeRaw's scratch for a value of several
	// operands; nil until one is met.
	op     *rawRow
	folded []rawField
}

// rawField is one field of a rawRow.
type rawField struct {
	name []byte
	ver  int // index into rawRow.versions
	kind model.Kind
	num  uint64 // float bits (KindFloat) or int64 bits (KindInt, KindBool)
	str  []byte // KindString
}

// numeric returns the field as a float64 for aggregation, and false for a
// string.
func (f *rawField) numeric() (float64, bool) {
	switch f.kind {
	case model.KindFloat:
		return math.Float64frombits(f.num), true
	case model.KindInt, model.KindBool:
		return float64(int64(f.num)), true
	}
	return 0, false
}

// value returns the field's model.Value; a string value is copied.
func (f *rawField) value() model.Value {
	switch f.kind {
	case model.KindFloat:
		return model.Value{Kind: model.KindFloat, F: math.Float64frombits(f.num)}
	case model.KindInt, model.KindBool:
		return model.Value{Kind: f.kind, I: int64(f.num)}
	case model.KindDeleted:
		return model.Deleted()
	}
	return model.Value{Kind: model.KindString, S: string(f.str)}
}

// aggValue returns the field's value for model.AggState.Add without copying
// a string (aggregation only counts strings).
func (f *rawField) aggValue() model.Value {
	if f.kind == model.KindString {
		return model.Value{Kind: model.KindString}
	}
	return f.value()
}

func corrupt(what string) error { return fmt.Errorf("%w: %s", ErrCorrupt, what) }

// decodeRaw decodes a stored row value into r, reusing r's slices. It
// never panics on malformed input.
//
// A stored value may be several row values back to back, oldest first:
// the merge operands that Apply writes without reading the row (format 2),
// as pebble's default merger concatenates them (the store's merger folds
// them instead, merge.go, but keeps the concatenation of operands it
// cannot decode). decodeRaw folds them field by field with rule 2's
// last-writer-wins, as Apply's read would have: a later operand's field
// replaces an earlier one's only with a strictly greater version (equal
// versions are one write), and the row's sequence is the highest. The
// fields of each operand must be sorted by name without duplicates, as
// Apply writes them.
func decodeRaw(v []byte, r *rawRow) error {
	rest, err := r.decodeOne(v)
	if err != nil || len(rest) == 0 {
		return err
	}
	if r.op == nil {
		r.op = new(rawRow)
	}
	if err := r.checkSorted(); err != nil {
		return err
	}
	for len(rest) > 0 {
		if rest, err = r.op.decodeOne(rest); err != nil {
			return err
		}
		if err := r.fold(r.op); err != nil {
			return err
		}
	}
	return nil
}

// fold merges the later operand op into r (decodeRaw).
func (r *rawRow) fold(op *rawRow) error {
	if err := op.checkSorted(); err != nil {
		return err
	}
	base := len(r.versions)
	r.versions = append(r.versions, op.versions...)
	out := r.folded[:0]
	i, j := 0, 0
	for i < len(r.fields) || j < len(op.fields) {
		var c int
		switch {
		case j == len(op.fields):
			c = -1
		case i == len(r.fields):
			c = 1
		default:
			c = bytes.Compare(r.fields[i].name, op.fields[j].name)
		}
		switch {
		case c < 0:
			out = append(out, r.fields[i])
			i++
		case c > 0:
			f := op.fields[j]
			f.ver += base
			out = append(out, f)
			j++
		default:
			if r.versions[r.fields[i].ver].Less(op.versions[op.fields[j].ver]) {
				f := op.fields[j]
				f.ver += base
				out = append(out, f)
			} else {
				out = append(out, r.fields[i])
			}
			i++
			j++
		}
	}
	r.folded, r.fields = r.fields, out
	r.seq = max(r.seq, op.seq)
	return nil
}

// checkSorted reports an operand whose field names are not strictly
// ascending: folding it by name would keep duplicates or lose fields.
func (r *rawRow) checkSorted() error {
	for i := 1; i < len(r.fields); i++ {
		if bytes.Compare(r.fields[i-1].name, r.fields[i].name) >= 0 {
			return corrupt("row value operand with fields out of order")
		}
	}
	return nil
}

// decodeOne decodes one row value from the front of v into r and returns
// the bytes after it.
func (r *rawRow) decodeOne(v []byte) ([]byte, error) {
	r.versions = r.versions[:0]
	r.fields = r.fields[:0]
	d := decoder{b: v}
	r.seq = d.uvarint()
	nv := d.count(9) // a version takes at least 9 bytes
	for i := 0; i < nv && d.err == nil; i++ {
		wall := d.varint()
		node := d.fixed64()
		r.versions = append(r.versions, model.Version{Wall: wall, Node: node})
	}
	nf := d.count(4) // a field takes at least 4 bytes
	for i := 0; i < nf && d.err == nil; i++ {
		var f rawField
		f.name = d.bytes()
		vi := d.uvarint()
		if d.err == nil && vi >= uint64(len(r.versions)) {
			return nil, corrupt("version index out of range")
		}
		f.ver = int(vi)
		f.kind = model.Kind(d.byte())
		switch f.kind {
		case model.KindFloat:
			f.num = d.fixed64()
		case model.KindInt:
			f.num = uint64(d.varint())
		case model.KindBool:
			b := d.byte()
			if d.err == nil && b > 1 {
				return nil, corrupt("bool payload out of range")
			}
			f.num = uint64(b)
		case model.KindString:
			f.str = d.bytes()
		case model.KindDeleted: // a tombstone has no payload
		default:
			if d.err == nil {
				return nil, corrupt(fmt.Sprintf("unknown kind %d", f.kind))
			}
		}
		r.fields = append(r.fields, f)
	}
	if d.err != nil {
		return nil, d.err
	}
	return d.b, nil
}

// decodeFields decodes into r the fields of a stored row value that keep
// selects (nil: all of them, as decodeRaw), for a reader of values only
// (an aggregate): r's versions are not decoded (each field's ver is
// checked against their count but indexes nothing), nor the fields keep
// passes over beyond their length. A value of several merge operands, or
// one that does not decode, goes through decodeRaw, which folds the
// operands by version (rule 2) and reports the error: the answer is
// always decodeRaw's, restricted to the fields selected.
func decodeFields(v []byte, keep func([]byte) bool, r *rawRow) error {
	if r.decodeSelected(v, keep) {
		return nil
	}
	if err := decodeRaw(v, r); err != nil || keep == nil {
		return err
	}
	kept := r.fields[:0]
	for _, f := range r.fields {
		if keep(f.name) {
			kept = append(kept, f)
		}
	}
	r.fields = kept
	return nil
}

// decodeSelected is decodeFields' path for a value of one operand (keep
// nil: every field); false
// when v is not one, or does not decode (r's fields are then partial). It
// reads the bytes by index rather than through decoder, with the one-byte
// varints (most counts, lengths and indexes) read in line: an aggregate
// over the head decodes millions of values.
func (r *rawRow) decodeSelected(v []byte, keep func([]byte) bool) bool {
	r.versions = r.versions[:0]
	r.fields = r.fields[:0]
	seq, i := uvarintAt(v, 0)
	if i < 0 {
		return false
	}
	r.seq = seq
	nv, i := uvarintAt(v, i)
	if i < 0 || nv > uint64((len(v)-i)/9) { // a version takes at least 9 bytes
		return false
	}
	for range nv {
		// The wall's varint ends at its first byte below 0x80; the node
		// takes 8 more.
		j := i
		for j < len(v) && j-i < binary.MaxVarintLen64 && v[j] >= 0x80 {
			j++
		}
		if j >= len(v) || j-i >= binary.MaxVarintLen64 || j-i == binary.MaxVarintLen64-1 && v[j] > 1 {
			return false // binary.Varint's overflow
		}
		if i = j + 9; i > len(v) {
			return false
		}
	}
	nf, i := uvarintAt(v, i)
	if i < 0 || nf > uint64((len(v)-i)/4) { // a field takes at least 4 bytes
		return false
	}
	for range nf {
		var f rawField
		// The name's length and the version index, read in line when one
		// byte each (uvarintAt is over the inlining budget).
		l, j := uint64(0), i
		if j < len(v) && v[j] < 0x80 {
			l, j = uint64(v[j]), j+1
		} else if l, j = uvarintSlow(v, i); j < 0 {
			return false
		}
		if l > uint64(len(v)-j) {
			return false
		}
		f.name, i = v[j:j+int(l):j+int(l)], j+int(l)
		vi := uint64(0)
		if j = i; j < len(v) && v[j] < 0x80 {
			vi, j = uint64(v[j]), j+1
		} else if vi, j = uvarintSlow(v, i); j < 0 {
			return false
		}
		if vi >= nv || j >= len(v) {
			return false
		}
		f.ver, f.kind, i = int(vi), model.Kind(v[j]), j+1
		switch f.kind {
		case model.KindFloat:
			if len(v)-i < 8 {
				return false
			}
			f.num, i = binary.LittleEndian.Uint64(v[i:]), i+8
		case model.KindInt:
			x, n := binary.Varint(v[i:])
			if n <= 0 {
				return false
			}
			f.num, i = uint64(x), i+n
		case model.KindBool:
			if i >= len(v) || v[i] > 1 {
				return false
			}
			f.num, i = uint64(v[i]), i+1
		case model.KindString:
			l, j := uvarintAt(v, i)
			if j < 0 || l > uint64(len(v)-j) {
				return false
			}
			f.str, i = v[j:j+int(l):j+int(l)], j+int(l)
		case model.KindDeleted:
		default:
			return false
		}
		if keep == nil || keep(f.name) {
			r.fields = append(r.fields, f)
		}
	}
	return i == len(v)
}

// uvarintAt reads the uvarint at b[i:] and returns it with the index past
// it, or -1 if there is none; a one-byte one without a call.
func uvarintAt(b []byte, i int) (uint64, int) {
	if i < len(b) && b[i] < 0x80 {
		return uint64(b[i]), i + 1
	}
	return uvarintSlow(b, i)
}

// uvarintSlow is uvarintAt's call of binary.Uvarint.
func uvarintSlow(b []byte, i int) (uint64, int) {
	x, n := binary.Uvarint(b[i:])
	if n <= 0 {
		return 0, -1
	}
	return x, i + n
}

// decoder reads the primitives of a row value; the first error sticks and
// later reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = corrupt(what)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) varint() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

// count reads a uvarint element count and checks it against the bytes
// left, given the smallest encoded size of one element.
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/minSize) {
		d.fail("count exceeds value length")
		return 0
	}
	return int(n)
}

func (d *decoder) fixed64() uint64 {
	if len(d.b) < 8 {
		d.fail("truncated fixed64")
		return 0
	}
	x := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return x
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("truncated byte")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("truncated bytes")
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

// encField is one field to encode, taken either from an incoming
// model.Field (nameS, strS) or from a stored rawField (nameB, strB); the
// other pair is empty, so encoding needs no conversion.
type encField struct {
	nameS string
	nameB []byte
	ver   model.Version
	kind  model.Kind
	num   uint64
	strS  string
	strB  []byte
}

// encFromModel converts an incoming field. The kind must be valid.
func encFromModel(f *model.Field) encField {
	e := encField{nameS: f.Name, ver: f.Version, kind: f.Value.Kind}
	switch f.Value.Kind {
	case model.KindFloat:
		e.num = math.Float64bits(f.Value.F)
	case model.KindInt:
		e.num = uint64(f.Value.I)
	case model.KindBool:
		if f.Value.I != 0 {
			e.num = 1
		}
	case model.KindString:
		e.strS = f.Value.S
	}
	return e
}

// encFromRaw converts a stored field of r.
func encFromRaw(r *rawRow, f *rawField) encField {
	return encField{nameB: f.name, ver: r.versions[f.ver], kind: f.kind, num: f.num, strB: f.str}
}

// valueEncoder encodes row values, reusing its version table between rows.
type valueEncoder struct {
	vers   []model.Version
	idx    []int
	verMap map[model.Version]int
}

// mapVersionsAbove is the table size past which versions are looked up in a
// map instead of by a linear search.
const mapVersionsAbove = 16

// appendValue appends the encoding of a row value. fields must be sorted by
// name without duplicates.
func (e *valueEncoder) appendValue(dst []byte, seq uint64, fields []encField) []byte {
	return e.appendValueBody(binary.AppendUvarint(dst, seq), fields)
}

// appendValueBody appends what follows a value's sequence: its version
// table and fields.
func (e *valueEncoder) appendValueBody(dst []byte, fields []encField) []byte {
	e.buildVersionTable(fields)
	dst = binary.AppendUvarint(dst, uint64(len(e.vers)))
	for _, v := range e.vers {
		dst = binary.AppendVarint(dst, v.Wall)
		dst = binary.LittleEndian.AppendUint64(dst, v.Node)
	}
	dst = binary.AppendUvarint(dst, uint64(len(fields)))
	for i := range fields {
		f := &fields[i]
		dst = binary.AppendUvarint(dst, uint64(len(f.nameS)+len(f.nameB)))
		dst = append(dst, f.nameS...)
		dst = append(dst, f.nameB...)
		dst = binary.AppendUvarint(dst, uint64(e.idx[i]))
		dst = append(dst, byte(f.kind))
		switch f.kind {
		case model.KindFloat:
			dst = binary.LittleEndian.AppendUint64(dst, f.num)
		case model.KindInt:
			dst = binary.AppendVarint(dst, int64(f.num))
		case model.KindBool:
			dst = append(dst, byte(f.num))
		case model.KindString:
			dst = binary.AppendUvarint(dst, uint64(len(f.strS)+len(f.strB)))
			dst = append(dst, f.strS...)
			dst = append(dst, f.strB...)
		}
	}
	return dst
}

// buildVersionTable fills e.vers with the distinct versions of fields in
// order of first use and e.idx with each field's index into it.
func (e *valueEncoder) buildVersionTable(fields []encField) {
	e.vers = e.vers[:0]
	e.idx = e.idx[:0]
	clear(e.verMap)
	last := -1
	for i := range fields {
		v := fields[i].ver
		if last >= 0 && e.vers[last] == v {
			e.idx = append(e.idx, last)
			continue
		}
		last = e.findVersion(v)
		e.idx = append(e.idx, last)
	}
}

func (e *valueEncoder) findVersion(v model.Version) int {
	if len(e.vers) <= mapVersionsAbove {
		for j, w := range e.vers {
			if w == v {
				return j
			}
		}
	} else if j, ok := e.verMap[v]; ok {
		return j
	}
	e.vers = append(e.vers, v)
	j := len(e.vers) - 1
	if len(e.vers) > mapVersionsAbove {
		if e.verMap == nil {
			e.verMap = make(map[model.Version]int)
		}
		if len(e.verMap) == 0 {
			for k, w := range e.vers {
				e.verMap[w] = k
			}
		}
		e.verMap[v] = j
	}
	return j
}

// interner hands out one string per distinct byte sequence, so decoding
// many rows allocates each field name and series once per query.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

// stringSlab makes strings carved from larger allocations, so that a
// walk over many series (an aggregate at 100,000 series names each one it
// meets) allocates once per few thousand bytes instead of once per name.
// A string made so keeps its whole chunk alive as long as it is held.
// The chunks double from stringSlabFirst to stringSlabSize, so that a
// walk meeting one series makes one small chunk: with 16 KiB from the
// first name, a one-series aggregate allocated two thirds of its bytes
// here (the peer harness's series_count at 100,000 series, stop 65).
type stringSlab struct {
	buf []byte
}

const (
	stringSlabFirst = 256
	stringSlabSize  = 16 << 10
)

// make returns a string holding b's bytes.
func (s *stringSlab) make(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(s.buf)-len(s.buf) < len(b) {
		if len(b) > stringSlabSize/4 {
			return string(b)
		}
		n := min(max(2*cap(s.buf), stringSlabFirst), stringSlabSize)
		for n < len(b) {
			n *= 2 // at most stringSlabSize: b is at most a quarter of it
		}
		s.buf = make([]byte, 0, n)
	}
	start := len(s.buf)
	s.buf = append(s.buf, b...)
	// The bytes of s.buf below its length are never written again: a new
	// chunk is made rather than the old one reused.
	return unsafe.String(&s.buf[start], len(b))
}

// fieldSlab hands out field slices carved from larger allocations, so a
// scan allocates once per few hundred fields instead of once per row.
type fieldSlab struct {
	buf []model.Field
	// used counts the fields taken since the last reset.
	used int
	// arena, when set, lends the larger allocations (a query's
	// model.RowArena); reset is then never called.
	arena *model.RowArena
}

const fieldSlabSize = 512

// take returns an empty slice with capacity n; appending past n never
// touches another row's fields.
func (s *fieldSlab) take(n int) []model.Field {
	if cap(s.buf)-len(s.buf) < n {
		if s.arena != nil {
			s.buf = s.arena.Fields(max(fieldSlabSize, n))
		} else {
			s.buf = make([]model.Field, 0, max(fieldSlabSize, n))
		}
	}
	start := len(s.buf)
	s.buf = s.buf[:start+n]
	s.used += n
	return s.buf[start : start : start+n]
}

// reset hands the slab's memory out again: the caller no longer holds any
// field taken from it. The next takes start over in one buffer large
// enough for all the fields taken since the last reset, so a caller that
// takes about as many between resets (a seal, a series at a time)
// allocates once instead of a buffer every fieldSlabSize fields.
func (s *fieldSlab) reset() {
	if s.used > cap(s.buf) {
		s.buf = make([]model.Field, 0, s.used)
	}
	s.buf, s.used = s.buf[:0], 0
}

// toModelRow converts a decoded value into a model.Row. With a non-nil
// keep, only the fields it accepts are returned; with live, tombstones
// (model.KindDeleted) are left out (readers), without it they are kept
// (the log, which pushes them).
func toModelRow(series string, t int64, r *rawRow, names interner, keep func([]byte) bool, live bool, slab *fieldSlab) model.Row {
	n := 0
	for i := range r.fields {
		if (keep == nil || keep(r.fields[i].name)) && !(live && r.fields[i].kind == model.KindDeleted) {
			n++
		}
	}
	row := model.Row{Time: t, Series: series}
	if n == 0 {
		return row
	}
	row.Fields = slab.take(n)
	for i := range r.fields {
		f := &r.fields[i]
		if (keep != nil && !keep(f.name)) || (live && f.kind == model.KindDeleted) {
			continue
		}
		row.Fields = append(row.Fields, model.Field{Name: names.get(f.name), Value: f.value(), Version: r.versions[f.ver]})
	}
	return row
}

// hasLiveField reports whether r holds a field that keep accepts (nil:
// every field) and that is not a tombstone: a row without one is absent
// to readers (Scan, Aggregate).
func hasLiveField(r *rawRow, keep func([]byte) bool) bool {
	for i := range r.fields {
		f := &r.fields[i]
		if f.kind != model.KindDeleted && (keep == nil || keep(f.name)) {
			return true
		}
	}
	return false
}
