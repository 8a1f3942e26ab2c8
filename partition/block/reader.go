package block

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/colcodec"
)

// FieldInfo names a field of a block and its kind.
type FieldInfo struct {
	Name string
	// Kind is the kind of every value of the field in the block, or 0
	// when the block holds values of several kinds for it (tombstones
	// count as a kind: a float field with a tombstone is mixed).
	Kind model.Kind
}

// fieldDir is what Open learns of a field: enough to answer Fields and
// Summary and to find its columns without reading the other fields.
type fieldDir struct {
	info  FieldInfo
	flags byte
	sum   model.AggState
	// dsum is the summary's decimal form (flagDecimalSummary), whose sum
	// of mantissas is exact.
	dsum decimalSum
	body []byte // presence, kinds, values, versions (after the terms of a predicted field)
	// terms of a predicted field (flagPredicted), nterms of them: each a
	// field index << 1 | 1 when its coefficient is −1.
	terms  [maxPredictTerms]uint16
	nterms uint8
}

// decimalSum is what a decimal summary says of its column's mantissas.
type decimalSum struct {
	sum    int64  // the exact sum
	maxAbs uint64 // the greatest magnitude (of the least and the greatest)
	exp    uint8
	ok     bool // the summary is in the decimal form
}

// Reader reads one block. Open checks the checksum and reads the header,
// the field names, kinds and summaries; the columns are decoded on
// demand. A Reader is not safe for concurrent use (it keeps scratch
// buffers); Reset lets one be reused for another block without
// allocating.
type Reader struct {
	n         int
	min, max  int64
	summaries bool   // the field sections hold summaries (no flagNoSummaries)
	nf        int    // the header's field count
	times     []byte // the timestamps column
	rowVers   []byte // the block-level versions column, nil when absent
	fields    []fieldDir

	// Scratch buffers.
	scratch   Column
	rowVersS  []model.Version
	rowVersOK bool // rowVersS holds the decoded rowVers
	timesS    []int64
	counts    []int
	backing   []model.Field // the field array of the rows of the last Rows call
	termS     []int64       // a term's mantissas (predictedValues)
}

// Open checks b and returns a Reader of it. The Reader refers to b, which
// must not change while it is used.
func Open(b []byte) (*Reader, error) {
	r := new(Reader)
	if err := r.Reset(b); err != nil {
		return nil, err
	}
	return r, nil
}

// corrupt returns an ErrCorrupt error.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// Reset makes r read b, reusing r's buffers. After an error r holds no
// block (Len is 0, no fields).
func (r *Reader) Reset(b []byte) error {
	return r.resetChecked(b, true)
}

// ResetStored is Reset without the checksum, for a block read back from
// the server's own store, whose bytes are checked already: a block enters
// the store encoded by this server (a seal) or through Reset (a snapshot
// chunk), and pebble checks what it stores (every sstable block against
// its checksum when read from disk, the WAL's records at replay). The
// layout is checked as by Reset: a bad block is still ErrCorrupt, never a
// panic. The store's merged iterator (queries, checksums, row snapshots
// and chunks, re-seals) reads its blocks so; the checksum was 6% of an
// aggregate's CPU (docs/performance.md).
func (r *Reader) ResetStored(b []byte) error {
	return r.resetChecked(b, false)
}

func (r *Reader) resetChecked(b []byte, checksum bool) error {
	if err := r.reset(b, checksum); err != nil {
		r.fields, r.n, r.times, r.rowVers, r.summaries = r.fields[:0], 0, nil, nil, false
		return err
	}
	return nil
}

