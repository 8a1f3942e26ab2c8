package block

import (
	"fmt"
	"math"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/colcodec"
)

// Column is one field of a block, decoded: its values in time order with
// the rows that hold them and their versions. Reuse a Column across calls
// so that decoding does not allocate.
type Column struct {
	// Kind is the kind of every value, or 0 when they differ (see
	// Values[i].Kind).
	Kind model.Kind
	// Rows are the indices (0 ≤ i < Len) of the rows that have the field,
	// ascending; Values and Versions are parallel to it.
	Rows     []int32
	Values   []model.Value
	Versions []model.Version
	// Floats holds the float values in order (all of Values when Kind is
	// model.KindFloat): the aggregate path can read them without the
	// Values.
	Floats []float64
	// Decimal is set by ColumnAggregate only, for a float column stored
	// in its decimal form: its values are then in Mantissas and Scale
	// (value i is float64(Mantissas[i]) / Scale bit for bit,
	// colcodec.DecodeDecimals), not in Floats.
	Decimal   bool
	Mantissas []int64
	Scale     float64

	ints    []int64
	bools   []bool
	strs    []string
	kinds   []int64
	excIdx  []int64
	excVers []model.Version
}

// kinds with a values column, in the order of the columns.
var valueKinds = [...]model.Kind{model.KindFloat, model.KindInt, model.KindBool, model.KindString}

// Column decodes field into dst. ok is false when the block has no such
// field. Only the field's own columns are decoded (plus the block-level
// version column when the field refers to it, once per Reset, and the
// value columns of its terms when it is predicted: Predicted). The
// string values are substrings of one string per column: keeping one
// keeps the column's bytes alive.
func (r *Reader) Column(field string, dst *Column) (ok bool, err error) {
	return r.namedColumn(field, dst, true, false)
}

// ColumnValues is Column without the versions (dst.Versions is left
// empty).
func (r *Reader) ColumnValues(field string, dst *Column) (ok bool, err error) {
	return r.namedColumn(field, dst, false, false)
}

// ColumnAggregate is ColumnValues that, for a field whose values are all
// floats (dst.Kind is model.KindFloat), leaves dst.Values empty too: the
// values are in dst.Floats only, or, when they are stored in the decimal
// form, in dst.Mantissas and dst.Scale (dst.Decimal). It is what an
// aggregate over a block with no head row over it needs; a column of
// another kind or of mixed kinds has its Values as ColumnValues gives
// them.
func (r *Reader) ColumnAggregate(field string, dst *Column) (ok bool, err error) {
	return r.namedColumn(field, dst, false, true)
}

// DecimalHead is for an aggregate that reads only counts and sums
// (model.Query.SumsOnly) of a block cut by a bucket's start: it decodes
// the first rows values (0 ≤ rows ≤ Len) of field into dst and returns
// the exact sum of all the column's mantissas, from the block's summary,
// so that the rest of the rows sum to it less the head's, without being
// decoded. dst then holds those rows as ColumnAggregate gives a decimal
// column: Kind float, Rows 0 to rows−1, Decimal, Mantissas and Scale.
//
// ok is false, nothing decoded, unless the field has a float value in
// every row, stored in the decimal form, and a summary in the decimal
// form of the same scale, and no sum of its mantissas can leave the int64
// range (their greatest magnitude times the row count is at most
// math.MaxInt64): the caller reads the whole column then.
func (r *Reader) DecimalHead(field string, rows int, dst *Column) (sum int64, ok bool, err error) {
	i := r.find(field)
	if i < 0 {
		return 0, false, nil
	}
	fd := &r.fields[i]
	if fd.flags&(presenceMask|flagMixed) != presenceAll || fd.info.Kind != model.KindFloat || !r.summaries ||
		!fd.dsum.ok || fd.sum.N != int64(r.n) || fd.dsum.maxAbs > math.MaxInt64/uint64(r.n) {
		return 0, false, nil
	}
	if rows < 0 || rows > r.n {
		return 0, false, fmt.Errorf("block: head of %d rows of %d", rows, r.n)
	}
	d := decoder{b: fd.body} // presenceAll: the body starts with the values
	col := d.bytes()
	if d.err != nil {
		return 0, false, fmt.Errorf("field %q: %w", field, d.err)
	}
	if _, exp, isDec := colcodec.DecimalScale(col); !isDec || exp != fd.dsum.exp {
		return 0, false, nil
	}
	mant, scale, _, err := colcodec.DecodeDecimalsPrefix(dst.Mantissas, col, r.n, rows)
	if err != nil {
		return 0, false, fmt.Errorf("%w: field %q: float values: %w", ErrCorrupt, field, err)
	}
	dst.Mantissas = mant
	// A predicted field's column holds its residuals: add its terms' first
	// rows.
	for _, t := range fd.terms[:fd.nterms] {
		if err := r.addTerm(mant, t, scale, rows); err != nil {
			return 0, false, fmt.Errorf("field %q: %w", field, err)
		}
	}
	dst.Kind, dst.Decimal, dst.Scale = model.KindFloat, true, scale
	dst.Rows = grow(dst.Rows, rows)
	for j := range dst.Rows {
		dst.Rows[j] = int32(j)
	}
	dst.Values, dst.Versions, dst.Floats = dst.Values[:0], dst.Versions[:0], dst.Floats[:0]
	return fd.dsum.sum, true, nil
}

