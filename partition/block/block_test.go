package block

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/model"
)

var t0 = int64(1_790_000_000) * 1e9 // a 2026 time in ns

const testSeries = "cpu,host=a"

// genOpts shapes randRows.
type genOpts struct {
	fields   int     // names field0..field{fields-1}
	pPresent float64 // chance that a row has a field (1: all rows have all)
	pMixed   float64 // chance that a value has another kind than its field's
	pTomb    float64 // chance that a value is a tombstone
	pExc     float64 // chance that a value has its own version (else the row's)
}

var genModes = []genOpts{
	{fields: 3, pPresent: 1},
	{fields: 1, pPresent: 1},
	{fields: 4, pPresent: 0.7, pTomb: 0.05, pExc: 0.05},
	{fields: 5, pPresent: 0.3, pMixed: 0.2, pTomb: 0.1, pExc: 1},
	{fields: 2, pPresent: 0.95, pExc: 0.5},
	{fields: 8, pPresent: 0.05, pMixed: 0.5, pTomb: 0.3, pExc: 0.2},
}

var specialFloats = []float64{
	math.NaN(), math.Float64frombits(0x7ff8_0000_0000_1234), math.Float64frombits(0xfff0_0000_0000_0001),
	math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.MaxFloat64, math.SmallestNonzeroFloat64,
}

// randValue returns a value of kind k.
func randValue(r *rand.Rand, k model.Kind) model.Value {
	switch k {
	case model.KindFloat:
		if r.IntN(10) == 0 {
			return model.Float(specialFloats[r.IntN(len(specialFloats))])
		}
		if r.IntN(2) == 0 {
			return model.Float(float64(r.IntN(10000)) / 100)
		}
		return model.Float(r.NormFloat64() * 1e6)
	case model.KindInt:
		if r.IntN(10) == 0 {
			return model.Int(int64(r.Uint64()))
		}
		return model.Int(r.Int64N(1000) - 500)
	case model.KindBool:
		return model.Bool(r.IntN(2) == 0)
	case model.KindString:
		switch r.IntN(4) {
		case 0:
			return model.String("")
		case 1:
			return model.String(strings.Repeat("x", r.IntN(3000)))
		}
		return model.String(fmt.Sprint("s", r.IntN(5)))
	}
	return model.Deleted()
}

// randRows returns n rows of one series by ascending time.
func randRows(r *rand.Rand, n int, o genOpts) []model.Row {
	kinds := make([]model.Kind, o.fields)
	for j := range kinds {
		kinds[j] = model.Kind(1 + r.IntN(4))
	}
	rows := make([]model.Row, 0, n)
	t := t0 + r.Int64N(1e12)
	wall := t
	nodes := []uint64{model.NodeID("a"), model.NodeID("b"), model.NodeID("c")}
	for len(rows) < n {
		t += 1 + r.Int64N(2e9)
		wall += 1e6 + r.Int64N(3)*1e6
		rowVer := model.Version{Wall: wall, Node: nodes[r.IntN(len(nodes))]}
		row := model.Row{Time: t, Series: testSeries}
		for j := range o.fields {
			if r.Float64() >= o.pPresent {
				continue
			}
			k := kinds[j]
			if r.Float64() < o.pMixed {
				k = model.Kind(1 + r.IntN(4))
			}
			if r.Float64() < o.pTomb {
				k = model.KindDeleted
			}
			v := rowVer
			if r.Float64() < o.pExc {
				v = model.Version{Wall: wall - r.Int64N(1e9), Node: nodes[r.IntN(len(nodes))]}
			}
			row.Fields = append(row.Fields, model.Field{Name: fmt.Sprint("field", j), Value: randValue(r, k), Version: v})
		}
		if len(row.Fields) == 0 {
			continue
		}
		rows = append(rows, row)
	}
	return rows
}

// encodeOpen encodes rows as one block and opens it.
func encodeOpen(t *testing.T, rows []model.Row) *Reader {
	t.Helper()
	b, err := Encode(nil, rows)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := Open(b)
	if err != nil {
		t.Fatal(err)
	}
	return rd
}

