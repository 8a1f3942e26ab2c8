package block

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tsdb/tsdb/internal/harnessdata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/colcodec"
)

// relatedShapes are fields that depend on each other, as real metrics
// often do, each a function from a random source and a row count to the
// rows' fields (sorted by name) at each row.
var relatedShapes = map[string]func(r *rand.Rand, n int) [][]model.Field{
	// CPU shares summing to 100, each printed with 2 decimals (the peer
	// harness's): idle is predicted from user and system.
	"cpu shares": func(r *rand.Rand, n int) [][]model.Field {
		user, sys, idle := harnessdata.Walk(r, n)
		out := make([][]model.Field, n)
		for i := range out {
			out[i] = []model.Field{
				{Name: "idle", Value: model.Float(idle[i])},
				{Name: "system", Value: model.Float(sys[i])},
				{Name: "user", Value: model.Float(user[i])},
			}
		}
		return out
	},
	// Memory bytes, total = used + free + cached, whole numbers, beside
	// an independent field and a string.
	"memory bytes": func(r *rand.Rand, n int) [][]model.Field {
		used, free := 4e9+float64(r.IntN(1e6)), 8e9+float64(r.IntN(1e6))
		out := make([][]model.Field, n)
		for i := range out {
			d := float64(r.IntN(2e6) - 1e6)
			used += d
			cached := float64(2e9 + r.IntN(1000))
			free -= d + float64(r.IntN(50))
			out[i] = []model.Field{
				{Name: "cached", Value: model.Float(cached)},
				{Name: "free", Value: model.Float(free)},
				{Name: "host", Value: model.String("a")},
				{Name: "load", Value: model.Float(float64(r.IntN(1000)) / 100)},
				{Name: "total", Value: model.Float(used + free + cached)},
				{Name: "used", Value: model.Float(used)},
			}
		}
		return out
	},
	// Bytes in and out of a link that forwards what it receives, with
	// three decimals; the out counter trails the in counter.
	"in and out": func(r *rand.Rand, n int) [][]model.Field {
		in := 1e6
		out := make([][]model.Field, n)
		for i := range out {
			in += float64(r.IntN(1e6)) / 1000
			lag := float64(r.IntN(10)) / 1000
			out[i] = []model.Field{
				{Name: "in", Value: model.Float(math.Round(in*1000) / 1000)},
				{Name: "out", Value: model.Float(math.Round((in-lag)*1000) / 1000)},
			}
		}
		return out
	},
}

// relatedRows returns n rows of shape, one version per row.
func relatedRows(r *rand.Rand, n int, shape string) []model.Row {
	fields := relatedShapes[shape](r, n)
	rows := make([]model.Row, n)
	wall := t0
	for i := range rows {
		wall += 1e6 + r.Int64N(2e6)
		v := model.Version{Wall: wall, Node: model.NodeID("a")}
		for k := range fields[i] {
			fields[i][k].Version = v
		}
		rows[i] = model.Row{Time: t0 + int64(i)*harnessStep, Series: testSeries, Fields: fields[i]}
	}
	return rows
}

// predictedFields returns the names of rd's predicted fields.
func predictedFields(rd *Reader) []string {
	var out []string
	for i := range rd.NumFields() {
		if rd.Predicted(i) {
			out = append(out, rd.fields[i].info.Name)
		}
	}
	return out
}