// namedColumn is Column, with the versions decoded or not, and the Values
// of a float column filled or not.
func (r *Reader) namedColumn(field string, dst *Column, versions, floatsOnly bool) (ok bool, err error) {
	i := r.find(field)
	if i < 0 {
		return false, nil
	}
	if err := r.column(&r.fields[i], dst, versions, floatsOnly); err != nil {
		return true, fmt.Errorf("field %q: %w", field, err)
	}
	return true, nil
}

func (r *Reader) column(fd *fieldDir, c *Column, withVersions, floatsOnly bool) error {
	d := decoder{b: fd.body}
	if err := r.presence(&d, fd.flags, c); err != nil {
		return err
	}
	m := len(c.Rows)
	var counts [model.KindDeleted + 1]int
	c.Kind = fd.info.Kind
	if fd.flags&flagMixed != 0 {
		col := d.bytes()
		if d.err != nil {
			return d.err
		}
		var err error
		if c.kinds, err = colcodec.DecodeInts(c.kinds[:0], col); err != nil {
			return fmt.Errorf("%w: kinds: %w", ErrCorrupt, err)
		}
		if len(c.kinds) != m {
			return corrupt("%d kinds for %d values", len(c.kinds), m)
		}
		for _, k := range c.kinds {
			if k < int64(model.KindFloat) || k > int64(model.KindDeleted) {
				return corrupt("kind %d", k)
			}
			counts[k]++
		}
	} else {
		counts[c.Kind] = m
	}
	if int64(m-counts[model.KindDeleted]) != fd.sum.Count || int64(counts[model.KindFloat]+counts[model.KindInt]+counts[model.KindBool]) != fd.sum.N {
		return corrupt("summary counts %d, %d numeric, do not match the values", fd.sum.Count, fd.sum.N)
	}
	if fd.nterms > 0 {
		if err := r.predictedValues(&d, fd, c, floatsOnly); err != nil {
			return err
		}
	} else if err := c.values(&d, &counts, floatsOnly); err != nil {
		return err
	}
	if !withVersions {
		c.Versions = c.Versions[:0]
		if err := skipVersions(&d, fd.flags, m); err != nil {
			return err
		}
	} else if err := r.versions(&d, fd.flags, c); err != nil {
		return err
	}
	if len(d.b) != 0 {
		return corrupt("%d trailing bytes", len(d.b))
	}
	return nil
}

// presence fills c.Rows.
func (r *Reader) presence(d *decoder, flags byte, c *Column) error {
	n := r.n
	c.Rows = c.Rows[:0]
	switch flags & presenceMask {
	case presenceAll:
		c.Rows = grow(c.Rows, n)
		for i := range c.Rows {
			c.Rows[i] = int32(i)
		}
	case presenceBits:
		bm := (n + 7) / 8
		if len(d.b) < bm {
			return corrupt("truncated presence bitmap")
		}
		if n&7 != 0 && d.b[bm-1]>>(n&7) != 0 {
			return corrupt("presence bitmap padding")
		}
		for i, b := range d.b[:bm] {
			for b != 0 {
				k := 0
				for b&(1<<k) == 0 {
					k++
				}
				c.Rows = append(c.Rows, int32(i*8+k))
				b &^= 1 << k
			}
		}
		d.b = d.b[bm:]
	case presenceRuns:
		k := d.uvarint()
		if d.err != nil {
			return d.err
		}
		if k > uint64(len(d.b)) {
			return corrupt("%d presence runs in %d bytes", k, len(d.b))
		}
		row := uint64(0)
		for j := uint64(0); j < k; j++ {
			l := d.uvarint()
			if d.err != nil {
				return d.err
			}
			if (l == 0 && j > 0) || l > uint64(n)-row {
				return corrupt("presence run %d of %d rows at row %d of %d", j, l, row, n)
			}
			if j&1 == 1 {
				for x := row; x < row+l; x++ {
					c.Rows = append(c.Rows, int32(x))
				}
			}
			row += l
		}
		if row != uint64(n) {
			return corrupt("presence runs cover %d of %d rows", row, n)
		}
	}
	if len(c.Rows) == 0 {
		return corrupt("a field without values")
	}
	return nil
}

