package election

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/cluster/embedetcd"
	"github.com/tsdb/tsdb/cluster/membership"
)

// candidate is one server in the election test: a real membership
// registration and Run with a lead function that records its terms.
type candidate struct {
	id      string
	reg     *membership.Registration
	leading atomic.Bool
	terms   atomic.Int64
	cancel  context.CancelFunc
	done    chan struct{}
}

func startCandidate(t *testing.T, cli *clientv3.Client, id string, leaders *atomic.Int64, most *atomic.Int64) *candidate {
	t.Helper()
	reg, err := membership.Register(context.Background(), membership.Config{
		Client: cli, Prefix: "/tsdb/", Self: membership.Info{ID: id, Addr: "127.0.0.1:1"}, TTL: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &candidate{id: id, reg: reg, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		Run(ctx, Config{Client: cli, Prefix: "/tsdb/", Self: id, Lease: reg, Retry: 50 * time.Millisecond}, func(lctx context.Context) {
			n := leaders.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			c.leading.Store(true)
			c.terms.Add(1)
			<-lctx.Done()
			c.leading.Store(false)
			leaders.Add(-1)
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-c.done
		reg.Close(context.Background())
	})
	return c
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOneMasterAndTakeover: of three candidates exactly one leads, and
// Leader names it; when it stops, another takes over (never two at once);
// when a master's lease is lost under it, its duties stop and the last
// candidate takes over.
func TestOneMasterAndTakeover(t *testing.T) {
	e, err := embedetcd.Start(embedetcd.Config{Dir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	var leaders, most atomic.Int64
	cands := []*candidate{
		startCandidate(t, cli, "s1", &leaders, &most),
		startCandidate(t, cli, "s2", &leaders, &most),
		startCandidate(t, cli, "s3", &leaders, &most),
	}
	leaderOf := func() *candidate {
		for _, c := range cands {
			if c.leading.Load() {
				return c
			}
		}
		return nil
	}
	eventually(t, "a master", func() bool { return leaderOf() != nil })
	first := leaderOf()
	got, err := Leader(context.Background(), cli, "/tsdb/")
	if err != nil || got != first.id {
		t.Fatalf("Leader = %q, %v; want %s", got, err, first.id)
	}
	// A server stopping: its duties end, then its registration.
	first.cancel()
	<-first.done
	if err := first.reg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "another master", func() bool { c := leaderOf(); return c != nil && c != first })
	second := leaderOf()
	eventually(t, "Leader to name the new master", func() bool {
		got, err := Leader(context.Background(), cli, "/tsdb/")
		return err == nil && got == second.id
	})
	if most.Load() != 1 {
		t.Fatalf("%d masters at once", most.Load())
	}
	// A master whose lease is lost (here revoked under it) stops at once,
	// without waiting for its own Run to be stopped.
	if err := second.reg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the master without a lease to stop", func() bool { return !second.leading.Load() })
	eventually(t, "the last candidate to take over", func() bool { c := leaderOf(); return c != nil && c != first && c != second })
}