func rowsEqual(t *testing.T, got, want []model.Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := &got[i], &want[i]
		if g.Time != w.Time || g.Series != w.Series || len(g.Fields) != len(w.Fields) {
			t.Fatalf("row %d: %d %q %d fields, want %d %q %d fields", i, g.Time, g.Series, len(g.Fields), w.Time, w.Series, len(w.Fields))
		}
		for k := range w.Fields {
			gf, wf := g.Fields[k], w.Fields[k]
			if gf.Name != wf.Name || !gf.Value.Equal(wf.Value) || gf.Value.I != wf.Value.I || gf.Version != wf.Version {
				t.Fatalf("row %d field %d: %+v, want %+v", i, k, gf, wf)
			}
		}
	}
}

var testSizes = []int{1, 2, 3, 7, 8, 9, 64, 300, 2000}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 17))
	var buf []byte
	var got []model.Row
	var col Column
	decimals := 0 // float columns read as decimal mantissas
	defer func() {
		if !t.Failed() && decimals == 0 {
			t.Error("no float column was read in its decimal form")
		}
	}()
	for mi, mode := range genModes {
		for _, n := range testSizes {
			for rep := range 3 {
				rows := randRows(r, n, mode)
				var err error
				buf, err = Encode(buf[:0], rows)
				if err != nil {
					t.Fatalf("mode %d n %d: %v", mi, n, err)
				}
				rd, err := Open(buf)
				if err != nil {
					t.Fatalf("mode %d n %d: open: %v", mi, n, err)
				}
				if rd.Len() != n || rd.MinTime() != rows[0].Time || rd.MaxTime() != rows[n-1].Time {
					t.Fatalf("mode %d n %d: header %d [%d, %d]", mi, n, rd.Len(), rd.MinTime(), rd.MaxTime())
				}
				// Twice: the second call reuses the first's memory.
				for range 2 {
					if got, err = rd.Rows(got, testSeries); err != nil {
						t.Fatalf("mode %d n %d rep %d: rows: %v", mi, n, rep, err)
					}
					rowsEqual(t, got, rows)
				}
				checkColumns(t, rd, rows, &col, &decimals)
			}
		}
	}
}