// values decodes the value columns and fills c.Values, but for a float
// column with floatsOnly (its values are in c.Floats).
func (c *Column) values(d *decoder, counts *[model.KindDeleted + 1]int, floatsOnly bool) error {
	m := len(c.Rows)
	c.Floats, c.ints, c.bools, c.strs = c.Floats[:0], c.ints[:0], c.bools[:0], c.strs[:0]
	c.Decimal, c.Mantissas = false, c.Mantissas[:0]
	for _, k := range valueKinds {
		if counts[k] == 0 {
			continue
		}
		col := d.bytes()
		if d.err != nil {
			return d.err
		}
		var got int
		var err error
		switch k {
		case model.KindFloat:
			if floatsOnly && c.Kind == model.KindFloat {
				c.Mantissas, c.Scale, c.Decimal, err = colcodec.DecodeDecimals(c.Mantissas, col)
				if got = len(c.Mantissas); c.Decimal || err != nil {
					break
				}
			}
			c.Floats, err = colcodec.DecodeFloats(c.Floats, col)
			got = len(c.Floats)
		case model.KindInt:
			c.ints, err = colcodec.DecodeInts(c.ints, col)
			got = len(c.ints)
		case model.KindBool:
			c.bools, err = colcodec.DecodeBools(c.bools, col)
			got = len(c.bools)
		case model.KindString:
			c.strs, err = colcodec.DecodeStrings(c.strs, col)
			got = len(c.strs)
		}
		if err != nil {
			return fmt.Errorf("%w: %s values: %w", ErrCorrupt, k, err)
		}
		if got != counts[k] {
			return corrupt("%d %s values, the kinds say %d", got, k, counts[k])
		}
	}
	if floatsOnly && c.Kind == model.KindFloat {
		c.Values = c.Values[:0]
		return nil
	}
	c.Values = grow(c.Values, m)
	if c.Kind != 0 {
		switch c.Kind {
		case model.KindFloat:
			for i, f := range c.Floats {
				c.Values[i] = model.Value{Kind: model.KindFloat, F: f}
			}
		case model.KindInt:
			for i, v := range c.ints {
				c.Values[i] = model.Value{Kind: model.KindInt, I: v}
			}
		case model.KindBool:
			for i, b := range c.bools {
				c.Values[i] = model.Value{Kind: model.KindBool, I: b2i(b)}
			}
		case model.KindString:
			for i, s := range c.strs {
				c.Values[i] = model.Value{Kind: model.KindString, S: s}
			}
		default: // tombstones only: no value column
			for i := range c.Values {
				c.Values[i] = model.Value{Kind: c.Kind}
			}
		}
		return nil
	}
	var fi, ii, bi, si int
	for i, k := range c.kinds {
		v := model.Value{Kind: model.Kind(k)}
		switch v.Kind {
		case model.KindFloat:
			v.F = c.Floats[fi]
			fi++
		case model.KindInt:
			v.I = c.ints[ii]
			ii++
		case model.KindBool:
			v.I = b2i(c.bools[bi])
			bi++
		case model.KindString:
			v.S = c.strs[si]
			si++
		}
		c.Values[i] = v
	}
	return nil
}

