package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// fakeLog is a Log backed by memory: a list of entries with a synced
// watermark and a cursor map, with injectable failures.
type fakeLog struct {
	mu       sync.Mutex
	entries  []partition.LogEntry
	synced   uint64
	cursors  map[uuid.UUID]uint64
	readErr  error
	setErr   error
	setCalls int
}

func newFakeLog() *fakeLog { return &fakeLog{cursors: make(map[uuid.UUID]uint64)} }

// add appends rows at the next sequences and marks them synced; it returns
// the last sequence.
func (l *fakeLog) add(rows ...model.Row) uint64 { return l.addFrom(uuid.Nil, rows...) }

// addFrom is add for rows pushed here from the placement origin.
func (l *fakeLog) addFrom(origin uuid.UUID, rows ...model.Row) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rows {
		l.synced++
		l.entries = append(l.entries, partition.LogEntry{Seq: l.synced, Row: r, Origin: origin})
	}
	return l.synced
}

func (l *fakeLog) ReadLog(after uint64, maxRows int) ([]partition.LogEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readErr != nil {
		return nil, l.readErr
	}
	var out []partition.LogEntry
	for _, e := range l.entries {
		if e.Seq > after && e.Seq <= l.synced && (maxRows <= 0 || len(out) < maxRows) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (l *fakeLog) SyncedSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.synced
}

// HighSeq is SyncedSeq: every entry of a fakeLog is synced.
func (l *fakeLog) HighSeq() uint64 { return l.SyncedSeq() }

// SnapshotLog copies the entries (a fakeLog never overwrites one).
func (l *fakeLog) SnapshotLog() (LogSnapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readErr != nil {
		return nil, l.readErr
	}
	s := &fakeLog{entries: slices.Clone(l.entries), synced: l.synced, cursors: map[uuid.UUID]uint64{}}
	return fakeSnapshot{s}, nil
}

// fakeSnapshot is a frozen copy of a fakeLog.
type fakeSnapshot struct{ *fakeLog }

func (s fakeSnapshot) Seq() uint64 { return s.SyncedSeq() }
func (s fakeSnapshot) Close()      {}

func (l *fakeLog) Confirmed(target uuid.UUID) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cursors[target]
}

func (l *fakeLog) SetConfirmed(target uuid.UUID, seq uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setCalls++
	if l.setErr != nil {
		return l.setErr
	}
	l.cursors[target] = seq
	return nil
}

func (l *fakeLog) setFailures(read, set error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.readErr, l.setErr = read, set
}

// replicaLog is a real partition.Replica (ReadLog, SyncedSeq, Apply) with
// an in-memory cursor map.
type replicaLog struct {
	*partition.Replica
	store   *partition.Store
	mu      sync.Mutex
	cursors map[uuid.UUID]uint64
	// chunkReads, when set, counts the chunk reads of the snapshots
	// SnapshotLog gives, by whether they read more than one row's bytes.
	chunkReads *chunkReads
}

// chunkReads counts a snapshot's chunk reads: looks (one row's bytes,
// maxBytes 1) and whole reads.
type chunkReads struct{ looks, whole atomic.Int64 }

func (l *replicaLog) SnapshotLog() (LogSnapshot, error) {
	s, err := ReplicaLog(l.Replica).SnapshotLog()
	if err != nil || l.chunkReads == nil {
		return s, err
	}
	cs, ok := s.(ChunkSnapshot)
	if !ok {
		s.Close()
		return nil, fmt.Errorf("the replica's snapshot %T reads no chunks", s)
	}
	return &countingSnapshot{ChunkSnapshot: cs, reads: l.chunkReads}, nil
}

// countingSnapshot is a ChunkSnapshot whose chunk reads are counted.
type countingSnapshot struct {
	ChunkSnapshot
	reads *chunkReads
}

func (s *countingSnapshot) ReadChunk(dst []byte, after *partition.RowPos, rr partition.RowRange, maxBytes int) (partition.Chunk, error) {
	if maxBytes <= 1 {
		s.reads.looks.Add(1)
	} else {
		s.reads.whole.Add(1)
	}
	return s.ChunkSnapshot.ReadChunk(dst, after, rr, maxBytes)
}

func (l *replicaLog) Confirmed(target uuid.UUID) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cursors[target]
}

func (l *replicaLog) SetConfirmed(target uuid.UUID, seq uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cursors[target] = seq
	return nil
}

// newReplica opens a pebble store and creates one replica of partition pid
// in it.
func newReplica(t testing.TB, pid uuid.UUID) *replicaLog {
	t.Helper()
	return addReplica(t, openStore(t), pid)
}

