package replication

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/model"
)

func v(wall int64, node uint64) model.Version { return model.Version{Wall: wall, Node: node} }

// codecRows covers every kind, extreme values and the encoder's "same as
// before" shortcuts (series, names, versions) and their absence.
func codecRows() []model.Row {
	negZero := math.Copysign(0, -1)
	nan := math.Float64frombits(0x7ff8_0000_dead_beef)
	return []model.Row{
		{Time: 0, Series: "cpu,host=a", Fields: []model.Field{
			{Name: "f", Value: model.Float(1.5), Version: v(10, 1)},
			{Name: "i", Value: model.Int(-42), Version: v(10, 1)},
			{Name: "b", Value: model.Bool(true), Version: v(10, 1)},
			{Name: "s", Value: model.String("héllo"), Version: v(11, 2)},
		}},
		{Time: 5, Series: "cpu,host=a", Fields: []model.Field{ // same series, names, mixed versions
			{Name: "f", Value: model.Float(negZero), Version: v(11, 2)},
			{Name: "i", Value: model.Int(math.MaxInt64), Version: v(-7, 0)},
			{Name: "b", Value: model.Bool(false), Version: v(-7, 0)},
			{Name: "s", Value: model.String(""), Version: v(math.MaxInt64, math.MaxUint64)},
		}},
		{Time: math.MinInt64, Series: "mem", Fields: []model.Field{ // fewer fields, new names
			{Name: "f", Value: model.Float(nan), Version: v(math.MinInt64, 3)},
			{Name: "x", Value: model.Float(math.Inf(-1)), Version: v(math.MinInt64, 3)},
		}},
		{Time: math.MaxInt64, Series: "mem", Fields: []model.Field{ // more fields than the previous row
			{Name: "f", Value: model.Float(math.Inf(1)), Version: v(1, 1)},
			{Name: "y", Value: model.Int(math.MinInt64), Version: v(1, 1)},
			{Name: "z", Value: model.String(strings.Repeat("z", 300)), Version: v(1, 1)},
		}},
		{Time: -1, Series: "", Fields: nil}, // empty series and no fields: the codec does not validate
		{Time: -1, Series: "disk", Fields: []model.Field{{Name: "", Value: model.Int(0), Version: v(0, 0)}}},
		{Time: 7, Series: "del", Fields: []model.Field{ // tombstones: no payload
			{Name: "a", Value: model.Deleted(), Version: v(12, 4)},
			{Name: "b", Value: model.Float(2), Version: v(12, 4)},
			{Name: "c", Value: model.Deleted(), Version: v(13, 4)},
		}},
		{Time: 8, Series: "del", Fields: []model.Field{ // one byte per field: same name, same version
			{Name: "a", Value: model.Deleted(), Version: v(13, 4)},
			{Name: "b", Value: model.Deleted(), Version: v(13, 4)},
			{Name: "c", Value: model.Deleted(), Version: v(13, 4)},
		}},
	}
}

// sameRows compares rows exactly: floats by bit pattern, nil and empty
// field lists alike.
func sameRows(a, b []model.Row) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d rows, want %d", len(a), len(b))
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Time != y.Time || x.Series != y.Series || len(x.Fields) != len(y.Fields) {
			return fmt.Errorf("row %d: %+v, want %+v", i, *x, *y)
		}
		for j := range x.Fields {
			f, g := x.Fields[j], y.Fields[j]
			if f.Name != g.Name || f.Version != g.Version || !f.Value.Equal(g.Value) {
				return fmt.Errorf("row %d field %d: %+v, want %+v", i, j, f, g)
			}
		}
	}
	return nil
}

