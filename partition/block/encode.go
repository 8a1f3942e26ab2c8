package block

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sync"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/colcodec"
)

// Sentinel errors; callers test them with errors.Is.
var (
	// ErrInvalid is returned by Encode for rows it cannot seal: none,
	// too many, unsorted or duplicate times, rows of several series, a
	// row without fields, unsorted or duplicate field names, an unknown
	// kind, a bool that is not 0 or 1.
	ErrInvalid = errors.New("block: invalid rows")
	// ErrCorrupt is returned by the decoder for bytes that are not a
	// block it wrote: a bad checksum, a truncated or inconsistent layout,
	// an unknown format version.
	ErrCorrupt = errors.New("block: corrupt block")
)

// FormatVersion is the first byte of every block.
const FormatVersion = 1

// Limits of one block, checked by Encode (ErrInvalid) and by the decoder
// (ErrCorrupt), so that a small block with a valid checksum cannot make
// the decoder allocate much more than a legitimate block would.
const (
	// MaxRows bounds the rows of one block: twice a 68.7 s window
	// (2^36 ns, the partition window) at one row per millisecond.
	MaxRows = 1 << 17
	// MaxFields bounds the fields of one block (the union of its rows'
	// field names), so a row's too: model.MaxFields.
	MaxFields = model.MaxFields
	// MaxValues bounds the values of one block, the sum over its rows of
	// their field counts (tombstones included): the model.Field array
	// Rows allocates (72 bytes a value, so at most 72 MiB).
	MaxValues = colcodec.MaxCount
)

// Header flags.
const (
	flagRowVersions = 1 << 0 // the block-level version column is present
	flagNoSummaries = 1 << 1 // the field sections hold no summaries
	headerFlagsAll  = flagRowVersions | flagNoSummaries
)

// SummaryMinRows is the fewest rows a block keeps per-field summaries
// for. A smaller block's summaries would cost more than its values (72
// bytes a field against about 1.2 a float value), and its columns decode
// in a few hundred nanoseconds: at 100,000 series a block holds about 11
// rows, and the summaries were 53% of its bytes.
const SummaryMinRows = 64

// summaryMinRows is SummaryMinRows, lowered by tests of the summaries.
var summaryMinRows = SummaryMinRows

// Field flags.
const (
	presenceMask = 0x3
	presenceAll  = 0      // every row has the field
	presenceBits = 1      // a bitmap of ceil(n/8) bytes
	presenceRuns = 2      // alternating absent/present run lengths
	flagMixed    = 1 << 2 // a kinds column follows; else one kind byte
	flagOwnVers  = 1 << 3 // the field has its own version column
	// flagDecimalSummary: the summary is in the decimal form (a float
	// field whose column is decimal; store format 6).
	flagDecimalSummary = 1 << 4
	// flagPredicted: the field's values are a residual from other fields
	// of the block (predict.go; store format 8).
	flagPredicted = 1 << 5
	fieldFlagsAll = presenceMask | flagMixed | flagOwnVers | flagDecimalSummary | flagPredicted
)

// summarySize is the fixed part of a summary written when N > 0: Sum,
// Min, Max, FirstTime, First, LastTime, Last, Mean, M2.
const summarySize = 9 * 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fieldEnc is the encoder's state for one field of the block.
type fieldEnc struct {
	name string
	body []byte // presence, kinds, values (after flags, kind and summary)
	exc  []byte // the exceptions form of the versions
	own  []byte // the own-column form, built when needed
	e    int    // exceptions against the row versions
	head []byte // flags, kind, summary
}

