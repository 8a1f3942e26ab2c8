package replication

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
)

// gate holds the pushes to one server while closed, or fails them.
type gate struct {
	mu     sync.Mutex
	open   chan struct{} // closed: pushes go through
	failOn bool
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = make(chan struct{})
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *gate) fail(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failOn = on
}

// pass blocks while the gate holds, then fails the push if it fails.
func (g *gate) pass() error {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	<-open
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failOn {
		return errDown
	}
	return nil
}

// TestWaitQuota: an insert waits while a replica target that keeps up is
// more than the quota behind, and not for a target that is joining,
// failing or stalled; a stalled target counts again once it caught up.
func TestWaitQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall = 4 * time.Second
		log := newFakeLog()
		pid := uuid.New()
		s2, s3 := replicaTarget("s2", uuid.New(), pid), replicaTarget("s3", uuid.New(), pid)
		s4 := replicaTarget("s4", uuid.New(), pid)
		s4.Kind = metadata.TargetJoining
		slow, joining := newGate(), newGate()
		rec := &recorder{fail: func(tg metadata.Target, _ wire.PushRequest) error {
			switch tg.ServerID {
			case "s3":
				return slow.pass()
			case "s4":
				return joining.pass()
			}
			return nil
		}}
		p := newTestPusher(log, rec, func(c *Config) { c.Quota, c.QuotaStall = 5, stall })
		p.SetView(1, view(s2, s3, s4))
		runPusher(t, p)

		add := func(n int) {
			for range n {
				log.add(row("s1", "cpu", int64(log.SyncedSeq()+1), 1, "v", 1))
			}
			p.Notify()
		}
		wait := func(d time.Duration) (time.Duration, error) {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			return p.WaitQuota(ctx)
		}

		// Every copy keeps up: no wait.
		add(3)
		synctest.Wait()
		if waited, err := wait(time.Minute); waited != 0 || err != nil {
			t.Fatalf("caught up: waited %v, err %v", waited, err)
		}

		// s3 is slow: the wait lasts until it confirms, the joining s4
		// (held too) does not count.
		slow.hold()
		joining.hold()
		add(10)
		synctest.Wait()
		res := make(chan error, 1)
		var waited time.Duration
		go func() {
			var err error
			waited, err = wait(time.Minute)
			res <- err
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case err := <-res:
			t.Fatalf("WaitQuota returned %v while s3 was 10 rows behind", err)
		default:
		}
		slow.release()
		if err := <-res; err != nil || waited < time.Second {
			t.Fatalf("after s3 caught up: waited %v, err %v", waited, err)
		}

		// Its deadline passes first: the error names the copy.
		slow.hold()
		add(10)
		synctest.Wait()
		_, err := wait(time.Second)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "server s3's copy is") {
			t.Fatalf("deadline: err %v, want s3 named and a deadline error", err)
		}

		// Stalled: no push to s3 completes for the stall time, so
		// inserts go on without it.
		if waited, err := wait(time.Minute); err != nil || waited < stall-time.Second || waited > stall+stall/4 {
			t.Fatalf("stalled copy: waited %v, err %v, want about %v", waited, err, stall)
		}
		if waited, err := wait(time.Minute); waited != 0 || err != nil {
			t.Fatalf("after the stall: waited %v, err %v, want no wait", waited, err)
		}
		// Once it caught up it counts again.
		slow.release()
		synctest.Wait()
		slow.hold()
		add(10)
		synctest.Wait()
		if _, err := wait(time.Second); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("caught up again, then behind: err %v, want a deadline error", err)
		}

		// A failing copy is not waited for.
		slow.fail(true)
		slow.release()
		synctest.Wait()
		if waited, err := wait(time.Minute); waited != 0 || err != nil {
			t.Fatalf("failing copy: waited %v, err %v, want no wait", waited, err)
		}
		joining.release()

		// A copy that has not been within the quota since the pusher
		// started (one catching up after a restart) is not waited for,
		// even while its pushes go through.
		late := newGate()
		late.hold()
		rec5 := &recorder{fail: func(metadata.Target, wire.PushRequest) error { return late.pass() }}
		p5 := newTestPusher(log, rec5, func(c *Config) { c.Quota, c.QuotaStall = 5, stall })
		p5.SetView(1, view(replicaTarget("s5", uuid.New(), pid)))
		stop5 := runPusher(t, p5)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if waited, err := p5.WaitQuota(ctx); waited != 0 || err != nil {
			t.Fatalf("copy catching up: waited %v, err %v, want no wait", waited, err)
		}
		cancel()
		late.release()
		stop5()

		// Quota 0: off, whatever the lag.
		off := newTestPusher(log, rec, nil)
		off.SetView(1, view(s2, s3))
		if waited, err := off.WaitQuota(context.Background()); waited != 0 || err != nil {
			t.Fatalf("quota 0: waited %v, err %v", waited, err)
		}
	})
}
