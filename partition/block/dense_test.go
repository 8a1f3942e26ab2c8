package block

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// denseCase draws the columns of one series' block: n rows of nf fields
// (floats of two decimals, floats of any bits, ints, bools), every row of
// one write except, with share mixed, a field's value from another; the
// last float field is 100 minus the first two when predicted (the peer
// harness's usage_idle).
func denseCase(rng *rand.Rand, n, nf int, mixed float64, predicted bool) ([]int64, []DenseField) {
	times := make([]int64, n)
	t := rng.Int64N(1e12)
	for i := range times {
		t += 1 + rng.Int64N(1e8)
		times[i] = t
	}
	rowVers := make([]model.Version, n)
	for i := range rowVers {
		rowVers[i] = model.Version{Wall: 1e15 + int64(i/7)*1000, Node: uint64(rng.IntN(3))}
	}
	fields := make([]DenseField, nf)
	for j := range fields {
		f := &fields[j]
		f.Name = "f" + strconv.Itoa(10+j)
		f.Versions = make([]model.Version, n)
		for i := range f.Versions {
			f.Versions[i] = rowVers[i]
			if rng.Float64() < mixed {
				f.Versions[i] = model.Version{Wall: rowVers[i].Wall + 1 + rng.Int64N(5), Node: 9}
			}
		}
		switch j % 4 {
		case 0, 1:
			f.Kind = model.KindFloat
			f.Floats = make([]float64, n)
			x := float64(rng.IntN(10000)) / 100
			for i := range f.Floats {
				x = math.Round((x+rng.NormFloat64())*100) / 100
				f.Floats[i] = x
			}
		case 2:
			f.Kind = model.KindInt
			f.Ints = make([]int64, n)
			for i := range f.Ints {
				f.Ints[i] = rng.Int64N(1000) - 500
			}
		case 3:
			f.Kind = model.KindBool
			f.Ints = make([]int64, n)
			for i := range f.Ints {
				f.Ints[i] = rng.Int64N(2)
			}
		}
	}
	if predicted && nf >= 3 {
		last := &fields[nf-1]
		last.Kind, last.Ints = model.KindFloat, nil
		last.Floats = make([]float64, n)
		for i := range last.Floats {
			last.Floats[i] = math.Round((100-fields[0].Floats[i]-fields[1].Floats[i])*100) / 100
		}
	}
	if nf > 1 && rng.IntN(4) == 0 {
		// A column of any bits: NaN, infinities, non-decimal values.
		f := &fields[0]
		for i := range f.Floats {
			f.Floats[i] = math.Float64frombits(rng.Uint64())
		}
		f.Floats[0] = math.Inf(1)
	}
	return times, fields
}

// denseRows returns the rows of series that times and fields hold.
func denseRows(series string, times []int64, fields []DenseField) []model.Row {
	rows := make([]model.Row, len(times))
	for i := range rows {
		rows[i] = model.Row{Series: series, Time: times[i]}
		for j := range fields {
			f := &fields[j]
			v := model.Value{Kind: f.Kind}
			if f.Kind == model.KindFloat {
				v.F = f.Floats[i]
			} else {
				v.I = f.Ints[i]
			}
			rows[i].Fields = append(rows[i].Fields, model.Field{Name: f.Name, Value: v, Version: f.Versions[i]})
		}
	}
	return rows
}