func (r *Reader) reset(b []byte, checksum bool) error {
	r.fields = r.fields[:0]
	r.n = 0
	r.rowVersOK = false
	if len(b) < 4 {
		return corrupt("%d bytes", len(b))
	}
	body := b[:len(b)-4]
	if checksum {
		if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
			return corrupt("checksum %08x, the block says %08x", got, want)
		}
	}
	d := decoder{b: body}
	if v := d.byte(); v != FormatVersion {
		return corrupt("format version %d (this build reads %d)", v, FormatVersion)
	}
	flags := d.byte()
	n := d.uvarint()
	r.min, r.max = int64(d.uint64()), int64(d.uint64())
	nf := d.uvarint()
	if d.err != nil {
		return d.err
	}
	switch {
	case flags&^headerFlagsAll != 0:
		return corrupt("header flags %#x", flags)
	case n == 0 || n > MaxRows:
		return corrupt("%d rows", n)
	case r.min > r.max || (n == 1 && r.min != r.max) || (n > 1 && r.min == r.max):
		return corrupt("time range [%d, %d] of %d rows", r.min, r.max, n)
	case nf == 0 || nf > MaxFields:
		return corrupt("%d fields", nf)
	case nf > uint64(len(d.b)):
		return corrupt("%d fields in %d bytes", nf, len(d.b))
	}
	r.n = int(n)
	r.summaries = flags&flagNoSummaries == 0
	r.times = d.bytes()
	if d.err == nil {
		// The timestamps column's own count (after its codec byte) must be
		// the header's: the column decoders trust it for their sizes.
		if len(r.times) < 2 {
			return corrupt("timestamps column of %d bytes", len(r.times))
		}
		if c, k := binary.Uvarint(r.times[1:]); k <= 0 || c != n {
			return corrupt("timestamps column of %d values in a block of %d rows", c, n)
		}
	}
	r.rowVers = nil
	if flags&flagRowVersions != 0 {
		r.rowVers = d.bytes()
	}
	prev := ""
	r.nf = int(nf)
	predicted := false
	for i := uint64(0); i < nf && d.err == nil; i++ {
		name := d.bytes()
		sec := d.bytes()
		if d.err != nil {
			break
		}
		if len(name) == 0 || len(name) > model.MaxFieldNameLen || (i > 0 && string(name) <= prev) {
			return corrupt("field %d: name %q after %q", i, name, prev)
		}
		// Parsed in place (parseField sets every member but the name,
		// which the slot keeps from the block before): a query at
		// 100,000 series opens a block of a few rows per series and
		// bucket, and copying the directory showed.
		if len(r.fields) < cap(r.fields) {
			r.fields = r.fields[:len(r.fields)+1]
		} else {
			r.fields = append(r.fields, fieldDir{})
		}
		fd := &r.fields[len(r.fields)-1]
		if err := r.parseField(fd, sec, flags); err != nil {
			return fmt.Errorf("field %q: %w", name, err)
		}
		if fd.info.Name != string(name) {
			fd.info.Name = string(name) // else a block of the same fields: no allocation, no pointer written
		}
		prev = fd.info.Name
		predicted = predicted || fd.nterms > 0
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return corrupt("%d trailing bytes", len(d.b))
	}
	if predicted {
		return r.checkTerms()
	}
	return nil
}

// checkTerms checks that every term of a predicted field names a field
// that every row has as a float and that is not predicted itself: the
// fields a reader decodes a predicted one from.
func (r *Reader) checkTerms() error {
	for i := range r.fields {
		fd := &r.fields[i]
		for _, t := range fd.terms[:fd.nterms] {
			p := &r.fields[t>>1]
			if p.nterms > 0 || !plainFloats(p, r.n) {
				return corrupt("field %q predicted from field %q, which is not a plain float column of every row", fd.info.Name, p.info.Name)
			}
		}
	}
	return nil
}

// plainFloats reports whether fd is a float in every one of n rows, of one
// kind, as a predicted field and its terms must be.
func plainFloats(fd *fieldDir, n int) bool {
	return fd.flags&(presenceMask|flagMixed) == presenceAll && fd.info.Kind == model.KindFloat && fd.sum.N == int64(n)
}

