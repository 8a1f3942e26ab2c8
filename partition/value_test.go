package partition

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// encodeRow encodes fields (sorted by name) the way Apply does.
func encodeRow(seq uint64, fields []model.Field) []byte {
	var enc valueEncoder
	efs := make([]encField, len(fields))
	for i := range fields {
		efs[i] = encFromModel(&fields[i])
	}
	return enc.appendValue(nil, seq, efs)
}

func decodeRow(t *testing.T, v []byte) (uint64, []model.Field) {
	t.Helper()
	var raw rawRow
	if err := decodeRaw(v, &raw); err != nil {
		t.Fatalf("decodeRaw: %v", err)
	}
	r := toModelRow("s", 0, &raw, interner{}, nil, false, &fieldSlab{})
	return raw.seq, r.Fields
}

func randVersion(rng *rand.Rand) model.Version {
	switch rng.Intn(4) {
	case 0:
		return model.Version{Wall: math.MinInt64, Node: math.MaxUint64}
	case 1:
		return model.Version{Wall: -rng.Int63(), Node: rng.Uint64()}
	}
	return model.Version{Wall: rng.Int63(), Node: rng.Uint64()}
}

func randEncValue(rng *rand.Rand) model.Value {
	switch rng.Intn(10) {
	case 0:
		return model.Float(math.NaN())
	case 1:
		return model.Float(math.Copysign(0, -1))
	case 2:
		return model.Float(math.Float64frombits(rng.Uint64())) // any bits, NaN payloads too
	case 3:
		return model.Int(int64(rng.Uint64()))
	case 4:
		return model.Int([]int64{math.MinInt64, math.MaxInt64, 0, -1}[rng.Intn(4)])
	case 5:
		return model.Bool(rng.Intn(2) == 1)
	case 6:
		return model.String("")
	case 7:
		return model.String(strings.Repeat("x", model.MaxStringLen))
	case 8:
		b := make([]byte, rng.Intn(40))
		rng.Read(b)
		return model.String(string(b))
	}
	return model.Float(rng.NormFloat64())
}

// TestValueRoundTrip encodes random rows (all kinds, NaN, -0, empty and
// 64 KiB strings, up to 200 distinct versions) and decodes them back.
func TestValueRoundTrip(t *testing.T) {
	rng := newSeededRand(t)
	for iter := 0; iter < 500; iter++ {
		n := 1 + rng.Intn(10)
		if iter%50 == 0 {
			n = 200
		}
		versions := make([]model.Version, 1+rng.Intn(3))
		if iter%7 == 0 {
			versions = make([]model.Version, n) // one version per field
		}
		for i := range versions {
			versions[i] = randVersion(rng)
		}
		fields := make([]model.Field, n)
		for i := range fields {
			fields[i] = model.Field{Name: strings.Repeat("f", 1+i/26) + string(rune('a'+i%26)),
				Value: randEncValue(rng), Version: versions[rng.Intn(len(versions))]}
		}
		r := model.Row{Fields: fields}
		r.Normalize()
		fields = r.Fields
		seq := rng.Uint64()
		v := encodeRow(seq, fields)
		gotSeq, got := decodeRow(t, v)
		if gotSeq != seq {
			t.Fatalf("iter %d: seq %d, want %d", iter, gotSeq, seq)
		}
		if err := sameRow(model.Row{Fields: got}, model.Row{Fields: fields}); err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		// Bits of floats, including NaN payloads and -0, survive.
		for i := range got {
			if got[i].Value.Kind == model.KindFloat && math.Float64bits(got[i].Value.F) != math.Float64bits(fields[i].Value.F) {
				t.Fatalf("iter %d: float bits changed", iter)
			}
		}
	}
}

func TestValueVersionTableDeduplicates(t *testing.T) {
	v := ver(42)
	fields := []model.Field{
		{Name: "a", Value: model.Float(1), Version: v},
		{Name: "b", Value: model.Int(2), Version: v},
		{Name: "c", Value: model.Bool(true), Version: v},
	}
	enc := encodeRow(7, fields)
	var raw rawRow
	if err := decodeRaw(enc, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.versions) != 1 {
		t.Fatalf("version table has %d entries, want 1", len(raw.versions))
	}
}

// TestValueDecodeCorrupt checks that truncated or mangled values fail with
// ErrCorrupt and never panic.
func TestValueDecodeCorrupt(t *testing.T) {
	rng := newSeededRand(t)
	fields := []model.Field{
		{Name: "a", Value: model.Float(1.5), Version: ver(1)},
		{Name: "b", Value: model.String("hello"), Version: ver(2)},
		{Name: "c", Value: model.Bool(true), Version: ver(1)},
		{Name: "d", Value: model.Int(-300), Version: ver(3)},
	}
	v := encodeRow(99, fields)
	var raw rawRow
	for n := 0; n < len(v); n++ {
		if err := decodeRaw(v[:n], &raw); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: err %v, want ErrCorrupt", n, err)
		}
	}
	if err := decodeRaw(append(append([]byte(nil), v...), 0), &raw); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: err %v", err)
	}
	for i := 0; i < 20000; i++ {
		b := append([]byte(nil), v...)
		for j := 0; j < 1+rng.Intn(3); j++ {
			b[rng.Intn(len(b))] = byte(rng.Intn(256))
		}
		_ = decodeRaw(b, &raw) // must not panic
		junk := make([]byte, rng.Intn(40))
		rng.Read(junk)
		_ = decodeRaw(junk, &raw)
	}
}

