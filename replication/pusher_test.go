package replication

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// Tests in this file use a fakeLog and run under testing/synctest: time is
// virtual, so backoff waits are exact and nothing depends on the machine's
// speed.

func TestBackoff(t *testing.T) {
	lo, hi := 50*time.Millisecond, 5*time.Second
	tests := []struct {
		attempt int
		want    time.Duration // d; the wait lies in [d/2, d]
	}{
		{1, 50 * time.Millisecond},
		{2, 100 * time.Millisecond},
		{3, 200 * time.Millisecond},
		{7, 3200 * time.Millisecond},
		{8, 5 * time.Second},
		{63, 5 * time.Second},
		{1000, 5 * time.Second},
	}
	lowest := func(n int64) int64 { return 0 }
	highest := func(n int64) int64 { return n - 1 }
	backoff := func(attempt int, lo, hi time.Duration, randN func(int64) int64) time.Duration {
		p := (&Pusher{cfg: Config{RetryMin: lo, RetryMax: hi}}).retryPolicy()
		p.Rand = randN
		return p.Delay(attempt)
	}
	for _, tt := range tests {
		if got := backoff(tt.attempt, lo, hi, lowest); got != tt.want/2 {
			t.Errorf("attempt %d: shortest wait %v, want %v", tt.attempt, got, tt.want/2)
		}
		if got := backoff(tt.attempt, lo, hi, highest); got != tt.want {
			t.Errorf("attempt %d: longest wait %v, want %v", tt.attempt, got, tt.want)
		}
	}
}

// newTestPusher returns a Pusher over log with a recorder, short retries
// and a long tick (so that only the tests' own actions wake it).
func newTestPusher(log Log, rec *recorder, mod func(*Config)) *Pusher {
	cfg := Config{
		Table: "metrics", Placement: uuid.New(), Self: "s1", Log: log, Sender: rec,
		BatchRows: 4, RetryMin: 50 * time.Millisecond, RetryMax: 400 * time.Millisecond, Tick: time.Hour,
	}
	if mod != nil {
		mod(&cfg)
	}
	return NewPusher(cfg)
}

func TestPusherRetriesFailingTargetAndResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		for i := range 10 {
			log.add(row("s1", "cpu", int64(i), 1, "v", float64(i)))
		}
		pid := uuid.New()
		s2, s3 := replicaTarget("s2", uuid.New(), pid), replicaTarget("s3", uuid.New(), pid)
		attempts := make(chan time.Time, 100)
		down := atomic.Bool{}
		down.Store(true)
		rec := &recorder{fail: func(tg metadata.Target, _ wire.PushRequest) error {
			if tg.ServerID != "s2" {
				return nil
			}
			attempts <- time.Now()
			if down.Load() {
				return errDown
			}
			return nil
		}}
		p := newTestPusher(log, rec, nil)
		p.SetView(1, view(s2, s3))
		stop := runPusher(t, p)

		// Five failed attempts, each after a backoff in [d/2, d].
		prev := <-attempts
		for k := 1; k < 5; k++ {
			at := <-attempts
			d := min(50*time.Millisecond<<(k-1), 400*time.Millisecond)
			if gap := at.Sub(prev); gap < d/2 || gap > d {
				t.Errorf("attempt %d came %v after the previous one; want within [%v, %v]", k+1, gap, d/2, d)
			}
			prev = at
		}
		synctest.Wait()
		if c := log.Confirmed(s2.PlacementID); c != 0 {
			t.Fatalf("failing target's cursor moved to %d", c)
		}
		if c := log.Confirmed(s3.PlacementID); c != 10 {
			t.Fatalf("healthy target confirmed %d, want 10", c)
		}
		if st := p.Status(); st[0].Server != "s2" || st[0].LastError == "" || st[0].Lag != 10 || st[1].LastError != "" {
			t.Fatalf("Status = %+v; want s2 failing with lag 10, s3 fine", st)
		}

		down.Store(false)
		if err := p.WaitConfirmed(context.Background(), 10, []string{"s2"}, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if st := p.Status(); st[0].LastError != "" || st[0].Lag != 0 || st[0].LastPush.IsZero() {
			t.Fatalf("Status after healing = %+v", st[0])
		}
		stop()

		// A new Pusher over the same log resumes from the recorded cursor.
		log.add(row("s1", "cpu", 100, 2, "v", 100), row("s1", "cpu", 101, 2, "v", 101))
		rec2 := &recorder{}
		p2 := newTestPusher(log, rec2, nil)
		p2.SetView(1, view(s2))
		runPusher(t, p2)
		if err := p2.WaitConfirmed(context.Background(), 12, []string{"s2"}, 1); err != nil {
			t.Fatal(err)
		}
		pushes := rec2.all()
		if len(pushes) != 1 || pushes[0].req.Count != 2 || pushes[0].rows[0].Time != 100 || pushes[0].req.LastSeq != 12 {
			t.Fatalf("after restart: pushes %+v; want one push of the 2 new rows up to seq 12", pushes)
		}
	})
}

