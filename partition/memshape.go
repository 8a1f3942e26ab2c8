package partition

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/tsdb/tsdb/model"
)

// Row shapes of the memory head (docs/storage-format.md, "Memory head"):
// the rows of one series mostly carry the same fields of the same kinds,
// so their values differ only in the sequence, the versions and the
// fields' payloads. A memSeries keeps the layout of the field section
// (the value after its versions) of the first row that has one
// (rowShape). A row whose value is checked, when it is put into memory,
// to be one operand with exactly that layout is kept compact: its
// sequence and versions, then its payloads back to back, without the
// field names, version indexes and kinds its shape holds (rowShape.compact;
// the harness's rows take 24 bytes of payloads instead of a 64-byte field
// section), and marked (memRowShaped). Readers that need the value
// expand it (memCursor.Value, memSeries.appendValue); a reader of values
// only (an aggregate, a scan) reads the payloads where the shape says,
// without decoding the value: decoding was 70% of an aggregate over the
// memory head (stop 41's profile).

// memRowShaped marks, in memRow.n, a row whose value is one operand with
// its series' shape (memSeries.shape), kept compact: n is then the
// compact form's length. A value's length is below it.
const memRowShaped = 1 << 30

// maxShapeFields bounds the fields of a shape: a row of more is decoded.
const maxShapeFields = 64

// rowShape is the layout of a value's field section: the template (the
// section with its payloads zeroed), the spans of it that every matching
// value repeats (the field count and each field's name, version index
// and kind), and where each field's payload lies. Immutable once made.
type rowShape struct {
	tmpl []byte
	// minVersions is the largest version index in tmpl plus one: a value
	// with fewer versions does not match.
	minVersions uint64
	spans       []shapeSpan
	fields      []rowShapeField
	// payLen is the length of the payloads, back to back: what a stored
	// row keeps of its field section.
	payLen int
}

// shapeSpan is a span of the field section, [from, to).
type shapeSpan struct{ from, to int }

// rowShapeField is one field of a shape: its name (in tmpl), its kind and
// its payload's span in the field section.
type rowShapeField struct {
	name    []byte
	nameAt  int // name's offset in tmpl
	ver     int // the index of its version in the value's
	kind    model.Kind
	off, to int // its payload's span in the field section
	poff    int // its payload's offset in a stored row's payloads
}

// fieldSection returns the offset of the field section of a row value
// (past its sequence and versions) and its version count; false when v
// does not hold them.
func fieldSection(v []byte) (int, uint64, bool) {
	_, i := uvarintAt(v, 0)
	if i < 0 {
		return 0, 0, false
	}
	nv, i := uvarintAt(v, i)
	if i < 0 || nv > uint64((len(v)-i)/9) { // a version takes at least 9 bytes
		return 0, 0, false
	}
	for range nv {
		_, n := binary.Varint(v[i:])
		if n <= 0 || len(v)-i-n < 8 {
			return 0, 0, false
		}
		i += n + 8 // the wall, then the node
	}
	return i, nv, true
}

// newRowShape returns the shape of row value v, or nil when v has none:
// not one well-formed operand, a string field (its payload's length
// varies), or more than maxShapeFields fields. The shape copies what it
// keeps of v.
func newRowShape(v []byte) *rowShape {
	sh := &rowShape{}
	if !sh.parse(v) {
		return nil
	}
	return sh.clone()
}