// Encoder encodes blocks reusing its scratch buffers, so that repeated
// calls do not allocate once warm. Encode clears every reference to the
// caller's strings (names, string values) from them before it returns,
// on success and on error, so a kept or pooled Encoder pins none of the
// caller's memory. The zero value is ready; not safe for concurrent use.
type Encoder struct {
	times   []int64
	rowVers []model.Version
	names   []string
	merged  []string
	pos     []int
	fields  []fieldEnc

	rows    []int32 // row index of each present value of the field
	vals    []model.Value
	vers    []model.Version
	floats  []float64
	ints    []int64
	bools   []bool
	strs    []string
	kinds   []int64
	excIdx  []int64
	excVers []model.Version
	col     []byte
	rowCol  []byte // the block-level version column

	// forceVersions overrides the choice of the version form in tests:
	// 0 weighs them, forceRow keeps the block column, forceOwn drops it.
	forceVersions int
	// noPredict turns prediction off, for tests that weigh it.
	noPredict bool
	// summaries says whether the block being encoded keeps summaries.
	summaries bool
	// floatScale (0: none) and floatExp are the scale and exponent of the
	// field's float column just encoded when it is in the decimal form;
	// dsum is the scratch of a decimal summary.
	floatScale float64
	floatExp   uint8
	dsum       []byte

	// Prediction's scratch (predict.go).
	cands  []predCand
	order  []int
	rdelta []int64
	res    []int64
	terms  []predTerm
	pbody  []byte

	fenc colcodec.FloatEncoder
	senc colcodec.StringEncoder
	venc colcodec.VersionEncoder
}

// Values of Encoder.forceVersions.
const (
	forceRow = 1
	forceOwn = 2
)

var encoders = sync.Pool{New: func() any { return new(Encoder) }}

// Encode appends the block of rows to dst with a pooled Encoder.
func Encode(dst []byte, rows []model.Row) ([]byte, error) {
	e := encoders.Get().(*Encoder)
	defer encoders.Put(e)
	return e.Encode(dst, rows)
}

// Encode appends the block of rows to dst and returns the extended slice.
// The rows are those of one series (every Series equal), by strictly
// ascending time, each with at least one field and its fields sorted by
// name with no name twice (model.Row.Normalize). On error dst is returned
// unchanged in length.
func (e *Encoder) Encode(dst []byte, rows []model.Row) ([]byte, error) {
	defer e.release()
	if err := e.check(rows); err != nil {
		return dst, err
	}
	e.collect(rows)
	if len(e.names) > MaxFields {
		return dst, fmt.Errorf("%w: %d field names, the limit is %d", ErrInvalid, len(e.names), MaxFields)
	}
	return e.encode(dst, source{rows: rows})
}

// DenseField is one field of the rows EncodeDense encodes: a value in
// every row, all of one kind.
type DenseField struct {
	// Name is the field's name.
	Name string
	// Kind is KindFloat, KindInt or KindBool.
	Kind model.Kind
	// Floats holds the rows' values of a float field; Ints those of an
	// int field, or of a bool field as 0 and 1.
	Floats []float64
	Ints   []int64
	// Versions holds the version of each row's value.
	Versions []model.Version
}

// EncodeDense appends to dst the block of the rows whose times are times
// (strictly ascending) and whose values are fields (sorted by name with
// no name twice, each with a value in every row), and returns the
// extended slice: the block Encode returns for the same rows, built from
// the columns without a model.Row. On error dst is returned unchanged in
// length.
func (e *Encoder) EncodeDense(dst []byte, times []int64, fields []DenseField) ([]byte, error) {
	defer e.release()
	if err := checkDense(times, fields); err != nil {
		return dst, err
	}
	e.times = append(e.times[:0], times...)
	e.names = e.names[:0]
	for j := range fields {
		e.names = append(e.names, fields[j].Name)
	}
	// The row versions as collect votes them, over the fields in name
	// order.
	e.rowVers = grow(e.rowVers, len(times))
	for i := range times {
		vote := majority{cand: fields[0].Versions[i]}
		for j := range fields {
			vote.add(fields[j].Versions[i])
		}
		e.rowVers[i] = vote.cand
	}
	return e.encode(dst, source{dense: fields})
}