// checkColumns compares every Column and Fields with the rows.
// decimals counts the float columns ColumnAggregate read as decimals.
func checkColumns(t *testing.T, rd *Reader, rows []model.Row, col *Column, decimals *int) {
	t.Helper()
	type want struct {
		rows []int32
		vals []model.Value
		vers []model.Version
	}
	byName := map[string]*want{}
	var names []string
	for i, row := range rows {
		for _, f := range row.Fields {
			w := byName[f.Name]
			if w == nil {
				w = &want{}
				byName[f.Name] = w
				names = append(names, f.Name)
			}
			w.rows = append(w.rows, int32(i))
			w.vals = append(w.vals, f.Value)
			w.vers = append(w.vers, f.Version)
		}
	}
	infos := rd.Fields(nil)
	if len(infos) != len(names) {
		t.Fatalf("%d fields, want %d", len(infos), len(names))
	}
	for _, info := range infos {
		w := byName[info.Name]
		if w == nil {
			t.Fatalf("field %q not in the rows", info.Name)
		}
		ok, err := rd.Column(info.Name, col)
		if !ok || err != nil {
			t.Fatalf("column %q: %v %v", info.Name, ok, err)
		}
		kind := w.vals[0].Kind
		for _, v := range w.vals {
			if v.Kind != kind {
				kind = 0
			}
		}
		if info.Kind != kind || col.Kind != kind {
			t.Fatalf("field %q: kind %v/%v, want %v", info.Name, info.Kind, col.Kind, kind)
		}
		if len(col.Rows) != len(w.rows) || len(col.Values) != len(w.rows) || len(col.Versions) != len(w.rows) {
			t.Fatalf("field %q: %d/%d/%d values, want %d", info.Name, len(col.Rows), len(col.Values), len(col.Versions), len(w.rows))
		}
		for i := range w.rows {
			if col.Rows[i] != w.rows[i] || !col.Values[i].Equal(w.vals[i]) || col.Versions[i] != w.vers[i] {
				t.Fatalf("field %q value %d: row %d %+v %+v, want row %d %+v %+v", info.Name, i,
					col.Rows[i], col.Values[i], col.Versions[i], w.rows[i], w.vals[i], w.vers[i])
			}
		}
	}
	for _, info := range infos {
		w := byName[info.Name]
		if ok, err := rd.ColumnValues(info.Name, col); !ok || err != nil {
			t.Fatalf("values of %q: %v %v", info.Name, ok, err)
		}
		if len(col.Versions) != 0 || len(col.Rows) != len(w.rows) || len(col.Values) != len(w.rows) {
			t.Fatalf("values of %q: %d/%d/%d, want %d values and no versions", info.Name, len(col.Rows), len(col.Values), len(col.Versions), len(w.rows))
		}
		for i := range w.rows {
			if col.Rows[i] != w.rows[i] || !col.Values[i].Equal(w.vals[i]) {
				t.Fatalf("values of %q, value %d: row %d %+v, want row %d %+v", info.Name, i, col.Rows[i], col.Values[i], w.rows[i], w.vals[i])
			}
		}
	}
	for _, info := range infos {
		w := byName[info.Name]
		if ok, err := rd.ColumnAggregate(info.Name, col); !ok || err != nil {
			t.Fatalf("aggregate column of %q: %v %v", info.Name, ok, err)
		}
		if len(col.Versions) != 0 || len(col.Rows) != len(w.rows) {
			t.Fatalf("aggregate column of %q: %d rows, %d versions, want %d and none", info.Name, len(col.Rows), len(col.Versions), len(w.rows))
		}
		if col.Kind == model.KindFloat {
			// The values are in Floats only, or as decimal mantissas.
			if col.Decimal {
				if len(col.Values) != 0 || len(col.Floats) != 0 || len(col.Mantissas) != len(w.rows) {
					t.Fatalf("aggregate column of decimals %q: %d values, %d floats, %d mantissas, want %d mantissas only",
						info.Name, len(col.Values), len(col.Floats), len(col.Mantissas), len(w.rows))
				}
				for i := range w.rows {
					if f := float64(col.Mantissas[i]) / col.Scale; col.Rows[i] != w.rows[i] || !sameFloat(f, w.vals[i].F) {
						t.Fatalf("aggregate column of %q, value %d: row %d %v, want row %d %v", info.Name, i, col.Rows[i], f, w.rows[i], w.vals[i].F)
					}
				}
				*decimals++
				continue
			}
			if len(col.Values) != 0 || len(col.Floats) != len(w.rows) {
				t.Fatalf("aggregate column of floats %q: %d values, %d floats, want none and %d", info.Name, len(col.Values), len(col.Floats), len(w.rows))
			}
			for i := range w.rows {
				if col.Rows[i] != w.rows[i] || !sameFloat(col.Floats[i], w.vals[i].F) {
					t.Fatalf("aggregate column of %q, value %d: row %d %v, want row %d %v", info.Name, i, col.Rows[i], col.Floats[i], w.rows[i], w.vals[i].F)
				}
			}
			continue
		}
		if len(col.Values) != len(w.rows) {
			t.Fatalf("aggregate column of %q: %d values, want %d", info.Name, len(col.Values), len(w.rows))
		}
		for i := range w.rows {
			if col.Rows[i] != w.rows[i] || !col.Values[i].Equal(w.vals[i]) {
				t.Fatalf("aggregate column of %q, value %d: row %d %+v, want row %d %+v", info.Name, i, col.Rows[i], col.Values[i], w.rows[i], w.vals[i])
			}
		}
	}
	if ok, err := rd.ColumnValues("no such field", col); ok || err != nil {
		t.Fatalf("missing column: %v %v", ok, err)
	}
	if ok, err := rd.ColumnAggregate("no such field", col); ok || err != nil {
		t.Fatalf("missing column: %v %v", ok, err)
	}
	if ok, err := rd.Column("no such field", col); ok || err != nil {
		t.Fatalf("missing column: %v %v", ok, err)
	}
}

// sameFloat compares bit for bit.
func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// closeFloat compares bit for bit a value that is not finite, and a
// finite one to a relative 1e-9 (an absolute 1e-9 near zero: the
// rounding of a sum or a mean in another order).
func closeFloat(a, b float64) bool {
	if sameFloat(a, b) {
		return true
	}
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b))
}

