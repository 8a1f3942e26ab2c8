// Package etcdwatch is the one Get→Watch→resync loop of the module: it
// follows every key under an etcd prefix and hands what it sees to its
// owner, which keeps its own view. cluster/membership (the server list) and
// metadata (the TableConfigs) both follow their prefix through it.
//
// The loop Gets the prefix and calls OnGet with the answer, then watches
// from that read's revision + 1 and calls OnEvents with every non-empty
// batch of events, in revision order. It Gets the prefix again (and calls
// OnGet again) when:
//
//   - the resync period (Config.Resync) passes, even while the watch looks
//     healthy, so that a missed notification delays but never strands
//     (DESIGN.md rule 10);
//   - etcd compacted away the history the watch would resume from
//     (ErrCompacted);
//   - the watch fails with any other error;
//   - the stream closes without an error, unless Config.ResumeOnStreamEnd,
//     in which case the watch re-opens after the last revision it saw.
//
// A failed Get, and a watch that ended or failed without delivering any
// event, are followed by a wait from Config.Backoff (equal jitter, growing
// until the next event resets it), so a dead etcd is polled gently. The
// resync and compaction cases re-read at once.
//
// Invariants: OnGet and OnEvents are called from the loop's one goroutine,
// never concurrently, and never after Wait returned; no revision is
// skipped between a Get and the watch that follows it (the watch starts at
// the Get's revision + 1, or after the last event applied); the loop stops
// when its ctx ends or on Stop. The package imports only the etcd client
// and the standard library (and internal/backoff), so metadata, a bottom
// layer, can use it.
package etcdwatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/internal/backoff"
)

// Client is the part of the etcd client the loop uses. *clientv3.Client
// satisfies it; tests wrap it to lose notifications.
type Client interface {
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
	Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan
}

// Config configures Start. Client, Prefix, OnGet and OnEvents are required.
type Config struct {
	Client Client
	// Prefix is the key prefix followed, e.g. "/tsdb/servers/".
	Prefix string
	// OnGet receives every full read of Prefix.
	OnGet func(resp *clientv3.GetResponse)
	// OnEvents receives each non-empty batch of watch events.
	OnEvents func(events []*clientv3.Event)
	// GetTimeout bounds one Get (ctx's deadline, when earlier, too).
	GetTimeout time.Duration
	// Resync is the period of the full re-read; <= 0 turns it off.
	Resync time.Duration
	// Backoff paces retries after failures (see the package doc).
	Backoff backoff.Policy
	// ResumeOnStreamEnd re-opens a stream that closed without an error
	// after the last revision seen, without a Get.
	ResumeOnStreamEnd bool
	// Logger receives the loop's warnings (nil: discard). Name and What
	// label them: "<Name>: watch failed; re-reading <What>".
	Logger     *slog.Logger
	Name, What string
	// BeforeWatch, a test hook, runs before every watch stream opens.
	BeforeWatch func()
}

var (
	// errStreamEnded: the watch stream closed without an error.
	errStreamEnded = errors.New("etcdwatch: watch stream ended")
	// errResync: the periodic full re-read is due.
	errResync = errors.New("etcdwatch: periodic resync")
)

// Loop is a running Get→Watch→resync loop, made by Start.
type Loop struct {
	cfg    Config
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	// Counters for tests and debugging.
	Gets      atomic.Int64 // full reads of the prefix
	Compacted atomic.Int64 // watches refused with ErrCompacted

	mu struct {
		sync.Mutex
		// stopStream cancels the current watch stream (tests break it).
		stopStream context.CancelFunc
	}
}

// Start runs the loop on a new goroutine until ctx ends or Stop.
func Start(ctx context.Context, cfg Config) *Loop {
	if cfg.Client == nil || cfg.OnGet == nil || cfg.OnEvents == nil {
		panic("etcdwatch: Start needs a client, OnGet and OnEvents")
	}
	l := &Loop{cfg: cfg, log: cfg.Logger, done: make(chan struct{})}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	ctx, l.cancel = context.WithCancel(ctx)
	go l.run(ctx)
	return l
}

