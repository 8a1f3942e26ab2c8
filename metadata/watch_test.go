package metadata

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/cluster/embedetcd"
)

// waitFor is the deadline of every poll in these tests: generous, because
// a pass never waits for it (polls return as soon as the condition holds).
const waitFor = 20 * time.Second

// startWatchEtcd starts a real embedded etcd and returns a client; both
// are closed when the test ends.
func startWatchEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	e, err := embedetcd.Start(embedetcd.Config{Dir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func watchCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or waitFor passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitFor, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closed waits until ch is closed, failing after waitFor.
func closed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatalf("timed out after %v waiting for %s", waitFor, what)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// withBeforeWatch sets the test hook run before each watch stream opens.
func withBeforeWatch(f func()) WatchOption {
	return func(c *watchConfig) { c.beforeWatch = f }
}

// streamOpen reports whether the watcher has a watch stream open.
func (w *TableWatcher) streamOpen() bool { return w.loop.StreamOpen() }

// eventLog records the events a watcher delivers and whether onEvent was
// ever entered twice at once.
type eventLog struct {
	busy       atomic.Bool
	concurrent atomic.Bool
	mu         sync.Mutex
	events     []TableEvent
}

func (l *eventLog) on(ev TableEvent) {
	if l.busy.Swap(true) {
		l.concurrent.Store(true)
	}
	defer l.busy.Store(false)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) all() []TableEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// of returns the events of one table.
func (l *eventLog) of(name string) []TableEvent {
	var out []TableEvent
	for _, ev := range l.all() {
		if ev.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// last returns the last event of a table.
func (l *eventLog) last(name string) (TableEvent, bool) {
	evs := l.of(name)
	if len(evs) == 0 {
		return TableEvent{}, false
	}
	return evs[len(evs)-1], true
}

// seqs lists the txnseq of a table's events, 0 for a deletion.
func (l *eventLog) seqs(name string) []uint64 {
	var out []uint64
	for _, ev := range l.of(name) {
		out = append(out, ev.Config.MetadataTxnSeq)
	}
	return out
}

// lastSeq reports whether the last event of name is a config at txnseq.
func (l *eventLog) lastSeq(name string, seq uint64) bool {
	ev, ok := l.last(name)
	return ok && !ev.Deleted && ev.Config.MetadataTxnSeq == seq
}

// lastDeleted reports whether the last event of name is a deletion.
func (l *eventLog) lastDeleted(name string) bool {
	ev, ok := l.last(name)
	return ok && ev.Deleted
}

// watchEnv is one metadata server committing on a real etcd.
type watchEnv struct {
	cli *clientv3.Client
	c   *Committer
}

func newWatchEnv(t *testing.T) *watchEnv {
	cli := startWatchEtcd(t)
	files, err := OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &watchEnv{cli: cli, c: &Committer{Store: NewEtcdStore(cli, ""), Files: files, Self: "m1"}}
}

// create creates a table of one partition.
func (e *watchEnv) create(t *testing.T, name string) *File {
	t.Helper()
	cfg := NewTableConfig(name)
	cfg.ReplicationFactor, cfg.MetadataServers = 1, []string{"m1"}
	op := CreateOp{Table: name, PartitionID: uuid.New(), Servers: []Placement{{ServerID: "s1", PlacementID: uuid.New()}}}
	_, f, err := e.c.Create(watchCtx(t), cfg, op)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// toggle commits a SET_OFFLINE flipping f's first partition.
func (e *watchEnv) toggle(t *testing.T, f *File) *File {
	t.Helper()
	p := f.Partitions[0]
	op := Op{Type: OpSetOffline, SetOffline: &SetOfflineOp{PartitionID: p.ID, Offline: !p.Offline}}
	next, err := e.c.Change(watchCtx(t), f.Table, f.TxnID, NewTxnID(), op)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func (e *watchEnv) drop(t *testing.T, name string) {
	t.Helper()
	if _, err := e.cli.Delete(watchCtx(t), TableKey("", name)); err != nil {
		t.Fatal(err)
	}
}

// TestWatchTablesSeesEveryCommit: N sequential commits give N events with
// txnseq increasing by one, in revision order, then the deletion.
func TestWatchTablesSeesEveryCommit(t *testing.T) {
	e := newWatchEnv(t)
	var log eventLog
	w := WatchTables(watchCtx(t), e.cli, "", log.on, WithResync(0))
	defer w.Stop()
	eventually(t, "watch stream open", w.streamOpen)

	f := e.create(t, "cpu")
	const n = 20
	for range n {
		f = e.toggle(t, f)
	}
	eventually(t, "every commit", func() bool { return len(log.of("cpu")) >= n+1 })
	evs := log.of("cpu")
	if len(evs) != n+1 {
		t.Fatalf("%d events for %d commits", len(evs), n+1)
	}
	for i, ev := range evs {
		cfg := ev.Config
		if ev.Deleted || cfg.MetadataTxnSeq != uint64(i+1) || cfg.Name != "cpu" || !ValidTxnID(cfg.MetadataTxnID) {
			t.Fatalf("event %d: %+v", i, ev)
		}
		if i > 0 && ev.ModRevision <= evs[i-1].ModRevision {
			t.Fatalf("event %d: revision %d after %d", i, ev.ModRevision, evs[i-1].ModRevision)
		}
	}
	if evs[n].Config.MetadataTxnID != f.TxnID {
		t.Fatalf("last event names %s, the last commit %s", evs[n].Config.MetadataTxnID, f.TxnID)
	}

	e.drop(t, "cpu")
	eventually(t, "deletion", func() bool { return log.lastDeleted("cpu") })
	if del, _ := log.last("cpu"); del.Config.Name != "" || del.ModRevision <= evs[n].ModRevision {
		t.Fatalf("deletion event %+v", del)
	}
	if got := w.gets.Load(); got != 1 {
		t.Fatalf("%d full reads while the watch was healthy", got)
	}
	if log.concurrent.Load() {
		t.Fatal("onEvent called concurrently")
	}
}

// TestWatchTablesInitialRead: tables that exist before the watch starts
// are delivered once each, with their current state.
func TestWatchTablesInitialRead(t *testing.T) {
	e := newWatchEnv(t)
	f := e.toggle(t, e.create(t, "cpu"))
	e.create(t, "mem")
	var log eventLog
	w := WatchTables(watchCtx(t), e.cli, "/tsdb", log.on)
	defer w.Stop()
	eventually(t, "initial read", func() bool { return len(log.all()) == 2 })
	if evs := log.all(); evs[0].Name != "cpu" || evs[0].Config.MetadataTxnID != f.TxnID || evs[1].Name != "mem" {
		t.Fatalf("events %+v", evs)
	}
	// Another prefix sees nothing of these.
	var other eventLog
	w2 := WatchTables(watchCtx(t), e.cli, "/other/", other.on)
	defer w2.Stop()
	eventually(t, "other watch reading", func() bool { return w2.gets.Load() > 0 })
	if evs := other.all(); len(evs) != 0 {
		t.Fatalf("another prefix saw %+v", evs)
	}
}

// TestWatchTablesResumesAfterCompaction: while the watcher is cut off, the
// tables change and etcd compacts the history it would resume from; the
// watcher re-reads and delivers the latest state of each table (and the
// deletion of one gone meanwhile), once, then keeps following.
func TestWatchTablesResumesAfterCompaction(t *testing.T) {
	e := newWatchEnv(t)
	cpu := e.create(t, "cpu")
	e.create(t, "mem")

	var hold atomic.Bool
	gate, blocked := make(chan struct{}), make(chan struct{})
	var blockOnce sync.Once
	hook := func() {
		if hold.Load() {
			blockOnce.Do(func() { close(blocked) })
			<-gate
		}
	}
	var log eventLog
	w := WatchTables(watchCtx(t), e.cli, "", log.on, withBeforeWatch(hook), WithResync(0))
	defer w.Stop()
	eventually(t, "initial read", func() bool { return len(log.all()) == 2 })
	eventually(t, "watch stream open", w.streamOpen)

	// Break the stream; the watcher re-reads and is held before it
	// watches again, as in a long network failure. Meanwhile the tables
	// change and etcd compacts past the revision it read.
	hold.Store(true)
	eventually(t, "stream broken", func() bool { return isClosed(blocked) || w.breakStream() })
	closed(t, "watcher held before re-watching", blocked)
	for range 3 {
		cpu = e.toggle(t, cpu)
	}
	e.drop(t, "mem")
	e.create(t, "disk")
	resp, err := e.cli.Get(watchCtx(t), "compact-marker")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cli.Compact(watchCtx(t), resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	hold.Store(false)
	close(gate)

	eventually(t, "latest state after compaction", func() bool {
		return log.lastSeq("cpu", 4) && log.lastDeleted("mem") && log.lastSeq("disk", 1)
	})
	if w.compacted.Load() == 0 {
		t.Fatal("the resumed watch did not hit ErrCompacted")
	}
	// The history in between is gone; what was already delivered is not
	// delivered again.
	if got := log.seqs("cpu"); !slices.Equal(got, []uint64{1, 4}) {
		t.Fatalf("cpu events at txnseq %v, want [1 4]", got)
	}
	if got := log.seqs("mem"); len(got) != 2 {
		t.Fatalf("mem events %v, want the creation and the deletion", got)
	}
	// And it keeps following.
	cpu = e.toggle(t, cpu)
	eventually(t, "a commit after recovery", func() bool { return log.lastSeq("cpu", 5) })
	if log.concurrent.Load() {
		t.Fatal("onEvent called concurrently")
	}
}

// TestWatchTablesResumesBrokenStream: a stream that ends is re-read and
// resumed; changes made meanwhile arrive once.
func TestWatchTablesResumesBrokenStream(t *testing.T) {
	e := newWatchEnv(t)
	cpu := e.create(t, "cpu")
	var log eventLog
	w := WatchTables(watchCtx(t), e.cli, "", log.on, WithResync(0))
	defer w.Stop()
	eventually(t, "initial read", func() bool { return log.lastSeq("cpu", 1) })
	for i := range 5 {
		eventually(t, "stream broken", w.breakStream)
		cpu = e.toggle(t, cpu)
		eventually(t, "commit after the break", func() bool { return log.lastSeq("cpu", uint64(i+2)) })
	}
	if got := log.seqs("cpu"); !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("cpu events at txnseq %v", got)
	}
}

// deafWatcher is an etcd client whose watches never deliver anything, as
// if every notification were lost.
type deafWatcher struct{ *clientv3.Client }

func (deafWatcher) Watch(ctx context.Context, _ string, _ ...clientv3.OpOption) clientv3.WatchChan {
	ch := make(chan clientv3.WatchResponse)
	go func() {
		<-ctx.Done()
		close(ch)
	}()
	return ch
}

// TestWatchTablesResyncCatchesMissedEvents (DESIGN.md rule 10): with every
// notification lost, the periodic re-read still delivers each change, and
// re-reading an unchanged table delivers nothing.
func TestWatchTablesResyncCatchesMissedEvents(t *testing.T) {
	e := newWatchEnv(t)
	cpu := e.create(t, "cpu")
	e.create(t, "mem")
	var log eventLog
	w := watchTables(watchCtx(t), deafWatcher{e.cli}, "", log.on, WithResync(20*time.Millisecond))
	defer w.Stop()
	eventually(t, "initial read", func() bool { return len(log.all()) == 2 })
	eventually(t, "three resyncs", func() bool { return w.gets.Load() >= 4 })
	if n := len(log.all()); n != 2 {
		t.Fatalf("%d events for two unchanged tables", n)
	}
	cpu = e.toggle(t, cpu)
	e.drop(t, "mem")
	eventually(t, "missed changes", func() bool { return log.lastSeq("cpu", 2) && log.lastDeleted("mem") })
	if evs := log.all(); len(evs) != 4 {
		t.Fatalf("events %+v", evs)
	}
}

// TestWatchTablesSkipsMalformed: values that are not a TableConfig of the
// table their key names are logged and skipped; the rest is delivered.
func TestWatchTablesSkipsMalformed(t *testing.T) {
	e := newWatchEnv(t)
	ctx := watchCtx(t)
	put := func(key, value string) {
		t.Helper()
		if _, err := e.cli.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	put("/tsdb/tables/bad", "not json")
	put("/tsdb/tables/liar", `{"name":"other"}`)
	put("/tsdb/tables/Bad-Name", `{"name":"Bad-Name"}`)
	e.create(t, "cpu")
	var logs lockedBuffer
	var log eventLog
	w := WatchTables(ctx, e.cli, "", log.on, WithResync(0), WithWatchLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	defer w.Stop()
	eventually(t, "cpu delivered", func() bool { return log.lastSeq("cpu", 1) })
	eventually(t, "watch stream open", w.streamOpen)
	put("/tsdb/tables/bad", `{"name":"bad"`)
	e.create(t, "mem")
	eventually(t, "mem delivered", func() bool { return log.lastSeq("mem", 1) })
	e.drop(t, "bad") // never delivered, so no deletion either
	e.drop(t, "mem")
	eventually(t, "mem deleted", func() bool { return log.lastDeleted("mem") })
	for _, ev := range log.all() {
		if ev.Name != "cpu" && ev.Name != "mem" {
			t.Fatalf("delivered %+v", ev)
		}
	}
	got := logs.String()
	for _, key := range []string{"/tsdb/tables/bad", "/tsdb/tables/liar", "/tsdb/tables/Bad-Name"} {
		if !strings.Contains(got, "key="+key) {
			t.Fatalf("%s not logged:\n%s", key, got)
		}
	}
	if n := strings.Count(got, "key=/tsdb/tables/bad "); n != 2 {
		t.Fatalf("the bad value was logged %d times, want once per value:\n%s", n, got)
	}
}

// TestWatchTablesStop: Stop returns promptly, and nothing is delivered
// after it returned.
func TestWatchTablesStop(t *testing.T) {
	e := newWatchEnv(t)
	cpu := e.create(t, "cpu")
	var log eventLog
	w := WatchTables(watchCtx(t), e.cli, "", log.on)
	eventually(t, "watch stream open", w.streamOpen)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		w.Stop()
		close(done)
	}()
	closed(t, "Stop", done)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Stop took %v", d)
	}
	n := len(log.all())
	e.toggle(t, cpu)
	time.Sleep(50 * time.Millisecond)
	if after := len(log.all()); after != n {
		t.Fatalf("%d events after Stop", after-n)
	}
	w.Stop() // idempotent
	// A cancelled ctx stops it too.
	ctx, cancel := context.WithCancel(watchCtx(t))
	w = WatchTables(ctx, e.cli, "", log.on)
	eventually(t, "second watch stream open", w.streamOpen)
	cancel()
	waitDone := make(chan struct{})
	go func() {
		w.Wait()
		close(waitDone)
	}()
	closed(t, "Wait after cancel", waitDone)
}

// lockedBuffer is a bytes.Buffer safe for a logger goroutine and the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