func TestSummaries(t *testing.T) {
	withSummaries(t)
	r := rand.New(rand.NewPCG(2, 17))
	forms := [2]int{} // summaries read in the 72-byte and the decimal form
	defer func() {
		if !t.Failed() && (forms[0] == 0 || forms[1] == 0) {
			t.Errorf("summaries read: %d whole, %d decimal; want both forms", forms[0], forms[1])
		}
	}()
	for mi, mode := range genModes {
		for _, n := range testSizes {
			rows := randRows(r, n, mode)
			if mi == 0 && n > 10 {
				// Exact sums: NaN and ±Inf would make every sum NaN.
				for i := range rows {
					for k := range rows[i].Fields {
						if v := &rows[i].Fields[k].Value; v.Kind == model.KindFloat && (math.IsNaN(v.F) || math.IsInf(v.F, 0)) {
							v.F = 1.5
						}
					}
				}
			}
			rd := encodeOpen(t, rows)
			brute := map[string]*model.AggState{}
			for _, row := range rows {
				for _, f := range row.Fields {
					s := brute[f.Name]
					if s == nil {
						s = &model.AggState{}
						brute[f.Name] = s
					}
					if f.Value.Kind != model.KindDeleted {
						s.Add(row.Time, testSeries, f.Value)
					}
				}
			}
			for name, w := range brute {
				g, ok := rd.Summary(name, testSeries)
				if w.Count == 0 {
					// Only tombstones: no state, as the row aggregator.
					if ok {
						t.Fatalf("mode %d n %d field %q of tombstones: %+v, ok", mi, n, name, g)
					}
					continue
				}
				if !ok {
					t.Fatalf("no summary of %q", name)
				}
				if w.N > 0 {
					forms[b2i(rd.fields[rd.find(name)].flags&flagDecimalSummary != 0)]++
				}
				if g.Count != w.Count || g.N != w.N || g.FirstSeries != w.FirstSeries || g.LastSeries != w.LastSeries {
					t.Fatalf("mode %d n %d field %q: %+v, want %+v", mi, n, name, g, *w)
				}
				if w.N == 0 {
					continue
				}
				// Sum, Mean and M2 of a column of finite floats are
				// model.FloatRun's: equal up to float rounding; the rest,
				// and every figure of other columns, bit for bit.
				if !sameFloat(g.Min, w.Min) || !sameFloat(g.Max, w.Max) ||
					g.FirstTime != w.FirstTime || !sameFloat(g.First, w.First) ||
					g.LastTime != w.LastTime || !sameFloat(g.Last, w.Last) ||
					!closeFloat(g.Sum, w.Sum) || !closeFloat(g.Mean, w.Mean) || !closeFloat(g.M2, w.M2) {
					t.Fatalf("mode %d n %d field %q: %+v, want %+v", mi, n, name, g, *w)
				}
			}
			if _, ok := rd.Summary("no such field", testSeries); ok {
				t.Fatal("summary of a missing field")
			}
		}
	}
}

func TestEncodeInvalid(t *testing.T) {
	f := func(name string, v model.Value) model.Field {
		return model.Field{Name: name, Value: v, Version: model.Version{Wall: 1, Node: 1}}
	}
	row := func(t int64, fs ...model.Field) model.Row { return model.Row{Time: t, Series: "s", Fields: fs} }
	ok := f("a", model.Float(1))
	cases := map[string][]model.Row{
		"empty":           nil,
		"unsorted":        {row(2, ok), row(1, ok)},
		"duplicate time":  {row(1, ok), row(1, ok)},
		"two series":      {row(1, ok), {Time: 2, Series: "t", Fields: []model.Field{ok}}},
		"no fields":       {row(1)},
		"unsorted fields": {row(1, f("b", model.Int(1)), f("a", model.Int(1)))},
		"duplicate field": {row(1, ok, ok)},
		"empty name":      {row(1, f("", model.Int(1)))},
		"long name":       {row(1, f(strings.Repeat("n", model.MaxFieldNameLen+1), model.Int(1)))},
		"kind 0":          {row(1, f("a", model.Value{}))},
		"kind 6":          {row(1, f("a", model.Value{Kind: 6}))},
		"bool 2":          {row(1, f("a", model.Value{Kind: model.KindBool, I: 2}))},
	}
	for name, rows := range cases {
		dst := []byte("prefix")
		out, err := Encode(dst, rows)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
		if string(out) != "prefix" {
			t.Errorf("%s: dst changed to %q", name, out)
		}
	}
	many := make([]model.Row, MaxRows+1)
	for i := range many {
		many[i] = row(int64(i), ok)
	}
	if _, err := Encode(nil, many); !errors.Is(err, ErrInvalid) {
		t.Errorf("too many rows: %v, want ErrInvalid", err)
	}
	if _, err := Encode(nil, many[:MaxRows]); err != nil {
		t.Errorf("MaxRows rows: %v", err)
	}
}

