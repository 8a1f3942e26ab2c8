package partition

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestLostPlacements: a store opened on an empty directory is fresh until
// it records its birth; the first settle of a pending table marks the
// placements it lists lost, CreateReplica refuses them for good (across a
// reopen), and placements of tables settled or created later are created
// as before. A store that holds replicas but no birth record (written
// before birth records existed) is not fresh.
func TestLostPlacements(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	if !s.Fresh() {
		t.Fatal("a store on an empty directory is not fresh")
	}
	if err := s.RecordBirth([]string{"t1", "t2"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if s.Fresh() || !s.Pending("t1") || !s.Pending("t2") || s.Pending("t3") {
		t.Fatalf("after the birth: fresh %v, pending t1 %v t2 %v t3 %v", s.Fresh(), s.Pending("t1"), s.Pending("t2"), s.Pending("t3"))
	}
	lost := testInfo(uuid.New())
	lost.Table = "t1"
	if err := s.Settle("t1", []ReplicaInfo{lost}); err != nil {
		t.Fatal(err)
	}
	if s.Pending("t1") || !s.Lost(lost.Placement) {
		t.Fatalf("after the settle: pending %v lost %v", s.Pending("t1"), s.Lost(lost.Placement))
	}
	if _, err := s.CreateReplica(lost); !errors.Is(err, ErrLost) {
		t.Fatalf("create a lost placement: %v, want ErrLost", err)
	}
	later := testInfo(uuid.New())
	later.Table = "t1"
	if _, err := s.CreateReplica(later); err != nil {
		t.Fatalf("create a placement assigned after the settle: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTestStore(t, dir)
	if s.Fresh() || s.Pending("t1") || !s.Pending("t2") || !s.Lost(lost.Placement) || s.Lost(later.Placement) {
		t.Fatalf("reopened: fresh %v, pending t1 %v t2 %v, lost %v, later lost %v",
			s.Fresh(), s.Pending("t1"), s.Pending("t2"), s.Lost(lost.Placement), s.Lost(later.Placement))
	}
	if got := s.LostReplicas(); len(got) != 1 || !got[0].sameIdentity(lost) {
		t.Fatalf("LostReplicas = %+v", got)
	}
	if _, err := s.CreateReplica(lost); !errors.Is(err, ErrLost) {
		t.Fatalf("create a lost placement after a reopen: %v, want ErrLost", err)
	}
	if err := s.RecordBirth([]string{"t9"}, time.Now()); err != nil || s.Pending("t9") {
		t.Fatalf("a second birth changed the store: %v, pending %v", err, s.Pending("t9"))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A store with replicas and no birth record is an older store.
	oldDir := t.TempDir()
	old := openTestStore(t, oldDir)
	createTestReplica(t, old)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	old = openTestStore(t, oldDir)
	if old.Fresh() {
		t.Fatal("a store holding a replica is fresh")
	}
}

// TestLostAnswersWithoutTheStoreLock: in a store with no lost mark, Lost
// (asked by every push and insert) does not wait for the store's lock,
// which a replica's creation or drop holds through a synced commit; once a
// placement is marked, it is found.
func TestLostAnswersWithoutTheStoreLock(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	p := uuid.New()
	s.mu.Lock()
	answered := make(chan bool, 1)
	go func() { answered <- s.Lost(p) }()
	select {
	case lost := <-answered:
		s.mu.Unlock()
		if lost {
			t.Error("Lost is true in a store with no lost mark")
		}
	case <-time.After(30 * time.Second):
		s.mu.Unlock()
		<-answered
		t.Fatal("Lost waited for the store's lock in a store with no lost mark")
	}
	if err := s.RecordBirth([]string{"t1"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	info := testInfo(p)
	info.Table = "t1"
	if err := s.Settle("t1", []ReplicaInfo{info}); err != nil {
		t.Fatal(err)
	}
	if !s.Lost(p) || s.Lost(uuid.New()) {
		t.Errorf("after the mark: Lost(marked) %v, Lost(other) %v; want true, false", s.Lost(p), s.Lost(uuid.New()))
	}
}
