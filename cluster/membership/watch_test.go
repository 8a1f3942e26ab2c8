package membership

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// withBeforeWatch sets the test hook run before each watch stream opens.
func withBeforeWatch(f func()) WatchOption {
	return func(c *watchConfig) { c.beforeWatch = f }
}

// streamOpen reports whether the Watcher has a watch stream open.
func (w *Watcher) streamOpen() bool { return w.loop.StreamOpen() }

// waitStopped waits for w to stop, failing after waitFor.
func waitStopped(t *testing.T, w *Watcher) {
	t.Helper()
	ch := make(chan struct{})
	go func() {
		w.Wait()
		close(ch)
	}()
	closed(t, "Watcher.Wait", ch)
}

var s1Summary = Summary{Partitions: 1, Bytes: 10, InsertRowsPerSec: 2.5}

func TestWatchReportsChanges(t *testing.T) {
	_, cli := startEtcd(t)
	mustRegister(t, testConfig(cli, "s1"))
	var rec recorder
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	w := Watch(ctx, cli, "", rec.onChange)

	eventually(t, "initial list", func() bool { return rec.has(map[string]Summary{"s1": s1Summary}) })

	var rows atomic.Int64
	cfg := testConfig(cli, "s2")
	cfg.RefreshEvery = 20 * time.Millisecond
	cfg.Summary = func() Summary { return Summary{Partitions: 2, InsertRowsPerSec: float64(rows.Load())} }
	r2 := mustRegister(t, cfg)
	eventually(t, "s2 registered", func() bool {
		return rec.has(map[string]Summary{"s1": s1Summary, "s2": {Partitions: 2}})
	})
	rows.Store(99)
	eventually(t, "s2 summary update", func() bool {
		return rec.has(map[string]Summary{"s1": s1Summary, "s2": {Partitions: 2, InsertRowsPerSec: 99}})
	})
	if err := r2.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "s2 deregistered", func() bool { return rec.has(map[string]Summary{"s1": s1Summary}) })

	cancel()
	waitStopped(t, w)
	calls, last := rec.snapshot()
	if ids := ids(last); len(ids) != 1 || ids[0] != "s1" {
		t.Fatalf("last list %v", ids)
	}
	// Nothing is delivered after Wait returned.
	if _, err := cli.Put(testCtx(t), ServerKey("", "s9"), `{"id":"s9"}`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if after, _ := rec.snapshot(); after != calls {
		t.Fatalf("onChange called %d times after Wait", after-calls)
	}
	if rec.race {
		t.Fatal("onChange called concurrently")
	}
}

