package replication

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tsdb/tsdb/model"
)

// Binary encodings of rows (pushes, forwarded inserts, raw sub-query
// answers) and of partial aggregate states (aggregate sub-query answers).
// They are specified in doc.go; all integers are varints unless said
// otherwise and floats keep their exact bits.

const (
	rowsMagic = 'R'
	aggsMagic = 'A'
	// formatV1 is the only format version so far.
	formatV1 = 1
)

// Tag byte of an encoded field: the value kind in the low bits plus flags.
const (
	tagSameVersion = 0x80 // the version is the previous field's (in the stream)
	tagSameName    = 0x40 // the name is the one at the same index in the previous row
	tagKindMask    = 0x0f
	tagReserved    = 0x30 // must be zero
)

// Smallest encodings, used to bound counts by the bytes that remain.
const (
	minRowSize       = 3  // time, series, field count
	minFieldSize     = 1  // tag (a tombstone has no payload)
	minSeriesAggSize = 2  // series length, bucket count
	minBucketSize    = 2  // start, field count
	minFieldAggSize  = 47 // name length and the fixed part of a state
)

// fieldSlabSize is how many fields DecodeRows allocates at once.
const fieldSlabSize = 256

// AppendRows appends the encoding of rows to dst and returns the extended
// buffer. Every field's name, value (all kinds, floats bit-exact) and
// version is kept. Rows are expected to hold valid kinds (model.Row.Validate);
// a field of another kind is encoded as is and rejected by DecodeRows.
func AppendRows(dst []byte, rows []model.Row) []byte {
	dst = append(dst, rowsMagic, formatV1)
	dst = binary.AppendUvarint(dst, uint64(len(rows)))
	var e rowEncoder
	for i := range rows {
		dst = e.appendRow(dst, &rows[i])
	}
	return dst
}

// rowEncoder holds the state that later rows are encoded against.
type rowEncoder struct {
	prevTime   int64
	prevSeries string
	prevFields []model.Field
	prevVer    model.Version
}

func (e *rowEncoder) appendRow(dst []byte, r *model.Row) []byte {
	dst = binary.AppendVarint(dst, r.Time-e.prevTime) // wraps; decoding wraps back
	e.prevTime = r.Time
	if r.Series == e.prevSeries {
		dst = append(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(len(r.Series))+1)
		dst = append(dst, r.Series...)
		e.prevSeries = r.Series
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Fields)))
	for j := range r.Fields {
		dst = e.appendField(dst, j, &r.Fields[j])
	}
	e.prevFields = r.Fields
	return dst
}

func (e *rowEncoder) appendField(dst []byte, j int, f *model.Field) []byte {
	tag := byte(f.Value.Kind) & tagKindMask
	sameName := j < len(e.prevFields) && e.prevFields[j].Name == f.Name
	if sameName {
		tag |= tagSameName
	}
	sameVer := f.Version == e.prevVer
	if sameVer {
		tag |= tagSameVersion
	}
	dst = append(dst, tag)
	if !sameName {
		dst = binary.AppendUvarint(dst, uint64(len(f.Name)))
		dst = append(dst, f.Name...)
	}
	if !sameVer {
		dst = binary.AppendVarint(dst, f.Version.Wall)
		dst = binary.LittleEndian.AppendUint64(dst, f.Version.Node)
		e.prevVer = f.Version
	}
	return appendValue(dst, f.Value)
}

func appendValue(dst []byte, v model.Value) []byte {
	switch v.Kind {
	case model.KindFloat:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.F))
	case model.KindInt:
		return binary.AppendVarint(dst, v.I)
	case model.KindBool:
		if v.I != 0 {
			return append(dst, 1)
		}
		return append(dst, 0)
	case model.KindString:
		dst = binary.AppendUvarint(dst, uint64(len(v.S)))
		return append(dst, v.S...)
	}
	return dst // model.KindDeleted: no payload
}

