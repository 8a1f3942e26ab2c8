package metadata_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
)

// fakePeers stores and fetches files in per-server FileStores, like the
// HTTP transport does, and can be told to fail, hang or lie.
type fakePeers struct {
	files   map[string]*metadata.FileStore
	dirs    map[string]string // server → its FileStore's directory
	calls   atomic.Int64      // StoreFile calls
	fetches atomic.Int64      // FetchFile calls
	mu      struct {
		sync.Mutex
		down    map[string]error // server → error it answers
		hang    map[string]bool  // server → blocks until ctx ends
		corrupt map[string]bool  // server → FetchFile answers damaged bytes
	}
}

var errPeerDown = errors.New("peer down")

func newFakePeers(t testing.TB, servers ...string) *fakePeers {
	p := &fakePeers{files: map[string]*metadata.FileStore{}, dirs: map[string]string{}}
	p.mu.down, p.mu.hang, p.mu.corrupt = map[string]error{}, map[string]bool{}, map[string]bool{}
	for _, s := range servers {
		dir := t.TempDir()
		fs, err := metadata.OpenFileStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		p.files[s], p.dirs[s] = fs, dir
	}
	return p
}

// setCorrupt makes FetchFile from server answer damaged bytes.
func (p *fakePeers) setCorrupt(server string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.corrupt[server] = on
}

// state returns how server behaves right now.
func (p *fakePeers) state(server string) (down error, hang, corrupt bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.down[server], p.mu.hang[server], p.mu.corrupt[server]
}

func (p *fakePeers) setDown(err error, servers ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range servers {
		if err == nil {
			delete(p.mu.down, s)
		} else {
			p.mu.down[s] = err
		}
	}
}

func (p *fakePeers) setHang(server string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.hang[server] = true
}

func (p *fakePeers) StoreFile(ctx context.Context, serverID, table, txnID string, encoded []byte) error {
	p.calls.Add(1)
	down, hang, _ := p.state(serverID)
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if down != nil {
		return down
	}
	fs, ok := p.files[serverID]
	if !ok {
		return fmt.Errorf("unknown server %q", serverID)
	}
	if _, err := metadata.CheckEncoded(table, txnID, encoded); err != nil {
		return err
	}
	return fs.Put(table, txnID, encoded)
}

// FetchFile answers from serverID's FileStore only, as the internal fetch
// endpoint does (Committer.LocalFile).
func (p *fakePeers) FetchFile(ctx context.Context, serverID, table, txnID string) ([]byte, error) {
	p.fetches.Add(1)
	down, hang, corrupt := p.state(serverID)
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if down != nil {
		return nil, down
	}
	fs, ok := p.files[serverID]
	if !ok {
		return nil, fmt.Errorf("unknown server %q", serverID)
	}
	b, err := fs.Get(table, txnID)
	if err != nil || !corrupt {
		return b, err
	}
	b = bytes.Clone(b)
	b[len(b)/2] ^= 0xff
	return b, nil
}

// env is one metadata server "m1" on a real etcd.
type env struct {
	store metadata.Store
	files *metadata.FileStore
	c     *metadata.Committer
	dir   string
}

func newEnv(t *testing.T, peers metadata.Peers) *env {
	t.Helper()
	cli := startEtcd(t)
	dir := t.TempDir()
	files, err := metadata.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := metadata.NewEtcdStore(cli, "")
	return &env{store: store, files: files, dir: dir, c: &metadata.Committer{
		Store: store, Files: files, Peers: peers, Self: "m1", StragglerWait: -1, ResolveTimeout: 5 * time.Second,
	}}
}

// createArgs returns a config with RF servers and a matching CREATE.
func createArgs(name string, rf int, metadataServers ...string) (metadata.TableConfig, metadata.CreateOp) {
	cfg := metadata.NewTableConfig(name)
	cfg.ReplicationFactor = rf
	cfg.MetadataServers = metadataServers
	op := metadata.CreateOp{Table: name, PartitionID: uuid.New()}
	for i := range rf {
		op.Servers = append(op.Servers, metadata.Placement{ServerID: fmt.Sprintf("s%d", i+1), PlacementID: uuid.New()})
	}
	return cfg, op
}

