package membership

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/cluster/embedetcd"
)

// waitFor is the deadline of every poll in these tests: generous, because a
// pass never waits for it (polls return as soon as the condition holds).
const waitFor = 20 * time.Second

// startEtcd starts a real embedded etcd for the test and returns a func
// that stops it (idempotent) and a client; both are closed when the test
// ends.
func startEtcd(t *testing.T) (stop func(), cli *clientv3.Client) {
	t.Helper()
	e, err := embedetcd.Start(embedetcd.Config{Dir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(e.Close)
	t.Cleanup(stop)
	cli, err = e.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return stop, cli
}

// testCtx returns a context that bounds one test's calls.
func testCtx(t *testing.T) context.Context {
	t.Helper()
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
		time.Sleep(10 * time.Millisecond)
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

// isClosed reports whether ch is closed right now.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// testConfig is a registration config for server id on cli.
func testConfig(cli *clientv3.Client, id string) Config {
	return Config{
		Client: cli,
		Self: Info{
			ID:        id,
			Addr:      id + ".example:7000",
			StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Summary:   Summary{Partitions: 1, Bytes: 10, InsertRowsPerSec: 2.5},
		},
	}
}

// mustRegister registers cfg and closes the registration when the test ends.
func mustRegister(t *testing.T, cfg Config) *Registration {
	t.Helper()
	r, err := Register(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("Register(%s): %v", cfg.Self.ID, err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// keyLease returns the lease attached to key, 0 if the key is absent.
func keyLease(t *testing.T, cli *clientv3.Client, key string) clientv3.LeaseID {
	t.Helper()
	resp, err := cli.Get(testCtx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// mustList is List that fails the test on error.
func mustList(t *testing.T, cli *clientv3.Client) []Info {
	t.Helper()
	infos, _, err := List(testCtx(t), cli, "")
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// ids returns the ids of infos, in order.
func ids(infos []Info) []string {
	out := make([]string, len(infos))
	for i, info := range infos {
		out[i] = info.ID
	}
	return out
}

// recorder collects what a Watcher delivers.
type recorder struct {
	mu    sync.Mutex
	calls int
	last  []Info
	busy  bool // detects concurrent onChange calls
	race  bool
}

// onChange is the Watcher callback.
func (r *recorder) onChange(infos []Info) {
	r.mu.Lock()
	if r.busy {
		r.race = true
	}
	r.busy = true
	r.calls++
	r.last = infos
	r.mu.Unlock()
	time.Sleep(time.Millisecond) // widen the window a concurrent call would hit
	r.mu.Lock()
	r.busy = false
	r.mu.Unlock()
}

// snapshot returns the number of calls so far and the last list delivered.
func (r *recorder) snapshot() (int, []Info) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls, r.last
}

// has reports whether the last delivered list matches want exactly (ids and
// summaries).
func (r *recorder) has(want map[string]Summary) bool {
	_, last := r.snapshot()
	if len(last) != len(want) {
		return false
	}
	for _, info := range last {
		s, ok := want[info.ID]
		if !ok || s != info.Summary {
			return false
		}
	}
	return true
}