func TestPusherLogFailuresKeepCursor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		log.add(row("s1", "cpu", 1, 1, "v", 1))
		log.setFailures(errors.New("disk on fire"), nil)
		rec := &recorder{}
		p := newTestPusher(log, rec, nil)
		s2 := replicaTarget("s2", uuid.New(), uuid.New())
		p.SetView(1, view(s2))
		runPusher(t, p)
		time.Sleep(time.Second)
		synctest.Wait()
		if len(rec.all()) != 0 || log.Confirmed(s2.PlacementID) != 0 {
			t.Fatal("pushed although ReadLog fails")
		}
		log.setFailures(nil, errors.New("cursor write failed"))
		time.Sleep(time.Second)
		synctest.Wait()
		if len(rec.all()) == 0 || log.Confirmed(s2.PlacementID) != 0 || p.Status()[0].LastError == "" {
			t.Fatalf("SetConfirmed failing: %d pushes, cursor %d, status %+v", len(rec.all()),
				log.Confirmed(s2.PlacementID), p.Status())
		}
		log.setFailures(nil, nil)
		if err := p.WaitConfirmed(context.Background(), 1, []string{"s2"}, 1); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWaitConfirmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		seq := log.add(row("s1", "cpu", 1, 1, "v", 1), row("s1", "cpu", 2, 1, "v", 2))
		pid := uuid.New()
		s2, s3 := replicaTarget("s2", uuid.New(), pid), replicaTarget("s3", uuid.New(), pid)
		s4 := replicaTarget("s4", uuid.New(), pid)
		s4.Kind = metadata.TargetJoining
		rec := &recorder{fail: func(tg metadata.Target, _ wire.PushRequest) error {
			if tg.ServerID == "s3" {
				return errDown
			}
			return nil
		}}
		p := newTestPusher(log, rec, nil)
		p.SetView(1, view(s2, s3, s4))
		runPusher(t, p)
		synctest.Wait()
		if log.Confirmed(s4.PlacementID) != seq {
			t.Fatal("joining target did not confirm")
		}

		wait := func(servers []string, need int) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return p.WaitConfirmed(ctx, seq, servers, need)
		}
		tests := []struct {
			name    string
			servers []string
			need    int
			ok      bool
		}{
			{"need 0", nil, 0, true},
			{"need -1", []string{"s3"}, -1, true},
			{"satisfied", []string{"s2", "s3"}, 1, true},
			{"not enough", []string{"s2", "s3"}, 2, false},
			{"joining does not count", []string{"s2", "s4"}, 2, false},
			{"only listed servers", []string{"s3", "s4"}, 1, false},
			{"a server counts once", []string{"s2", "s2"}, 2, false},
			{"unknown server", []string{"s9"}, 1, false},
		}
		for _, tt := range tests {
			err := wait(tt.servers, tt.need)
			if tt.ok && err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			if !tt.ok && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: err %v, want a deadline error", tt.name, err)
			}
		}

		// A waiter is woken by the confirmation of a later row.
		res := make(chan error, 1)
		go func() { res <- p.WaitConfirmed(context.Background(), seq+1, []string{"s2"}, 1) }()
		synctest.Wait()
		select {
		case err := <-res:
			t.Fatalf("WaitConfirmed returned %v before the row existed", err)
		default:
		}
		log.add(row("s1", "cpu", 3, 1, "v", 3))
		p.Notify()
		if err := <-res; err != nil {
			t.Fatal(err)
		}

		// A view change that adds a confirmed replica wakes waiters too.
		go func() { res <- p.WaitConfirmed(context.Background(), seq+1, []string{"s4"}, 1) }()
		synctest.Wait()
		s4.Kind = metadata.TargetReplica
		p.SetView(2, view(s2, s3, s4))
		if err := <-res; err != nil {
			t.Fatal(err)
		}
	})
}

