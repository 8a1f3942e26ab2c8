package block

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/colcodec"
)

// rawField is a field of a hand-made block: its name and section.
type rawField struct {
	name string
	sec  []byte
}

// rawBlock lays out a block by hand (see doc.go's Layout), with rowvers
// when rowVers is not nil, and appends its checksum.
func rawBlock(t testing.TB, times []int64, n, nf uint64, rowVers []model.Version, fields ...rawField) []byte {
	t.Helper()
	flags := byte(0)
	if rowVers != nil {
		flags = flagRowVersions
	}
	b := []byte{FormatVersion, flags}
	b = binary.AppendUvarint(b, n)
	b = binary.LittleEndian.AppendUint64(b, uint64(times[0]))
	b = binary.LittleEndian.AppendUint64(b, uint64(times[len(times)-1]))
	b = binary.AppendUvarint(b, nf)
	col, err := colcodec.EncodeTimestamps(nil, times)
	if err != nil {
		t.Fatal(err)
	}
	b = appendBytes(b, col)
	if rowVers != nil {
		col, err := colcodec.EncodeVersions(nil, rowVers)
		if err != nil {
			t.Fatal(err)
		}
		b = appendBytes(b, col)
	}
	for _, f := range fields {
		b = appendBytes(b, []byte(f.name))
		b = appendBytes(b, f.sec)
	}
	return append(b, crcBytes(b)...)
}

// seq returns 0..n-1 and n equal versions.
func seq(n int) ([]int64, []model.Version) {
	times := make([]int64, n)
	vers := make([]model.Version, n)
	for i := range times {
		times[i] = int64(i)
		vers[i] = model.Version{Wall: 7, Node: 9}
	}
	return times, vers
}

// tombAll is the section of a field whose every row holds a tombstone
// of the row's version: flags 0 (every row), kind deleted, count 0,
// num 0, no exceptions.
var tombAll = []byte{presenceAll, byte(model.KindDeleted), 0, 0, 0}

// TestSmallBlockBoundedDecode: a block of a few bytes with a valid
// checksum cannot make Rows allocate beyond MaxValues fields, nor Open
// accept more than MaxFields fields.
func TestSmallBlockBoundedDecode(t *testing.T) {
	times, vers := seq(MaxRows)
	nf := MaxValues/MaxRows + 1
	var fields []rawField
	for j := range nf {
		fields = append(fields, rawField{fmt.Sprint("f", j), tombAll})
	}
	b := rawBlock(t, times, MaxRows, uint64(nf), vers, fields...)
	if len(b) > 300 {
		t.Fatalf("the block takes %d bytes", len(b))
	}
	rd, err := Open(b)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	rows, err := rd.Rows(nil, "s")
	runtime.ReadMemStats(&ms1)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%d-byte block of %d rows × %d tombstone fields: Rows returned %d rows, %v; want ErrCorrupt", len(b), MaxRows, nf, len(rows), err)
	}
	if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > 16<<20 {
		t.Fatalf("Rows of a %d-byte block allocated %d MB", len(b), alloc>>20)
	}

	// More fields than MaxFields: Open refuses them.
	times, vers = seq(1)
	fields = fields[:0]
	for j := range MaxFields + 1 {
		fields = append(fields, rawField{fmt.Sprintf("f%05d", j), tombAll})
	}
	if _, err := Open(rawBlock(t, times, 1, MaxFields+1, vers, fields...)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%d fields: %v, want ErrCorrupt", MaxFields+1, err)
	}
	if _, err := Open(rawBlock(t, times, 1, MaxFields, vers, fields[:MaxFields]...)); err != nil {
		t.Fatalf("%d fields: %v", MaxFields, err)
	}
	if err := decodeAll(rawBlock(t, times, 1, MaxFields, vers, fields[:MaxFields]...)); err != nil {
		t.Fatalf("%d fields: %v", MaxFields, err)
	}
}