// errMalformed reports a decoded block that is not one Encode could have
// written although no decoder returned an error.
var errMalformed = errors.New("decoded without error but malformed")

// decodeAll runs every decoder of the Reader; it reports the first error,
// or errMalformed (not ErrCorrupt) when what they return without error is
// not well-formed: every row with at least one field, sorted, counts that
// agree with the header, the columns and the summaries.
func decodeAll(b []byte) error {
	rd, err := Open(b)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errMalformed}, args...)...)
	}
	n := rd.Len()
	if n < 1 || n > MaxRows || rd.NumFields() < 1 || rd.NumFields() > MaxFields {
		return bad("%d rows, %d fields", n, rd.NumFields())
	}
	var col Column
	perField := make([]int, rd.NumFields())
	for i := range rd.NumFields() {
		name := rd.Field(i).Name
		if _, err := rd.ColumnValues(name, &col); err != nil {
			return err
		}
		if _, err := rd.ColumnAggregate(name, &col); err != nil {
			return err
		}
		if _, _, err := rd.DecimalHead(name, n/2, &col); err != nil {
			return err
		}
		if _, err := rd.Column(name, &col); err != nil {
			return err
		}
		m := len(col.Rows)
		if m == 0 || len(col.Values) != m || len(col.Versions) != m {
			return bad("field %q: %d rows, %d values, %d versions", name, m, len(col.Values), len(col.Versions))
		}
		count := 0
		for j, row := range col.Rows {
			if row < 0 || int(row) >= n || (j > 0 && row <= col.Rows[j-1]) {
				return bad("field %q: row %d", name, row)
			}
			if k := col.Values[j].Kind; k < model.KindFloat || k > model.KindDeleted || (col.Kind != 0 && k != col.Kind) {
				return bad("field %q: kind %d in a column of %d", name, k, col.Kind)
			}
			if col.Values[j].Kind != model.KindDeleted {
				count++
			}
		}
		s, ok := rd.Summary(name, "s")
		if !rd.HasSummaries() {
			if ok {
				return bad("field %q: a summary in a block without summaries", name)
			}
		} else if ok != (count > 0) || s.Count != int64(count) {
			return bad("field %q: summary %v of %d values, %d not tombstones", name, ok, s.Count, count)
		}
		perField[i] = m
	}
	times, err := rd.Times(nil)
	if err != nil {
		return err
	}
	if len(times) != n || times[0] != rd.MinTime() || times[n-1] != rd.MaxTime() {
		return bad("%d times in [%d, %d]", len(times), rd.MinTime(), rd.MaxTime())
	}
	rows, err := rd.Rows(nil, "s")
	if err != nil {
		return err
	}
	if len(rows) != n {
		return bad("%d rows of %d", len(rows), n)
	}
	seen := make([]int, rd.NumFields())
	for i, row := range rows {
		if row.Time != times[i] || len(row.Fields) == 0 || len(row.Fields) > MaxFields {
			return bad("row %d: time %d, %d fields", i, row.Time, len(row.Fields))
		}
		for k, f := range row.Fields {
			if k > 0 && f.Name <= row.Fields[k-1].Name {
				return bad("row %d: field %q after %q", i, f.Name, row.Fields[k-1].Name)
			}
			j := rd.find(f.Name)
			if j < 0 {
				return bad("row %d: field %q not in the block", i, f.Name)
			}
			seen[j]++
		}
	}
	for j := range seen {
		if seen[j] != perField[j] {
			return bad("field %d: in %d rows, its column has %d", j, seen[j], perField[j])
		}
	}
	return nil
}