func TestWatchRecoversFromCompaction(t *testing.T) {
	_, cli := startEtcd(t)
	r1 := mustRegister(t, testConfig(cli, "s1"))

	var hold atomic.Bool
	gate, blocked := make(chan struct{}), make(chan struct{})
	var blockOnce sync.Once
	hook := func() {
		if hold.Load() {
			blockOnce.Do(func() { close(blocked) })
			<-gate
		}
	}
	var rec recorder
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	w := Watch(ctx, cli, "", rec.onChange, withBeforeWatch(hook), WithResync(0))
	eventually(t, "initial list", func() bool { return rec.has(map[string]Summary{"s1": s1Summary}) })
	eventually(t, "watch stream open", w.streamOpen)

	// Break the stream and hold the Watcher before it re-opens, as a long
	// network failure would; meanwhile the membership changes and etcd
	// compacts its history past the Watcher's revision.
	hold.Store(true)
	eventually(t, "stream broken", func() bool { return isClosed(blocked) || w.breakStream() })
	closed(t, "Watcher held before re-watching", blocked)
	mustRegister(t, testConfig(cli, "s2"))
	if err := r1.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(testCtx(t), "compact-marker")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(testCtx(t), resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	hold.Store(false)
	close(gate)

	eventually(t, "list after compaction", func() bool { return rec.has(map[string]Summary{"s2": s1Summary}) })
	if w.compacted.Load() == 0 {
		t.Fatal("the resumed watch did not hit ErrCompacted")
	}
	if w.gets.Load() < 2 {
		t.Fatalf("%d full reads, want a re-read after compaction", w.gets.Load())
	}
	// And it keeps following changes.
	mustRegister(t, testConfig(cli, "s3"))
	eventually(t, "s3 after recovery", func() bool {
		return rec.has(map[string]Summary{"s2": s1Summary, "s3": s1Summary})
	})
	cancel()
	waitStopped(t, w)
}

func TestWatchResumesBrokenStream(t *testing.T) {
	_, cli := startEtcd(t)
	mustRegister(t, testConfig(cli, "s1"))
	var rec recorder
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	w := Watch(ctx, cli, "", rec.onChange, WithResync(0))
	eventually(t, "initial list", func() bool { return rec.has(map[string]Summary{"s1": s1Summary}) })
	eventually(t, "stream broken", w.breakStream)
	mustRegister(t, testConfig(cli, "s2"))
	eventually(t, "s2 after the break", func() bool {
		return rec.has(map[string]Summary{"s1": s1Summary, "s2": s1Summary})
	})
	if got := w.gets.Load(); got != 1 {
		t.Fatalf("%d full reads; a broken stream resumes from its revision without one", got)
	}
	cancel()
	waitStopped(t, w)
}

func TestWatchPeriodicResync(t *testing.T) {
	_, cli := startEtcd(t)
	mustRegister(t, testConfig(cli, "s1"))
	var rec recorder
	w := Watch(testCtx(t), cli, "", rec.onChange, WithResync(20*time.Millisecond))
	defer w.Stop()
	eventually(t, "three resyncs", func() bool { return w.gets.Load() >= 4 })
	// Re-reading an unchanged list delivers nothing new.
	if calls, _ := rec.snapshot(); calls != 1 {
		t.Fatalf("onChange called %d times for an unchanged list", calls)
	}
	w.Stop()
	waitStopped(t, w)
}

func TestWatchStopsWithoutEtcd(t *testing.T) {
	stopEtcd, cli := startEtcd(t)
	var hold atomic.Bool
	gate, blocked := make(chan struct{}), make(chan struct{})
	var blockOnce sync.Once
	hook := func() {
		if hold.Load() {
			blockOnce.Do(func() { close(blocked) })
			<-gate
		}
	}
	var rec recorder
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	w := Watch(ctx, cli, "", rec.onChange, withBeforeWatch(hook))
	eventually(t, "initial (empty) list", func() bool { calls, _ := rec.snapshot(); return calls == 1 })
	eventually(t, "watch stream open", w.streamOpen)

	// Stop etcd while no watch stream is open (an open one makes etcd's
	// shutdown wait for its request timeout), then let the Watcher try to
	// watch a dead etcd and cancel it there.
	hold.Store(true)
	eventually(t, "stream broken", func() bool { return isClosed(blocked) || w.breakStream() })
	closed(t, "Watcher held before re-watching", blocked)
	stopEtcd()
	hold.Store(false)
	close(gate)
	eventually(t, "watch on a dead etcd", w.streamOpen)
	cancel()
	waitStopped(t, w)
}

func TestListAndWatchMalformedEntries(t *testing.T) {
	_, cli := startEtcd(t)
	ctx := testCtx(t)
	for key, val := range map[string]string{
		"/tsdb/servers/bad":       "not json",
		"/tsdb/servers/liar":      `{"id":"other","addr":"a:1"}`,
		"/tsdb/servers/deep/path": `{"id":"deep"}`, // not a server key
		"/tsdb/serversx":          `{"id":"x"}`,    // outside the prefix
	} {
		if _, err := cli.Put(ctx, key, val); err != nil {
			t.Fatal(err)
		}
	}
	infos := mustList(t, cli)
	if got := ids(infos); len(got) != 2 || got[0] != "bad" || got[1] != "liar" || infos[1].Addr != "a:1" {
		t.Fatalf("List = %+v", infos)
	}
	var rec recorder
	var logs lockedBuffer
	w := Watch(ctx, cli, "/tsdb", rec.onChange, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	defer w.Stop()
	eventually(t, "malformed entries listed", func() bool {
		return rec.has(map[string]Summary{"bad": {}, "liar": {}})
	})
	if got := logs.String(); !strings.Contains(got, "/tsdb/servers/bad") || !strings.Contains(got, "/tsdb/servers/liar") {
		t.Fatalf("malformed entries not logged:\n%s", got)
	}
	if _, err := cli.Delete(ctx, "/tsdb/servers/bad"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bad removed", func() bool { return rec.has(map[string]Summary{"liar": {}}) })
}

func TestListPrefixes(t *testing.T) {
	_, cli := startEtcd(t)
	cfg := testConfig(cli, "s1")
	cfg.Prefix = "/other"
	mustRegister(t, cfg)
	if infos := mustList(t, cli); len(infos) != 0 {
		t.Fatalf("default prefix lists %+v", infos)
	}
	infos, rev, err := List(testCtx(t), cli, "/other/")
	if err != nil || len(infos) != 1 || infos[0].ID != "s1" || rev == 0 {
		t.Fatalf("List(/other/) = %+v, %d, %v", infos, rev, err)
	}
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