// TestEncodeDenseIsEncode: a block encoded from columns is, byte for
// byte, the block of the same rows, with and without summaries, with
// versions that differ between fields, predicted fields and columns of
// any float bits; and it decodes to those rows.
func TestEncodeDenseIsEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 17))
	var e, d Encoder // reused, as the seal reuses its encoder
	for c := range 300 {
		n := 1 + rng.IntN(300)
		if c%10 == 0 {
			n = 500 + rng.IntN(1500)
		}
		nf := 1 + rng.IntN(6)
		mixed := [...]float64{0, 0, 0.01, 0.5}[rng.IntN(4)]
		times, fields := denseCase(rng, n, nf, mixed, rng.IntN(2) == 0)
		rows := denseRows("s", times, fields)
		want, err := e.Encode(nil, rows)
		if err != nil {
			t.Fatalf("case %d: Encode: %v", c, err)
		}
		got, err := d.EncodeDense([]byte("prefix"), times, fields)
		if err != nil {
			t.Fatalf("case %d: EncodeDense: %v", c, err)
		}
		if !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("case %d (%d rows, %d fields, mixed %v): EncodeDense's block (%d bytes) differs from Encode's (%d bytes)",
				c, n, nf, mixed, len(got)-len("prefix"), len(want))
		}
		r, err := Open(want)
		if err != nil {
			t.Fatalf("case %d: Open: %v", c, err)
		}
		back, err := r.Rows(nil, "s")
		if err != nil {
			t.Fatalf("case %d: Rows: %v", c, err)
		}
		if len(back) != n {
			t.Fatalf("case %d: %d rows back, want %d", c, len(back), n)
		}
		for i := range back {
			if back[i].Time != rows[i].Time || len(back[i].Fields) != nf {
				t.Fatalf("case %d row %d: %+v, want %+v", c, i, back[i], rows[i])
			}
			for j, f := range back[i].Fields {
				w := rows[i].Fields[j]
				if f.Name != w.Name || f.Version != w.Version || f.Value.Kind != w.Value.Kind || f.Value.I != w.Value.I ||
					math.Float64bits(f.Value.F) != math.Float64bits(w.Value.F) {
					t.Fatalf("case %d row %d field %d: %+v, want %+v", c, i, j, f, w)
				}
			}
		}
	}
}

// TestEncodeDenseRefuses: columns Encode would refuse as rows, or that do
// not hold a value in every row, are refused with ErrInvalid and nothing
// appended.
func TestEncodeDenseRefuses(t *testing.T) {
	ver := []model.Version{{Wall: 1}, {Wall: 2}}
	ok := func() ([]int64, []DenseField) {
		return []int64{1, 2}, []DenseField{
			{Name: "a", Kind: model.KindFloat, Floats: []float64{1, 2}, Versions: ver},
			{Name: "b", Kind: model.KindBool, Ints: []int64{0, 1}, Versions: ver},
		}
	}
	for _, tc := range []struct {
		name   string
		break_ func(times []int64, fs []DenseField) ([]int64, []DenseField)
	}{
		{"no rows", func(_ []int64, fs []DenseField) ([]int64, []DenseField) { return nil, fs }},
		{"no fields", func(ts []int64, _ []DenseField) ([]int64, []DenseField) { return ts, nil }},
		{"times not ascending", func(ts []int64, fs []DenseField) ([]int64, []DenseField) { ts[1] = 1; return ts, fs }},
		{"names not sorted", func(ts []int64, fs []DenseField) ([]int64, []DenseField) { fs[1].Name = "a"; return ts, fs }},
		{"empty name", func(ts []int64, fs []DenseField) ([]int64, []DenseField) { fs[0].Name = ""; return ts, fs }},
		{"a value short", func(ts []int64, fs []DenseField) ([]int64, []DenseField) {
			fs[0].Floats = fs[0].Floats[:1]
			return ts, fs
		}},
		{"a version short", func(ts []int64, fs []DenseField) ([]int64, []DenseField) { fs[1].Versions = ver[:1]; return ts, fs }},
		{"bool of 2", func(ts []int64, fs []DenseField) ([]int64, []DenseField) { fs[1].Ints = []int64{0, 2}; return ts, fs }},
		{"string kind", func(ts []int64, fs []DenseField) ([]int64, []DenseField) {
			fs[1].Kind = model.KindString
			return ts, fs
		}},
	} {
		times, fields := tc.break_(ok())
		var e Encoder
		got, err := e.EncodeDense([]byte("x"), times, fields)
		if !errors.Is(err, ErrInvalid) || string(got) != "x" {
			t.Errorf("%s: %q, %v; want x and ErrInvalid", tc.name, got, err)
		}
	}
	times, fields := ok()
	var e Encoder
	if _, err := e.EncodeDense(nil, times, fields); err != nil {
		t.Fatalf("the valid columns: %v", err)
	}
}
