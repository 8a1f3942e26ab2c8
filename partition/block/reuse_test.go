package block

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// TestReuse reuses one Encoder, one Reader, one Column and the rows Rows
// returned across blocks of different fields, with failed Encodes and
// Resets in between.
func TestReuse(t *testing.T) {
	withSummaries(t)
	r := rand.New(rand.NewPCG(5, 17))
	var (
		enc  Encoder
		rd   Reader
		col  Column
		out  []model.Row
		buf  []byte
		prev []byte
	)
	for i := range 60 {
		mode := genModes[r.IntN(len(genModes))]
		rows := randRows(r, 1+r.IntN(100), mode)
		prefix := fmt.Sprint("p", r.IntN(3), "_")
		for k := range rows {
			for j := range rows[k].Fields {
				rows[k].Fields[j].Name = prefix + rows[k].Fields[j].Name
			}
		}
		switch i % 4 {
		case 1:
			if _, err := enc.Encode(nil, append(rows[:len(rows):len(rows)], model.Row{Time: rows[0].Time})); !errors.Is(err, ErrInvalid) {
				t.Fatalf("invalid rows: %v", err)
			}
		case 2:
			bad := append([]byte(nil), prev...)
			if len(bad) > 0 {
				bad[len(bad)/2] ^= 1
			}
			if err := rd.Reset(resum(bad)); err == nil {
				// The damage may be in a column: the Reader must
				// still report it or decode a block.
				if err := decodeAll(resum(bad)); err != nil && !errors.Is(err, ErrCorrupt) {
					t.Fatal(err)
				}
			}
			if err := rd.Reset(bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("bad checksum: %v", err)
			}
			if rd.Len() != 0 || rd.NumFields() != 0 {
				t.Fatalf("after a failed Reset: %d rows, %d fields", rd.Len(), rd.NumFields())
			}
			// A trailing byte: Reset fails after reading every field.
			if len(prev) > 0 {
				trail := resum(append(append([]byte(nil), prev[:len(prev)-4]...), 0, 0, 0, 0, 0))
				if err := rd.Reset(trail); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("trailing byte: %v", err)
				}
				if rd.Len() != 0 || rd.NumFields() != 0 {
					t.Fatalf("after a failed Reset: %d rows, %d fields", rd.Len(), rd.NumFields())
				}
			}
		case 3:
			if _, err := enc.Encode(nil, nil); !errors.Is(err, ErrInvalid) {
				t.Fatalf("no rows: %v", err)
			}
		}
		var err error
		buf, err = enc.Encode(buf[:0], rows)
		if err != nil {
			t.Fatal(err)
		}
		prev = append(prev[:0], buf...)
		if err := rd.Reset(buf); err != nil {
			t.Fatal(err)
		}
		want := map[string]model.AggState{}
		for _, row := range rows {
			for _, f := range row.Fields {
				s := want[f.Name]
				if f.Value.Kind != model.KindDeleted {
					s.Add(row.Time, testSeries, f.Value)
				}
				want[f.Name] = s
			}
		}
		if rd.NumFields() != len(want) {
			t.Fatalf("block %d: %d fields, want %d", i, rd.NumFields(), len(want))
		}
		for j := range rd.NumFields() {
			name := rd.Field(j).Name
			w, ok := want[name]
			if !ok {
				t.Fatalf("block %d: field %q", i, name)
			}
			g, gok := rd.Summary(name, testSeries)
			if gok != (w.Count > 0) || (gok && (g.Count != w.Count || !sameFloat(g.Sum, w.Sum) || g.LastTime != w.LastTime)) {
				t.Fatalf("block %d field %q: %+v, want %+v", i, name, g, w)
			}
			if _, err := rd.Column(name, &col); err != nil {
				t.Fatal(err)
			}
		}
		out, err = rd.Rows(out, testSeries)
		if err != nil {
			t.Fatal(err)
		}
		rowsEqual(t, out, rows)
	}
}

// TestExtremes: the extreme times, versions and values round-trip.
func TestExtremes(t *testing.T) {
	withSummaries(t)
	vers := []model.Version{
		{Wall: math.MinInt64, Node: 0}, {Wall: math.MaxInt64, Node: math.MaxUint64},
		{Wall: 0, Node: math.MaxUint64}, {Wall: math.MinInt64, Node: math.MaxUint64}, {Wall: math.MaxInt64, Node: 0},
	}
	vals := []model.Value{
		model.Int(math.MinInt64), model.Int(math.MaxInt64), model.Float(math.MaxFloat64),
		model.Float(-math.MaxFloat64), model.Deleted(),
	}
	for _, times := range [][]int64{
		{math.MinInt64},
		{math.MaxInt64},
		{math.MinInt64, math.MaxInt64},
		{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64},
		{math.MinInt64, 0, math.MaxInt64},
	} {
		for _, own := range []bool{false, true} {
			rows := make([]model.Row, len(times))
			for i, tm := range times {
				rows[i] = model.Row{Time: tm, Series: testSeries, Fields: []model.Field{
					{Name: "a", Value: vals[i%len(vals)], Version: vers[i%len(vers)]},
					{Name: "b", Value: model.Float(float64(i)), Version: vers[(i+1)%len(vers)]},
				}}
				if !own {
					rows[i].Fields[1].Version = rows[i].Fields[0].Version
				}
			}
			b, err := Encode(nil, rows)
			if err != nil {
				t.Fatalf("times %v: %v", times, err)
			}
			if err := decodeAll(b); err != nil {
				t.Fatalf("times %v: %v", times, err)
			}
			rd, err := Open(b)
			if err != nil {
				t.Fatal(err)
			}
			if rd.MinTime() != times[0] || rd.MaxTime() != times[len(times)-1] {
				t.Fatalf("times %v: [%d, %d]", times, rd.MinTime(), rd.MaxTime())
			}
			got, err := rd.Rows(nil, testSeries)
			if err != nil {
				t.Fatal(err)
			}
			rowsEqual(t, got, rows)
			s, ok := rd.Summary("b", testSeries)
			if !ok || s.FirstTime != times[0] || s.LastTime != times[len(times)-1] {
				t.Fatalf("times %v: summary %+v", times, s)
			}
		}
	}
}
