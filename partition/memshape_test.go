package partition

import (
	"encoding/binary"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// shapedOperand returns a random row value (one operand) drawn from a few
// schemas, so that many pairs share a shape and many differ by one thing:
// a field, a kind, a version index, an int's varint length.
func shapedOperand(rng *rand.Rand) []byte {
	names := [][]string{{"usage_user"}, {"a", "b", "c"}, {"a", "b", "c", "d"}}[rng.Intn(3)]
	shared := randVersion(rng)
	var fields []model.Field
	for i, n := range names {
		var v model.Value
		switch (i + rng.Intn(8)/7) % 4 { // mostly the field's own kind
		case 0:
			v = model.Float(rng.NormFloat64())
		case 1:
			v = model.Int(int64(rng.Intn(300)) - 150) // one or two bytes
		case 2:
			v = model.Bool(rng.Intn(2) == 1)
		default:
			v = model.Deleted()
		}
		if rng.Intn(40) == 0 {
			v = model.String("x")
		}
		ver := shared
		if rng.Intn(10) == 0 {
			ver = randVersion(rng)
		}
		fields = append(fields, model.Field{Name: n, Value: v, Version: ver})
	}
	return encodeRow(rng.Uint64()>>uint(rng.Intn(64)), fields)
}

// TestRowShape checks the shapes of random values both ways: a value a
// shape matches decodes (as decodeRaw reads it) to one operand of the
// shape's fields, with each payload where the shape says; and a single
// operand with the shape's fields, kinds, version indexes and payload
// lengths matches.
func TestRowShape(t *testing.T) {
	rng := newSeededRand(t)
	var raw, tmpl rawRow
	matched, refused := 0, 0
	for i := range 30_000 {
		a := shapedOperand(rng)
		sh := newRowShape(a)
		if err := decodeRaw(a, &tmpl); err != nil {
			t.Fatal(err)
		}
		hasString := slices.ContainsFunc(tmpl.fields, func(f rawField) bool { return f.kind == model.KindString })
		if (sh == nil) != hasString {
			t.Fatalf("value %d: shape %v for fields %+v", i, sh != nil, tmpl.fields)
		}
		if sh == nil {
			continue
		}
		if _, ok := sh.matches(a); !ok {
			t.Fatalf("value %d: its own shape does not match it", i)
		}
		v := shapedOperand(rng)
		switch rng.Intn(8) {
		case 0:
			v = append(v, shapedOperand(rng)...) // two operands
		case 1:
			v = v[:rng.Intn(len(v)+1)]
		case 2:
			v = slices.Clone(v)
			v[rng.Intn(len(v))] ^= byte(1 + rng.Intn(255))
		}
		p, got := sh.matches(v)
		one := false // v is one operand with the shape's layout
		if err := decodeRaw(v, &raw); err == nil {
			rest, err := new(rawRow).decodeOne(v)
			one = err == nil && len(rest) == 0 && fieldSectionLen(v) == len(sh.tmpl) && sameLayout(raw.fields, tmpl.fields, v, a)
		}
		if got != one {
			t.Fatalf("value %d: matches %v, one operand of the shape %v\n tmpl %x\n v    %x", i, got, one, a, v)
		}
		if !got {
			refused++
			continue
		}
		matched++
		if q, _, _ := fieldSection(v); p != q {
			t.Fatalf("value %d: field section at %d, matches says %d", i, q, p)
		}
		c := sh.compact([]byte{7}, v, p)[1:] // appended, not written over
		if back := sh.expand([]byte{7}, c); string(back[1:]) != string(v) || sh.valueLen(uint32(len(c))) != uint32(len(v)) {
			t.Fatalf("value %d: compact %x expands to %x, want %x", i, c, back[1:], v)
		}
		pays := c[len(c)-sh.payLen:]
		for k := range sh.fields {
			f := &sh.fields[k]
			if w := raw.fields[k].value(); !sameValue(f.payload(pays), w) || string(f.name) != string(raw.fields[k].name) || raw.fields[k].ver != f.ver {
				t.Fatalf("value %d: field %s reads %+v, decodes to %s %+v", i, f.name, f.payload(pays), raw.fields[k].name, w)
			}
		}
		// The seal's reading of the compact form is toModelRow's of the
		// value, versions, tombstones and order included.
		names := make([]string, len(sh.fields))
		for k := range sh.fields {
			names[k] = string(sh.fields[k].name)
		}
		var slab fieldSlab
		mrow, ok := sh.modelRow("s", int64(i), c, names, new(rawRow), &slab)
		if want := toModelRow("s", int64(i), &raw, interner{}, nil, false, &slab); !ok || sameRow(mrow, want) != nil {
			t.Fatalf("value %d: the compact form reads %+v (%v), the value %+v", i, mrow, ok, want)
		}
		if _, ok := sh.modelRow("s", 0, c[:len(c)-sh.payLen-1], names, new(rawRow), &slab); ok && len(sh.fields) > 0 {
			t.Fatalf("value %d: a compact form cut short of its versions reads", i)
		}
	}
	if matched < 1000 || refused < 1000 {
		t.Fatalf("too weak: %d matched, %d refused", matched, refused)
	}
}

// fieldSectionLen returns the length of v's field section.
func fieldSectionLen(v []byte) int {
	p, _, ok := fieldSection(v)
	if !ok {
		return -1
	}
	return len(v) - p
}

// sameLayout reports whether the fields of value v (decoded as fs) and of
// value a (as as) have the same names, kinds, version indexes and payload
// lengths as stored (an int's varint as written, canonical or not: a
// mutated value may hold an overlong one, which decodes all the same).
func sameLayout(fs, as []rawField, v, a []byte) bool {
	vl, al := payloadLens(v), payloadLens(a)
	if len(fs) != len(as) || vl == nil || al == nil || len(vl) != len(fs) || len(al) != len(as) {
		return false
	}
	for i := range fs {
		f, g := fs[i], as[i]
		if string(f.name) != string(g.name) || f.kind != g.kind || f.ver != g.ver || vl[i] != al[i] {
			return false
		}
	}
	return true
}

// payloadLens returns the stored length of each field's payload in v's
// field section, walked independently of rowShape.parse; nil when v has a
// string field (no shape has one) or does not walk.
func payloadLens(v []byte) []int {
	p, _, ok := fieldSection(v)
	if !ok {
		return nil
	}
	sect := v[p:]
	nf, i := uvarintAt(sect, 0)
	var lens []int
	for ; nf > 0 && i >= 0; nf-- {
		l, j := uvarintAt(sect, i) // the name's length
		if j < 0 || l > uint64(len(sect)-j) {
			return nil
		}
		if _, j = uvarintAt(sect, j+int(l)); j < 0 || j >= len(sect) { // the version index
			return nil
		}
		kind := model.Kind(sect[j])
		j++
		n := 0
		switch kind {
		case model.KindFloat:
			n = 8
		case model.KindInt:
			if _, n = binary.Varint(sect[j:]); n <= 0 {
				return nil
			}
		case model.KindBool:
			n = 1
		case model.KindDeleted:
		default:
			return nil
		}
		lens = append(lens, n)
		i = j + n
	}
	if i != len(sect) {
		return nil
	}
	return lens
}

// sameValue compares two values bit for bit (NaN payloads too).
func sameValue(a, b model.Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case model.KindFloat:
		return math.Float64bits(a.F) == math.Float64bits(b.F)
	case model.KindInt, model.KindBool:
		return a.I == b.I
	}
	return true
}