func TestDrained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		rec := &recorder{}
		p := newTestPusher(log, rec, nil)
		runPusher(t, p)
		if p.Drained() {
			t.Fatal("drained without targets")
		}
		pid := uuid.New()
		s2, s3 := replicaTarget("s2", uuid.New(), pid), replicaTarget("s3", uuid.New(), pid)
		p.SetView(1, view(s2, s3))
		if !p.Drained() {
			t.Fatal("an empty replica with targets is not drained")
		}
		// s3 fails before the row exists: set after it, the pusher could
		// deliver the row to s3 first (a flake seen under -race).
		rec.setFail(func(tg metadata.Target, _ wire.PushRequest) error {
			if tg.ServerID == "s3" {
				return errDown
			}
			return nil
		})
		log.add(row("s1", "cpu", 1, 1, "v", 1))
		if p.Drained() {
			t.Fatal("drained with an unpushed row")
		}
		p.Notify()
		synctest.Wait()
		if p.Drained() {
			t.Fatal("drained while s3 fails")
		}
		rec.setFail(nil)
		time.Sleep(time.Second) // past the backoff
		synctest.Wait()
		if !p.Drained() {
			t.Fatalf("not drained after every target confirmed: %+v", p.Status())
		}
	})
}

func TestOnStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		log.add(row("s1", "cpu", 1, 1, "v", 1))
		type call struct {
			target metadata.Target
			at     time.Time
		}
		calls := make(chan call, 10)
		rec := &recorder{fail: func(metadata.Target, wire.PushRequest) error {
			return fmt.Errorf("409 from s2: %w", ErrStalePlacement)
		}}
		p := newTestPusher(log, rec, func(c *Config) {
			c.OnStale = func(tg metadata.Target) { calls <- call{tg, time.Now()} }
		})
		s2 := replicaTarget("s2", uuid.New(), uuid.New())
		p.SetView(3, view(s2))
		runPusher(t, p)
		first, second := <-calls, <-calls
		if first.target.PlacementID != s2.PlacementID || first.target.ServerID != "s2" {
			t.Fatalf("OnStale(%+v), want s2", first.target)
		}
		if gap := second.at.Sub(first.at); gap < 25*time.Millisecond {
			t.Fatalf("retried a stale target after %v, without backing off", gap)
		}
		if log.Confirmed(s2.PlacementID) != 0 {
			t.Fatal("cursor moved on a stale placement answer")
		}
		// The node re-runs discovery: the target is gone, pushing stops.
		p.SetView(4, view())
		synctest.Wait()
		n := len(rec.all())
		time.Sleep(time.Minute)
		synctest.Wait()
		if len(rec.all()) != n {
			t.Fatal("still pushing to a removed target")
		}
	})
}

// blockingSender blocks every push until its ctx ends or release is
// closed, and counts pushes in flight.
type blockingSender struct {
	entered  chan struct{}
	release  chan struct{}
	inFlight atomic.Int64
	mu       sync.Mutex
	ctxErrs  []error
}

func (s *blockingSender) Push(ctx context.Context, _ metadata.Target, _ wire.PushRequest) (wire.PushResponse, error) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	s.entered <- struct{}{}
	select {
	case <-ctx.Done():
	case <-s.release:
	}
	s.mu.Lock()
	s.ctxErrs = append(s.ctxErrs, ctx.Err())
	s.mu.Unlock()
	return wire.PushResponse{}, ctx.Err()
}

func TestRunReturnsOnCancelWithPushInFlight(t *testing.T) {
	log := newFakeLog()
	log.add(row("s1", "cpu", 1, 1, "v", 1))
	snd := &blockingSender{entered: make(chan struct{}, 10), release: make(chan struct{})}
	p := NewPusher(Config{Placement: uuid.New(), Self: "s1", Log: log, Sender: snd})
	pid := uuid.New()
	p.SetView(1, view(replicaTarget("s2", uuid.New(), pid), replicaTarget("s3", uuid.New(), pid)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	<-snd.entered
	<-snd.entered // both targets are pushing
	if n := p.loops.Load(); n != 2 {
		t.Fatalf("%d target goroutines, want 2", n)
	}
	cancel()
	<-done
	if n := p.loops.Load(); n != 0 {
		t.Fatalf("%d target goroutines left after Run returned", n)
	}
	if n := snd.inFlight.Load(); n != 0 {
		t.Fatalf("%d pushes in flight after Run returned", n)
	}
	// After Run: SetView and Notify start nothing.
	p.SetView(2, view(replicaTarget("s4", uuid.New(), pid)))
	p.Notify()
	if n := p.loops.Load(); n != 0 {
		t.Fatalf("SetView after Run started %d goroutines", n)
	}
}

func TestNotifyDoesNotCancelPushInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		log.add(row("s1", "cpu", 1, 1, "v", 1))
		snd := &blockingSender{entered: make(chan struct{}, 10), release: make(chan struct{})}
		p := NewPusher(Config{Placement: uuid.New(), Self: "s1", Log: log, Sender: snd, Tick: time.Hour})
		s2 := replicaTarget("s2", uuid.New(), uuid.New())
		p.SetView(1, view(s2))
		stop := runPusher(t, p)
		<-snd.entered
		for range 10 {
			p.Notify()
		}
		p.SetView(2, view(s2)) // same target: kept, not restarted
		synctest.Wait()
		close(snd.release)
		synctest.Wait()
		stop()
		if log.Confirmed(s2.PlacementID) != 1 {
			t.Fatal("the push in flight was not confirmed")
		}
		snd.mu.Lock()
		defer snd.mu.Unlock()
		if snd.ctxErrs[0] != nil {
			t.Fatalf("push in flight saw %v", snd.ctxErrs[0])
		}
	})
}