func (e *env) create(t *testing.T, name string, metadataServers ...string) (metadata.TableConfig, *metadata.File) {
	t.Helper()
	cfg, op := createArgs(name, 1, metadataServers...)
	got, f, err := e.c.Create(testCtx(t), cfg, op)
	if err != nil {
		t.Fatal(err)
	}
	return got, f
}

func offline(f *metadata.File, on bool) metadata.Op {
	return metadata.Op{Type: metadata.OpSetOffline, SetOffline: &metadata.SetOfflineOp{PartitionID: f.Partitions[0].ID, Offline: on}}
}

func TestCommitterCreate(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cfg, op := createArgs("cpu", 3, "m1")
	got, f, err := e.c.Create(ctx, cfg, op)
	if err != nil {
		t.Fatal(err)
	}
	if !metadata.ValidTxnID(got.MetadataTxnID) || got.MetadataTxnSeq != 1 || got.CreatedAt.IsZero() ||
		f.TxnID != got.MetadataTxnID || f.TxnSeq != 1 || f.ParentTxnID != "" || f.Table != "cpu" {
		t.Fatalf("config %+v file %+v", got, f)
	}
	stored, _, err := e.store.GetTable(ctx, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if stored.MetadataTxnID != got.MetadataTxnID || stored.MetadataTxnSeq != 1 || !reflect.DeepEqual(stored.MetadataServers, []string{"m1"}) {
		t.Fatalf("TableConfig in etcd: %+v", stored)
	}
	enc, err := e.files.Get("cpu", got.MetadataTxnID)
	if err != nil {
		t.Fatal(err)
	}
	if metadata.Checksum(enc) != stored.MetadataChecksum {
		t.Fatal("metadata_checksum does not match the stored file")
	}
	if !reflect.DeepEqual(f.Partitions[0].Servers, op.Servers) || f.Partitions[0].ID != op.PartitionID {
		t.Fatalf("partition %+v", f.Partitions[0])
	}
	lcfg, lf, err := e.c.Load(ctx, "cpu")
	if err != nil || lcfg.MetadataTxnID != got.MetadataTxnID || !reflect.DeepEqual(lf, f) {
		t.Fatalf("Load: %+v %v", lf, err)
	}
}

func TestCommitterCreateRefusesBadInput(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cfg, op := createArgs("cpu", 3, "m2", "m3")
	if _, _, err := e.c.Create(ctx, cfg, op); !errors.Is(err, metadata.ErrNotMetadataServer) {
		t.Fatalf("not a metadata server: %v", err)
	}
	cfg, op = createArgs("cpu", 3)
	if _, _, err := e.c.Create(ctx, cfg, op); !errors.Is(err, metadata.ErrInvalidConfig) {
		t.Fatalf("no metadata servers: %v", err)
	}
	cfg, op = createArgs("cpu", 3, "m1")
	op.Servers = op.Servers[:2]
	if _, _, err := e.c.Create(ctx, cfg, op); !errors.Is(err, metadata.ErrInvalidOp) {
		t.Fatalf("2 servers for RF 3: %v", err)
	}
	cfg, op = createArgs("cpu", 1, "m1")
	op.Table = "mem"
	if _, _, err := e.c.Create(ctx, cfg, op); !errors.Is(err, metadata.ErrInvalidOp) {
		t.Fatalf("table names differ: %v", err)
	}
	cfg, op = createArgs("cpu", 1, "m1")
	cfg.PartitionSizeTarget = 1
	if _, _, err := e.c.Create(ctx, cfg, op); !errors.Is(err, metadata.ErrInvalidConfig) {
		t.Fatalf("invalid config: %v", err)
	}
	if names, _ := e.files.List("cpu"); len(names) != 0 {
		t.Fatalf("refused creates stored files: %v", names)
	}
}

func TestCommitterCreateExisting(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	first, _ := e.create(t, "cpu", "m1")
	cfg, op := createArgs("cpu", 1, "m1")
	if _, _, err := e.c.Create(ctx, cfg, op); !errors.Is(err, metadata.ErrTableExists) {
		t.Fatalf("second create: %v", err)
	}
	got, _, err := e.store.GetTable(ctx, "cpu")
	if err != nil || got.MetadataTxnID != first.MetadataTxnID {
		t.Fatalf("the second create changed TableConfig: %+v %v", got, err)
	}
	names, _ := e.files.List("cpu")
	if len(names) != 2 {
		t.Fatalf("want the committed file and the orphan, got %v", names)
	}
	// The sweep removes the orphan once it is older than the grace period.
	current := func(string) (string, bool) { return first.MetadataTxnID, true }
	if n, err := e.files.Sweep(time.Now(), time.Hour, 3, current); err != nil || n != 0 {
		t.Fatalf("sweep within grace: %d, %v", n, err)
	}
	if n, err := e.files.Sweep(time.Now().Add(2*time.Hour), time.Hour, 3, current); err != nil || n != 1 {
		t.Fatalf("sweep after grace: %d, %v", n, err)
	}
	if names, _ := e.files.List("cpu"); !reflect.DeepEqual(names, []string{first.MetadataTxnID}) {
		t.Fatalf("after sweep: %v", names)
	}
}

func TestCommitterChange(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cfg, f := e.create(t, "cpu", "m1")
	txn := metadata.NewTxnID()
	next, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, txn, offline(f, true))
	if err != nil {
		t.Fatal(err)
	}
	if next.TxnID != txn || next.TxnSeq != 2 || next.ParentTxnID != cfg.MetadataTxnID || !next.Partitions[0].Offline {
		t.Fatalf("file %+v", next)
	}
	got, lf, err := e.c.Load(ctx, "cpu")
	if err != nil || got.MetadataTxnID != txn || got.MetadataTxnSeq != 2 || !reflect.DeepEqual(lf, next) {
		t.Fatalf("Load: %+v %v", got, err)
	}
	enc, _ := e.files.Get("cpu", txn)
	if metadata.Checksum(enc) != got.MetadataChecksum {
		t.Fatal("checksum mismatch")
	}
	if got.CreatedAt.IsZero() || got.ReplicationFactor != cfg.ReplicationFactor || !reflect.DeepEqual(got.MetadataServers, cfg.MetadataServers) {
		t.Fatalf("the change lost config fields: %+v", got)
	}
}