// TestEncodeLimits: Encode refuses what the decoder would refuse.
func TestEncodeLimits(t *testing.T) {
	wide := make([]model.Field, MaxFields+1)
	for j := range wide {
		wide[j] = model.Field{Name: fmt.Sprintf("f%05d", j), Value: model.Float(1)}
	}
	if _, err := Encode(nil, []model.Row{{Time: 1, Fields: wide}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "row 0: 1025 fields") {
		t.Errorf("a row of %d fields: %v, want ErrInvalid naming the row", len(wide), err)
	}
	if _, err := Encode(nil, []model.Row{{Time: 1, Fields: wide[:MaxFields]}}); err != nil {
		t.Errorf("a row of %d fields: %v", MaxFields, err)
	}
	// One field a row, MaxFields+1 names in all.
	rows := make([]model.Row, MaxFields+1)
	for i := range rows {
		rows[i] = model.Row{Time: int64(i), Fields: wide[i : i+1]}
	}
	if _, err := Encode(nil, rows); !errors.Is(err, ErrInvalid) {
		t.Errorf("%d field names: %v, want ErrInvalid", len(rows), err)
	}
	// More than MaxValues values (rows share one field array).
	rows = make([]model.Row, MaxValues/MaxFields+1)
	for i := range rows {
		rows[i] = model.Row{Time: int64(i), Fields: wide[:MaxFields]}
	}
	if _, err := Encode(nil, rows); !errors.Is(err, ErrInvalid) {
		t.Errorf("%d values: %v, want ErrInvalid", len(rows)*MaxFields, err)
	}
}

// TestLayoutsNeverWritten: layouts Encode never writes, behind a valid
// checksum, are ErrCorrupt.
func TestLayoutsNeverWritten(t *testing.T) {
	t1, v1 := seq(1)
	t3, v3 := seq(3)
	bitmap := func(bits byte) []byte {
		return []byte{presenceBits, byte(model.KindDeleted), 0, 0, bits, 0}
	}
	for _, tc := range []struct {
		name string
		b    []byte
		open bool // Open accepts it; another decoder must not
	}{
		{"no fields", rawBlock(t, t1, 1, 0, v1), false},
		{"a row without fields", rawBlock(t, t3, 3, 2, v3, rawField{"a", bitmap(0b001)}, rawField{"b", bitmap(0b100)}), true},
		{"2 timestamps in 3 rows", rawBlock(t, []int64{0, 2}, 3, 1, v3, rawField{"a", tombAll}), false},
		{"4 timestamps in 3 rows", rawBlock(t, []int64{0, 1, 2, 3}, 3, 1, v3, rawField{"a", tombAll}), false},
		{"tombstones, trailing byte", rawBlock(t, t1, 1, 1, v1, rawField{"a", append(tombAll[:5:5], 0xaa)}), true},
		{"tombstones, 2 exceptions of 1", rawBlock(t, t1, 1, 1, v1, rawField{"a", []byte{presenceAll, byte(model.KindDeleted), 0, 0, 2}}), true},
		{"tombstones, no versions", rawBlock(t, t1, 1, 1, v1, rawField{"a", tombAll[:4]}), true},
	} {
		rd, err := Open(tc.b)
		if tc.open != (err == nil) || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Errorf("%s: Open: %v", tc.name, err)
			continue
		}
		if err := decodeAll(tc.b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
		if rd == nil || rd.NumFields() != 1 {
			continue
		}
		// One field: ColumnValues alone sees it.
		if _, err := rd.ColumnValues("a", new(Column)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: ColumnValues: %v, want ErrCorrupt", tc.name, err)
		}
	}
}

// TestSummaryOfTombstones: a field of tombstones only has no summary.
func TestSummaryOfTombstones(t *testing.T) {
	withSummaries(t)
	rows := []model.Row{
		{Time: 1, Fields: []model.Field{{Name: "a", Value: model.Float(2)}, {Name: "b", Value: model.Deleted()}}},
		{Time: 2, Fields: []model.Field{{Name: "b", Value: model.Deleted()}}},
	}
	rd := encodeOpen(t, rows)
	if s, ok := rd.Summary("b", "s"); ok {
		t.Errorf("tombstones: %+v, ok", s)
	}
	if s, ok := rd.Summary("a", "s"); !ok || s.Count != 1 || s.N != 1 || s.Sum != 2 || s.FirstSeries != "s" {
		t.Errorf("a: %+v %v", s, ok)
	}
}

// withSummaries makes every block the test encodes keep its summaries,
// whatever its number of rows.
func withSummaries(t *testing.T) {
	summaryMinRows = 1
	t.Cleanup(func() { summaryMinRows = SummaryMinRows })
}

// TestSummariesFromMinRows: a block of fewer than SummaryMinRows rows
// keeps no summaries (HasSummaries false, Summary not ok) and is smaller
// by them, one of SummaryMinRows rows keeps them; both decode to their
// rows, and a field's counts are checked against its column either way.
func TestSummariesFromMinRows(t *testing.T) {
	rows := make([]model.Row, SummaryMinRows)
	for i := range rows {
		rows[i] = model.Row{Time: int64(i) * 1e9, Series: testSeries, Fields: []model.Field{
			{Name: "a", Value: model.Float(float64(i) / 4)},
			{Name: "b", Value: model.Int(int64(i % 7))},
		}}
	}
	for _, n := range []int{SummaryMinRows - 1, SummaryMinRows} {
		b, err := Encode(nil, rows[:n])
		if err != nil {
			t.Fatal(err)
		}
		rd, err := Open(b)
		if err != nil {
			t.Fatal(err)
		}
		want := n >= SummaryMinRows
		if rd.HasSummaries() != want {
			t.Fatalf("%d rows: HasSummaries %v, want %v", n, rd.HasSummaries(), want)
		}
		s, ok := rd.Summary("a", testSeries)
		if ok != want || (ok && (s.Count != int64(n) || s.Max != float64(n-1)/4)) {
			t.Fatalf("%d rows: summary %+v, %v", n, s, ok)
		}
		if err := decodeAll(b); err != nil {
			t.Fatalf("%d rows: %v", n, err)
		}
		got, err := rd.Rows(nil, testSeries)
		if err != nil || len(got) != n || got[n-1].Fields[0].Value.F != float64(n-1)/4 {
			t.Fatalf("%d rows: %d rows back, %v", n, len(got), err)
		}
		if !want {
			withSummaries(t)
			full, err := Encode(nil, rows[:n])
			summaryMinRows = SummaryMinRows
			if err != nil {
				t.Fatal(err)
			}
			// b's summary whole, a's (quarters, decimals of exponent 2)
			// in the decimal form: exponent 1, the mantissas' sum (48,825) 3,
			// min 1, max 2, first 1, last 2, the two time offsets 1
			// each, M2 8.
			if d, want := len(full)-len(b), summarySize+20; d != want {
				t.Errorf("%d rows: the summaries took %d bytes, want %d", n, d, want)
			}
		}
	}
}