func TestSetViewRemovesAndReAddsTargets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		log.add(row("s1", "cpu", 1, 1, "v", 1))
		snd := &blockingSender{entered: make(chan struct{}, 10), release: make(chan struct{})}
		self := uuid.New()
		p := NewPusher(Config{Placement: self, Self: "s1", Log: log, Sender: snd, Tick: time.Hour})
		pid := uuid.New()
		s2 := replicaTarget("s2", uuid.New(), pid)
		own := replicaTarget("s1", self, pid)
		p.SetView(5, view(s2, own, s2))
		if st := p.Status(); len(st) != 1 || st[0].Placement != s2.PlacementID {
			t.Fatalf("Status = %+v; want only s2 (own placement and duplicates dropped)", st)
		}
		runPusher(t, p)
		<-snd.entered
		p.SetView(4, view()) // older: ignored
		if len(p.Status()) != 1 {
			t.Fatal("an older view replaced the current one")
		}
		p.SetView(6, view())
		synctest.Wait()
		if p.loops.Load() != 0 || snd.inFlight.Load() != 0 {
			t.Fatal("removing the target did not stop its goroutine")
		}
		snd.mu.Lock()
		if !errors.Is(snd.ctxErrs[0], context.Canceled) {
			t.Errorf("push to a removed target saw ctx error %v, want canceled", snd.ctxErrs[0])
		}
		snd.mu.Unlock()
		close(snd.release)
		p.SetView(7, view(s2))
		<-snd.entered
		if err := p.WaitConfirmed(context.Background(), 1, []string{"s2"}, 1); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReplicaTargetSkipsRowsFromItsPlacement: a replica target is not sent
// the rows its own placement pushed here (the log's origin), whoever
// stamped them; a row the target's server stamped but that was stored
// here first (a smeared insert, issue 14 item 2) is sent to it.
func TestReplicaTargetSkipsRowsFromItsPlacement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		pid := uuid.New()
		s2, s3 := replicaTarget("s2", uuid.New(), pid), replicaTarget("s3", uuid.New(), pid)
		log.addFrom(s2.PlacementID,
			row("s2", "cpu", 1, 1, "v", 1), // pushed by s2: not sent back
			row("s3", "cpu", 2, 1, "v", 2), // stamped by s3, pushed by s2: not sent back to s2
		)
		log.add(row("s2", "cpu", 3, 1, "v", 3)) // stamped by s2, stored here first: sent to s2
		log.addFrom(s3.PlacementID, row("s1", "cpu", 4, 1, "v", 4))
		rec := &recorder{}
		p := newTestPusher(log, rec, nil)
		p.SetView(1, view(s2, s3))
		runPusher(t, p)
		synctest.Wait()
		got := map[string][]int64{}
		for _, ps := range rec.all() {
			for _, r := range ps.rows {
				got[ps.target.ServerID] = append(got[ps.target.ServerID], r.Time)
			}
		}
		if fmt.Sprint(got["s2"]) != "[3 4]" || fmt.Sprint(got["s3"]) != "[1 2 3]" {
			t.Fatalf("pushed times %v; want s2 [3 4], s3 [1 2 3]", got)
		}
		if log.Confirmed(s2.PlacementID) != 4 || log.Confirmed(s3.PlacementID) != 4 {
			t.Fatal("cursors did not reach 4")
		}

		// A batch whose every row came from s2 makes no call to s2.
		before := len(rec.all())
		log.addFrom(s2.PlacementID, row("s2", "cpu", 5, 1, "v", 5), row("s1", "cpu", 6, 1, "v", 6))
		p.Notify()
		synctest.Wait()
		for _, ps := range rec.all()[before:] {
			if ps.target.ServerID == "s2" {
				t.Fatalf("pushed %+v to s2, which sent them here", ps.rows)
			}
		}
		if log.Confirmed(s2.PlacementID) != 6 {
			t.Fatalf("s2's cursor %d; want it advanced to 6 without a push", log.Confirmed(s2.PlacementID))
		}

		// Another placement of s2's server (it re-joined) is not the origin.
		s2new := replicaTarget("s2", uuid.New(), pid)
		p.SetView(2, view(s2new, s3))
		synctest.Wait()
		var times []int64
		for _, ps := range rec.all() {
			if ps.target.PlacementID == s2new.PlacementID {
				for _, r := range ps.rows {
					times = append(times, r.Time)
				}
			}
		}
		if fmt.Sprint(times) != "[1 2 3 4 5 6]" {
			t.Fatalf("pushed times %v to s2's new placement; want every row", times)
		}
	})
}

func TestJoiningTargetGetsComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		rec := &recorder{}
		p := newTestPusher(log, rec, func(c *Config) { c.Tick = time.Minute })
		pid := uuid.New()
		j := replicaTarget("s9", uuid.New(), pid)
		j.Kind = metadata.TargetJoining
		r2 := replicaTarget("s2", uuid.New(), pid)
		p.SetView(1, view(j, r2)) // empty replica: mark 0
		runPusher(t, p)
		synctest.Wait()
		pushes := rec.all()
		if len(pushes) != 1 || !pushes[0].req.Complete || pushes[0].req.Count != 0 || pushes[0].target.ServerID != "s9" {
			t.Fatalf("pushes %+v; want one empty Complete push to the joiner", pushes)
		}
		// Rows pushed later carry Complete; the replica target never does.
		log.add(row("s1", "cpu", 1, 1, "v", 1))
		p.Notify()
		synctest.Wait()
		for _, ps := range rec.all()[1:] {
			if ps.req.Complete != (ps.target.Kind == metadata.TargetJoining) {
				t.Fatalf("push to %s (%s) has Complete=%v", ps.target.ServerID, ps.target.Kind, ps.req.Complete)
			}
		}
		// Every tick re-sends the signal while the target is joining.
		n := len(rec.all())
		time.Sleep(time.Minute)
		synctest.Wait()
		after := rec.all()[n:]
		if len(after) != 1 || !after[0].req.Complete || after[0].req.LastSeq != 1 {
			t.Fatalf("after a tick: %+v; want one Complete re-send up to seq 1", after)
		}
	})
}

func TestNotifyAndSetViewBeforeRun(t *testing.T) {
	log := newFakeLog()
	log.add(row("s1", "cpu", 1, 1, "v", 1))
	rec := &recorder{}
	p := newTestPusher(log, rec, nil)
	s2 := replicaTarget("s2", uuid.New(), uuid.New())
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			p.SetView(uint64(i), view(s2))
			p.Notify()
			_ = p.Status()
			_ = p.Drained()
		})
	}
	wg.Wait()
	if p.loops.Load() != 0 || len(rec.all()) != 0 {
		t.Fatal("pushed before Run")
	}
	runPusher(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitConfirmed(ctx, 1, []string{"s2"}, 1); err != nil {
		t.Fatal(err)
	}
}

// TestRetryNowEndsBackoff: a target in a long backoff is pushed to at once
// after RetryNow (its server came back), while Notify (an insert) does not
// cut a backoff short.
func TestRetryNowEndsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		log.add(row("s1", "cpu", 1, 1, "v", 1))
		pid := uuid.New()
		s2 := replicaTarget("s2", uuid.New(), pid)
		down := atomic.Bool{}
		down.Store(true)
		var calls atomic.Int32
		rec := &recorder{fail: func(metadata.Target, wire.PushRequest) error {
			calls.Add(1)
			if down.Load() {
				return errDown
			}
			return nil
		}}
		p := newTestPusher(log, rec, func(c *Config) { c.RetryMin, c.RetryMax = time.Hour, time.Hour })
		p.SetView(1, view(s2))
		runPusher(t, p)
		synctest.Wait() // the first attempt failed; the target sleeps 30–60 min
		if calls.Load() != 1 {
			t.Fatalf("%d attempts, want 1", calls.Load())
		}
		down.Store(false)
		log.add(row("s1", "cpu", 2, 2, "v", 2))
		p.Notify()
		synctest.Wait()
		if calls.Load() != 1 {
			t.Fatalf("Notify cut the backoff short: %d attempts", calls.Load())
		}
		start := time.Now()
		p.RetryNow()
		if err := p.WaitConfirmed(context.Background(), 2, []string{"s2"}, 1); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited > time.Second {
			t.Fatalf("confirmed %v after RetryNow: the backoff was not ended", waited)
		}
	})
}

