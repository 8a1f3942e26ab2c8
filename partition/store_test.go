package partition

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

func int64p(v int64) *int64 { return &v }

// TestPersistence writes, closes and reopens: rows, registry, sequences and
// the log survive.
func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	info := ReplicaInfo{Placement: uuid.New(), Table: "cpu", PartitionID: uuid.New(), Begin: int64p(math.MinInt64), End: nil}
	r, err := s.CreateReplica(info)
	if err != nil {
		t.Fatal(err)
	}
	other := createTestReplica(t, s)
	rng := newSeededRand(t)
	for i := 0; i < 5; i++ {
		mustApply(t, r, randRows(rng, 50, testSeries, testTimes(rng, 20))...)
	}
	mustApply(t, other, row("x", 1, fl("v", 1, 1)))
	wantRows := scanAll(t, r)
	wantLog, err := r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantHigh := r.HighSeq()
	wantInfo := r.Info()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	s2 := openTestStore(t, dir)
	if n := len(s2.Replicas()); n != 2 {
		t.Fatalf("%d replicas after reopen, want 2", n)
	}
	r2, ok := s2.Replica(info.Placement)
	if !ok {
		t.Fatal("replica missing after reopen")
	}
	gotInfo := r2.Info()
	if !gotInfo.sameIdentity(wantInfo) || !gotInfo.CreatedAt.Equal(wantInfo.CreatedAt) {
		t.Fatalf("info after reopen %+v, want %+v", gotInfo, wantInfo)
	}
	if r2.HighSeq() != wantHigh || r2.SyncedSeq() != wantHigh {
		t.Fatalf("after reopen HighSeq %d, SyncedSeq %d, want %d", r2.HighSeq(), r2.SyncedSeq(), wantHigh)
	}
	if err := sameRows(scanAll(t, r2), wantRows); err != nil {
		t.Fatal(err)
	}
	gotLog, err := r2.ReadLog(0, 0)
	if err != nil || len(gotLog) != len(wantLog) || gotLog[len(gotLog)-1].Seq != wantLog[len(wantLog)-1].Seq {
		t.Fatalf("log after reopen: %d entries, %v", len(gotLog), err)
	}
	// New writes continue the sequence.
	res := mustApply(t, r2, row("new", 1, fl("v", 1, 1)))
	if res.LastSeq != wantHigh+1 {
		t.Fatalf("first seq after reopen %d, want %d", res.LastSeq, wantHigh+1)
	}
}

func TestCreateReplica(t *testing.T) {
	s := openTestStore(t, "")
	info := testInfo(uuid.New())
	info.End = int64p(1000)
	r1, err := s.CreateReplica(info)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Info().CreatedAt.IsZero() {
		t.Fatal("CreatedAt not set")
	}
	info.CreatedAt = time.Unix(1, 0)
	r2, err := s.CreateReplica(info)
	if err != nil || r2 != r1 {
		t.Fatalf("second create: %v, same replica %v", err, r2 == r1)
	}
	conflict := info
	conflict.End = int64p(2000)
	if _, err := s.CreateReplica(conflict); !errors.Is(err, ErrReplicaConflict) {
		t.Fatalf("conflicting create: %v", err)
	}
	// Info returns a copy.
	got := r1.Info()
	*got.End = 5
	if *r1.Info().End != 1000 {
		t.Fatal("Info shares End with the replica")
	}
	invalid := []ReplicaInfo{
		{Table: "t", PartitionID: uuid.New()},
		{Placement: uuid.New(), Table: "t"},
		{Placement: uuid.New(), Table: "Bad-Name", PartitionID: uuid.New()},
		{Placement: uuid.New(), Table: "t", PartitionID: uuid.New(), Begin: int64p(5), End: int64p(5)},
	}
	for _, in := range invalid {
		if _, err := s.CreateReplica(in); !errors.Is(err, ErrInvalidReplica) {
			t.Errorf("CreateReplica(%+v): %v, want ErrInvalidReplica", in, err)
		}
	}
}

