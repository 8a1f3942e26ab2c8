package partition

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// TestUnloadRefusesApply checks that an unloading replica refuses writes
// but keeps serving reads, that Resume undoes it and that it is not
// persisted.
func TestUnloadRefusesApply(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r := createTestReplica(t, s)
	high := applyN(t, r, 5)
	r.Unload()
	r.Unload() // idempotent
	if !r.Unloading() {
		t.Fatal("Unloading false after Unload")
	}
	if _, err := r.Apply([]model.Row{row("x", 1, fl("v", 1, 1))}); !errors.Is(err, ErrUnloading) {
		t.Fatalf("Apply while unloading: %v, want ErrUnloading", err)
	}
	if r.HighSeq() != high {
		t.Fatalf("HighSeq moved from %d to %d while unloading", high, r.HighSeq())
	}
	// Reads and outgoing replication keep working.
	if log, err := r.ReadLog(0, 0); err != nil || len(log) != 5 {
		t.Fatalf("ReadLog while unloading: %d entries, %v", len(log), err)
	}
	if rows := scanAll(t, r); len(rows) != 5 {
		t.Fatalf("Scan while unloading: %d rows", len(rows))
	}
	if _, err := r.Aggregate(model.Query{From: minTime, To: maxTime}); err != nil {
		t.Fatalf("Aggregate while unloading: %v", err)
	}
	if sum, err := r.Checksum(); err != nil || sum.Rows != 5 {
		t.Fatalf("Checksum while unloading: %+v, %v", sum, err)
	}
	if err := r.SetConfirmed(uuid.New(), high); err != nil {
		t.Fatalf("SetConfirmed while unloading: %v", err)
	}

	r.Resume()
	r.Resume()
	if r.Unloading() {
		t.Fatal("Unloading true after Resume")
	}
	mustApply(t, r, row("x", 1, fl("v", 1, 1)))
	r.Unload()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTestStore(t, dir)
	r2, _ := s2.Replica(r.Info().Placement)
	if r2.Unloading() {
		t.Fatal("Unload was persisted")
	}
	mustApply(t, r2, row("x", 2, fl("v", 1, 1)))
}

// TestUnloadWaitsForInflightApply holds an Apply inside the apply lock
// (after its checks) and unloads meanwhile: the Apply must succeed and be
// visible when Unload returns, and Unloading must stay false while the
// Apply holds the lock.
func TestUnloadWaitsForInflightApply(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	entered := make(chan struct{})
	release := make(chan struct{})
	sawUnloading := false
	r.hookApplyLocked = func() {
		close(entered)
		<-release
		for i := 0; i < 1000; i++ { // give a lock-free Unload every chance
			runtime.Gosched()
		}
		sawUnloading = r.Unloading()
	}
	type result struct {
		res ApplyResult
		err error
	}
	applied := make(chan result, 1)
	go func() {
		res, err := r.Apply([]model.Row{row("s", 1, fl("v", 1, 1))})
		applied <- result{res, err}
	}()
	<-entered
	unloaded := make(chan uint64, 1)
	go func() {
		r.Unload()
		unloaded <- r.HighSeq()
	}()
	close(release)
	high := <-unloaded
	got := <-applied
	r.hookApplyLocked = nil
	if got.err != nil {
		t.Fatalf("in-flight Apply failed: %v", got.err)
	}
	if sawUnloading {
		t.Fatal("Unload took effect while an Apply held the apply lock")
	}
	if high != got.res.LastSeq || high != 1 {
		t.Fatalf("HighSeq %d when Unload returned, in-flight Apply stored %d", high, got.res.LastSeq)
	}
	if _, err := r.Apply([]model.Row{row("s", 2, fl("v", 1, 1))}); !errors.Is(err, ErrUnloading) {
		t.Fatalf("Apply after Unload: %v", err)
	}
}

// TestUnloadConcurrentApplies unloads under concurrent writers: every
// acknowledged write is at or below the HighSeq seen when Unload returned,
// which never moves afterwards, and every writer ends with ErrUnloading.
func TestUnloadConcurrentApplies(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	maxAcked := writeUntil(t, r, 4, ErrUnloading, func() {
		r.Unload()
	})
	high := r.HighSeq()
	if maxAcked > high {
		t.Fatalf("acknowledged sequence %d above HighSeq %d after Unload", maxAcked, high)
	}
	if _, err := r.Apply([]model.Row{row("late", 1, fl("v", 1, 1))}); !errors.Is(err, ErrUnloading) {
		t.Fatalf("Apply after Unload: %v", err)
	}
	if r.HighSeq() != high {
		t.Fatal("HighSeq moved after Unload")
	}
}

// writeUntil starts n writers applying new rows to r until they get stop,
// waits for at least 20 sequences, calls act, waits for the writers and
// returns the highest acknowledged LastSeq.
func writeUntil(t *testing.T, r *Replica, n int, stop error, act func()) uint64 {
	t.Helper()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		maxAcked uint64
	)
	errs := make(chan error, n)
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				res, err := r.Apply([]model.Row{row("s", int64(w*1_000_000+i), fl("v", 1, 1))})
				if errors.Is(err, stop) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				maxAcked = max(maxAcked, res.LastSeq)
				mu.Unlock()
			}
		}(w)
	}
	deadline := time.Now().Add(30 * time.Second)
	for r.HighSeq() < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	act()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return maxAcked
}