// parseField reads a field's flags, kind and summary into fd, setting
// every member but the name.
func (r *Reader) parseField(fd *fieldDir, sec []byte, blockFlags byte) error {
	d := decoder{b: sec}
	fd.flags = d.byte()
	kind := model.Kind(d.byte())
	cnt, num := d.uvarint(), d.uvarint()
	if d.err != nil {
		return d.err
	}
	switch {
	case fd.flags&^fieldFlagsAll != 0 || fd.flags&presenceMask > presenceRuns:
		return corrupt("field flags %#x", fd.flags)
	case fd.flags&flagMixed != 0 && kind != 0, fd.flags&flagMixed == 0 && (kind < model.KindFloat || kind > model.KindDeleted):
		return corrupt("kind %d with flags %#x", kind, fd.flags)
	case fd.flags&flagOwnVers == 0 && blockFlags&flagRowVersions == 0:
		return corrupt("version exceptions without a block version column")
	case num > cnt || cnt > uint64(r.n):
		return corrupt("summary of %d values, %d numeric, in %d rows", cnt, num, r.n)
	}
	fd.info.Kind = kind
	fd.sum = model.AggState{Count: int64(cnt), N: int64(num)}
	fd.dsum = decimalSum{}
	decimal := fd.flags&flagDecimalSummary != 0
	switch {
	case decimal && (num == 0 || !r.summaries || kind != model.KindFloat):
		return corrupt("a decimal summary of a field of kind %d, %d numeric values, summaries %v", kind, num, r.summaries)
	case decimal:
		if err := r.parseDecimalSummary(&d, &fd.sum, &fd.dsum); err != nil {
			return err
		}
	case num > 0 && r.summaries:
		if len(d.b) < summarySize {
			return corrupt("truncated summary")
		}
		var x [9]uint64
		for i := range x {
			x[i] = d.uint64()
		}
		s := &fd.sum
		s.Sum, s.Min, s.Max = math.Float64frombits(x[0]), math.Float64frombits(x[1]), math.Float64frombits(x[2])
		s.FirstTime, s.First = int64(x[3]), math.Float64frombits(x[4])
		s.LastTime, s.Last = int64(x[5]), math.Float64frombits(x[6])
		s.Mean, s.M2 = math.Float64frombits(x[7]), math.Float64frombits(x[8])
		if s.FirstTime < r.min || s.LastTime > r.max || s.FirstTime > s.LastTime {
			return corrupt("summary times [%d, %d] outside [%d, %d]", s.FirstTime, s.LastTime, r.min, r.max)
		}
	}
	fd.nterms = 0
	if fd.flags&flagPredicted != 0 {
		if err := r.parseTerms(fd, &d); err != nil {
			return err
		}
	}
	fd.body = d.b
	return nil
}

// parseTerms reads the terms of a predicted field (the encoder's
// rewritePredicted) from the start of its body.
func (r *Reader) parseTerms(fd *fieldDir, d *decoder) error {
	if !plainFloats(fd, r.n) {
		return corrupt("a predicted field of kind %d, flags %#x, %d floats in %d rows", fd.info.Kind, fd.flags, fd.sum.N, r.n)
	}
	t := d.uvarint()
	if d.err != nil {
		return d.err
	}
	if t == 0 || t > maxPredictTerms {
		return corrupt("a predicted field of %d terms", t)
	}
	self := uint64(len(r.fields) - 1)
	for i := range t {
		x := d.uvarint()
		if d.err != nil {
			return d.err
		}
		if idx := x >> 1; idx >= uint64(r.nf) || idx == self {
			return corrupt("term %d names field %d of %d (the field is %d)", i, idx, r.nf, self)
		}
		for _, prev := range fd.terms[:i] {
			if uint64(prev>>1) == x>>1 {
				return corrupt("term %d names field %d again", i, x>>1)
			}
		}
		fd.terms[i] = uint16(x)
	}
	fd.nterms = uint8(t)
	return nil
}

// parseDecimalSummary reads a summary in the decimal form (the encoder's
// decimalSummary) into s, whose Count and N are set, and its mantissas'
// sum and bound into ds.
func (r *Reader) parseDecimalSummary(d *decoder, s *model.AggState, ds *decimalSum) error {
	exp := d.byte()
	var m [5]int64 // sum, min, max, first, last
	for i := range m {
		m[i] = unzigzag(d.uvarint())
	}
	first, last := d.uvarint(), d.uvarint()
	m2 := d.uint64()
	if d.err != nil {
		return d.err
	}
	p, ok := colcodec.ScaleOf(exp)
	span := uint64(r.max) - uint64(r.min)
	switch {
	case !ok:
		return corrupt("decimal summary of exponent %d", exp)
	case first > span || last > span || first > span-last:
		return corrupt("decimal summary times +%d, -%d in a block spanning %d ns", first, last, span)
	}
	s.Sum, s.Min, s.Max = float64(m[0])/p, float64(m[1])/p, float64(m[2])/p
	s.First, s.Last = float64(m[3])/p, float64(m[4])/p
	s.FirstTime, s.LastTime = int64(uint64(r.min)+first), int64(uint64(r.max)-last)
	s.Mean, s.M2 = s.Sum/float64(s.N), math.Float64frombits(m2)
	*ds = decimalSum{sum: m[0], maxAbs: max(absU(m[1]), absU(m[2])), exp: exp, ok: true}
	return nil
}