// predictedValues decodes the values of a predicted field (parseTerms): its
// residual column, plus or minus each term's mantissas. With floatsOnly
// they are left as mantissas (c.Decimal), as ColumnAggregate gives a
// decimal column; otherwise they fill c.Floats and c.Values.
func (r *Reader) predictedValues(d *decoder, fd *fieldDir, c *Column, floatsOnly bool) error {
	col := d.bytes()
	if d.err != nil {
		return d.err
	}
	c.Floats, c.ints, c.bools, c.strs = c.Floats[:0], c.ints[:0], c.bools[:0], c.strs[:0]
	c.Decimal = false
	mant, scale, ok, err := colcodec.DecodeDecimals(c.Mantissas[:0], col)
	c.Mantissas = mant
	switch {
	case err != nil:
		return fmt.Errorf("%w: residual: %w", ErrCorrupt, err)
	case !ok:
		return corrupt("the residual of a predicted field is not a decimal column")
	case len(mant) != r.n:
		return corrupt("%d residuals in a block of %d rows", len(mant), r.n)
	}
	for _, t := range fd.terms[:fd.nterms] {
		if err := r.addTerm(mant, t, scale, r.n); err != nil {
			return err
		}
	}
	if floatsOnly {
		c.Decimal, c.Scale = true, scale
		c.Values = c.Values[:0]
		return nil
	}
	c.Floats = grow(c.Floats, len(mant))
	c.Values = grow(c.Values, len(mant))
	for i, m := range mant {
		f := float64(m) / scale
		c.Floats[i] = f
		c.Values[i] = model.Value{Kind: model.KindFloat, F: f}
	}
	c.Mantissas = mant[:0]
	return nil
}