func TestCommitterChangeStaleBase(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cfg, f := e.create(t, "cpu", "m1")
	second := metadata.NewTxnID()
	if _, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, second, offline(f, true)); err != nil {
		t.Fatal(err)
	}
	_, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, metadata.NewTxnID(), offline(f, true))
	if !errors.Is(err, metadata.ErrConflict) {
		t.Fatalf("stale base: %v", err)
	}
	if got, _, _ := e.store.GetTable(ctx, "cpu"); got.MetadataTxnID != second || got.MetadataTxnSeq != 2 {
		t.Fatalf("TableConfig moved: %+v", got)
	}
	if _, err := e.c.Change(ctx, "nope", cfg.MetadataTxnID, metadata.NewTxnID(), offline(f, true)); !errors.Is(err, metadata.ErrTableNotFound) {
		t.Fatalf("missing table: %v", err)
	}
	if _, err := e.c.Change(ctx, "cpu", second, "bad", offline(f, false)); !errors.Is(err, metadata.ErrInvalidOp) {
		t.Fatalf("bad txnid: %v", err)
	}
	// An op that fails its preconditions is refused before anything is stored.
	before, _ := e.files.List("cpu")
	if _, err := e.c.Change(ctx, "cpu", second, metadata.NewTxnID(), offline(f, true)); !errors.Is(err, metadata.ErrInvalidOp) {
		t.Fatalf("no-op SET_OFFLINE: %v", err)
	}
	if after, _ := e.files.List("cpu"); len(after) != len(before) {
		t.Fatal("a refused op stored a file")
	}
}

// TestCommitterConcurrentChanges: two changes on the same base race; the
// CAS lets exactly one win.
func TestCommitterConcurrentChanges(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cfg, f := e.create(t, "cpu", "m1")
	const n = 4
	errs := make([]error, n)
	txns := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		txns[i] = metadata.NewTxnID()
		wg.Go(func() { _, errs[i] = e.c.Change(ctx, "cpu", cfg.MetadataTxnID, txns[i], offline(f, true)) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("two winners: %d and %d", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, metadata.ErrConflict):
			t.Fatalf("loser %d: %v", i, err)
		}
	}
	got, _, _ := e.store.GetTable(ctx, "cpu")
	if won < 0 || got.MetadataTxnID != txns[won] {
		t.Fatalf("winner %d, TableConfig names %s", won, got.MetadataTxnID)
	}
}