// TestPredictedRoundTrip: blocks of related fields predict some of them
// from the others (from predictMinRows rows on), take fewer bytes than
// without prediction, and read back exactly by every decoder.
func TestPredictedRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 17))
	var col Column
	decimals := 0
	for shape := range relatedShapes {
		for _, n := range []int{predictMinRows - 1, predictMinRows, 64, 229, 2000} {
			rows := relatedRows(r, n, shape)
			b, err := Encode(nil, rows)
			if err != nil {
				t.Fatalf("%s, %d rows: %v", shape, n, err)
			}
			plain, err := (&Encoder{noPredict: true}).Encode(nil, rows)
			if err != nil {
				t.Fatal(err)
			}
			rd, err := Open(b)
			if err != nil {
				t.Fatalf("%s, %d rows: open: %v", shape, n, err)
			}
			pred := predictedFields(rd)
			t.Logf("%s, %d rows: %d bytes, %d without prediction; predicted %v", shape, n, len(b), len(plain), pred)
			switch {
			case n < predictMinRows && len(pred) > 0:
				t.Errorf("%s, %d rows: predicted %v below %d rows", shape, n, pred, predictMinRows)
			case n >= predictMinRows && len(pred) == 0:
				t.Errorf("%s, %d rows: no field predicted", shape, n)
			case n >= predictMinRows && len(b) >= len(plain):
				t.Errorf("%s, %d rows: %d bytes with prediction, %d without", shape, n, len(b), len(plain))
			}
			got, err := rd.Rows(nil, testSeries)
			if err != nil {
				t.Fatalf("%s, %d rows: %v", shape, n, err)
			}
			rowsEqual(t, got, rows)
			checkColumns(t, rd, rows, &col, &decimals)
			if err := decodeAll(b); err != nil {
				t.Fatalf("%s, %d rows: %v", shape, n, err)
			}
			// A predicted field's decimal head adds its terms' first rows.
			if n >= summaryMinRows {
				for _, name := range pred {
					checkDecimalHead(t, rd, rows, name)
				}
			}
		}
	}
}

// TestPredictedTermsChecked: terms Encode never writes, behind a valid
// checksum, are ErrCorrupt: a field predicted from itself, from a field
// the block lacks, from a predicted field or a field not of floats in
// every row, with no term or too many.
func TestPredictedTermsChecked(t *testing.T) {
	n := 40
	times, vers := seq(n)
	floats := func(v ...float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v[i%len(v)]
		}
		return out
	}
	// plain is a field section: every row, kind float, no summaries
	// (the hand-made blocks keep none), its values, no exceptions.
	plain := func(vals []float64) []byte {
		col, err := colcodec.EncodeFloats(nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		sec := []byte{presenceAll, byte(model.KindFloat), byte(n), byte(n)}
		sec = appendBytes(sec, col)
		return append(sec, 0)
	}
	// predicted is a predicted section with the given terms (raw
	// uvarints after the count) and residuals.
	predicted := func(count uint64, terms []uint64, res []int64) []byte {
		sec := []byte{presenceAll | flagPredicted, byte(model.KindFloat), byte(n), byte(n)}
		sec = appendUvarints(sec, count)
		sec = appendUvarints(sec, terms...)
		col, err := colcodec.EncodeDecimals(nil, res, 2)
		if err != nil {
			t.Fatal(err)
		}
		sec = appendBytes(sec, col)
		return append(sec, 0)
	}
	res := make([]int64, n)
	a, b := plain(floats(1.25, 2.5)), plain(floats(3.75))
	good := rawBlockNoSummaries(t, times, uint64(n), 3, vers, rawField{"a", a}, rawField{"b", b},
		rawField{"c", predicted(2, []uint64{0 << 1, 1<<1 | 1}, res)})
	if err := decodeAll(good); err != nil {
		t.Fatalf("the hand-made predicted block: %v", err)
	}
	rd, err := Open(good)
	if err != nil {
		t.Fatal(err)
	}
	var col Column
	if _, err := rd.ColumnValues("c", &col); err != nil {
		t.Fatal(err)
	}
	for i, v := range col.Values {
		if want := floats(1.25, 2.5)[i] - 3.75; v.F != want {
			t.Fatalf("c[%d] = %v, want a − b = %v", i, v.F, want)
		}
	}
	str := []byte{presenceAll, byte(model.KindString), byte(n), 0}
	scol, err := colcodec.EncodeStrings(nil, make([]string, n))
	if err != nil {
		t.Fatal(err)
	}
	str = append(appendBytes(str, scol), 0)
	for _, tc := range []struct {
		name   string
		fields []rawField
	}{
		{"from itself", []rawField{{"a", a}, {"c", predicted(1, []uint64{1 << 1}, res)}}},
		{"from a field the block lacks", []rawField{{"a", a}, {"c", predicted(1, []uint64{2 << 1}, res)}}},
		{"no term", []rawField{{"a", a}, {"c", predicted(0, nil, res)}}},
		{"9 terms", []rawField{{"a", a}, {"c", predicted(9, []uint64{0, 0, 0, 0, 0, 0, 0, 0, 0}, res)}}},
		{"one field twice", []rawField{{"a", a}, {"c", predicted(2, []uint64{0, 1}, res)}}},
		{"from a predicted field", []rawField{{"a", a}, {"b", predicted(1, []uint64{0}, res)}, {"c", predicted(1, []uint64{1 << 1}, res)}}},
		{"from strings", []rawField{{"a", str}, {"c", predicted(1, []uint64{0}, res)}}},
		{"from floats of another scale", []rawField{{"a", plain(floats(1.125))}, {"c", predicted(1, []uint64{0}, res)}}},
		{"residuals of another count", []rawField{{"a", a}, {"c", predicted(1, []uint64{0}, res[:n-1])}}},
	} {
		blk := rawBlockNoSummaries(t, times, uint64(n), uint64(len(tc.fields)), vers, tc.fields...)
		if err := decodeAll(blk); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
	}
}