// FuzzRowShape: no template and value make newRowShape or matches panic,
// and a value a shape matches decodes to the shape's fields.
func FuzzRowShape(f *testing.F) {
	rng := rand.New(rand.NewSource(1))
	for range 20 {
		a := shapedOperand(rng)
		f.Add(a, a)
		f.Add(a, shapedOperand(rng))
	}
	f.Fuzz(func(t *testing.T, a, v []byte) {
		sh := newRowShape(a)
		if sh == nil {
			return
		}
		p, ok := sh.matches(v)
		if !ok {
			return
		}
		var raw rawRow
		if err := decodeRaw(v, &raw); err != nil {
			t.Fatalf("matched value does not decode: %v", err)
		}
		if len(raw.fields) != len(sh.fields) {
			t.Fatalf("%d fields, shape has %d", len(raw.fields), len(sh.fields))
		}
		c := sh.compact(nil, v, p)
		if string(sh.expand(nil, c)) != string(v) {
			t.Fatalf("compact %x does not expand to %x", c, v)
		}
		for k := range sh.fields {
			if !sameValue(sh.fields[k].payload(c[len(c)-sh.payLen:]), raw.fields[k].value()) {
				t.Fatalf("field %d differs", k)
			}
		}
	})
}

// TestShapedRowsAgainstModel scans and aggregates rows of a few schemas in
// the memory head, most of them shaped (read at the shape's offsets) and
// some not (another field, a string, an int of another length, another
// version), against the naive model: the shaped reads give the decoded
// rows' answers.
func TestShapedRowsAgainstModel(t *testing.T) {
	if !memHeadTests {
		t.Skip("no memory head (TSDB_TEST_MEMHEAD=0)")
	}
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	rng := newSeededRand(t)
	times := testTimes(rng, 2000)
	m := naiveModel{}
	for range 20 {
		batch := make([]model.Row, 100)
		for i := range batch {
			row := model.Row{Series: testSeries[rng.Intn(len(testSeries))], Time: times[rng.Intn(len(times))]}
			ver := model.Version{Wall: int64(1 + rng.Intn(5)), Node: uint64(1 + rng.Intn(2))}
			// Floats of eighths: their sums are exact in any order.
			row.Fields = []model.Field{
				{Name: "a", Value: model.Float(float64(rng.Intn(4000)) / 8), Version: ver},
				{Name: "b", Value: model.Int(int64(rng.Intn(60))), Version: ver},
				{Name: "c", Value: model.Bool(rng.Intn(2) == 0), Version: ver},
			}
			switch rng.Intn(12) {
			case 0:
				row.Fields = append(row.Fields, model.Field{Name: "d", Value: model.Float(1), Version: ver})
			case 1:
				row.Fields[1].Value = model.String("s")
			case 2:
				row.Fields[1].Value = model.Int(int64(rng.Intn(1 << 20)))
			case 3:
				row.Fields[2].Version = model.Version{Wall: 9, Node: 1}
			}
			batch[i] = row
		}
		m.apply(batch)
		mustApply(t, r, batch...)
	}
	shaped, plain := 0, 0
	h := r.applyMu.mem
	h.mu.RLock()
	for _, bk := range h.buckets {
		for _, ms := range bk.series {
			for _, row := range ms.rows {
				if row.shaped() {
					shaped++
				} else {
					plain++
				}
			}
		}
	}
	h.mu.RUnlock()
	t.Logf("%d rows shaped, %d not", shaped, plain)
	if shaped < 500 || plain < 100 {
		t.Fatalf("too weak: %d shaped rows, %d not", shaped, plain)
	}
	all := m.rows()
	truncs := 0
	for range 1000 {
		if _, truncated := scanAgainstModel(t, r, all, randScanQuery(rng, times)); truncated {
			truncs++
		}
	}
	if truncs < 10 {
		t.Fatalf("too weak: %d scans truncated", truncs)
	}
	for range 1000 {
		q := randAggQuery(rng, times)
		got, err := r.Aggregate(q)
		if err != nil {
			t.Fatalf("query %+v: %v", q, err)
		}
		if want := naiveAggregate(all, q); !sameAggs(got, want) {
			t.Fatalf("query %+v:\n got %+v\nwant %+v", q, got, want)
		}
	}
}