// TestPushBatchesBoundedByBytes: large rows are pushed in batches of about
// MaxBatchBytes (at least one row each), so a receiver's body limit never
// blocks replication; every row arrives, in order.
func TestPushBatchesBoundedByBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		big := strings.Repeat("x", 40<<10)
		for i := range 10 {
			r := row("s1", "cpu", int64(i), 1, "v", 0)
			r.Fields[0].Value = model.String(big)
			log.add(r)
		}
		pid := uuid.New()
		s2 := replicaTarget("s2", uuid.New(), pid)
		rec := &recorder{}
		p := newTestPusher(log, rec, func(c *Config) { c.BatchRows = 100; c.MaxBatchBytes = 100 << 10 })
		p.SetView(1, view(s2))
		runPusher(t, p)
		if err := p.WaitConfirmed(context.Background(), 10, []string{"s2"}, 1); err != nil {
			t.Fatal(err)
		}
		var rows int
		for _, push := range rec.all() {
			if len(push.req.Rows) > 150<<10 {
				t.Errorf("a push of %d bytes, over the 100 KiB bound by more than a row", len(push.req.Rows))
			}
			rows += push.req.Count
		}
		if rows != 10 || len(rec.all()) < 4 {
			t.Fatalf("%d rows in %d pushes, want 10 rows in at least 4 pushes", rows, len(rec.all()))
		}
	})
}

// TestSplitMarksAndWaitConfirmedChild: a split target gets a fixed mark (the
// synced sequence when it first appeared) reported by Status with
// MarkReached once confirmed past it; WaitConfirmedChild counts only the
// split targets of that child, and WaitConfirmed only replica targets.
func TestSplitMarksAndWaitConfirmedChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		for i := range 4 {
			log.add(row("s1", "cpu", int64(i), 1, "v", float64(i)))
		}
		parent, child1, child2 := uuid.New(), uuid.New(), uuid.New()
		mid := int64(2)
		c1s2 := metadata.Target{ServerID: "s2", PlacementID: uuid.New(), PartitionID: child1, End: &mid, Kind: metadata.TargetSplit}
		c1s3 := metadata.Target{ServerID: "s3", PlacementID: uuid.New(), PartitionID: child1, End: &mid, Kind: metadata.TargetSplit}
		c2s2 := metadata.Target{ServerID: "s2", PlacementID: uuid.New(), PartitionID: child2, Begin: &mid, Kind: metadata.TargetSplit}
		repl := replicaTarget("s3", uuid.New(), parent)
		down := atomic.Bool{}
		down.Store(true)
		rec := &recorder{fail: func(tg metadata.Target, _ wire.PushRequest) error {
			if tg.PlacementID == c1s3.PlacementID && down.Load() {
				return errDown
			}
			return nil
		}}
		p := newTestPusher(log, rec, nil)
		p.SetView(1, view(c1s2, c1s3, c2s2, repl))
		runPusher(t, p)
		log.add(row("s1", "cpu", 1, 2, "v", 9)) // after the mark, in child1's range
		p.Notify()
		if err := p.WaitConfirmedChild(context.Background(), 5, child1, []string{"s2", "s3"}, 1); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := p.WaitConfirmedChild(ctx, 5, child1, []string{"s2", "s3"}, 2); err == nil {
			t.Fatal("child1's failing server counted")
		}
		if err := p.WaitConfirmedChild(context.Background(), 5, child2, []string{"s2"}, 1); err != nil {
			t.Fatal(err)
		}
		// Replica targets and split targets are not mixed up.
		if err := p.WaitConfirmed(context.Background(), 5, []string{"s3"}, 1); err != nil {
			t.Fatal(err)
		}
		ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		if err := p.WaitConfirmed(ctx2, 5, []string{"s2"}, 1); err == nil {
			t.Fatal("a split target counted as a replica")
		}
		for _, st := range p.Status() {
			switch st.Placement {
			case c1s2.PlacementID, c2s2.PlacementID:
				if st.Mark != 4 || !st.MarkReached || st.Kind != string(metadata.TargetSplit) {
					t.Errorf("split target %+v: want mark 4, reached", st)
				}
			case c1s3.PlacementID:
				if st.Mark != 4 || st.MarkReached || st.PartitionID != child1 {
					t.Errorf("failing split target %+v: want mark 4, not reached", st)
				}
			case repl.PlacementID:
				if st.Mark != 0 || st.MarkReached {
					t.Errorf("replica target %+v has a mark", st)
				}
			}
		}
	})
}

// TestUnloadPushesEverything: an UNLOAD replica (a split's parent after
// finalize, a leaver, a rejoined server's old placement) pushes a replica
// target even the rows its server stamped: only the placement a row was
// pushed from is skipped, and that server may have stored them in another
// placement than the target.
func TestUnloadPushesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		log.add(row("s2", "cpu", 1, 1, "v", 1), row("s1", "cpu", 2, 1, "v", 2))
		rec := &recorder{}
		p := newTestPusher(log, rec, nil)
		s2 := replicaTarget("s2", uuid.New(), uuid.New())
		d := view(s2)
		d.Status = metadata.StatusUnload
		p.SetView(1, d)
		runPusher(t, p)
		if err := p.WaitConfirmed(context.Background(), 2, []string{"s2"}, 1); err != nil {
			t.Fatal(err)
		}
		var times []int64
		for _, ps := range rec.all() {
			for _, r := range ps.rows {
				times = append(times, r.Time)
			}
		}
		if fmt.Sprint(times) != "[1 2]" {
			t.Fatalf("an UNLOAD replica pushed times %v to s2, want [1 2] (s2's own row included)", times)
		}
	})
}

