package partition

import (
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// TestRelayHints: a hint answers for the sequences of its span and its
// origin only; a full list forgets its oldest half, never a newer span;
// a span that would overlap the last one is not recorded.
func TestRelayHints(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	var h relayHints
	h.add(1, 3, a, 10)
	h.add(4, 4, uuid.Nil, 11) // written here: not recorded
	h.add(5, 9, b, 12)
	h.add(9, 12, a, 13) // overlaps: not recorded
	for _, tc := range []struct {
		seq    uint64
		origin uuid.UUID
		want   uint64
	}{
		{1, a, 10}, {3, a, 10}, {3, b, 0}, {4, a, 0}, {5, b, 12}, {9, b, 12}, {10, a, 0}, {0, a, 0},
	} {
		if got := h.lookup(tc.seq, tc.origin); got != tc.want {
			t.Errorf("lookup(%d, %v) = %d, want %d", tc.seq, tc.origin == a, got, tc.want)
		}
	}
	// Consecutive applies of one push (same origin and bound) make one
	// span; another bound, origin or a gap, a new one.
	var m relayHints
	m.add(1, 2, a, 5)
	m.add(3, 4, a, 5)
	m.add(5, 5, a, 7)
	m.add(6, 6, b, 8)
	m.add(8, 8, b, 8)
	if len(m.spans) != 4 || m.lookup(1, a) != 5 || m.lookup(4, a) != 5 || m.lookup(5, a) != 7 || m.lookup(6, b) != 8 || m.lookup(7, b) != 0 || m.lookup(8, b) != 8 {
		t.Errorf("merged spans %+v", m.spans)
	}
	var full relayHints
	for i := range uint64(maxHintSpans + 1) {
		origin := a
		if i%2 == 1 {
			origin = b
		}
		full.add(2*i+1, 2*i+2, origin, i+1)
	}
	if got := full.lookup(1, a); got != 0 {
		t.Errorf("the oldest span is still known after the list filled: %d", got)
	}
	last := uint64(maxHintSpans) // even: origin a
	if got := full.lookup(2*last+2, a); got != last+1 {
		t.Errorf("the newest span: %d, want %d", got, last+1)
	}
	mid := uint64(maxHintSpans/2 + 2) // even: origin a
	if got := full.lookup(2*mid+1, a); got != mid+1 {
		t.Errorf("a span of the newer half: %d, want %d", got, mid+1)
	}
}

// TestOriginSeqOnlyForCarriedValues: ReadLog reports a push's origin
// sequence for an entry that carries the value written, and not for a
// legacy entry (SetLogValues(false)), whose row is read as it is now.
func TestOriginSeqOnlyForCarriedValues(t *testing.T) {
	s := openPlainStore(t, t.TempDir())
	origin := uuid.New()
	for _, values := range []bool{true, false} {
		r := createTestReplica(t, s)
		r.SetLogValues(values)
		if _, err := r.ApplyFrom([]model.Row{row("cpu", 1, model.Field{Name: "v", Value: model.Float(1), Version: model.Version{Wall: 1, Node: 1}})}, origin, 42); err != nil {
			t.Fatal(err)
		}
		entries, err := r.ReadLog(0, 0)
		if err != nil || len(entries) != 1 || entries[0].Origin != origin {
			t.Fatalf("values=%v: %+v, %v", values, entries, err)
		}
		want := uint64(42)
		if !values {
			want = 0
		}
		if got := entries[0].OriginSeq; got != want {
			t.Errorf("values=%v: OriginSeq %d, want %d", values, got, want)
		}
	}
}

// TestReadLogBareAndRelayed: ReadLogBare leaves undecoded (Bare) the
// values relayed from a third replica with a known origin sequence, and
// the target's own values, and decodes the rest; ReadRelayed returns,
// decoded, one origin's values above a level of its log (and those whose
// sequence there is unknown).
func TestReadLogBareAndRelayed(t *testing.T) {
	s := openPlainStore(t, t.TempDir())
	r := createTestReplica(t, s)
	third, target := uuid.New(), uuid.New()
	f := func(v float64) model.Field {
		return model.Field{Name: "v", Value: model.Float(v), Version: model.Version{Wall: int64(v), Node: 1}}
	}
	mustApply(t, r, row("own", 1, f(1)))                                                                         // seq 1: written here
	if _, err := r.ApplyFrom([]model.Row{row("relay", 2, f(2)), row("relay", 3, f(3))}, third, 40); err != nil { // 2, 3
		t.Fatal(err)
	}
	if _, err := r.ApplyFrom([]model.Row{row("back", 4, f(4))}, target, 7); err != nil { // 4: the target's
		t.Fatal(err)
	}
	if _, err := r.ApplyFrom([]model.Row{row("relay", 5, f(5))}, third, 50); err != nil { // 5
		t.Fatal(err)
	}
	bare, err := r.ReadLogBare(0, 0, target)
	if err != nil || len(bare) != 5 {
		t.Fatalf("ReadLogBare: %d entries, %v", len(bare), err)
	}
	for i, want := range []struct {
		bare      bool
		origin    uuid.UUID
		originSeq uint64
	}{{false, uuid.Nil, 0}, {true, third, 40}, {true, third, 40}, {true, target, 0}, {true, third, 50}} {
		e := bare[i]
		if e.Seq != uint64(i+1) || e.Bare != want.bare || e.Origin != want.origin || e.OriginSeq != want.originSeq || e.Row.Time != int64(i+1) {
			t.Errorf("entry %d: %+v; want bare %v, origin sequence %d", i+1, e, want.bare, want.originSeq)
		}
		if e.Bare != (len(e.Row.Fields) == 0) {
			t.Errorf("entry %d: bare %v with %d fields", i+1, e.Bare, len(e.Row.Fields))
		}
	}
	// The relayed values above the level 40 of third's log: sequence 5.
	got, err := r.ReadRelayed(0, 5, third, 40)
	if err != nil || len(got) != 1 || got[0].Seq != 5 || got[0].Bare || len(got[0].Row.Fields) != 1 || got[0].Row.Fields[0].Value.F != 5 {
		t.Fatalf("ReadRelayed above 40: %+v, %v; want sequence 5 decoded", got, err)
	}
	// Above 0 and up to 4: sequences 2 and 3, not 5.
	got, err = r.ReadRelayed(0, 4, third, 0)
	if err != nil || len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 3 || got[1].Row.Fields[0].Value.F != 3 {
		t.Fatalf("ReadRelayed up to 4: %+v, %v; want sequences 2 and 3", got, err)
	}
	// Up to 2, in the middle of the record of 2 and 3 (keyed by 3).
	got, err = r.ReadRelayed(0, 2, third, 0)
	if err != nil || len(got) != 1 || got[0].Seq != 2 {
		t.Fatalf("ReadRelayed up to 2: %+v, %v; want sequence 2 of its record", got, err)
	}
	if got, err := r.ReadRelayed(0, 5, uuid.New(), 0); err != nil || len(got) != 0 {
		t.Fatalf("ReadRelayed of an origin without entries: %+v, %v", got, err)
	}
}