// checkDense validates EncodeDense's input as check does Encode's rows.
func checkDense(times []int64, fields []DenseField) error {
	n := len(times)
	switch {
	case n == 0:
		return fmt.Errorf("%w: no rows", ErrInvalid)
	case n > MaxRows:
		return fmt.Errorf("%w: %d rows, the limit is %d", ErrInvalid, n, MaxRows)
	case len(fields) == 0:
		return fmt.Errorf("%w: no fields", ErrInvalid)
	case len(fields) > MaxFields:
		return fmt.Errorf("%w: %d fields, the limit is %d", ErrInvalid, len(fields), MaxFields)
	case n*len(fields) > MaxValues:
		return fmt.Errorf("%w: more than %d values (fields of all rows), the limit", ErrInvalid, MaxValues)
	}
	for i := 1; i < n; i++ {
		if times[i] <= times[i-1] {
			return fmt.Errorf("%w: row %d: time %d after %d (times must be strictly ascending)", ErrInvalid, i, times[i], times[i-1])
		}
	}
	for j := range fields {
		f := &fields[j]
		if f.Name == "" || len(f.Name) > model.MaxFieldNameLen {
			return fmt.Errorf("%w: field name of %d bytes", ErrInvalid, len(f.Name))
		}
		if j > 0 && f.Name <= fields[j-1].Name {
			return fmt.Errorf("%w: field %q after %q (names must be sorted, unique)", ErrInvalid, f.Name, fields[j-1].Name)
		}
		if len(f.Versions) != n {
			return fmt.Errorf("%w: field %q: %d versions for %d rows", ErrInvalid, f.Name, len(f.Versions), n)
		}
		vals := len(f.Ints)
		switch f.Kind {
		case model.KindFloat:
			vals = len(f.Floats)
		case model.KindInt:
		case model.KindBool:
			for i, x := range f.Ints {
				if x != 0 && x != 1 {
					return fmt.Errorf("%w: row %d: bool field %q holds %d", ErrInvalid, i, f.Name, x)
				}
			}
		default:
			return fmt.Errorf("%w: field %q has %s, not a float, int or bool column", ErrInvalid, f.Name, f.Kind)
		}
		if vals != n {
			return fmt.Errorf("%w: field %q: %d values for %d rows", ErrInvalid, f.Name, vals, n)
		}
	}
	return nil
}

// source is where encode takes the fields' values from: the rows of
// Encode, or the columns of EncodeDense.
type source struct {
	rows  []model.Row
	dense []DenseField
}