// corruptionBlocks are small blocks of every mode.
func corruptionBlocks(t testing.TB) [][]byte {
	r := rand.New(rand.NewPCG(3, 17))
	var out [][]byte
	for _, mode := range genModes {
		for _, n := range []int{1, 5, 40} {
			rows := randRows(r, n, mode)
			for i := range rows {
				for k := range rows[i].Fields {
					if v := &rows[i].Fields[k].Value; v.Kind == model.KindString && len(v.S) > 20 {
						v.S = v.S[:20] // keep the blocks small
					}
				}
			}
			b, err := Encode(nil, rows)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	// Blocks with predicted fields (predict.go).
	for _, c := range []struct {
		shape string
		n     int
	}{{"cpu shares", summaryMinRows}, {"in and out", predictMinRows + 8}} {
		shape := c.shape
		b, err := Encode(nil, relatedRows(r, c.n, shape))
		if err != nil {
			t.Fatal(err)
		}
		if rd, err := Open(b); err != nil || len(predictedFields(rd)) == 0 {
			t.Fatalf("%s: a block without a predicted field (%v)", shape, err)
		}
		out = append(out, b)
	}
	return out
}

func TestCorruption(t *testing.T) {
	for bi, b := range corruptionBlocks(t) {
		if err := decodeAll(b); err != nil {
			t.Fatalf("block %d: %v", bi, err)
		}
		c := make([]byte, len(b))
		for bit := range len(b) * 8 {
			copy(c, b)
			c[bit/8] ^= 1 << (bit % 8)
			if err := decodeAll(c); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("block %d, bit %d flipped: %v, want ErrCorrupt", bi, bit, err)
			}
		}
		for n := range len(b) {
			if err := decodeAll(b[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("block %d truncated to %d of %d bytes: %v, want ErrCorrupt", bi, n, len(b), err)
			}
		}
	}
}

// resum replaces the checksum of b so that a change reaches the decoders
// behind it.
func resum(b []byte) []byte {
	if len(b) < 4 {
		return b
	}
	body := b[:len(b)-4]
	out := append([]byte(nil), body...)
	return append(out, crcBytes(body)...)
}

// TestCorruptionBehindChecksum flips every bit and then fixes the
// checksum: the decoders see the damage and must not panic; what they
// return is either an ErrCorrupt or a block that decodes.
func TestCorruptionBehindChecksum(t *testing.T) {
	detected := 0
	total := 0
	for bi, b := range corruptionBlocks(t) {
		for bit := range (len(b) - 4) * 8 {
			c := append([]byte(nil), b...)
			c[bit/8] ^= 1 << (bit % 8)
			err := decodeAll(resum(c))
			total++
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("block %d bit %d: %v, want ErrCorrupt", bi, bit, err)
				}
				detected++
			}
		}
	}
	t.Logf("%d of %d bit flips behind a valid checksum detected by the layout checks", detected, total)
}

func crcBytes(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(nil, crc32.Checksum(b, castagnoli))
}

// FuzzOpen decodes arbitrary bytes, raw (the checksum rejects nearly
// all) and with their checksum fixed (the layout checks see them). Its
// input also drives a structured case: the first 8 bytes seed a random
// block of one of the test modes, and each following 3 bytes (position
// as uint16, xor) damage one of its bytes before the checksum is fixed.
func FuzzOpen(f *testing.F) {
	for _, b := range corruptionBlocks(f) {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{FormatVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x7f})
	for i := range 8 {
		f.Add([]byte{byte(i), 0, 0, 0, 0, 0, 0, 1, byte(i * 37), 0, 1})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := decodeAll(data); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("raw: %v", err)
		}
		if err := decodeAll(resum(data)); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("checksummed: %v", err)
		}
		if len(data) < 8 {
			return
		}
		seed := binary.LittleEndian.Uint64(data)
		r := rand.New(rand.NewPCG(seed, 17))
		mode := genModes[seed%uint64(len(genModes))]
		rows := randRows(r, 1+int(seed>>8)%50, mode)
		for i := range rows {
			for k := range rows[i].Fields {
				if v := &rows[i].Fields[k].Value; v.Kind == model.KindString && len(v.S) > 20 {
					v.S = v.S[:20]
				}
			}
		}
		b, err := Encode(nil, rows)
		if err != nil {
			t.Fatal(err)
		}
		for p := data[8:]; len(p) >= 3; p = p[3:] {
			b[int(binary.LittleEndian.Uint16(p))%(len(b)-4)] ^= p[2]
		}
		if err := decodeAll(resum(b)); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("damaged block: %v", err)
		}
	})
}