func TestCommitterRetryOfCommittedChange(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cfg, f := e.create(t, "cpu", "m1")
	txn := metadata.NewTxnID()
	op := offline(f, true)
	want, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, txn, op)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, txn, op)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("retry: %v", err)
	}
	// If this server lost the file (another coordinator committed it), the
	// retry rebuilds it from the base and checks it against the checksum.
	if err := os.Remove(filepath.Join(e.dir, "cpu", txn)); err != nil {
		t.Fatal(err)
	}
	got, err = e.c.Change(ctx, "cpu", cfg.MetadataTxnID, txn, op)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("retry after losing the file: %v", err)
	}
	if _, _, err := e.c.Load(ctx, "cpu"); err != nil {
		t.Fatalf("the rebuilt file was not stored: %v", err)
	}
	if err := os.Remove(filepath.Join(e.dir, "cpu", txn)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, txn, offline(f, false)); err == nil {
		t.Fatal("a retry with a different op was accepted")
	}
}

func TestCommitterAloneIgnoresFailingPeers(t *testing.T) {
	peers := newFakePeers(t)
	peers.setDown(errPeerDown, "m2", "m3")
	e := newEnv(t, peers)
	e.c.StragglerWait = 0
	ctx := testCtx(t)
	cfg, f := e.create(t, "cpu", "m1")
	if _, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, metadata.NewTxnID(), offline(f, true)); err != nil {
		t.Fatal(err)
	}
	if peers.calls.Load() != 0 {
		t.Fatalf("peers called %d times with MetadataServers=[self]", peers.calls.Load())
	}
	// With no transport at all it works the same.
	e.c.Peers = nil
	e.create(t, "mem", "m1")
}

func TestCommitterNoQuorum(t *testing.T) {
	peers := newFakePeers(t, "m2", "m3")
	e := newEnv(t, peers)
	ctx := testCtx(t)
	peers.setDown(errPeerDown, "m2", "m3")
	cfg, op := createArgs("cpu", 1, "m1", "m2", "m3")
	if _, _, err := e.c.Create(ctx, cfg, op); !errors.Is(err, metadata.ErrNoQuorum) || !errors.Is(err, errPeerDown) {
		t.Fatalf("create without quorum: %v", err)
	}
	if _, _, err := e.store.GetTable(ctx, "cpu"); !errors.Is(err, metadata.ErrTableNotFound) {
		t.Fatalf("TableConfig was created: %v", err)
	}

	peers.setDown(nil, "m2", "m3")
	created, f := e.create(t, "cpu", "m1", "m2", "m3")
	for _, s := range []string{"m2", "m3"} {
		if _, err := peers.files[s].Get("cpu", created.MetadataTxnID); err != nil {
			t.Fatalf("%s lacks the file: %v", s, err)
		}
	}
	peers.setDown(errPeerDown, "m2", "m3")
	_, err := e.c.Change(ctx, "cpu", created.MetadataTxnID, metadata.NewTxnID(), offline(f, true))
	if !errors.Is(err, metadata.ErrNoQuorum) {
		t.Fatalf("change without quorum: %v", err)
	}
	if got, _, _ := e.store.GetTable(ctx, "cpu"); !reflect.DeepEqual(got, created) {
		t.Fatalf("TableConfig changed:\n got %+v\nwant %+v", got, created)
	}
	// One peer is enough for a majority of three.
	peers.setDown(nil, "m3")
	if _, err := e.c.Change(ctx, "cpu", created.MetadataTxnID, metadata.NewTxnID(), offline(f, true)); err != nil {
		t.Fatalf("change with 2 of 3: %v", err)
	}
}

