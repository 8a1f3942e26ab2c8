package replica

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestSyncCoalescer: callers that arrive while a sync runs share the next
// one (never the one in flight, which may have read etcd before what they
// need), one run per key at a time, and a caller whose ctx ends returns
// without stopping the run.
func TestSyncCoalescer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs, concurrent, most atomic.Int64
		release := make(chan struct{})
		var wg sync.WaitGroup
		c := newSyncCoalescer(func(key string) error {
			n := concurrent.Add(1)
			defer concurrent.Add(-1)
			if n > most.Load() {
				most.Store(n)
			}
			<-release
			if runs.Add(1); key == "bad" {
				return errors.New("boom")
			}
			return nil
		}, func(f func()) { wg.Go(f) })

		// The first caller starts a run; ten more arrive while it runs.
		first := make(chan error, 1)
		go func() { first <- c.do(context.Background(), "t") }()
		synctest.Wait()
		later := make(chan error, 10)
		for range 10 {
			go func() { later <- c.do(context.Background(), "t") }()
		}
		// One whose ctx ends leaves while the run goes on.
		ctx, cancel := context.WithCancel(context.Background())
		left := make(chan error, 1)
		go func() { left <- c.do(ctx, "t") }()
		synctest.Wait()
		cancel()
		if err := <-left; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled caller: %v", err)
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		for range 10 {
			if err := <-later; err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		if n := runs.Load(); n != 2 {
			t.Errorf("%d runs for 12 callers in two waves, want 2 (the first, and one shared by the rest)", n)
		}
		if m := most.Load(); m != 1 {
			t.Errorf("%d runs of one key at once, want 1", m)
		}
		// Errors reach every caller of the run; keys run apart.
		if err := c.do(context.Background(), "bad"); err == nil {
			t.Error("a failed run returned nil")
		}
		if err := c.do(context.Background(), "t"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if n := runs.Load(); n != 4 {
			t.Errorf("%d runs, want 4", n)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.m) != 0 {
			t.Errorf("%d keys left after every run ended", len(c.m))
		}
	})
}
