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