// TestDecodeFieldsMatchesDecodeRaw checks decodeFields against decodeRaw
// restricted to the fields selected: on random values of one to three
// merge operands (all kinds, deletions, shared and distinct versions),
// and on the same values cut short or with a byte changed, where both
// must fail alike or agree.
func TestDecodeFieldsMatchesDecodeRaw(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	names := []string{"a", "b", "usage_idle", "usage_user", "z"}
	filters := map[string]func([]byte) bool{
		"one":  fieldFilter([]string{"usage_user"}),
		"two":  fieldFilter([]string{"a", "z"}),
		"none": fieldFilter([]string{"missing"}),
		"all":  nil, // every field, as an aggregate without a field list
	}
	operand := func() []byte {
		var fields []model.Field
		shared := randVersion(rng)
		for _, n := range names {
			if rng.Intn(3) == 0 {
				continue
			}
			v, ver := randEncValue(rng), shared
			if rng.Intn(4) == 0 {
				ver = randVersion(rng)
			}
			if rng.Intn(8) == 0 {
				v = model.Deleted()
			}
			fields = append(fields, model.Field{Name: n, Value: v, Version: ver})
		}
		return encodeRow(rng.Uint64()>>1, fields)
	}
	var got, want rawRow
	// A version wall of 10 bytes whose last is over 1 overflows int64:
	// both refuse it.
	overflow := []byte{1, 1}
	overflow = append(overflow, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02)
	overflow = append(overflow, make([]byte, 8)...)
	overflow = append(overflow, 1, 1, 'a', 0, byte(model.KindFloat), 0, 0, 0, 0, 0, 0, 0, 0)
	if err := decodeRaw(overflow, &want); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decodeRaw of an overflowing wall: %v", err)
	}
	if err := decodeFields(overflow, filters["two"], &got); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decodeFields of an overflowing wall: %v", err)
	}
	overflow[11] = 0x01 // the largest 10-byte varint: both read it
	if err := decodeFields(overflow, filters["two"], &got); err != nil || len(got.fields) != 1 {
		t.Fatalf("decodeFields of a 10-byte wall: %v, %d fields", err, len(got.fields))
	}
	for i := range 20_000 {
		v := operand()
		for range rng.Intn(3) {
			v = append(v, operand()...)
		}
		switch rng.Intn(6) {
		case 0:
			v = v[:rng.Intn(len(v)+1)]
		case 1:
			if len(v) > 0 {
				v = append([]byte(nil), v...)
				v[rng.Intn(len(v))] ^= byte(1 + rng.Intn(255))
			}
		}
		for name, keep := range filters {
			errWant := decodeRaw(v, &want)
			errGot := decodeFields(v, keep, &got)
			if (errWant == nil) != (errGot == nil) || errGot != nil && !errors.Is(errGot, ErrCorrupt) {
				t.Fatalf("value %d, filter %s: decodeFields %v, decodeRaw %v", i, name, errGot, errWant)
			}
			if errWant != nil {
				continue
			}
			var sel []rawField
			for _, f := range want.fields {
				if keep == nil || keep(f.name) {
					sel = append(sel, f)
				}
			}
			fs := got.fields // only the fields selected
			if len(fs) != len(sel) {
				t.Fatalf("value %d, filter %s: %d fields, want %d", i, name, len(fs), len(sel))
			}
			for j := range sel {
				a, b := fs[j], sel[j]
				if string(a.name) != string(b.name) || a.kind != b.kind || a.num != b.num || string(a.str) != string(b.str) {
					t.Fatalf("value %d, filter %s: field %d %+v, want %+v", i, name, j, a, b)
				}
			}
		}
	}
}

// TestStringSlab checks that the strings a stringSlab makes keep their
// bytes while it makes more, across chunks, and that long and empty
// ones work.
func TestStringSlab(t *testing.T) {
	var s stringSlab
	var made []string
	var want []string
	buf := make([]byte, 0, stringSlabSize)
	for i := range 5000 {
		buf = fmt.Appendf(buf[:0], "cpu,host=host%05d,region=r%d", i, i%10)
		if i%1000 == 999 {
			buf = append(buf, strings.Repeat("x", stringSlabSize/2)...) // past a quarter chunk: its own allocation
		}
		if i%777 == 0 {
			buf = buf[:0]
		}
		made = append(made, s.make(buf))
		want = append(want, string(buf))
		for j := range buf {
			buf[j] = 0 // the caller's bytes change: the string must not
		}
	}
	for i := range made {
		if made[i] != want[i] {
			t.Fatalf("string %d: %q, want %q", i, made[i], want[i])
		}
	}
	if c := cap(s.buf); c != stringSlabSize {
		t.Errorf("after 5,000 names the chunks are %d bytes, want %d", c, stringSlabSize)
	}
}

// TestStringSlabStartsSmall checks that a slab making one name allocates
// a chunk of its first size, not of its largest (a one-series aggregate
// makes one name), and that a name longer than the first size gets a
// chunk that holds it.
func TestStringSlabStartsSmall(t *testing.T) {
	var s stringSlab
	if got := s.make([]byte("cpu,host=host042,region=r2")); got != "cpu,host=host042,region=r2" {
		t.Fatalf("made %q", got)
	}
	if c := cap(s.buf); c != stringSlabFirst {
		t.Errorf("first chunk of %d bytes, want %d", c, stringSlabFirst)
	}
	long := strings.Repeat("y", 3*stringSlabFirst)
	if got := s.make([]byte(long)); got != long {
		t.Fatalf("made a string of %d bytes, want %d", len(got), len(long))
	}
	if c := cap(s.buf); c != 4*stringSlabFirst {
		t.Errorf("chunk for a %d-byte name: %d bytes, want %d", len(long), c, 4*stringSlabFirst)
	}
}