// TestWaitConfirmedChildAcrossFinalize: an insert into a splitting
// partition waits for the child's majority; when the split finalizes
// meanwhile, the parent replica sees the child's servers as replica
// targets (same placements), and the wait still ends once they confirm.
func TestWaitConfirmedChildAcrossFinalize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		log.add(row("s1", "cpu", 1, 1, "v", 1))
		child := uuid.New()
		split := func(server string, pl uuid.UUID, kind metadata.TargetKind) metadata.Target {
			return metadata.Target{ServerID: server, PlacementID: pl, PartitionID: child, Kind: kind}
		}
		pl2, pl3 := uuid.New(), uuid.New()
		var down atomic.Bool
		down.Store(true)
		rec := &recorder{fail: func(metadata.Target, wire.PushRequest) error {
			if down.Load() {
				return errDown
			}
			return nil
		}}
		p := newTestPusher(log, rec, nil)
		p.SetView(1, view(split("s2", pl2, metadata.TargetSplit), split("s3", pl3, metadata.TargetSplit)))
		runPusher(t, p)
		done := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // fake time: fails fast
		defer cancel()
		go func() { done <- p.WaitConfirmedChild(ctx, 1, child, []string{"s2", "s3"}, 2) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the wait ended (%v) before any child server confirmed", err)
		default:
		}
		p.SetView(2, view(split("s2", pl2, metadata.TargetReplica), split("s3", pl3, metadata.TargetJoining)))
		down.Store(false)
		p.RetryNow()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestSplitTailStream: a split target gets two streams. The backfill
// pushes what the replica held at the mark; the tail pushes what came
// after it, from the mark on, so an insert during the split is
// acknowledged as soon as the child has it, without waiting for the
// backfill of the whole partition. The mark is reached only by the
// backfill; once the split finalizes (the target becomes a replica
// target) the cursor continues from the tail's, without pushing again.
func TestSplitTailStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		for i := range 50 {
			log.add(row("s1", "cpu", int64(i), 1, "v", float64(i)))
		}
		child := uuid.New()
		spec := metadata.Target{ServerID: "s2", PlacementID: uuid.New(), PartitionID: child, Kind: metadata.TargetSplit}
		var backfillDown atomic.Bool
		backfillDown.Store(true)
		rec := &recorder{fail: func(_ metadata.Target, req wire.PushRequest) error {
			if backfillDown.Load() && req.LastSeq <= 50 {
				return errDown
			}
			return nil
		}}
		p := newTestPusher(log, rec, func(c *Config) { c.BatchRows = 10 })
		p.SetView(1, view(spec))
		runPusher(t, p)
		seq := log.add(row("s1", "cpu", 100, 2, "v", 100)) // during the split
		p.Notify()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // fake time
		defer cancel()
		if err := p.WaitConfirmedChild(ctx, seq, child, []string{"s2"}, 1); err != nil {
			t.Fatalf("an insert during the split waited for the backfill: %v", err)
		}
		if st := p.Status()[0]; st.MarkReached || st.Mark != 50 || st.Confirmed != 0 {
			t.Fatalf("status %+v: want mark 50 not reached, nothing confirmed yet", st)
		}
		backfillDown.Store(false)
		p.RetryNow()
		waitUntil(t, p, "the backfill", func() bool { return p.Status()[0].MarkReached })
		if st := p.Status()[0]; st.Confirmed != seq || st.Lag != 0 {
			t.Fatalf("status %+v after the backfill: want confirmed %d (the tail's), no lag", st, seq)
		}
		// Finalized: the same placement is now a replica target.
		pushes := len(rec.all())
		spec.Kind = metadata.TargetReplica
		p.SetView(2, view(spec))
		synctest.Wait()
		if got := log.Confirmed(spec.PlacementID); got != seq {
			t.Fatalf("cursor %d after the finalize, want %d adopted from the tail", got, seq)
		}
		if len(rec.all()) != pushes {
			t.Fatalf("%d pushes after the finalize, want none (the child has everything)", len(rec.all())-pushes)
		}
	})
}

