package membership

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestRegisterList(t *testing.T) {
	_, cli := startEtcd(t)
	cfg := testConfig(cli, "s1")
	cfg.Summary = func() Summary { return Summary{Partitions: 7, Bytes: 4096, InsertRowsPerSec: 12.5} }
	r := mustRegister(t, cfg)

	if !r.Valid() || r.Epoch() != 1 || isClosed(r.Done()) {
		t.Fatalf("after Register: Valid=%v Epoch=%d Done closed=%v", r.Valid(), r.Epoch(), isClosed(r.Done()))
	}
	infos := mustList(t, cli)
	want := Info{ID: "s1", Addr: "s1.example:7000", StartedAt: cfg.Self.StartedAt,
		Summary: Summary{Partitions: 7, Bytes: 4096, InsertRowsPerSec: 12.5}}
	if len(infos) != 1 || !infos[0].equal(want) {
		t.Fatalf("List = %+v, want [%+v]", infos, want)
	}

	// The raw value is the documented JSON, and the key carries a live lease.
	resp, err := cli.Get(testCtx(t), "/tsdb/servers/s1")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get: %v %v", resp, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(resp.Kvs[0].Value, &raw); err != nil {
		t.Fatal(err)
	}
	wantRaw := map[string]any{
		"id": "s1", "addr": "s1.example:7000", "started_at": "2026-01-02T03:04:05Z",
		"summary": map[string]any{"partitions": 7.0, "bytes": 4096.0, "insert_rows_per_sec": 12.5},
	}
	if got, w := mustJSON(t, raw), mustJSON(t, wantRaw); got != w {
		t.Fatalf("raw value\n got %s\nwant %s", got, w)
	}
	lease := clientv3.LeaseID(resp.Kvs[0].Lease)
	if lease == 0 {
		t.Fatal("key has no lease")
	}
	ttl, err := cli.TimeToLive(testCtx(t), lease, clientv3.WithAttachedKeys())
	if err != nil {
		t.Fatal(err)
	}
	if ttl.GrantedTTL != 10 || ttl.TTL <= 0 || len(ttl.Keys) != 1 || string(ttl.Keys[0]) != "/tsdb/servers/s1" {
		t.Fatalf("lease: granted %d, ttl %d, keys %q", ttl.GrantedTTL, ttl.TTL, ttl.Keys)
	}
	if cmp, ok := r.Guard(); !ok {
		t.Fatal("Guard not available while Valid")
	} else if txn, err := cli.Txn(testCtx(t)).If(cmp).Commit(); err != nil || !txn.Succeeded {
		t.Fatalf("Guard compare failed on a live registration: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCloseRevokes(t *testing.T) {
	_, cli := startEtcd(t)
	r, err := Register(testCtx(t), testConfig(cli, "s1"))
	if err != nil {
		t.Fatal(err)
	}
	lease := keyLease(t, cli, r.Key())
	done := r.Done()
	if err := r.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// No polling: the key is gone as soon as Close returns.
	if got := keyLease(t, cli, r.Key()); got != 0 {
		t.Fatalf("key still present after Close (lease %x)", got)
	}
	if infos := mustList(t, cli); len(infos) != 0 {
		t.Fatalf("List after Close = %+v", infos)
	}
	ttl, err := cli.TimeToLive(testCtx(t), lease)
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL != -1 {
		t.Fatalf("lease still alive after Close: ttl %d", ttl.TTL)
	}
	if r.Valid() || !isClosed(done) || !isClosed(r.stopped) {
		t.Fatalf("after Close: Valid=%v Done closed=%v loop stopped=%v", r.Valid(), isClosed(done), isClosed(r.stopped))
	}
	if _, ok := r.Guard(); ok {
		t.Fatal("Guard available after Close")
	}
	if err := r.Close(testCtx(t)); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestDuplicateID(t *testing.T) {
	_, cli := startEtcd(t)
	first, err := Register(testCtx(t), testConfig(cli, "s1"))
	if err != nil {
		t.Fatal(err)
	}
	second := testConfig(cli, "s1")
	second.Self.Addr = "other.example:7000"
	_, err = Register(testCtx(t), second)
	if !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("second Register: %v, want ErrDuplicateID", err)
	}
	if !strings.Contains(err.Error(), "s1.example:7000") {
		t.Fatalf("error %q does not name the holder's addr", err)
	}
	// The failed attempt left nothing behind: the key is still the first's.
	infos := mustList(t, cli)
	if len(infos) != 1 || infos[0].Addr != "s1.example:7000" || !first.Valid() {
		t.Fatalf("after duplicate: List %+v, first Valid %v", infos, first.Valid())
	}
	leases, err := cli.Leases(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Leases) != 1 {
		t.Fatalf("%d leases, want only the first's", len(leases.Leases))
	}

	if err := first.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	r := mustRegister(t, second)
	if infos := mustList(t, cli); len(infos) != 1 || infos[0].Addr != "other.example:7000" || !r.Valid() {
		t.Fatalf("after re-register: %+v", infos)
	}
}

// checkEpochState asserts the invariant of a lost epoch: Valid is never true
// for the old epoch once its Done closed. Valid is read first, so a true
// answer implies the new epoch was already published.
func checkEpochState(t *testing.T, r *Registration, lostEpoch int64) {
	t.Helper()
	v := r.Valid()
	if e := r.Epoch(); v && e <= lostEpoch {
		t.Fatalf("Valid true in lost epoch %d", e)
	}
}

func TestRevokedLeaseReregisters(t *testing.T) {
	_, cli := startEtcd(t)
	r := mustRegister(t, testConfig(cli, "s1"))
	oldLease, done := keyLease(t, cli, r.Key()), r.Done()
	oldGuard, ok := r.Guard()
	if !ok {
		t.Fatal("no Guard while Valid")
	}

	if _, err := cli.Revoke(testCtx(t), oldLease); err != nil {
		t.Fatal(err)
	}
	closed(t, "Done after an external revoke", done)
	checkEpochState(t, r, 1)
	// A write fenced by the lost epoch's Guard can no longer commit.
	if txn, err := cli.Txn(testCtx(t)).If(oldGuard).Then(clientv3.OpPut("/fenced", "x")).Commit(); err != nil || txn.Succeeded {
		t.Fatalf("write fenced by a revoked lease committed (err %v)", err)
	}

	eventually(t, "re-registration", func() bool { return r.Valid() && r.Epoch() >= 2 })
	newLease := keyLease(t, cli, r.Key())
	if newLease == 0 || newLease == oldLease {
		t.Fatalf("key lease %x after re-registration (old %x)", newLease, oldLease)
	}
	if isClosed(r.Done()) {
		t.Fatal("new epoch's Done is closed")
	}
	if infos := mustList(t, cli); len(infos) != 1 || infos[0].ID != "s1" {
		t.Fatalf("List = %+v", infos)
	}
}

func TestDeletedKeyReregisters(t *testing.T) {
	_, cli := startEtcd(t)
	r := mustRegister(t, testConfig(cli, "s1"))
	oldLease, done := keyLease(t, cli, r.Key()), r.Done()

	if _, err := cli.Delete(testCtx(t), r.Key()); err != nil {
		t.Fatal(err)
	}
	closed(t, "Done after the key was deleted", done)
	checkEpochState(t, r, 1)
	eventually(t, "re-registration", func() bool {
		return r.Valid() && r.Epoch() >= 2 && keyLease(t, cli, r.Key()) != 0
	})
	// The old lease, still alive but holding nothing, was revoked.
	eventually(t, "old lease revoked", func() bool {
		ttl, err := cli.TimeToLive(testCtx(t), oldLease)
		return err == nil && ttl.TTL == -1
	})
}

func TestKeepAliveFailureTakesOverKey(t *testing.T) {
	_, cli := startEtcd(t)
	var failing atomic.Int64 // keep-alives of this lease fail
	cfg := testConfig(cli, "s1")
	cfg.TTL = time.Second
	cfg.keepAliveOnce = func(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
		if int64(id) == failing.Load() {
			return nil, errors.New("injected keep-alive failure")
		}
		return cli.KeepAliveOnce(ctx, id)
	}
	r := mustRegister(t, cfg)
	oldLease, done := keyLease(t, cli, r.Key()), r.Done()

	// etcd keeps the lease alive (as if only our keep-alives were lost), so
	// the key is still attached to it when we re-register.
	kctx, kcancel := context.WithCancel(testCtx(t))
	defer kcancel()
	if _, err := cli.KeepAlive(kctx, oldLease); err != nil {
		t.Fatal(err)
	}
	failing.Store(int64(oldLease))

	closed(t, "Done after keep-alives stopped being acknowledged", done)
	checkEpochState(t, r, 1)
	eventually(t, "re-registration", func() bool { return r.Valid() && r.Epoch() >= 2 })
	if got := keyLease(t, cli, r.Key()); got == 0 || got == oldLease {
		t.Fatalf("key lease %x, want a new lease (old %x)", got, oldLease)
	}
	// The key moved without a gap, and the old lease was revoked.
	eventually(t, "old lease revoked", func() bool {
		ttl, err := cli.TimeToLive(testCtx(t), oldLease)
		return err == nil && ttl.TTL == -1
	})
}

func TestForeignOwnerBlocksReregistration(t *testing.T) {
	_, cli := startEtcd(t)
	r := mustRegister(t, testConfig(cli, "s1"))
	done := r.Done()

	// Another process takes the id (its own lease) while s1 is registered.
	g, err := cli.Grant(testCtx(t), 30)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(testCtx(t), r.Key(), `{"id":"s1","addr":"intruder:1"}`, clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	closed(t, "Done after the key changed hands", done)
	// Re-registration keeps failing with a duplicate: never Valid meanwhile.
	for range 20 {
		if r.Valid() {
			t.Fatal("Valid while another lease holds the id")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if infos := mustList(t, cli); len(infos) != 1 || infos[0].Addr != "intruder:1" {
		t.Fatalf("List = %+v", infos)
	}
	// Once the intruder's lease is gone, s1 registers again.
	if _, err := cli.Revoke(testCtx(t), g.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "re-registration after the intruder left", func() bool { return r.Valid() && r.Epoch() >= 2 })
	if infos := mustList(t, cli); len(infos) != 1 || infos[0].Addr != "s1.example:7000" {
		t.Fatalf("List = %+v", infos)
	}
}

func TestSummaryRefresh(t *testing.T) {
	_, cli := startEtcd(t)
	var rows atomic.Int64
	var calls atomic.Int64
	cfg := testConfig(cli, "s1")
	cfg.RefreshEvery = 20 * time.Millisecond
	cfg.Summary = func() Summary {
		calls.Add(1)
		return Summary{Partitions: 3, InsertRowsPerSec: float64(rows.Load())}
	}
	r := mustRegister(t, cfg)

	rows.Store(500)
	eventually(t, "new summary in List", func() bool {
		infos := mustList(t, cli)
		return len(infos) == 1 && infos[0].Summary.InsertRowsPerSec == 500
	})
	if !r.Valid() || r.Epoch() != 1 {
		t.Fatalf("refresh changed the epoch: Valid=%v Epoch=%d", r.Valid(), r.Epoch())
	}

	// An unchanged summary is not rewritten: the key's revision stays put
	// across several refreshes.
	resp, err := cli.Get(testCtx(t), r.Key())
	if err != nil {
		t.Fatal(err)
	}
	rev := resp.Kvs[0].ModRevision
	from := calls.Load()
	eventually(t, "three more refreshes", func() bool { return calls.Load() >= from+3 })
	resp, err = cli.Get(testCtx(t), r.Key())
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Kvs[0].ModRevision; got != rev {
		t.Fatalf("unchanged summary rewritten: mod revision %d -> %d", rev, got)
	}
}

func TestEtcdDownInvalidates(t *testing.T) {
	stopEtcd, cli := startEtcd(t)
	cfg := testConfig(cli, "s1")
	cfg.TTL = time.Second
	cfg.CallTimeout = 500 * time.Millisecond
	r, err := Register(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := r.Done()
	stopEtcd()
	closed(t, "Done after etcd went away", done)
	if r.Valid() {
		t.Fatal("Valid with etcd down")
	}
	// Close neither hangs nor leaks: the loop stops, the revoke fails fast.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_ = r.Close(ctx)
	if !isClosed(r.stopped) {
		t.Fatal("registration goroutine still running after Close")
	}
}

func TestRegisterInvalidConfig(t *testing.T) {
	_, err := Register(context.Background(), Config{Self: Info{ID: "a/b"}, TTL: time.Millisecond})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
	for _, field := range []string{"Client", "Self.ID", "Self.Addr", "TTL"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}

func TestRewatchChecksOwnKey(t *testing.T) {
	_, cli := startEtcd(t)
	r := mustRegister(t, testConfig(cli, "s1"))
	lease := keyLease(t, cli, r.Key())
	ctx := testCtx(t)

	kw, err := r.rewatch(ctx, session{lease: lease})
	if err != nil || kw.ch == nil {
		t.Fatalf("rewatch on a live key: %v", err)
	}
	kw.stop()
	if _, err := r.rewatch(ctx, session{lease: lease + 1}); !errors.Is(err, errLeaseLost) {
		t.Fatalf("rewatch with another lease: %v, want errLeaseLost", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.rewatch(ctx, session{lease: lease}); !errors.Is(err, errLeaseLost) {
		t.Fatalf("rewatch after the key is gone: %v, want errLeaseLost", err)
	}
}