func appendUvarints(b []byte, xs ...uint64) []byte {
	for _, x := range xs {
		for x >= 0x80 {
			b = append(b, byte(x)|0x80)
			x >>= 7
		}
		b = append(b, byte(x))
	}
	return b
}

// rawBlockNoSummaries is rawBlock with the header's no-summaries flag.
func rawBlockNoSummaries(t *testing.T, times []int64, n, nf uint64, rowVers []model.Version, fields ...rawField) []byte {
	t.Helper()
	b := rawBlock(t, times, n, nf, rowVers, fields...)
	b = b[:len(b)-4]
	b[1] |= flagNoSummaries
	return append(b, crcBytes(b)...)
}

// TestPredictionUnrelatedFields: a block of unrelated fields is left as it
// was, no field predicted.
func TestPredictionUnrelatedFields(t *testing.T) {
	rows := unrelatedWalks(rand.New(rand.NewPCG(7, 17)), 500, 20)
	b, err := Encode(nil, rows)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := (&Encoder{noPredict: true}).Encode(nil, rows)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := Open(b)
	if err != nil {
		t.Fatal(err)
	}
	if p := predictedFields(rd); len(p) > 0 || len(b) != len(plain) {
		t.Errorf("independent walks: predicted %v, %d bytes against %d", p, len(b), len(plain))
	}
}

// checkDecimalHead compares rd.DecimalHead of field at several lengths with
// the rows' values and sum.
func checkDecimalHead(t *testing.T, rd *Reader, rows []model.Row, field string) {
	t.Helper()
	var col Column
	for _, head := range []int{0, 1, len(rows) / 2, len(rows)} {
		sum, ok, err := rd.DecimalHead(field, head, &col)
		if !ok || err != nil {
			t.Fatalf("DecimalHead(%q, %d): %v %v", field, head, ok, err)
		}
		var want int64
		for i, row := range rows {
			k := 0
			for row.Fields[k].Name != field {
				k++
			}
			v := row.Fields[k].Value.F
			m := int64(math.Round(v * col.Scale))
			want += m
			if i < head && (col.Mantissas[i] != m || !sameFloat(float64(col.Mantissas[i])/col.Scale, v)) {
				t.Fatalf("DecimalHead(%q, %d): row %d mantissa %d, want %d (%v)", field, head, i, col.Mantissas[i], m, v)
			}
		}
		if len(col.Mantissas) != head || sum != want {
			t.Fatalf("DecimalHead(%q, %d): %d mantissas, sum %d; want %d, %d", field, head, len(col.Mantissas), sum, head, want)
		}
	}
}

// unrelatedWalks returns n rows of fields independent 2-decimal random
// walks, field k's steps of standard deviation k+1.
func unrelatedWalks(r *rand.Rand, n, fields int) []model.Row {
	rows := make([]model.Row, n)
	vals := make([]float64, fields)
	for i := range rows {
		fs := make([]model.Field, fields)
		for k := range vals {
			vals[k] = math.Round((vals[k]+r.NormFloat64()*float64(k+1))*100) / 100
			fs[k] = model.Field{Name: fmt.Sprintf("f%02d", k), Value: model.Float(vals[k]), Version: model.Version{Wall: t0 + int64(i), Node: 1}}
		}
		rows[i] = model.Row{Time: t0 + int64(i)*harnessStep, Series: testSeries, Fields: fs}
	}
	return rows
}