// TestDropReplica checks that a drop removes the data, refuses later
// writes and reads, and that the placement can never be created again,
// also after a reopen.
func TestDropReplica(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r := createTestReplica(t, s)
	keep := createTestReplica(t, s)
	rng := newSeededRand(t)
	mustApply(t, r, randRows(rng, 100, testSeries, testTimes(rng, 20))...)
	mustApply(t, keep, row("k", 1, fl("v", 1, 1)))
	p := r.Info().Placement
	if err := s.DropReplica(p); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Replica(p); ok {
		t.Fatal("dropped replica still listed")
	}
	if n := countKeys(t, s.DB(), r.ks.prefix, r.ks.dataEnd); n != 0 {
		t.Fatalf("%d keys left in the dropped replica's range", n)
	}
	if _, err := r.Apply([]model.Row{row("a", 1, fl("v", 1, 9))}); !errors.Is(err, ErrDropped) {
		t.Fatalf("Apply after drop: %v", err)
	}
	if _, err := s.CreateReplica(r.Info()); !errors.Is(err, ErrDropped) {
		t.Fatalf("re-create after drop: %v", err)
	}
	if err := s.DropReplica(p); err != nil {
		t.Fatalf("second drop: %v", err)
	}
	never := uuid.New()
	if err := s.DropReplica(never); err != nil {
		t.Fatalf("drop of an unknown placement: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openTestStore(t, dir)
	if _, ok := s2.Replica(p); ok {
		t.Fatal("dropped replica loaded after reopen")
	}
	for _, pl := range []uuid.UUID{p, never} {
		if _, err := s2.CreateReplica(testInfo(pl)); !errors.Is(err, ErrDropped) {
			t.Fatalf("re-create %s after reopen: %v", pl, err)
		}
	}
	k2, ok := s2.Replica(keep.Info().Placement)
	if !ok || len(scanAll(t, k2)) != 1 {
		t.Fatal("the other replica lost its data")
	}
}

// TestDropWaitsForApply races drops with applies: every Apply either
// succeeds before the drop or fails with ErrDropped, and nothing is left.
func TestDropWaitsForApply(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				_, err := r.Apply([]model.Row{row("s", int64(w*1000+i), fl("v", 1, 1))})
				if errors.Is(err, ErrDropped) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	deadline := time.Now().Add(30 * time.Second)
	for r.HighSeq() < 20 && time.Now().Before(deadline) {
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

func countKeys(t *testing.T, db *pebble.DB, lo, hi []byte) int {
	t.Helper()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

func TestClosedStore(t *testing.T) {
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: t.TempDir(), MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r := createTestReplica(t, s)
	mustApply(t, r, row("a", 1, fl("v", 1, 1)))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{}
	_, checks["Apply"] = r.Apply([]model.Row{row("a", 2, fl("v", 1, 1))})
	_, _, checks["Scan"] = r.Scan(model.Query{From: minTime, To: maxTime})
	_, checks["Aggregate"] = r.Aggregate(model.Query{From: minTime, To: maxTime})
	_, checks["ReadLog"] = r.ReadLog(0, 0)
	_, checks["DiskUsage"] = r.DiskUsage()
	_, checks["CreateReplica"] = s.CreateReplica(testInfo(uuid.New()))
	checks["DropReplica"] = s.DropReplica(r.Info().Placement)
	_, checks["DropReplicaIf"] = s.DropReplicaIf(r.Info().Placement, func(*Replica) bool { return true })
	checks["SetConfirmed"] = r.SetConfirmed(uuid.New(), 1)
	_, checks["Checksum"] = r.Checksum()
	for op, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", op, err)
		}
	}
	if s.Metrics() != nil {
		t.Error("Metrics after Close is not nil")
	}
	if _, err := Open(Options{}); err == nil {
		t.Error("Open without a Dir succeeded")
	}
}

func TestDiskUsageAndStats(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	var rows []model.Row
	for i := 0; i < 2000; i++ {
		rows = append(rows, row("cpu,host=a", int64(i)*1e9, fl("v", float64(i), 1)))
	}
	mustApply(t, r, rows...)
	if err := s.DB().Flush(); err != nil {
		t.Fatal(err)
	}
	n, err := r.DiskUsage()
	if err != nil || n == 0 {
		t.Fatalf("DiskUsage = %d, %v; want > 0 after a flush", n, err)
	}
	st := r.Stats()
	if st.HighSeq != 2000 || st.SyncedSeq != 2000 || st.Bytes == 0 {
		t.Fatalf("Stats = %+v", st)
	}
	if m := s.Metrics(); m == nil || m.Flush.Count == 0 {
		t.Fatalf("Metrics = %v", m)
	}
}

// captureHandler records log records.
type captureHandler struct {
	mu      sync.Mutex
	records []string
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b bytes.Buffer
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.records = append(h.records, b.String())
	return nil
}
func (h *captureHandler) WithAttrs(attrs []slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler            { return h }

// TestPebbleLogsGoToSlog checks that pebble's own log lines reach the
// injected logger (at debug level) instead of stdout.
func TestPebbleLogsGoToSlog(t *testing.T) {
	h := &captureHandler{}
	dir := t.TempDir()
	for i := 0; i < 2; i++ { // the reopen replays a WAL, which pebble logs
		s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, Logger: slog.New(h), MemTableSize: 4 << 20, CacheSize: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		r := createTestReplica(t, s)
		mustApply(t, r, row("a", 1, fl("v", 1, 1)))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	debug := 0
	for _, rec := range h.records {
		if bytes.HasPrefix([]byte(rec), []byte("DEBUG")) {
			debug++
		}
	}
	if debug == 0 {
		t.Fatalf("no pebble line reached the logger: %q", h.records)
	}
}

// TestLookupsDuringADrop checks that a drop, which holds the store's lock
// for its whole batch, holds no lookup of a replica behind it: a split
// parent's drop writing its rows in memory held every insert and push of
// the server (docs/performance.md, "A split parent's drop"). The replica
// being dropped is still found until its drop is done.
func TestLookupsDuringADrop(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	gone := createTestReplica(t, s)
	other := createTestReplica(t, s)
	finish := holdDrop(s, gone)
	found := make(chan [2]bool, 1)
	go func() {
		_, a := s.Replica(other.Info().Placement)
		_, b := s.Replica(gone.Info().Placement)
		// An insert into another data space goes on meanwhile.
		if _, err := other.Apply([]model.Row{row("s", 1, fl("f", 1, 1))}); err != nil {
			t.Errorf("an Apply of another space during the drop: %v", err)
		}
		found <- [2]bool{a, b}
	}()
	// An Apply of the replica being dropped waits for the drop and fails.
	late := make(chan error, 1)
	go func() {
		_, err := gone.Apply([]model.Row{row("s", 2, fl("f", 2, 2))})
		late <- err
	}()
	select {
	case f := <-found:
		if !f[0] || !f[1] {
			t.Errorf("during the drop: other found %v, dropped one found %v; want both", f[0], f[1])
		}
		if n := len(s.Replicas()); n != 2 {
			t.Errorf("during the drop: %d replicas listed, want 2", n)
		}
	case <-time.After(30 * time.Second):
		_ = finish()
		<-found // the lookups end with the drop: no t.Errorf after the test
		t.Fatal("a lookup waited for the drop")
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	if err := <-late; !errors.Is(err, ErrDropped) {
		t.Errorf("an Apply of the replica being dropped: %v, want ErrDropped", err)
	}
	if _, ok := s.Replica(gone.Info().Placement); ok {
		t.Error("the dropped replica is still found after its drop")
	}
	if _, ok := s.Replica(other.Info().Placement); !ok {
		t.Error("the other replica is not found after the drop")
	}
}