// addTerm adds the first rows mantissas of term t (parseTerms) of a
// predicted field, times its coefficient, to mant, the field's residuals
// so far, of the given scale.
func (r *Reader) addTerm(mant []int64, t uint16, scale float64, rows int) error {
	p := &r.fields[t>>1]
	pd := decoder{b: p.body} // a plain float column of every row: its values come first
	pcol := pd.bytes()
	if pd.err != nil {
		return fmt.Errorf("term %q: %w", p.info.Name, pd.err)
	}
	pm, ps, ok, err := colcodec.DecodeDecimalsPrefix(r.termS[:0], pcol, r.n, rows)
	r.termS = pm
	switch {
	case err != nil:
		return fmt.Errorf("%w: term %q: %w", ErrCorrupt, p.info.Name, err)
	case !ok || ps != scale || len(pm) != rows || len(mant) != rows:
		return corrupt("term %q is not a decimal column of %d values at the scale %g", p.info.Name, r.n, scale)
	}
	if t&1 != 0 {
		for i, x := range pm {
			mant[i] -= x
		}
	} else {
		for i, x := range pm {
			mant[i] += x
		}
	}
	return nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// versions fills c.Versions.
func (r *Reader) versions(d *decoder, flags byte, c *Column) error {
	m := len(c.Rows)
	if flags&flagOwnVers != 0 {
		col := d.bytes()
		if d.err != nil {
			return d.err
		}
		var err error
		if c.Versions, err = colcodec.DecodeVersions(c.Versions[:0], col); err != nil {
			return fmt.Errorf("%w: versions: %w", ErrCorrupt, err)
		}
		if len(c.Versions) != m {
			return corrupt("%d versions for %d values", len(c.Versions), m)
		}
		return nil
	}
	rv, err := r.rowVersions()
	if err != nil {
		return err
	}
	c.Versions = grow(c.Versions, m)
	for i, row := range c.Rows {
		c.Versions[i] = rv[row]
	}
	e := d.uvarint()
	if d.err != nil {
		return d.err
	}
	if e > uint64(m) {
		return corrupt("%d version exceptions for %d values", e, m)
	}
	if e == 0 {
		return nil
	}
	idx, vers := d.bytes(), d.bytes()
	if d.err != nil {
		return d.err
	}
	if c.excIdx, err = colcodec.DecodeInts(c.excIdx[:0], idx); err != nil {
		return fmt.Errorf("%w: exception indices: %w", ErrCorrupt, err)
	}
	if c.excVers, err = colcodec.DecodeVersions(c.excVers[:0], vers); err != nil {
		return fmt.Errorf("%w: exception versions: %w", ErrCorrupt, err)
	}
	if uint64(len(c.excIdx)) != e || uint64(len(c.excVers)) != e {
		return corrupt("%d exception indices and %d versions, want %d", len(c.excIdx), len(c.excVers), e)
	}
	for j, x := range c.excIdx {
		if x < 0 || x >= int64(m) || (j > 0 && x <= c.excIdx[j-1]) {
			return corrupt("exception index %d", x)
		}
		c.Versions[x] = c.excVers[j]
	}
	return nil
}

// skipVersions reads the versions section's layout (its lengths and
// exception count) without decoding the columns, so that ColumnValues
// checks what follows the values as Column does.
func skipVersions(d *decoder, flags byte, m int) error {
	if flags&flagOwnVers != 0 {
		d.bytes()
		return d.err
	}
	e := d.uvarint()
	if d.err != nil {
		return d.err
	}
	if e > uint64(m) {
		return corrupt("%d version exceptions for %d values", e, m)
	}
	if e > 0 {
		d.bytes()
		d.bytes()
	}
	return d.err
}

// rowVersions decodes the block-level version column once per Reset.
func (r *Reader) rowVersions() ([]model.Version, error) {
	if r.rowVersOK {
		return r.rowVersS, nil
	}
	v, err := colcodec.DecodeVersions(r.rowVersS[:0], r.rowVers)
	r.rowVersS = v
	if err != nil {
		return nil, fmt.Errorf("%w: block versions: %w", ErrCorrupt, err)
	}
	if len(v) != r.n {
		return nil, corrupt("%d block versions for %d rows", len(v), r.n)
	}
	r.rowVersOK = true
	return v, nil
}

// Rows decodes every row of the block into dst[:0], reusing its array.
// Every row gets series; its fields are sorted by name, each with its
// value and version.
//
// Reuse rule: the rows of one call share one array of fields. When dst
// holds the rows this Reader's previous Rows call returned (even for
// another block), that field array is reused too, so those rows' fields
// are overwritten, and Rows allocates nothing but the string columns.
// To keep earlier rows, pass a dst that does not hold them. A string
// value is a substring of its column's one backing string (see the
// package doc). A block of more than MaxValues values or with a row
// without fields is ErrCorrupt.
func (r *Reader) Rows(dst []model.Row, series string) ([]model.Row, error) {
	var backing []model.Field
	if cap(dst) > 0 && len(r.backing) > 0 {
		if fs := dst[:1][0].Fields; len(fs) > 0 && &fs[0] == &r.backing[0] {
			backing = r.backing // dst holds the rows of the last call
		}
	}
	times, err := r.Times(r.timesS)
	r.timesS = times
	if err != nil {
		return dst[:0], err
	}
	// Count the fields of each row from the presences, so that the values
	// go straight to their place.
	n := r.n
	r.counts = grow(r.counts, n+1)
	clear(r.counts)
	c := &r.scratch
	all, total := 0, 0 // fields every row has; fields in all
	for i := range r.fields {
		fd := &r.fields[i]
		if fd.flags&presenceMask == presenceAll {
			all++
			total += n
		} else {
			d := decoder{b: fd.body}
			if err := r.presence(&d, fd.flags, c); err != nil {
				return dst[:0], fmt.Errorf("field %q: %w", fd.info.Name, err)
			}
			for _, row := range c.Rows {
				r.counts[row+1]++
			}
			total += len(c.Rows)
		}
		// Checked as it grows: no more work than the limit before the
		// error, and no allocation that MaxValues does not bound.
		if total > MaxValues {
			return dst[:0], corrupt("more than %d values", MaxValues)
		}
	}
	for i := 1; i <= n; i++ {
		if all == 0 && r.counts[i] == 0 {
			return dst[:0], corrupt("row %d has no field", i-1)
		}
		r.counts[i] += r.counts[i-1] + all // counts[i] is now where row i starts
	}
	if cap(backing) < total {
		backing = make([]model.Field, total)
	}
	r.backing = backing[:cap(backing)]
	backing = backing[:total]
	cursor := r.counts[:n]
	for i := range r.fields {
		fd := &r.fields[i]
		if err := r.column(fd, c, true, false); err != nil {
			return dst[:0], fmt.Errorf("field %q: %w", fd.info.Name, err)
		}
		for j, row := range c.Rows {
			backing[cursor[row]] = model.Field{Name: fd.info.Name, Value: c.Values[j], Version: c.Versions[j]}
			cursor[row]++
		}
	}
	// cursor[i] is now the end of row i, the start of row i+1.
	dst = grow(dst, n)
	start := 0
	for i := range dst {
		end := cursor[i]
		dst[i] = model.Row{Time: times[i], Series: series, Fields: backing[start:end:end]}
		start = end
	}
	return dst, nil
}
