package partition

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// applyN writes n new rows to r and returns the high sequence.
func applyN(t testing.TB, r *Replica, n int) uint64 {
	t.Helper()
	base := int64(r.HighSeq()) * 1000
	rows := make([]model.Row, n)
	for i := range rows {
		rows[i] = row("s", base+int64(i), fl("v", float64(i), 1))
	}
	return mustApply(t, r, rows...).LastSeq
}

// TestCursorsPersistAndAreMonotonic checks that cursors never go down,
// refuse to pass the synced watermark, are per replica and survive a
// Close/Open.
func TestCursorsPersistAndAreMonotonic(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r := createTestReplica(t, s)
	other := createTestReplica(t, s)
	applyN(t, r, 10)
	applyN(t, other, 3)
	t1, t2, t3 := uuid.New(), uuid.New(), uuid.New()

	if got := r.Confirmed(t1); got != 0 {
		t.Fatalf("Confirmed of a new target = %d", got)
	}
	if c := r.Cursors(); c == nil || len(c) != 0 {
		t.Fatalf("Cursors of a new replica = %v, want an empty map", c)
	}
	steps := []struct {
		target uuid.UUID
		seq    uint64
		want   uint64 // Confirmed(target) afterwards
		err    error
	}{
		{t1, 4, 4, nil},
		{t1, 2, 4, nil}, // never lowered
		{t1, 4, 4, nil},
		{t1, 7, 7, nil},
		{t2, 10, 10, nil}, // exactly the synced watermark
		{t3, 11, 0, ErrCursorAhead},
		{t1, 0, 7, nil},
	}
	for i, st := range steps {
		err := r.SetConfirmed(st.target, st.seq)
		if !errors.Is(err, st.err) || (st.err == nil && err != nil) {
			t.Fatalf("step %d: SetConfirmed(%d) = %v, want %v", i, st.seq, err, st.err)
		}
		if got := r.Confirmed(st.target); got != st.want {
			t.Fatalf("step %d: Confirmed = %d, want %d", i, got, st.want)
		}
	}
	if err := other.SetConfirmed(t1, 3); err != nil {
		t.Fatal(err)
	}
	want := map[uuid.UUID]uint64{t1: 7, t2: 10}
	got := r.Cursors()
	if !sameCursors(got, want) {
		t.Fatalf("Cursors = %v, want %v", got, want)
	}
	got[t1] = 1 // a copy
	if r.Confirmed(t1) != 7 {
		t.Fatal("Cursors returned the replica's own map")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openTestStore(t, dir)
	r2, _ := s2.Replica(r.Info().Placement)
	o2, _ := s2.Replica(other.Info().Placement)
	if got := r2.Cursors(); !sameCursors(got, want) {
		t.Fatalf("Cursors after reopen = %v, want %v", got, want)
	}
	if got := o2.Cursors(); !sameCursors(got, map[uuid.UUID]uint64{t1: 3}) {
		t.Fatalf("other replica's cursors after reopen = %v", got)
	}
	if err := r2.SetConfirmed(t1, 5); err != nil || r2.Confirmed(t1) != 7 {
		t.Fatalf("cursor lowered after reopen: %v, %d", err, r2.Confirmed(t1))
	}
}

func sameCursors(a, b map[uuid.UUID]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCursorsDroppedWithReplica checks that a drop deletes the stored
// cursors with the data, and that cursors cannot be set afterwards.
func TestCursorsDroppedWithReplica(t *testing.T) {
	for _, conditional := range []bool{false, true} {
		s := openTestStore(t, "")
		r := createTestReplica(t, s)
		applyN(t, r, 5)
		for i := 0; i < 3; i++ {
			if err := r.SetConfirmed(uuid.New(), uint64(i+1)); err != nil {
				t.Fatal(err)
			}
		}
		if n := countKeys(t, s.DB(), r.ks.curLo, r.ks.curHi); n != 3 {
			t.Fatalf("%d cursor keys stored, want 3", n)
		}
		p := r.Info().Placement
		if conditional {
			if ok, err := s.DropReplicaIf(p, func(*Replica) bool { return true }); !ok || err != nil {
				t.Fatalf("DropReplicaIf = %v, %v", ok, err)
			}
		} else if err := s.DropReplica(p); err != nil {
			t.Fatal(err)
		}
		if n := countKeys(t, s.DB(), r.ks.prefix, r.ks.dataEnd); n != 0 {
			t.Fatalf("conditional %v: %d keys left in the dropped replica's range", conditional, n)
		}
		if err := r.SetConfirmed(uuid.New(), 1); !errors.Is(err, ErrDropped) {
			t.Fatalf("SetConfirmed after drop: %v", err)
		}
		if c := r.Cursors(); len(c) != 0 {
			t.Fatalf("Cursors after drop = %v", c)
		}
	}
}

// TestCursorWritesRaceDrop sets cursors concurrently with a drop: every
// write lands before the DeleteRange or fails, so nothing is left.
func TestCursorWritesRaceDrop(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	high := applyN(t, r, 50)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			target := uuid.New()
			for seq := uint64(1); ; seq = seq%high + 1 {
				err := r.SetConfirmed(target, seq)
				if errors.Is(err, ErrDropped) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				if seq == high {
					target = uuid.New() // keep writing new keys
				}
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(r.Cursors()) < 8 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := s.DropReplica(r.Info().Placement); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := countKeys(t, s.DB(), r.ks.prefix, r.ks.dataEnd); n != 0 {
		t.Fatalf("%d keys left after drop", n)
	}
}