// parse makes sh the shape of row value v, reusing its slices; false
// when v has none (newRowShape).
func (sh *rowShape) parse(v []byte) bool {
	if len(v) >= memRowShaped {
		return false
	}
	p, nv, ok := fieldSection(v)
	if !ok {
		return false
	}
	sect := v[p:]
	nf, i := uvarintAt(sect, 0)
	if i < 0 || nf > maxShapeFields {
		return false
	}
	sh.tmpl = append(sh.tmpl[:0], sect...)
	sh.minVersions, sh.spans, sh.fields, sh.payLen = 0, sh.spans[:0], sh.fields[:0], 0
	from := 0
	for range nf {
		l, j := uvarintAt(sect, i)
		if j < 0 || l > uint64(len(sect)-j) {
			return false
		}
		at := j
		name := sh.tmpl[at : at+int(l) : at+int(l)]
		vi, j := uvarintAt(sect, at+int(l))
		if j < 0 || vi >= nv || j >= len(sect) {
			return false
		}
		kind := model.Kind(sect[j])
		j++
		var to int
		switch kind {
		case model.KindFloat:
			to = j + 8
		case model.KindInt:
			_, n := binary.Varint(sect[j:])
			if n <= 0 {
				return false
			}
			to = j + n
		case model.KindBool:
			if j >= len(sect) || sect[j] > 1 {
				return false
			}
			to = j + 1
		case model.KindDeleted:
			to = j
		default: // a string, or no kind at all
			return false
		}
		if to > len(sect) {
			return false
		}
		sh.minVersions = max(sh.minVersions, vi+1)
		if j > from {
			sh.spans = append(sh.spans, shapeSpan{from, j})
		}
		sh.fields = append(sh.fields, rowShapeField{name: name, nameAt: at, ver: int(vi), kind: kind, off: j, to: to, poff: sh.payLen})
		sh.payLen += to - j
		from, i = to, to
	}
	if i != len(sect) {
		return false
	}
	// The payloads zeroed: the template is then the same for every value
	// of the shape (shapeTable's key).
	for _, f := range sh.fields {
		clear(sh.tmpl[f.off:f.to])
	}
	return true
}

// clone returns a copy of sh that shares nothing with it.
func (sh *rowShape) clone() *rowShape {
	c := &rowShape{tmpl: slices.Clone(sh.tmpl), minVersions: sh.minVersions, spans: slices.Clone(sh.spans), fields: slices.Clone(sh.fields), payLen: sh.payLen}
	for i := range c.fields {
		f := &c.fields[i]
		f.name = c.tmpl[f.nameAt : f.nameAt+len(f.name) : f.nameAt+len(f.name)]
	}
	return c
}

// matches reports whether row value v is one operand with shape sh: its
// field section as long as the template's, the same bytes in every span,
// and a well-formed payload in each field's span. That is a parse of v
// directed by the template: v decodes to the template's fields, with the
// payloads at the template's offsets. It returns the offset of v's field
// section.
func (sh *rowShape) matches(v []byte) (int, bool) {
	if len(v) < len(sh.tmpl) || len(v) >= memRowShaped {
		return 0, false
	}
	p, nv, ok := fieldSection(v)
	if !ok || len(v)-p != len(sh.tmpl) || nv < sh.minVersions {
		return 0, false
	}
	sect := v[p:]
	for _, s := range sh.spans {
		if string(sect[s.from:s.to]) != string(sh.tmpl[s.from:s.to]) {
			return 0, false
		}
	}
	for i := range sh.fields {
		switch f := &sh.fields[i]; f.kind {
		case model.KindInt:
			if _, n := binary.Varint(sect[f.off:f.to]); n != f.to-f.off {
				return 0, false
			}
		case model.KindBool:
			if sect[f.off] > 1 {
				return 0, false
			}
		}
	}
	return p, true
}

// compact appends to dst what a row of shape sh keeps in memory of value
// v, whose field section starts at p (matches): the value before its
// field section (sequence and versions), then the fields' payloads back
// to back. The names, version indexes and kinds are the shape's.
func (sh *rowShape) compact(dst, v []byte, p int) []byte {
	dst = append(dst, v[:p]...)
	for i := range sh.fields {
		f := &sh.fields[i]
		dst = append(dst, v[p+f.off:p+f.to]...)
	}
	return dst
}

// expand appends to dst the row value that c, a row of shape sh as
// compact keeps it, was made from.
func (sh *rowShape) expand(dst, c []byte) []byte {
	pre := len(c) - sh.payLen
	dst = append(dst, c[:pre]...)
	at := len(dst)
	dst = append(dst, sh.tmpl...)
	pays := c[pre:]
	for i := range sh.fields {
		f := &sh.fields[i]
		copy(dst[at+f.off:at+f.to], pays[f.poff:])
	}
	return dst
}

// valueLen returns the length of the value that a row of shape sh kept
// in n bytes (compact) was made from.
func (sh *rowShape) valueLen(n uint32) uint32 {
	return n - uint32(sh.payLen) + uint32(len(sh.tmpl))
}