// TestShapeAcrossBuckets: a series' shape in one bucket is its first try
// in the next (memSeries.shapeFor's hint): a series of one schema keeps
// it, and a series whose fields changed takes the new layout's shape
// there, not the old one, so every row of either bucket is compact.
func TestShapeAcrossBuckets(t *testing.T) {
	if !memHeadTests {
		t.Skip("no memory head (TSDB_TEST_MEMHEAD=0)")
	}
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	const b = int64(1) << bucketShift
	for i := range int64(10) {
		mustApply(t, r, row("same", i, fl("a", 1, 1)), row("changed", i, fl("a", 1, 1)))
		mustApply(t, r, row("same", b+i, fl("a", 2, 1)), row("changed", b+i, fl("a", 2, 1), fl("b", 3, 1)))
	}
	// Read under the lock, checked after it (a failed check must not
	// leave it held for the store's close).
	h := r.applyMu.mem
	h.mu.RLock()
	first, next := h.buckets[timeBucket(0)], h.buckets[timeBucket(b)]
	var shapes [2][2]*rowShape // [bucket][same, changed]
	plain := 0
	for k, bk := range []*memBucket{first, next} {
		if bk == nil {
			continue
		}
		shapes[k] = [2]*rowShape{bk.series["same"].shape, bk.series["changed"].shape}
		for _, ms := range bk.series {
			for _, row := range ms.rows {
				if !row.shaped() {
					plain++
				}
			}
		}
	}
	h.mu.RUnlock()
	if first == nil || next == nil {
		t.Fatal("the rows are not in two buckets in memory")
	}
	if shapes[0][0] == nil || shapes[0][0] != shapes[1][0] {
		t.Fatal("a series of one schema has two shapes")
	}
	if shapes[0][1] == shapes[1][1] {
		t.Fatal("a series whose fields changed kept its old shape")
	}
	if plain > 0 {
		t.Fatalf("%d rows not compact", plain)
	}
	got := scanAll(t, r)
	if len(got) != 40 || got[38].Series != "changed" || len(got[38].Fields) != 2 {
		t.Fatalf("%d rows, last but one %+v", len(got), got[len(got)-2])
	}
}