// encode appends the block whose times, row versions and field names
// collect (or EncodeDense) put in e, with the values of src.
func (e *Encoder) encode(dst []byte, src source) ([]byte, error) {
	start := len(dst)
	n := len(e.times)
	e.summaries = n >= summaryMinRows
	e.fields = grow(e.fields, len(e.names))
	withRow, withoutRow := 0, 0
	anyExc := false
	e.cands = e.cands[:0]
	for j := range e.fields {
		f := &e.fields[j]
		f.name = e.names[j]
		if err := e.encodeField(f, src, j); err != nil {
			return dst, err
		}
		withRow += len(f.exc)
		anyExc = anyExc || f.e > 0
	}
	if err := e.predict(); err != nil {
		return dst, err
	}
	var err error
	e.rowCol, err = e.venc.Encode(e.rowCol[:0], e.rowVers)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	rowCol := len(e.rowCol) + uvarintLen(len(e.rowCol))
	useRow := true
	switch {
	case !anyExc && len(e.fields) == 1:
		// The field's own column is the block column: save the
		// exception count.
		useRow = false
		e.fields[0].own = appendBytes(e.fields[0].own[:0], e.rowCol)
	case anyExc:
		// Weigh the block-level column against one column per field.
		withRow += rowCol
		for j := range e.fields {
			f := &e.fields[j]
			if f.e == 0 {
				if f.own, err = e.ownVersions(f.own[:0], src, j); err != nil {
					return dst, err
				}
			}
			withoutRow += len(f.own)
			if len(f.own) < len(f.exc) {
				withRow += len(f.own) - len(f.exc)
			}
		}
		useRow = withRow < withoutRow
	}
	switch e.forceVersions {
	case forceRow:
		useRow = true
	case forceOwn:
		useRow = false
		for j := range e.fields {
			if f := &e.fields[j]; f.e == 0 {
				if f.own, err = e.ownVersions(f.own[:0], src, j); err != nil {
					return dst, err
				}
			}
		}
	}

	dst = append(dst, FormatVersion)
	flags := byte(0)
	if useRow {
		flags |= flagRowVersions
	}
	if !e.summaries {
		flags |= flagNoSummaries
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(e.times[0]))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(e.times[n-1]))
	dst = binary.AppendUvarint(dst, uint64(len(e.fields)))
	tcol, err := colcodec.EncodeTimestamps(e.col[:0], e.times)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	dst = appendBytes(dst, tcol)
	e.col = tcol
	if useRow {
		dst = appendBytes(dst, e.rowCol)
	}
	for j := range e.fields {
		f := &e.fields[j]
		vers := f.exc
		own := !useRow || (f.e > 0 && len(f.own) < len(f.exc))
		if own {
			vers = f.own
			f.head[0] |= flagOwnVers
		}
		dst = binary.AppendUvarint(dst, uint64(len(f.name)))
		dst = append(dst, f.name...)
		dst = binary.AppendUvarint(dst, uint64(len(f.head)+len(f.body)+len(vers)))
		dst = append(dst, f.head...)
		dst = append(dst, f.body...)
		dst = append(dst, vers...)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli)), nil
}

// release drops every reference to the caller's strings (field names,
// string values) that the scratch buffers hold, up to their capacity, so
// that a pooled Encoder does not keep them alive.
func (e *Encoder) release() {
	fs := e.fields[:cap(e.fields)]
	for j := range fs {
		fs[j].name = ""
	}
	clear(e.names[:cap(e.names)])
	clear(e.merged[:cap(e.merged)])
	clear(e.vals[:cap(e.vals)])
	clear(e.strs[:cap(e.strs)])
}

// check validates rows.
func (e *Encoder) check(rows []model.Row) error {
	switch {
	case len(rows) == 0:
		return fmt.Errorf("%w: no rows", ErrInvalid)
	case len(rows) > MaxRows:
		return fmt.Errorf("%w: %d rows, the limit is %d", ErrInvalid, len(rows), MaxRows)
	}
	values := 0
	for i := range rows {
		r := &rows[i]
		if i > 0 {
			if r.Time <= rows[i-1].Time {
				return fmt.Errorf("%w: row %d: time %d after %d (times must be strictly ascending)", ErrInvalid, i, r.Time, rows[i-1].Time)
			}
			if r.Series != rows[0].Series {
				return fmt.Errorf("%w: row %d: series %q in a block of %q", ErrInvalid, i, r.Series, rows[0].Series)
			}
		}
		if len(r.Fields) == 0 {
			return fmt.Errorf("%w: row %d (time %d) has no fields", ErrInvalid, i, r.Time)
		}
		if len(r.Fields) > MaxFields {
			return fmt.Errorf("%w: row %d: %d fields, the limit is %d", ErrInvalid, i, len(r.Fields), MaxFields)
		}
		if values += len(r.Fields); values > MaxValues {
			return fmt.Errorf("%w: more than %d values (fields of all rows), the limit", ErrInvalid, MaxValues)
		}
		for k := range r.Fields {
			f := &r.Fields[k]
			if f.Name == "" || len(f.Name) > model.MaxFieldNameLen {
				return fmt.Errorf("%w: row %d: field name of %d bytes", ErrInvalid, i, len(f.Name))
			}
			if k > 0 && f.Name <= r.Fields[k-1].Name {
				return fmt.Errorf("%w: row %d: field %q after %q (names must be sorted, unique)", ErrInvalid, i, f.Name, r.Fields[k-1].Name)
			}
			switch f.Value.Kind {
			case model.KindFloat, model.KindInt, model.KindString, model.KindDeleted:
			case model.KindBool:
				if f.Value.I != 0 && f.Value.I != 1 {
					return fmt.Errorf("%w: row %d: bool field %q holds %d", ErrInvalid, i, f.Name, f.Value.I)
				}
			default:
				return fmt.Errorf("%w: row %d: field %q has %s", ErrInvalid, i, f.Name, f.Value.Kind)
			}
		}
	}
	return nil
}