// shapeTable interns the shapes of a memory head, so that the series of
// one schema share one (at 100,000 series a shape each would take tens of
// MB a storage bucket). Under the head's mu.
type shapeTable struct {
	m       map[string]*rowShape
	scratch rowShape // shapeOf's parse, cloned when new
	buf     []byte   // memSeries.add's overwrite scratch
}

// maxShapes bounds a shapeTable; a shape past it is the series' own.
const maxShapes = 4096

// shapeOf returns the shape of row value v (newRowShape), interned.
func (t *shapeTable) shapeOf(v []byte) *rowShape {
	if !t.scratch.parse(v) {
		return nil
	}
	if sh := t.m[string(t.scratch.tmpl)]; sh != nil {
		return sh
	}
	sh := t.scratch.clone()
	if t.m == nil {
		t.m = map[string]*rowShape{}
	}
	if len(t.m) < maxShapes {
		t.m[string(sh.tmpl)] = sh
	}
	return sh
}

// shapeFor returns the offset of row value v's field section when v has
// s's shape; false when it has none. A series without a shape takes hint
// (its shape in the bucket before; nil: none) when v matches it, else the
// shape of v (made and interned in shapes): a series of a bucket after
// the first parses no value for it. The caller holds mu (views read
// s.shape under its read lock).
func (s *memSeries) shapeFor(v []byte, shapes *shapeTable, hint *rowShape) (int, bool) {
	if s.shape == nil {
		if hint != nil {
			if p, ok := hint.matches(v); ok {
				s.shape = hint
				return p, true
			}
		}
		if s.shape = shapes.shapeOf(v); s.shape == nil {
			return 0, false
		}
	}
	return s.shape.matches(v)
}

// payload returns field f's value in pays, the payloads of a stored row
// of f's shape (compact).
func (f *rowShapeField) payload(pays []byte) model.Value {
	switch f.kind {
	case model.KindFloat:
		return model.Value{Kind: model.KindFloat, F: f.float(pays)}
	case model.KindInt:
		x, _ := binary.Varint(pays[f.poff : f.poff+f.to-f.off])
		return model.Value{Kind: model.KindInt, I: x}
	case model.KindBool:
		return model.Value{Kind: model.KindBool, I: int64(pays[f.poff])}
	}
	return model.Deleted()
}

// float returns float field f's value in pays (payload).
func (f *rowShapeField) float(pays []byte) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(pays[f.poff:]))
}

// decodeVersions decodes the sequence and versions of row value v into r
// (its fields are left empty), and returns the offset of v's field
// section; false when v does not hold them. For a value with a shape,
// whose fields are read at the shape's offsets.
func (r *rawRow) decodeVersions(v []byte) (int, bool) {
	r.versions, r.fields = r.versions[:0], r.fields[:0]
	seq, i := uvarintAt(v, 0)
	if i < 0 {
		return 0, false
	}
	r.seq = seq
	nv, i := uvarintAt(v, i)
	if i < 0 || nv > uint64((len(v)-i)/9) {
		return 0, false
	}
	for range nv {
		wall, n := binary.Varint(v[i:])
		if n <= 0 || len(v)-i-n < 8 {
			return 0, false
		}
		i += n
		r.versions = append(r.versions, model.Version{Wall: wall, Node: binary.LittleEndian.Uint64(v[i:])})
		i += 8
	}
	return i, true
}

// modelRow returns the row that c, a row of shape sh as compact keeps it,
// holds at time t: every field, tombstones included, in the value's
// order, as toModelRow (without keep or live) returns it from the
// expanded value, with no value expanded or parsed. names are sh's field
// names in order (interned by the caller); r is scratch for the versions.
// It reports false when c's sequence and versions do not decode.
func (sh *rowShape) modelRow(series string, t int64, c []byte, names []string, r *rawRow, slab *fieldSlab) (model.Row, bool) {
	pre := len(c) - sh.payLen
	if pre < 0 {
		return model.Row{}, false
	}
	if p, ok := r.decodeVersions(c[:pre]); !ok || p != pre || uint64(len(r.versions)) < sh.minVersions {
		return model.Row{}, false
	}
	pays := c[pre:]
	row := model.Row{Time: t, Series: series, Fields: slab.take(len(sh.fields))}
	for i := range sh.fields {
		f := &sh.fields[i]
		row.Fields = append(row.Fields, model.Field{Name: names[i], Value: f.payload(pays), Version: r.versions[f.ver]})
	}
	return row, true
}