// DecodeRows decodes an AppendRows encoding. It is strict: truncated or
// malformed input, an unknown kind or format, a bool other than 0 or 1 and
// trailing bytes fail with an error wrapping ErrCorrupt. It never panics,
// and counts are checked against the bytes that remain before anything is
// allocated for them, so allocations stay proportional to len(b).
//
// b is copied once; every string of the result (series, names, string
// values) shares that copy, so b may be reused as soon as DecodeRows
// returns, and the copy lives as long as any of the strings.
func DecodeRows(b []byte) ([]model.Row, error) {
	d := decoder{s: string(b)}
	d.header(rowsMagic)
	n := d.count(minRowSize)
	if d.err != nil {
		return nil, d.err
	}
	rows := make([]model.Row, n)
	var st rowDecoder
	for i := range rows {
		if !st.decodeRow(&d, &rows[i]) {
			return nil, d.err
		}
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return rows, nil
}

// rowDecoder mirrors rowEncoder.
type rowDecoder struct {
	prevTime   int64
	prevSeries string
	prevFields []model.Field
	prevVer    model.Version
	slab       []model.Field
}

func (st *rowDecoder) decodeRow(d *decoder, r *model.Row) bool {
	st.prevTime += d.varint()
	r.Time = st.prevTime
	if n := d.uvarint(); n > 0 {
		st.prevSeries = d.str(n - 1)
	}
	r.Series = st.prevSeries
	nf := d.count(minFieldSize)
	if d.err != nil {
		return false
	}
	r.Fields = st.take(nf, d.remaining()/minFieldSize)
	for j := range r.Fields {
		if !st.decodeField(d, j, &r.Fields[j]) {
			return false
		}
	}
	st.prevFields = r.Fields
	return true
}

// take returns n fields from a slab, so that rows share few allocations.
// limit is the most fields the remaining input can hold (n included), so
// a slab never outgrows the input.
func (st *rowDecoder) take(n, limit int) []model.Field {
	if n == 0 {
		return nil
	}
	if len(st.slab) < n {
		st.slab = make([]model.Field, max(n, min(fieldSlabSize, limit)))
	}
	out := st.slab[:n:n]
	st.slab = st.slab[n:]
	return out
}

func (st *rowDecoder) decodeField(d *decoder, j int, f *model.Field) bool {
	tag := d.byte()
	if tag&tagReserved != 0 {
		d.fail("reserved tag bits set")
		return false
	}
	if tag&tagSameName != 0 {
		if j >= len(st.prevFields) {
			d.fail("field name refers past the previous row")
			return false
		}
		f.Name = st.prevFields[j].Name
	} else {
		f.Name = d.str(d.uvarint())
	}
	if tag&tagSameVersion == 0 {
		st.prevVer = model.Version{Wall: d.varint(), Node: d.fixed64()}
	}
	f.Version = st.prevVer
	f.Value = d.value(model.Kind(tag & tagKindMask))
	return d.err == nil
}

// AppendAggs appends the encoding of partial aggregate results to dst and
// returns the extended buffer. Every field of every model.AggState is kept,
// floats bit-exact (±Inf min/max of empty numeric states, NaN, −0).
func AppendAggs(dst []byte, aggs []model.SeriesAgg) []byte {
	dst = append(dst, aggsMagic, formatV1)
	dst = binary.AppendUvarint(dst, uint64(len(aggs)))
	for i := range aggs {
		s := &aggs[i]
		dst = appendString(dst, s.Series)
		dst = binary.AppendUvarint(dst, uint64(len(s.Buckets)))
		var prevStart int64
		for j := range s.Buckets {
			b := &s.Buckets[j]
			dst = binary.AppendVarint(dst, b.Start-prevStart)
			prevStart = b.Start
			dst = binary.AppendUvarint(dst, uint64(len(b.Fields)))
			for k := range b.Fields {
				dst = appendString(dst, b.Fields[k].Name)
				dst = appendState(dst, s.Series, &b.Fields[k].State)
			}
		}
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendState encodes one state. FirstSeries and LastSeries are written as
// 0 when they equal the enclosing series (the common case of
// group=series), else as length+1 and the bytes.
func appendState(dst []byte, series string, st *model.AggState) []byte {
	dst = binary.AppendVarint(dst, st.Count)
	dst = binary.AppendVarint(dst, st.N)
	dst = appendFloat(dst, st.Sum)
	dst = appendFloat(dst, st.Min)
	dst = appendFloat(dst, st.Max)
	dst = binary.AppendVarint(dst, st.FirstTime)
	dst = appendSeriesRef(dst, series, st.FirstSeries)
	dst = appendFloat(dst, st.First)
	dst = binary.AppendVarint(dst, st.LastTime)
	dst = appendSeriesRef(dst, series, st.LastSeries)
	return appendFloat(dst, st.Last)
}

func appendFloat(dst []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
}

func appendSeriesRef(dst []byte, series, s string) []byte {
	if s == series {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(s))+1)
	return append(dst, s...)
}

// DecodeAggs decodes an AppendAggs encoding, with the same strictness,
// bounds and string sharing as DecodeRows.
func DecodeAggs(b []byte) ([]model.SeriesAgg, error) {
	d := decoder{s: string(b)}
	d.header(aggsMagic)
	n := d.count(minSeriesAggSize)
	if d.err != nil {
		return nil, d.err
	}
	out := make([]model.SeriesAgg, n)
	for i := range out {
		if !decodeSeriesAgg(&d, &out[i]) {
			return nil, d.err
		}
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return out, nil
}

func decodeSeriesAgg(d *decoder, s *model.SeriesAgg) bool {
	s.Series = d.str(d.uvarint())
	nb := d.count(minBucketSize)
	if d.err != nil {
		return false
	}
	s.Buckets = make([]model.BucketAgg, nb)
	var prevStart int64
	for j := range s.Buckets {
		b := &s.Buckets[j]
		prevStart += d.varint()
		b.Start = prevStart
		nf := d.count(minFieldAggSize)
		if d.err != nil {
			return false
		}
		b.Fields = make([]model.FieldAgg, nf)
		for k := range b.Fields {
			b.Fields[k].Name = d.str(d.uvarint())
			decodeState(d, s.Series, &b.Fields[k].State)
			if d.err != nil {
				return false
			}
		}
	}
	return true
}

func decodeState(d *decoder, series string, st *model.AggState) {
	st.Count = d.varint()
	st.N = d.varint()
	st.Sum = d.float()
	st.Min = d.float()
	st.Max = d.float()
	st.FirstTime = d.varint()
	st.FirstSeries = d.seriesRef(series)
	st.First = d.float()
	st.LastTime = d.varint()
	st.LastSeries = d.seriesRef(series)
	st.Last = d.float()
}

// decoder reads an encoding from a string (one copy of the input, which
// every decoded string shares). After the first failure it records the
// error, jumps to the end and returns zero values, so callers may check
// d.err once per row or bucket.
type decoder struct {
	s   string
	off int
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d", ErrCorrupt, what, d.off)
	}
	d.off = len(d.s)
}

func (d *decoder) header(magic byte) {
	if len(d.s) < 2 {
		d.fail("truncated header")
		return
	}
	if d.s[0] != magic {
		d.fail(fmt.Sprintf("magic byte %#x, want %#x", d.s[0], magic))
		return
	}
	if d.s[1] != formatV1 {
		d.fail(fmt.Sprintf("unknown format version %d", d.s[1]))
		return
	}
	d.off = 2
}

func (d *decoder) finish() error {
	if d.err == nil && d.off != len(d.s) {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.s)-d.off))
	}
	return d.err
}