// collect fills the times, the row versions (the version most fields of
// each row carry: Boyer-Moore's majority vote, so a row of one write has
// its version) and the sorted union of the field names.
func (e *Encoder) collect(rows []model.Row) {
	e.times, e.rowVers, e.names = e.times[:0], e.rowVers[:0], e.names[:0]
	for i := range rows {
		r := &rows[i]
		e.times = append(e.times, r.Time)
		vote := majority{cand: r.Fields[0].Version}
		for k := range r.Fields {
			vote.add(r.Fields[k].Version)
		}
		e.rowVers = append(e.rowVers, vote.cand)
		if !sameNames(e.names, r.Fields) {
			e.mergeNames(r.Fields)
		}
	}
}

// majority is Boyer-Moore's majority vote over a row's field versions:
// cand is the version most of them carry when one does.
type majority struct {
	cand model.Version
	cnt  int
}

func (m *majority) add(v model.Version) {
	switch {
	case v == m.cand:
		m.cnt++
	case m.cnt == 0:
		m.cand, m.cnt = v, 1
	default:
		m.cnt--
	}
}

func sameNames(names []string, fs []model.Field) bool {
	if len(names) != len(fs) {
		return false
	}
	for k := range fs {
		if names[k] != fs[k].Name {
			return false
		}
	}
	return true
}

// mergeNames merges the (sorted) names of fs into e.names.
func (e *Encoder) mergeNames(fs []model.Field) {
	out := e.merged[:0]
	a, b := 0, 0
	for a < len(e.names) || b < len(fs) {
		switch {
		case b == len(fs) || (a < len(e.names) && e.names[a] < fs[b].Name):
			out = append(out, e.names[a])
			a++
		case a == len(e.names) || fs[b].Name < e.names[a]:
			out = append(out, fs[b].Name)
			b++
		default:
			out = append(out, e.names[a])
			a, b = a+1, b+1
		}
	}
	e.merged, e.names = e.names, out
}

// gather fills e.rows, e.vals and e.vers with field j's present values.
// Fields are visited in name order, so e.pos[i] is the next unvisited
// field of row i.
func (e *Encoder) gather(rows []model.Row, j int) {
	if j == 0 {
		e.pos = grow(e.pos, len(rows))
		clear(e.pos)
	}
	name := e.names[j]
	e.rows, e.vals, e.vers = e.rows[:0], e.vals[:0], e.vers[:0]
	for i := range rows {
		fs := rows[i].Fields
		if p := e.pos[i]; p < len(fs) && fs[p].Name == name {
			e.rows = append(e.rows, int32(i))
			e.vals = append(e.vals, fs[p].Value)
			e.vers = append(e.vers, fs[p].Version)
			e.pos[i] = p + 1
		}
	}
}