// TestCommitterStragglerCancelled: a peer that never answers does not hold
// up a commit that has its majority, and its store is cancelled.
func TestCommitterStragglerCancelled(t *testing.T) {
	peers := newFakePeers(t, "m2", "m3")
	peers.setHang("m3")
	e := newEnv(t, peers)
	e.c.StragglerWait = 20 * time.Millisecond
	cfg, _ := e.create(t, "cpu", "m1", "m2", "m3")
	if _, err := peers.files["m3"].Get("cpu", cfg.MetadataTxnID); !errors.Is(err, metadata.ErrFileNotFound) {
		t.Fatalf("hanging peer: %v", err)
	}
	// Two hanging peers of three: the commit ends when ctx does.
	peers.setHang("m2")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c2, op := createArgs("mem", 1, "m1", "m2", "m3")
	if _, _, err := e.c.Create(ctx, c2, op); !errors.Is(err, metadata.ErrNoQuorum) {
		t.Fatalf("got %v", err)
	}
}

// lossyStore wraps a Store: its next CAS is performed (or not) and then
// reported as failed, as when etcd applies a request whose reply is lost.
type lossyStore struct {
	metadata.Store
	mu struct {
		sync.Mutex
		loseReply int    // CASes to perform and then fail
		dropReq   int    // CASes to fail without performing
		after     func() // runs after the lost CAS, before its error returns
	}
}

var errLost = errors.New("reply lost")

// set arms the next CASes: loseReply are performed and then fail, dropReq
// fail without being performed (first); after runs once after a lost reply.
func (s *lossyStore) set(loseReply, dropReq int, after func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.loseReply, s.mu.dropReq, s.mu.after = loseReply, dropReq, after
}

func (s *lossyStore) next() (perform, fail bool, after func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.mu.dropReq > 0:
		s.mu.dropReq--
		return false, true, nil
	case s.mu.loseReply > 0:
		s.mu.loseReply--
		after, s.mu.after = s.mu.after, nil
		return true, true, after
	}
	return true, false, nil
}

func (s *lossyStore) CreateTable(ctx context.Context, cfg metadata.TableConfig) error {
	perform, fail, _ := s.next()
	if perform {
		if err := s.Store.CreateTable(ctx, cfg); err != nil || !fail {
			return err
		}
	}
	return fmt.Errorf("etcd create: %w", errLost)
}

func (s *lossyStore) UpdateTable(ctx context.Context, cfg metadata.TableConfig, rev int64) error {
	perform, fail, after := s.next()
	if perform {
		if err := s.Store.UpdateTable(ctx, cfg, rev); err != nil || !fail {
			return err
		}
	}
	if after != nil {
		after()
	}
	return fmt.Errorf("etcd update: %w", context.DeadlineExceeded)
}

func lossyEnv(t *testing.T) (*env, *lossyStore) {
	e := newEnv(t, nil)
	ls := &lossyStore{Store: e.store}
	e.c.Store = ls
	return e, ls
}

func TestCommitterLostCASReply(t *testing.T) {
	e, ls := lossyEnv(t)
	ctx := testCtx(t)
	ls.set(1, 0, nil)
	cfg, f := e.create(t, "cpu", "m1") // the create's reply is lost
	got, _, err := e.store.GetTable(ctx, "cpu")
	if err != nil || got.MetadataTxnID != cfg.MetadataTxnID {
		t.Fatalf("create: %+v %v", got, err)
	}
	ls.set(1, 0, nil)
	txn := metadata.NewTxnID()
	next, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, txn, offline(f, true))
	if err != nil {
		t.Fatalf("a CAS whose reply was lost must be reported as committed: %v", err)
	}
	if got, _, _ := e.store.GetTable(ctx, "cpu"); got.MetadataTxnID != txn || next.TxnID != txn {
		t.Fatalf("TableConfig names %s", got.MetadataTxnID)
	}
}

// TestCommitterLostCASReplyThenSuccessor: the lost CAS landed and another
// commit followed before the re-read; the local chain shows ours committed.
func TestCommitterLostCASReplyThenSuccessor(t *testing.T) {
	e, ls := lossyEnv(t)
	ctx := testCtx(t)
	cfg, f := e.create(t, "cpu", "m1")
	direct := *e.c
	direct.Store = e.store
	txn, after := metadata.NewTxnID(), metadata.NewTxnID()
	ls.set(1, 0, func() {
		if _, err := direct.Change(ctx, "cpu", txn, after, offline(f, false)); err != nil {
			t.Errorf("successor: %v", err)
		}
	})
	if _, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, txn, offline(f, true)); err != nil {
		t.Fatalf("got %v, want success", err)
	}
	if got, _, _ := e.store.GetTable(ctx, "cpu"); got.MetadataTxnID != after || got.MetadataTxnSeq != 3 {
		t.Fatalf("TableConfig %+v", got)
	}
}