func TestRowsRoundTrip(t *testing.T) {
	all := codecRows()
	tests := []struct {
		name string
		rows []model.Row
	}{
		{"none", nil},
		{"one", all[:1]},
		{"all", all},
		{"reversed", []model.Row{all[5], all[4], all[3], all[2], all[1], all[0]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("keep")
			enc := AppendRows(append([]byte(nil), prefix...), tt.rows)
			if !bytes.HasPrefix(enc, prefix) {
				t.Fatal("AppendRows overwrote dst")
			}
			got, err := DecodeRows(enc[len(prefix):])
			if err != nil {
				t.Fatalf("DecodeRows: %v", err)
			}
			if err := sameRows(got, tt.rows); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDecodeRowsDoesNotAliasInput(t *testing.T) {
	enc := AppendRows(nil, codecRows())
	got, err := DecodeRows(enc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range enc {
		enc[i] = 0xff
	}
	if err := sameRows(got, codecRows()); err != nil {
		t.Fatalf("decoded rows changed with the input buffer: %v", err)
	}
}

func TestRowsEncodingSharesRepeats(t *testing.T) {
	// 100 rows of one series and one version: after the first row each
	// costs a time delta, a series byte, a count and per field a tag and
	// its payload.
	rows := make([]model.Row, 100)
	for i := range rows {
		rows[i] = model.Row{Time: 1_700_000_000_000_000_000 + int64(i)*1000, Series: "cpu,host=a,region=eu",
			Fields: []model.Field{
				{Name: "usage_idle", Value: model.Float(float64(i)), Version: v(1_700_000_000_000_000_123, 77)},
				{Name: "usage_user", Value: model.Int(int64(i)), Version: v(1_700_000_000_000_000_123, 77)},
			}}
	}
	enc := AppendRows(nil, rows)
	if perRow := len(enc) / len(rows); perRow > 20 {
		t.Fatalf("%d bytes per row, want at most 20", perRow)
	}
}

func TestDecodeRowsRejects(t *testing.T) {
	good := AppendRows(nil, codecRows())
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"magic only", []byte{rowsMagic}},
		{"wrong magic", []byte{aggsMagic, formatV1, 0}},
		{"unknown version", []byte{rowsMagic, 2, 0}},
		{"trailing byte", append(append([]byte(nil), good...), 0)},
		{"count beyond input", []byte{rowsMagic, formatV1, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"huge count", []byte{rowsMagic, formatV1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"varint overflow", []byte{rowsMagic, formatV1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}},
		{"series past end", []byte{rowsMagic, formatV1, 1, 0, 10, 0}},
		{"kind 0", []byte{rowsMagic, formatV1, 1, 0, 0, 1, 0x80 | 0, 0, 0}},
		{"kind 5", []byte{rowsMagic, formatV1, 1, 0, 0, 1, 0x80 | 5, 0, 0, 0}},
		{"reserved bits", []byte{rowsMagic, formatV1, 1, 0, 0, 1, 0x80 | 0x10 | 2, 0, 0}},
		{"bool 2", []byte{rowsMagic, formatV1, 1, 0, 0, 1, 0x80 | 3, 0, 2}},
		{"same name in first row", []byte{rowsMagic, formatV1, 1, 0, 0, 1, 0xc0 | 2, 0}},
		{"field count beyond input", []byte{rowsMagic, formatV1, 1, 0, 0, 100, 0x80 | 2, 0, 0}},
		{"truncated float", []byte{rowsMagic, formatV1, 1, 0, 0, 1, 0x80 | 1, 0, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := DecodeRows(tt.b)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeRows = %v, %v; want ErrCorrupt", rows, err)
			}
		})
	}
	// Every proper prefix of a valid encoding is rejected.
	for n := range len(good) {
		if _, err := DecodeRows(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: err %v, want ErrCorrupt", n, err)
		}
	}
}

func codecAggs() []model.SeriesAgg {
	var a, b, empty model.AggState
	a.Add(10, "cpu,host=a", model.Float(3))
	a.Add(20, "cpu,host=a", model.Int(-1))
	b.Add(5, "cpu,host=b", model.Float(math.NaN()))
	b.Add(7, "cpu,host=z", model.Bool(true))
	b.Add(9, "cpu,host=b", model.String("x"))
	empty.Min, empty.Max = math.Inf(1), math.Inf(-1) // a merge identity some callers build
	odd := model.AggState{Count: math.MaxInt64, N: math.MinInt64, Sum: math.Copysign(0, -1),
		FirstTime: math.MinInt64, LastTime: math.MaxInt64, FirstSeries: "", LastSeries: "other"}
	return []model.SeriesAgg{
		{Series: "cpu,host=a", Buckets: []model.BucketAgg{
			{Start: 0, Fields: []model.FieldAgg{{Name: "usage", State: a}, {Name: "none", State: empty}}},
			{Start: -60, Fields: []model.FieldAgg{{Name: "usage", State: odd}}},
			{Start: math.MaxInt64, Fields: nil},
		}},
		{Series: "*", Buckets: []model.BucketAgg{{Start: math.MinInt64, Fields: []model.FieldAgg{{Name: "v", State: b}}}}},
		{Series: "", Buckets: nil},
	}
}

func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

func sameState(a, b *model.AggState) bool {
	return a.Count == b.Count && a.N == b.N && sameFloat(a.Sum, b.Sum) && sameFloat(a.Min, b.Min) &&
		sameFloat(a.Max, b.Max) && a.FirstTime == b.FirstTime && a.FirstSeries == b.FirstSeries &&
		sameFloat(a.First, b.First) && a.LastTime == b.LastTime && a.LastSeries == b.LastSeries &&
		sameFloat(a.Last, b.Last)
}

func sameAggs(a, b []model.SeriesAgg) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d series, want %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Series != b[i].Series || len(a[i].Buckets) != len(b[i].Buckets) {
			return fmt.Errorf("series %d: %+v, want %+v", i, a[i], b[i])
		}
		for j := range a[i].Buckets {
			x, y := a[i].Buckets[j], b[i].Buckets[j]
			if x.Start != y.Start || len(x.Fields) != len(y.Fields) {
				return fmt.Errorf("series %d bucket %d: %+v, want %+v", i, j, x, y)
			}
			for k := range x.Fields {
				if x.Fields[k].Name != y.Fields[k].Name || !sameState(&x.Fields[k].State, &y.Fields[k].State) {
					return fmt.Errorf("series %d bucket %d field %d: %+v, want %+v", i, j, k, x.Fields[k], y.Fields[k])
				}
			}
		}
	}
	return nil
}

func TestAggsRoundTrip(t *testing.T) {
	for _, aggs := range [][]model.SeriesAgg{nil, codecAggs()} {
		enc := AppendAggs(nil, aggs)
		got, err := DecodeAggs(enc)
		if err != nil {
			t.Fatalf("DecodeAggs: %v", err)
		}
		if err := sameAggs(got, aggs); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDecodeAggsRejects(t *testing.T) {
	good := AppendAggs(nil, codecAggs())
	for n := range len(good) {
		if _, err := DecodeAggs(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: err %v, want ErrCorrupt", n, err)
		}
	}
	bad := [][]byte{
		append(append([]byte(nil), good...), 1),
		{rowsMagic, formatV1, 0},
		{aggsMagic, 9, 0},
		{aggsMagic, formatV1, 1, 0, 1, 0, 0xff, 0x01}, // a field count that cannot fit
	}
	for _, b := range bad {
		if _, err := DecodeAggs(b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("DecodeAggs(%x): err %v, want ErrCorrupt", b, err)
		}
	}
}

// FuzzDecodeRows: any input either fails with ErrCorrupt or decodes to
// rows whose encoding is a fixed point (decode∘encode is the identity on
// it, floats bit-exact).
func FuzzDecodeRows(f *testing.F) {
	f.Add(AppendRows(nil, codecRows()))
	f.Add(AppendRows(nil, nil))
	f.Add(AppendRows(nil, codecRows()[2:4]))
	f.Add([]byte{rowsMagic, formatV1, 1, 0, 0, 1, 0x80 | 3, 0, 1})
	f.Add([]byte{rowsMagic, formatV1, 2, 2, 2, 'a', 1, 0x80 | 2, 0, 2, 2, 0, 1, 0xc0 | 2, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, err := DecodeRows(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc := AppendRows(nil, rows)
		again, err := DecodeRows(enc)
		if err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if err := sameRows(again, rows); err != nil {
			t.Fatal(err)
		}
		if enc2 := AppendRows(nil, again); !bytes.Equal(enc, enc2) {
			t.Fatal("encoding is not a fixed point")
		}
	})
}

// FuzzDecodeAggs: as FuzzDecodeRows, for aggregate states.
func FuzzDecodeAggs(f *testing.F) {
	f.Add(AppendAggs(nil, codecAggs()))
	f.Add(AppendAggs(nil, nil))
	f.Add(AppendAggs(nil, codecAggs()[1:2]))
	f.Fuzz(func(t *testing.T, b []byte) {
		aggs, err := DecodeAggs(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc := AppendAggs(nil, aggs)
		again, err := DecodeAggs(enc)
		if err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if err := sameAggs(again, aggs); err != nil {
			t.Fatal(err)
		}
	})
}

// benchRows are rows as a push carries them: a few series, three float
// fields, one version per write of 10 rows.
func benchRows(n int) []model.Row {
	rows := make([]model.Row, n)
	names := []string{"usage_idle", "usage_system", "usage_user"}
	for i := range rows {
		ver := v(1_700_000_000_000_000_000+int64(i/10), model.NodeID("s1"))
		fs := make([]model.Field, len(names))
		for j, name := range names {
			fs[j] = model.Field{Name: name, Value: model.Float(float64(i*j) / 7), Version: ver}
		}
		rows[i] = model.Row{Time: 1_700_000_000_000_000_000 + int64(i)*1e6,
			Series: fmt.Sprintf("cpu,host=host_%d,region=eu-west", i%50), Fields: fs}
	}
	return rows
}

func BenchmarkAppendRows(b *testing.B) {
	rows := benchRows(2048)
	buf := AppendRows(nil, rows)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRows(buf[:0], rows)
	}
	b.ReportMetric(float64(b.N)*float64(len(rows))/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(len(buf))/float64(len(rows)), "bytes/row")
}

func BenchmarkDecodeRows(b *testing.B) {
	rows := benchRows(2048)
	buf := AppendRows(nil, rows)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRows(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(rows))/b.Elapsed().Seconds(), "rows/s")
}