// absU is |x| as a uint64 (exact for math.MinInt64 too).
func absU(x int64) uint64 {
	if x < 0 {
		return -uint64(x)
	}
	return uint64(x)
}

// unzigzag inverts zigzag.
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// HasSummaries reports whether the block keeps per-field summaries: a
// block of fewer than SummaryMinRows rows does not.
func (r *Reader) HasSummaries() bool { return r.summaries }

// Len returns the number of rows.
func (r *Reader) Len() int { return r.n }

// MinTime returns the time of the first row.
func (r *Reader) MinTime() int64 { return r.min }

// MaxTime returns the time of the last row.
func (r *Reader) MaxTime() int64 { return r.max }

// NumFields returns the number of fields.
func (r *Reader) NumFields() int { return len(r.fields) }

// Field returns the name and kind of field i (0 ≤ i < NumFields), in name
// order.
func (r *Reader) Field(i int) FieldInfo { return r.fields[i].info }

// Predicted reports whether field i (0 ≤ i < NumFields) is stored as a
// residual from other fields of the block (doc.go, "Predicted fields"):
// reading it decodes their columns too.
func (r *Reader) Predicted(i int) bool { return r.fields[i].nterms > 0 }

// Fields appends the names and kinds of the fields, sorted by name, to
// dst.
func (r *Reader) Fields(dst []FieldInfo) []FieldInfo {
	for i := range r.fields {
		dst = append(dst, r.fields[i].info)
	}
	return dst
}

// find returns the index of field name, or -1.
func (r *Reader) find(name string) int {
	lo, hi := 0, len(r.fields)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.fields[m].info.Name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(r.fields) && r.fields[lo].info.Name == name {
		return lo
	}
	return -1
}

// Summary returns the aggregate state of field's values in the block, as
// model.AggState.Add computes it over the field's values in time order
// (up to float rounding in Sum, Mean and M2: see "Summaries" in doc.go)
// with the given series (FirstSeries and LastSeries are series when N >
// 0). Tombstones are not counted: Count is the number of values of other
// kinds, N of the numeric ones (float, int, bool as 0 or 1). ok is false
// when the block has no such field or only tombstones of it (Count 0),
// as the row aggregator creates no state for a field without values,
// and when the block keeps no summaries (HasSummaries; its columns are
// read instead).
func (r *Reader) Summary(field, series string) (s model.AggState, ok bool) {
	i := r.find(field)
	if i < 0 || r.fields[i].sum.Count == 0 || !r.summaries {
		return s, false
	}
	s = r.fields[i].sum
	if s.N > 0 {
		s.FirstSeries, s.LastSeries = series, series
	}
	return s, true
}

// Times decodes the timestamps into dst[:0] (reusing its array when large
// enough) and returns it.
func (r *Reader) Times(dst []int64) ([]int64, error) {
	t, err := colcodec.DecodeTimestamps(dst[:0], r.times)
	if err != nil {
		return t, fmt.Errorf("%w: timestamps: %w", ErrCorrupt, err)
	}
	if len(t) != r.n {
		return t, corrupt("%d timestamps in a block of %d rows", len(t), r.n)
	}
	for i := 1; i < len(t); i++ {
		if t[i] <= t[i-1] {
			return t, corrupt("timestamp %d: %d after %d", i, t[i], t[i-1])
		}
	}
	if t[0] != r.min || t[len(t)-1] != r.max {
		return t, corrupt("timestamps [%d, %d], the header says [%d, %d]", t[0], t[len(t)-1], r.min, r.max)
	}
	return t, nil
}

// decoder reads the block's primitive fields; the first error sticks and
// every later read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = corrupt("truncated %s", what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uint64() uint64 {
	if len(d.b) < 8 {
		d.fail("integer")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if len(d.b) > 0 && d.b[0] < 0x80 {
		// One byte, as most counts and lengths of a block's directory
		// are: binary.Uvarint's loop is not inlined.
		v := uint64(d.b[0])
		d.b = d.b[1:]
		return v
	}
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[k:]
	return v
}

// bytes reads a uvarint length and that many bytes.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("section")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