// TestCommitterLostCASRequest: the CAS never reached etcd; resolving
// re-issues it, and the commit succeeds.
func TestCommitterLostCASRequest(t *testing.T) {
	e, ls := lossyEnv(t)
	ctx := testCtx(t)
	ls.set(0, 1, nil)
	cfg, f := e.create(t, "cpu", "m1")
	ls.set(0, 1, nil)
	txn := metadata.NewTxnID()
	if _, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, txn, offline(f, true)); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := e.store.GetTable(ctx, "cpu"); got.MetadataTxnID != txn {
		t.Fatalf("TableConfig names %s", got.MetadataTxnID)
	}
}

// TestCommitterLostCASThenConflict: the CAS failed and another txn took its
// place: the answer is a conflict, and the file stays for the sweep.
func TestCommitterLostCASThenConflict(t *testing.T) {
	e, ls := lossyEnv(t)
	ctx := testCtx(t)
	cfg, f := e.create(t, "cpu", "m1")
	direct := *e.c
	direct.Store = e.store
	other := metadata.NewTxnID()
	// Drop our request, and let another change commit just before it.
	ls.set(0, 1, nil)
	wrapped := &hookStore{Store: ls, before: func() {
		if _, err := direct.Change(ctx, "cpu", cfg.MetadataTxnID, other, offline(f, true)); err != nil {
			t.Errorf("other: %v", err)
		}
	}}
	e.c.Store = wrapped
	txn := metadata.NewTxnID()
	if _, err := e.c.Change(ctx, "cpu", cfg.MetadataTxnID, txn, offline(f, true)); !errors.Is(err, metadata.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	if got, _, _ := e.store.GetTable(ctx, "cpu"); got.MetadataTxnID != other {
		t.Fatalf("TableConfig names %s", got.MetadataTxnID)
	}
	if _, err := e.files.Get("cpu", txn); err != nil {
		t.Fatalf("the losing file was deleted inline: %v", err)
	}
}

// hookStore runs before once, just before the first UpdateTable.
type hookStore struct {
	metadata.Store
	once   sync.Once
	before func()
}

func (s *hookStore) UpdateTable(ctx context.Context, cfg metadata.TableConfig, rev int64) error {
	s.once.Do(s.before)
	return s.Store.UpdateTable(ctx, cfg, rev)
}

// TestCommitterOutcomeUnknown: when etcd cannot be reached to learn the
// outcome, the answer says so instead of guessing.
func TestCommitterOutcomeUnknown(t *testing.T) {
	e := newEnv(t, nil)
	cfg, f := e.create(t, "cpu", "m1")
	e.c.Store = &deadStore{Store: e.store}
	e.c.ResolveTimeout = 50 * time.Millisecond
	_, err := e.c.Change(testCtx(t), "cpu", cfg.MetadataTxnID, metadata.NewTxnID(), offline(f, true))
	if !errors.Is(err, metadata.ErrOutcomeUnknown) {
		t.Fatalf("got %v", err)
	}
}

// deadStore answers the first GetTable and then fails everything.
type deadStore struct {
	metadata.Store
	reads atomic.Int64
}

func (s *deadStore) GetTable(ctx context.Context, name string) (metadata.TableConfig, int64, error) {
	if s.reads.Add(1) == 1 {
		return s.Store.GetTable(ctx, name)
	}
	return metadata.TableConfig{}, 0, errLost
}

func (s *deadStore) UpdateTable(context.Context, metadata.TableConfig, int64) error { return errLost }

func TestCommitterLoadDetectsCorruption(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cfg, _ := e.create(t, "cpu", "m1")
	path := filepath.Join(e.dir, "cpu", cfg.MetadataTxnID)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Clone(b)
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.Load(ctx, "cpu"); !errors.Is(err, metadata.ErrChecksum) {
		t.Fatalf("corrupt file: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.Load(ctx, "cpu"); !errors.Is(err, metadata.ErrFileNotFound) {
		t.Fatalf("missing file: %v", err)
	}
}