func (d *decoder) remaining() int { return len(d.s) - d.off }

func (d *decoder) uvarint() uint64 {
	var x uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.off >= len(d.s) {
			d.fail("truncated varint")
			return 0
		}
		c := d.s[d.off]
		d.off++
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	d.fail("varint overflows 64 bits")
	return 0
}

func (d *decoder) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// count reads a count whose items take at least minSize bytes each and
// rejects one that the remaining input cannot hold.
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if n > uint64(d.remaining()/minSize) {
		d.fail(fmt.Sprintf("count %d exceeds the remaining %d bytes", n, d.remaining()))
		return 0
	}
	return int(n)
}

func (d *decoder) byte() byte {
	if d.off >= len(d.s) {
		d.fail("truncated")
		return 0
	}
	c := d.s[d.off]
	d.off++
	return c
}

func (d *decoder) fixed64() uint64 {
	if d.remaining() < 8 {
		d.fail("truncated fixed64")
		return 0
	}
	s := d.s[d.off : d.off+8]
	d.off += 8
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func (d *decoder) float() float64 { return math.Float64frombits(d.fixed64()) }

func (d *decoder) str(n uint64) string {
	if n > uint64(d.remaining()) {
		d.fail(fmt.Sprintf("string of %d bytes exceeds the remaining %d", n, d.remaining()))
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

func (d *decoder) seriesRef(series string) string {
	n := d.uvarint()
	if n == 0 {
		return series
	}
	return d.str(n - 1)
}

func (d *decoder) value(k model.Kind) model.Value {
	switch k {
	case model.KindFloat:
		return model.Float(d.float())
	case model.KindInt:
		return model.Int(d.varint())
	case model.KindBool:
		switch d.byte() {
		case 0:
			return model.Bool(false)
		case 1:
			return model.Bool(true)
		}
		d.fail("bool is neither 0 nor 1")
	case model.KindString:
		return model.String(d.str(d.uvarint()))
	case model.KindDeleted:
		return model.Deleted() // a tombstone has no payload
	default:
		d.fail(fmt.Sprintf("unknown value kind %d", k))
	}
	return model.Value{}
}