// TestCatchUpSlotsBoundBackfills: with one catch-up slot, the backfills
// of two split targets never push at the same time, and both complete.
func TestCatchUpSlotsBoundBackfills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, a, b := twoSplitTargets(100)
		var inflight, most atomic.Int64
		rec := &recorder{fail: func(_ metadata.Target, req wire.PushRequest) error {
			if req.Count == 0 {
				return nil // the probe for sharers takes no slot
			}
			n := inflight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(10 * time.Millisecond) // fake time: lets the other target try
			inflight.Add(-1)
			return nil
		}}
		p := newTestPusher(log, rec, func(c *Config) { c.CatchUpBatchRows = 10; c.CatchUpSlots = make(chan struct{}, 1) })
		p.SetView(1, view(a, b))
		runPusher(t, p)
		waitUntil(t, p, "both backfills", func() bool {
			st := p.Status()
			return len(st) == 2 && st[0].MarkReached && st[1].MarkReached
		})
		if most.Load() != 1 {
			t.Fatalf("%d catch-up pushes at once, want 1", most.Load())
		}
		if n := len(rec.all()); n < 20 {
			t.Fatalf("%d pushes of 100 rows to two targets at 10 rows a push, want at least 20", n)
		}
	})
}

// TestWaitChildAfterMark: a row at or below a split target's mark counts
// at once (the finalize waits for the backfill of those); a row after it
// waits for the tail stream, never for the backfill.
func TestWaitChildAfterMark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newFakeLog()
		for i := range 20 {
			log.add(row("s1", "cpu", int64(i), 1, "v", float64(i)))
		}
		child := uuid.New()
		spec := metadata.Target{ServerID: "s2", PlacementID: uuid.New(), PartitionID: child, Kind: metadata.TargetSplit}
		var tailDown atomic.Bool
		tailDown.Store(true)
		rec := &recorder{fail: func(_ metadata.Target, req wire.PushRequest) error {
			if req.LastSeq <= 20 {
				return errDown // the backfill never gets through
			}
			if tailDown.Load() {
				return errDown
			}
			return nil
		}}
		p := newTestPusher(log, rec, nil)
		p.SetView(1, view(spec))
		runPusher(t, p)
		if err := p.WaitChildAfterMark(context.Background(), 15, child, []string{"s2"}, 1); err != nil {
			t.Fatalf("a row below the mark waited: %v", err)
		}
		seq := log.add(row("s1", "cpu", 50, 2, "v", 1))
		p.Notify()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // fake time
		defer cancel()
		if err := p.WaitChildAfterMark(ctx, seq, child, []string{"s2"}, 1); err == nil {
			t.Fatal("a row after the mark counted before the tail pushed it")
		}
		tailDown.Store(false)
		p.RetryNow()
		ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute) // fake time: fails fast
		defer cancel2()
		if err := p.WaitChildAfterMark(ctx2, seq, child, []string{"s2"}, 1); err != nil {
			t.Fatal(err)
		}
	})
}

// TestProbeHoldsNoCatchUpSlot: with one catch-up slot, a split target
// whose probe for sharers gets no answer (a receiver slow to answer) does
// not hold the slot: another target's backfill goes through meanwhile,
// and the first completes once answered.
func TestProbeHoldsNoCatchUpSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, a, b := twoSplitTargets(100)
		var probing atomic.Bool
		answer := make(chan struct{})
		rec := &recorder{fail: func(to metadata.Target, req wire.PushRequest) error {
			if to.PlacementID == a.PlacementID && req.Count == 0 && probing.CompareAndSwap(false, true) {
				<-answer // a's first probe waits for its answer
			}
			return nil
		}}
		p := newTestPusher(log, rec, func(c *Config) { c.CatchUpBatchRows = 10; c.CatchUpSlots = make(chan struct{}, 1) })
		p.SetView(1, view(a))
		runPusher(t, p)
		synctest.Wait()
		if !probing.Load() {
			t.Fatal("a's backfill sent no probe")
		}
		p.SetView(2, view(a, b))
		waitUntil(t, p, "b's backfill while a's probe waits", func() bool {
			for _, st := range p.Status() {
				if st.Placement == b.PlacementID {
					return st.MarkReached
				}
			}
			return false
		})
		close(answer)
		waitUntil(t, p, "both backfills", func() bool {
			st := p.Status()
			return len(st) == 2 && st[0].MarkReached && st[1].MarkReached
		})
	})
}

// twoSplitTargets returns a log of n rows (times 0 to n-1) and two split
// targets, on s2 and s3, of one child over the whole range.
func twoSplitTargets(n int) (*fakeLog, metadata.Target, metadata.Target) {
	log := newFakeLog()
	for i := range n {
		log.add(row("s1", "cpu", int64(i), 1, "v", float64(i)))
	}
	child := uuid.New()
	a := metadata.Target{ServerID: "s2", PlacementID: uuid.New(), PartitionID: child, Kind: metadata.TargetSplit}
	b := metadata.Target{ServerID: "s3", PlacementID: uuid.New(), PartitionID: child, Kind: metadata.TargetSplit}
	return log, a, b
}