// TestDropReplicaIf covers the outcomes of a conditional drop.
func TestDropReplicaIf(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	p := r.Info().Placement
	high := applyN(t, r, 10)
	target := uuid.New()

	if ok, err := s.DropReplicaIf(uuid.New(), func(*Replica) bool { return true }); ok || err != nil {
		t.Fatalf("DropReplicaIf(unknown) = %v, %v", ok, err)
	}
	// The lifecycle condition: UNLOAD, at least one target, all confirmed.
	lifecycle := func(r *Replica) bool {
		c := r.Cursors()
		if !r.Unloading() || len(c) == 0 || r.SyncedSeq() != r.HighSeq() {
			return false
		}
		for tg := range c {
			if r.Confirmed(tg) < r.HighSeq() {
				return false
			}
		}
		return true
	}
	var seen *Replica
	steps := []struct {
		name  string
		setup func()
		want  bool
	}{
		{"serving", func() {}, false},
		{"unloading without target", r.Unload, false},
		{"target behind", func() { mustSetConfirmed(t, r, target, high-1) }, false},
		{"target caught up", func() { mustSetConfirmed(t, r, target, high) }, true},
	}
	for _, st := range steps {
		st.setup()
		ok, err := s.DropReplicaIf(p, func(c *Replica) bool { seen = c; return lifecycle(c) })
		if ok != st.want || err != nil {
			t.Fatalf("%s: DropReplicaIf = %v, %v; want %v", st.name, ok, err, st.want)
		}
		if seen != r {
			t.Fatalf("%s: cond called with another replica", st.name)
		}
		if _, listed := s.Replica(p); listed == st.want {
			t.Fatalf("%s: replica listed %v after DropReplicaIf %v", st.name, listed, ok)
		}
		if !st.want && len(scanAll(t, r)) != 10 {
			t.Fatalf("%s: data changed by a refused drop", st.name)
		}
	}
	if n := countKeys(t, s.DB(), r.ks.prefix, r.ks.dataEnd); n != 0 {
		t.Fatalf("%d keys left after the drop", n)
	}
	if _, err := s.CreateReplica(r.Info()); !errors.Is(err, ErrDropped) {
		t.Fatalf("re-create after DropReplicaIf: %v", err)
	}
	if ok, err := s.DropReplicaIf(p, func(*Replica) bool { t.Fatal("cond called on a dropped placement"); return true }); ok || err != nil {
		t.Fatalf("second DropReplicaIf = %v, %v", ok, err)
	}
}

func mustSetConfirmed(t *testing.T, r *Replica, target uuid.UUID, seq uint64) {
	t.Helper()
	if err := r.SetConfirmed(target, seq); err != nil {
		t.Fatalf("SetConfirmed(%d): %v", seq, err)
	}
}

// TestDropReplicaIfAtomicWithApply drops under concurrent writers: the
// HighSeq the condition saw covers every acknowledged write, and nothing is
// left of the replica.
func TestDropReplicaIfAtomicWithApply(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	p := r.Info().Placement
	var seenHigh uint64
	maxAcked := writeUntil(t, r, 4, ErrDropped, func() {
		for {
			ok, err := s.DropReplicaIf(p, func(c *Replica) bool {
				seenHigh = c.HighSeq()
				// Allowed calls must not deadlock under the apply lock.
				_, _, _ = c.SyncedSeq(), c.Cursors(), c.Unloading()
				return seenHigh%2 == 0
			})
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				return
			}
		}
	})
	if maxAcked > seenHigh {
		t.Fatalf("an Apply acknowledged sequence %d after the condition saw HighSeq %d", maxAcked, seenHigh)
	}
	if got := r.HighSeq(); got != seenHigh {
		t.Fatalf("HighSeq %d after the drop, the condition saw %d", got, seenHigh)
	}
	if n := countKeys(t, s.DB(), r.ks.prefix, r.ks.dataEnd); n != 0 {
		t.Fatalf("%d keys left after the drop", n)
	}
}

// TestApplyLosingToADropFails holds an Apply after it made its batch
// visible and released the apply lock (in the store's throttle, before its
// WAL sync) and drops the replica meanwhile, unconditionally and with a
// condition that holds: the Apply must return ErrDropped, never nil, since
// its rows are deleted (an acknowledgement of them would be a lie).
func TestApplyLosingToADropFails(t *testing.T) {
	for _, conditional := range []bool{false, true} {
		var hold atomic.Bool
		entered := make(chan struct{})
		release := make(chan struct{})
		s, err := Open(Options{MemoryHead: memHeadTests, Dir: t.TempDir(), MemTableSize: 4 << 20, CacheSize: 8 << 20, Throttle: func(int) {
			if hold.CompareAndSwap(true, false) {
				close(entered)
				<-release
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		r := createTestReplica(t, s)
		applyN(t, r, 3)
		hold.Store(true)
		applied := make(chan error, 1)
		go func() {
			_, err := r.Apply([]model.Row{row("late", 100, fl("v", 1, 1))})
			applied <- err
		}()
		<-entered
		dropped := make(chan error, 1)
		go func() {
			if conditional {
				ok, err := s.DropReplicaIf(r.Info().Placement, func(*Replica) bool { return true })
				if err == nil && !ok {
					err = errors.New("DropReplicaIf did not drop")
				}
				dropped <- err
				return
			}
			dropped <- s.DropReplica(r.Info().Placement)
		}()
		// The drop has begun once the replica is marked dropped.
		for !r.dropped.Load() {
			runtime.Gosched()
		}
		close(release)
		if err := <-applied; !errors.Is(err, ErrDropped) {
			t.Fatalf("conditional %v: an Apply in flight across the drop returned %v; want ErrDropped", conditional, err)
		}
		if err := <-dropped; err != nil {
			t.Fatalf("conditional %v: drop: %v", conditional, err)
		}
		if n := countKeys(t, s.DB(), r.ks.prefix, r.ks.dataEnd); n != 0 {
			t.Fatalf("conditional %v: %d keys left after the drop", conditional, n)
		}
	}
}