// openStore opens a pebble store in a temp dir, closed when the test ends.
func openStore(t testing.TB) *partition.Store {
	t.Helper()
	return openStoreWith(t, partition.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
}

// memHeadTests gives the tests' stores a memory head
// (partition.Options.MemoryHead), as tsdb server's have by default; with
// TSDB_TEST_MEMHEAD=0 the package runs without one (make test runs it both
// ways).
var memHeadTests = os.Getenv("TSDB_TEST_MEMHEAD") != "0"

// openStoreWith opens a store with opts in a temp dir, with a memory head
// as tsdb server's have by default (TSDB_TEST_MEMHEAD=0: without; make
// test runs the package both ways).
func openStoreWith(t testing.TB, opts partition.Options) *partition.Store {
	t.Helper()
	opts.Dir = t.TempDir()
	opts.MemoryHead = memHeadTests
	s, err := partition.Open(opts)
	if err != nil {
		t.Fatalf("partition.Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// drainMemory writes the rows of l's store's memory heads to pebble's
// head, as a seal or the memory budget does in a server: a log is
// truncated only below the rows still in memory (their records are their
// durable form), so a test that truncates a log, or waits for a pusher to,
// drains first.
func drainMemory(t testing.TB, l *replicaLog) {
	t.Helper()
	if err := l.store.DrainMemoryHeads(); err != nil {
		t.Fatalf("drain the memory heads: %v", err)
	}
}

// addReplica creates another replica of pid in an open store.
func addReplica(t testing.TB, s *partition.Store, pid uuid.UUID) *replicaLog {
	t.Helper()
	r, err := s.CreateReplica(partition.ReplicaInfo{Placement: uuid.New(), Table: "metrics", PartitionID: pid})
	if err != nil {
		t.Fatalf("CreateReplica: %v", err)
	}
	return &replicaLog{Replica: r, store: s, cursors: make(map[uuid.UUID]uint64)}
}

func (l *replicaLog) placement() uuid.UUID { return l.Info().Placement }

func scanAll(t testing.TB, r *replicaLog) []model.Row {
	t.Helper()
	rows, _, err := r.Scan(model.Query{From: math.MinInt64, To: math.MaxInt64})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return rows
}

func mustApply(t testing.TB, r *replicaLog, rows ...model.Row) partition.ApplyResult {
	t.Helper()
	res, err := r.Apply(rows)
	if err != nil {
		t.Errorf("Apply: %v", err)
	}
	return res
}

// row builds a one-field row written by server.
func row(server, series string, ts, wall int64, field string, val float64) model.Row {
	return model.Row{Time: ts, Series: series, Fields: []model.Field{{
		Name: field, Value: model.Float(val), Version: model.Version{Wall: wall, Node: model.NodeID(server)},
	}}}
}

// replicaTarget names a target of kind replica of partition pid.
func replicaTarget(server string, placement, pid uuid.UUID) metadata.Target {
	return metadata.Target{ServerID: server, PlacementID: placement, PartitionID: pid, Kind: metadata.TargetReplica}
}

func view(targets ...metadata.Target) metadata.Discovery {
	return metadata.Discovery{Status: metadata.StatusServe, Targets: targets}
}

// recorder is a Sender that records every push (decoded) and answers with
// the error fail returns (nil: success), and, like the node, with the
// replicas sharing the rows of a real replica it applies to.
type recorder struct {
	mu     sync.Mutex
	pushes []recordedPush
	fail   func(metadata.Target, wire.PushRequest) error
	// apply, if set, receives the pushed rows (a real replica).
	apply map[uuid.UUID]Applier
	// onPush, if set, is called after each recorded push.
	onPush func(recordedPush)
}

type recordedPush struct {
	target metadata.Target
	req    wire.PushRequest
	rows   []model.Row
	bytes  int // len(req.Rows) as sent
	err    error
}

func (s *recorder) Push(ctx context.Context, target metadata.Target, req wire.PushRequest) (wire.PushResponse, error) {
	var rows []model.Row
	var err error
	var chunk []byte
	sent := len(req.Rows)
	switch {
	case partition.IsChunk(req.Rows):
		chunk = bytes.Clone(req.Rows)
		if rows, err = partition.DecodeChunk(req.Rows); err != nil {
			return wire.PushResponse{}, fmt.Errorf("recorder: %w", err)
		}
	case len(req.Rows) > 0:
		if rows, err = DecodeRows(req.Rows); err != nil {
			return wire.PushResponse{}, fmt.Errorf("recorder: %w", err)
		}
	}
	req.Rows = nil // the pusher reuses the buffer
	s.mu.Lock()
	fail, apply, onPush := s.fail, s.apply[req.ToPlacement], s.onPush
	s.mu.Unlock()
	if fail != nil {
		err = fail(target, req)
	}
	if err == nil && apply != nil {
		body := chunk // a snapshot chunk is received as one
		if body == nil {
			body = AppendRows(nil, rows)
		}
		_, err = Receive(apply, wire.PushRequest{Rows: body, Count: req.Count})
	}
	rp := recordedPush{target: target, req: req, rows: rows, bytes: sent, err: err}
	s.mu.Lock()
	s.pushes = append(s.pushes, rp)
	s.mu.Unlock()
	if onPush != nil {
		onPush(rp)
	}
	var resp wire.PushResponse
	if sh, ok := apply.(interface{ CoveringSharers() []uuid.UUID }); ok && err == nil {
		resp.Shares = sh.CoveringSharers() // as the node's Replicate answers
	}
	return resp, err
}

func (s *recorder) setFail(f func(metadata.Target, wire.PushRequest) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = f
}

func (s *recorder) all() []recordedPush {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recordedPush(nil), s.pushes...)
}

var errDown = errors.New("test: target down")

// runPusher runs p until the test ends (or stop is called) and checks that
// Run left no target goroutine behind.
func runPusher(t testing.TB, p *Pusher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
		if n := p.loops.Load(); n != 0 {
			t.Errorf("%d target goroutines still running after Run returned", n)
		}
	})
	t.Cleanup(stop)
	return stop
}