// Wait blocks until the loop has stopped and will call its callbacks no
// more.
func (l *Loop) Wait() { <-l.done }

// Stop stops the loop and waits for it.
func (l *Loop) Stop() {
	l.cancel()
	l.Wait()
}

// run is the loop's goroutine: read, follow, repeat.
func (l *Loop) run(ctx context.Context) {
	defer close(l.done)
	defer l.cancel()
	bo := backoff.Backoff{Policy: l.cfg.Backoff}
	var rev int64
	needGet := true
	for {
		if needGet {
			r, err := l.get(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				l.log.Warn(l.cfg.Name+": reading "+l.cfg.What+" failed; retrying", "err", err)
				if !bo.Wait(ctx) {
					return
				}
				continue
			}
			rev, needGet = r, false
		}
		progress, err := l.follow(ctx, &rev)
		if ctx.Err() != nil {
			return
		}
		if progress {
			bo.Reset()
		}
		needGet = true
		switch {
		case errors.Is(err, errResync):
			continue
		case errors.Is(err, rpctypes.ErrCompacted):
			l.Compacted.Add(1)
			l.log.Info(l.cfg.Name+": watch history compacted; re-reading "+l.cfg.What, "rev", rev)
			continue
		case errors.Is(err, errStreamEnded) && l.cfg.ResumeOnStreamEnd:
			needGet = false
		case errors.Is(err, errStreamEnded):
			l.log.Info(l.cfg.Name+": watch stream ended; re-reading "+l.cfg.What, "rev", rev)
		default:
			l.log.Warn(l.cfg.Name+": watch failed; re-reading "+l.cfg.What, "err", err)
		}
		if !progress && !bo.Wait(ctx) {
			return
		}
	}
}

// get reads the whole prefix, hands it to OnGet and returns its revision.
func (l *Loop) get(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.GetTimeout)
	defer cancel()
	resp, err := l.cfg.Client.Get(ctx, l.cfg.Prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("get %s: %w", l.cfg.Prefix, err)
	}
	l.Gets.Add(1)
	l.cfg.OnGet(resp)
	return resp.Header.Revision, nil
}

// follow watches the prefix from *rev+1, handing each batch of events to
// OnEvents and advancing *rev, until the stream ends, fails or the resync
// is due. progress says whether any event arrived.
func (l *Loop) follow(ctx context.Context, rev *int64) (progress bool, err error) {
	if l.cfg.BeforeWatch != nil {
		l.cfg.BeforeWatch()
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	l.setStream(cancel)
	defer l.setStream(nil)
	var resync <-chan time.Time
	if l.cfg.Resync > 0 {
		t := time.NewTimer(l.cfg.Resync)
		defer t.Stop()
		resync = t.C
	}
	wch := l.cfg.Client.Watch(wctx, l.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithRev(*rev+1))
	for {
		select {
		case <-resync:
			return progress, errResync
		case wr, ok := <-wch:
			if !ok || (wctx.Err() != nil && ctx.Err() == nil) {
				return progress, errStreamEnded // closed, or broken on purpose (BreakStream)
			}
			if err := wr.Err(); err != nil {
				return progress, err
			}
			if len(wr.Events) == 0 {
				continue
			}
			for _, ev := range wr.Events {
				*rev = max(*rev, ev.Kv.ModRevision)
			}
			progress = true
			l.cfg.OnEvents(wr.Events)
		}
	}
}

// setStream records the cancel func of the current watch stream.
func (l *Loop) setStream(cancel context.CancelFunc) {
	l.mu.Lock()
	l.mu.stopStream = cancel
	l.mu.Unlock()
}

// BreakStream ends the current watch stream as a network failure would,
// and reports whether one was open. For tests.
func (l *Loop) BreakStream() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.stopStream == nil {
		return false
	}
	l.mu.stopStream()
	return true
}

// StreamOpen reports whether a watch stream is open. For tests.
func (l *Loop) StreamOpen() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.stopStream != nil
}