// gatherDense fills e.rows, e.vals and e.vers with f's values, one in
// every row.
func (e *Encoder) gatherDense(f *DenseField) {
	n := len(f.Versions)
	e.rows, e.vals = grow(e.rows, n), grow(e.vals, n)
	for i := range e.rows {
		e.rows[i] = int32(i)
	}
	switch f.Kind {
	case model.KindFloat:
		for i, x := range f.Floats {
			e.vals[i] = model.Value{Kind: model.KindFloat, F: x}
		}
	default:
		for i, x := range f.Ints {
			e.vals[i] = model.Value{Kind: f.Kind, I: x}
		}
	}
	e.vers = append(e.vers[:0], f.Versions...)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// finiteFloats returns the gathered values as floats (e.floats) when
// they are all floats (kind, not mixed) and finite; false otherwise.
func (e *Encoder) finiteFloats(kind model.Kind, mixed bool) ([]float64, bool) {
	if mixed || kind != model.KindFloat {
		return nil, false
	}
	e.floats = e.floats[:0]
	for _, v := range e.vals {
		if !finite(v.F) {
			return nil, false
		}
		e.floats = append(e.floats, v.F)
	}
	return e.floats, true
}

// encodeField writes field j's head, body and the exceptions form of its
// versions.
func (e *Encoder) encodeField(f *fieldEnc, src source, j int) error {
	if src.dense != nil {
		e.gatherDense(&src.dense[j])
	} else {
		e.gather(src.rows, j)
	}
	n, m := len(e.times), len(e.rows)
	kind, mixed := e.vals[0].Kind, false
	for _, v := range e.vals {
		mixed = mixed || v.Kind != kind
	}
	var sum model.AggState
	if e.summaries {
		floats, ok := e.finiteFloats(kind, mixed)
		if ok {
			// A column of finite floats at ascending times: FloatRun
			// builds the state Add would, up to float rounding in Sum,
			// Mean and M2, at a fraction of its cost (Add was a third of
			// Encode's). Not when its sum or moments overflow, where
			// Welford's running mean would not.
			sum = model.FloatRun(floats, e.times[e.rows[0]], e.times[e.rows[m-1]], "")
			ok = finite(sum.Sum) && finite(sum.M2)
		}
		if !ok {
			sum = model.AggState{}
			for i, v := range e.vals {
				if v.Kind != model.KindDeleted {
					sum.Add(e.times[e.rows[i]], "", v)
				}
			}
		}
	} else {
		// The counts alone, as Add would count them.
		for _, v := range e.vals {
			switch v.Kind {
			case model.KindDeleted:
			case model.KindString:
				sum.Count++
			default:
				sum.Count++
				sum.N++
			}
		}
	}

	// Head: flags, kind, summary.
	flags := byte(0)
	body := f.body[:0]
	if m < n {
		var bitmap bool
		body, bitmap = e.appendPresence(body, n)
		if bitmap {
			flags |= presenceBits
		} else {
			flags |= presenceRuns
		}
	}
	if mixed {
		flags |= flagMixed
		kind = 0
	}
	h := append(f.head[:0], flags, byte(kind))
	h = binary.AppendUvarint(h, uint64(sum.Count))
	h = binary.AppendUvarint(h, uint64(sum.N))

	// Body: presence (above), kinds, values.
	var err error
	if mixed {
		e.kinds = e.kinds[:0]
		for _, v := range e.vals {
			e.kinds = append(e.kinds, int64(v.Kind))
		}
		if e.col, err = colcodec.EncodeInts(e.col[:0], e.kinds); err != nil {
			return fmt.Errorf("%w: field %q: %w", ErrInvalid, f.name, err)
		}
		body = appendBytes(body, e.col)
	}
	e.floatScale = 0
	for _, k := range [...]model.Kind{model.KindFloat, model.KindInt, model.KindBool, model.KindString} {
		if body, err = e.appendValues(body, k); err != nil {
			return fmt.Errorf("%w: field %q: %w", ErrInvalid, f.name, err)
		}
	}
	f.body = body
	if m == n && kind == model.KindFloat {
		e.addPredictCandidate(j, n)
	}

	// The summary, after the counts: in the decimal form when the field is
	// a column of decimal floats whose summary it holds exactly, else the
	// 72 bytes.
	if e.summaries && sum.N > 0 {
		if d, ok := e.decimalSummary(kind, &sum, e.times[0], e.times[n-1]); ok {
			h[0] |= flagDecimalSummary
			h = append(h, d...)
		} else {
			for _, x := range [...]uint64{
				math.Float64bits(sum.Sum), math.Float64bits(sum.Min), math.Float64bits(sum.Max),
				uint64(sum.FirstTime), math.Float64bits(sum.First),
				uint64(sum.LastTime), math.Float64bits(sum.Last),
				math.Float64bits(sum.Mean), math.Float64bits(sum.M2),
			} {
				h = binary.LittleEndian.AppendUint64(h, x)
			}
		}
	}
	f.head = h

	// Versions: the exceptions to the row versions.
	e.excIdx, e.excVers = e.excIdx[:0], e.excVers[:0]
	for i, v := range e.vers {
		if v != e.rowVers[e.rows[i]] {
			e.excIdx = append(e.excIdx, int64(i))
			e.excVers = append(e.excVers, v)
		}
	}
	f.e = len(e.excIdx)
	f.exc = binary.AppendUvarint(f.exc[:0], uint64(f.e))
	f.own = f.own[:0]
	if f.e > 0 {
		e.col, _ = colcodec.EncodeInts(e.col[:0], e.excIdx) // m ≤ MaxCount: cannot fail
		f.exc = appendBytes(f.exc, e.col)
		e.col, _ = e.venc.Encode(e.col[:0], e.excVers)
		f.exc = appendBytes(f.exc, e.col)
		e.col, _ = e.venc.Encode(e.col[:0], e.vers)
		f.own = appendBytes(f.own, e.col)
	}
	return nil
}

// ownVersions appends field j's own version column (length-prefixed).
func (e *Encoder) ownVersions(dst []byte, src source, j int) ([]byte, error) {
	e.vers = e.vers[:0]
	// The values' versions were overwritten by later fields: gather them
	// again without disturbing e.pos.
	if src.dense != nil {
		e.vers = append(e.vers, src.dense[j].Versions...)
	}
	name := e.names[j]
	for i := range src.rows {
		for _, f := range src.rows[i].Fields {
			if f.Name == name {
				e.vers = append(e.vers, f.Version)
				break
			}
		}
	}
	col, err := e.venc.Encode(e.col[:0], e.vers)
	e.col = col
	if err != nil {
		return dst, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return appendBytes(dst, col), nil
}

// appendPresence appends the smaller of the bitmap and the run list of
// e.rows among n rows. A bitmap is exactly ceil(n/8) bytes; a run list
// of that size is written as a bitmap.
func (e *Encoder) appendPresence(dst []byte, n int) ([]byte, bool) {
	// Run list: k, then k lengths alternating absent, present, absent...
	// starting with an absent run (the first may be 0, the others ≥ 1).
	start := len(dst)
	runs := 0
	prev := int32(-1)
	for i, r := range e.rows {
		if i == 0 || r != prev+1 {
			runs += 2
		}
		prev = r
	}
	if last := e.rows[len(e.rows)-1]; int(last) < n-1 {
		runs++
	}
	dst = binary.AppendUvarint(dst, uint64(runs))
	next := int32(0) // the first row not yet covered
	for i := 0; i < len(e.rows); {
		j := i + 1
		for j < len(e.rows) && e.rows[j] == e.rows[j-1]+1 {
			j++
		}
		dst = binary.AppendUvarint(dst, uint64(e.rows[i]-next))
		dst = binary.AppendUvarint(dst, uint64(j-i))
		next = e.rows[j-1] + 1
		i = j
	}
	if int(next) < n {
		dst = binary.AppendUvarint(dst, uint64(int32(n)-next))
	}
	bm := (n + 7) / 8
	if len(dst)-start < bm {
		return dst, false
	}
	dst = dst[:start]
	for range bm {
		dst = append(dst, 0)
	}
	for _, r := range e.rows {
		dst[start+int(r>>3)] |= 1 << (r & 7)
	}
	return dst, true
}

// appendValues appends the length-prefixed column of the values of kind
// k, if there are any.
func (e *Encoder) appendValues(dst []byte, k model.Kind) ([]byte, error) {
	var err error
	col := e.col[:0]
	switch k {
	case model.KindFloat:
		e.floats = e.floats[:0]
		for _, v := range e.vals {
			if v.Kind == k {
				e.floats = append(e.floats, v.F)
			}
		}
		if len(e.floats) == 0 {
			return dst, nil
		}
		col, err = e.fenc.Encode(col, e.floats)
		if err == nil {
			e.floatScale, e.floatExp, _ = colcodec.DecimalScale(col)
		}
	case model.KindInt:
		e.ints = e.ints[:0]
		for _, v := range e.vals {
			if v.Kind == k {
				e.ints = append(e.ints, v.I)
			}
		}
		if len(e.ints) == 0 {
			return dst, nil
		}
		col, err = colcodec.EncodeInts(col, e.ints)
	case model.KindBool:
		e.bools = e.bools[:0]
		for _, v := range e.vals {
			if v.Kind == k {
				e.bools = append(e.bools, v.I != 0)
			}
		}
		if len(e.bools) == 0 {
			return dst, nil
		}
		col, err = colcodec.EncodeBools(col, e.bools)
	case model.KindString:
		e.strs = e.strs[:0]
		for _, v := range e.vals {
			if v.Kind == k {
				e.strs = append(e.strs, v.S)
			}
		}
		if len(e.strs) == 0 {
			return dst, nil
		}
		col, err = e.senc.Encode(col, e.strs)
	}
	e.col = col
	if err != nil {
		return dst, err
	}
	return appendBytes(dst, col), nil
}

// decimalSummary returns the decimal form of sum, the summary of a field
// whose values e.floats (all of the field's, in time order) were just
// encoded as a decimal column of scale e.floatScale, in a block of times
// [minT, maxT]; ok is false when the field is not such a column or the
// form would not give sum back (a sum of mantissas over int64):
//
//	exp(1) | sum | min | max | first | last : zigzag uvarints of mantissas
//	| FirstTime − minT : uvarint | maxT − LastTime : uvarint | M2 (8, LE)
//
// Min, Max, First and Last are values of the column, m / 10^exp for their
// mantissa m (checked bit for bit); the sum is the exact sum of the
// mantissas, read back as float64(sum) / 10^exp (FloatRun's up to float
// rounding); Mean is read back as Sum / N. About 22 bytes on the harness's
// fields instead of 72.
func (e *Encoder) decimalSummary(kind model.Kind, sum *model.AggState, minT, maxT int64) ([]byte, bool) {
	p := e.floatScale
	if kind != model.KindFloat || p == 0 || len(e.floats) != int(sum.N) {
		return nil, false
	}
	mant := func(v float64) (int64, bool) {
		m := int64(math.Round(v * p))
		return m, math.Float64bits(float64(m)/p) == math.Float64bits(v)
	}
	var total int64
	for _, v := range e.floats {
		m, ok := mant(v)
		if !ok || m > 0 && total > math.MaxInt64-m || m < 0 && total < math.MinInt64-m {
			return nil, false
		}
		total += m
	}
	d := append(e.dsum[:0], e.floatExp)
	d = binary.AppendUvarint(d, zigzag(total))
	for _, v := range [...]float64{sum.Min, sum.Max, sum.First, sum.Last} {
		m, ok := mant(v)
		if !ok {
			return nil, false
		}
		d = binary.AppendUvarint(d, zigzag(m))
	}
	d = binary.AppendUvarint(d, uint64(sum.FirstTime)-uint64(minT))
	d = binary.AppendUvarint(d, uint64(maxT)-uint64(sum.LastTime))
	d = binary.LittleEndian.AppendUint64(d, math.Float64bits(sum.M2))
	e.dsum = d
	return d, true
}

// zigzag maps signed to unsigned integers so that small magnitudes are
// small.
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// uvarintLen returns the size of n as a uvarint.
func uvarintLen(n int) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
}

// appendBytes appends b with its length as a uvarint.
func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// grow returns s[:n], reusing its array when large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
