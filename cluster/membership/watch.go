package membership

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultResync is how often a Watcher re-reads the whole list even when its
// watch looks healthy (DESIGN.md rule 10: a missed notification delays but
// never strands).
const DefaultResync = time.Minute

var (
	// errStreamEnded: the watch stream closed without an error while the
	// Watcher still runs; it resumes after the last revision it applied.
	errStreamEnded = errors.New("membership: watch stream ended")
	// errResync: the periodic full re-read is due.
	errResync = errors.New("membership: periodic resync")
)

// Watcher follows the membership list and reports every change. It is made
// by Watch and stops when Watch's ctx ends (or on Stop).
type Watcher struct {
	cli      *clientv3.Client
	prefix   string // servers prefix, e.g. "/tsdb/servers/"
	onChange func([]Info)
	cfg      watchConfig
	cancel   context.CancelFunc
	done     chan struct{} // closed when run returns

	// Owned by the run goroutine.
	members   map[string]Info
	delivered []Info
	sent      bool // onChange was called at least once

	// Counters for tests and debugging.
	gets      atomic.Int64 // full reads of the prefix
	compacted atomic.Int64 // watches refused with ErrCompacted

	mu struct {
		sync.Mutex
		// stopStream cancels the current watch stream (tests break it).
		stopStream context.CancelFunc
	}
}

// WatchOption configures Watch.
type WatchOption func(*watchConfig)

type watchConfig struct {
	logger *slog.Logger
	resync time.Duration
	// beforeWatch, a test hook, runs before every watch stream is opened.
	beforeWatch func()
}

// WithLogger sets the Watcher's logger (default: discard).
func WithLogger(l *slog.Logger) WatchOption {
	return func(c *watchConfig) { c.logger = l }
}

// WithResync sets the period of the full re-read (default DefaultResync);
// d <= 0 turns it off.
func WithResync(d time.Duration) WatchOption {
	return func(c *watchConfig) { c.resync = d }
}

// Watch follows the servers registered under prefix ("" means "/tsdb/").
// It reads the list (List), calls onChange with it, then watches from the
// read's revision + 1 and calls onChange with the full new list after every
// batch of changes. When the watch stream ends it resumes after the last
// revision applied; if etcd compacted that history away (ErrCompacted), or
// after any other watch error, and every DefaultResync, it reads the list
// again and resumes from there (DESIGN.md rule 10). onChange is called only
// when the list differs from the one last delivered (the first list is
// always delivered), from one goroutine, never concurrently; it gets its own
// copy and should return quickly, since the watch waits for it. Failed
// reads are retried with backoff and jitter until ctx ends. cli and
// onChange are required.
func Watch(ctx context.Context, cli *clientv3.Client, prefix string, onChange func([]Info), opts ...WatchOption) *Watcher {
	if cli == nil || onChange == nil {
		panic("membership: Watch needs a client and an onChange func")
	}
	cfg := watchConfig{resync: DefaultResync}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{
		cli:      cli,
		prefix:   ServersPrefix(prefix),
		onChange: onChange,
		cfg:      cfg,
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	go w.run(ctx)
	return w
}

// Wait blocks until the Watcher has stopped (its ctx ended) and will call
// onChange no more.
func (w *Watcher) Wait() { <-w.done }

// Stop stops the Watcher and waits for it.
func (w *Watcher) Stop() {
	w.cancel()
	w.Wait()
}

// run is the Watcher's goroutine: read, deliver, follow, repeat.
func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	defer w.cancel()
	bo := backoff{base: 100 * time.Millisecond, max: 5 * time.Second}
	var rev int64
	needGet := true
	for {
		if needGet {
			r, err := w.read(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				w.cfg.logger.Warn("membership: reading the server list failed; retrying", "err", err)
				if !bo.wait(ctx) {
					return
				}
				continue
			}
			rev, needGet = r, false
		}
		progress, err := w.follow(ctx, &rev)
		if ctx.Err() != nil {
			return
		}
		if progress {
			bo.reset()
		}
		wait := !progress
		switch {
		case errors.Is(err, errStreamEnded):
		case errors.Is(err, errResync):
			needGet, wait = true, false
		case errors.Is(err, rpctypes.ErrCompacted):
			w.compacted.Add(1)
			w.cfg.logger.Info("membership: watch history compacted; re-reading the server list", "rev", rev)
			needGet, wait = true, false
		default:
			w.cfg.logger.Warn("membership: watch failed; re-reading the server list", "err", err)
			needGet = true
		}
		if wait && !bo.wait(ctx) {
			return
		}
	}
}

// read replaces the member set with a fresh List, delivers it if it
// changed, and returns its revision.
func (w *Watcher) read(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultCallTimeout)
	defer cancel()
	infos, rev, problems, err := list(ctx, w.cli, w.prefix)
	if err != nil {
		return 0, err
	}
	w.gets.Add(1)
	for _, p := range problems {
		w.cfg.logger.Warn("membership: malformed server entry", "err", p)
	}
	w.members = make(map[string]Info, len(infos))
	for _, info := range infos {
		w.members[info.ID] = info
	}
	w.deliver()
	return rev, nil
}

// follow watches the prefix from *rev+1, applying and delivering each batch
// of events and advancing *rev, until the stream ends, fails or the resync
// is due. progress says whether any event arrived.
func (w *Watcher) follow(ctx context.Context, rev *int64) (progress bool, err error) {
	if w.cfg.beforeWatch != nil {
		w.cfg.beforeWatch()
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	w.setStream(cancel)
	defer w.setStream(nil)
	var resync <-chan time.Time
	if w.cfg.resync > 0 {
		t := time.NewTimer(w.cfg.resync)
		defer t.Stop()
		resync = t.C
	}
	wch := w.cli.Watch(wctx, w.prefix, clientv3.WithPrefix(), clientv3.WithRev(*rev+1))
	for {
		select {
		case <-resync:
			return progress, errResync
		case wr, ok := <-wch:
			if wctx.Err() != nil && ctx.Err() == nil {
				return progress, errStreamEnded // broken on purpose (breakStream)
			}
			if !ok {
				return progress, errStreamEnded
			}
			if err := wr.Err(); err != nil {
				return progress, err
			}
			if len(wr.Events) == 0 {
				continue
			}
			w.apply(wr.Events, rev)
			progress = true
			w.deliver()
		}
	}
}

// apply folds watch events into the member set and advances *rev.
func (w *Watcher) apply(events []*clientv3.Event, rev *int64) {
	for _, ev := range events {
		*rev = max(*rev, ev.Kv.ModRevision)
		if ev.Type == clientv3.EventTypeDelete {
			if id, ok := idFromKey(w.prefix, ev.Kv.Key); ok {
				delete(w.members, id)
			}
			continue
		}
		info, ok, err := decodeInfo(w.prefix, ev.Kv.Key, ev.Kv.Value)
		if err != nil {
			w.cfg.logger.Warn("membership: malformed server entry", "err", err)
		}
		if ok {
			w.members[info.ID] = info
		}
	}
}

// deliver calls onChange with the sorted member list if it differs from the
// last one delivered (always the first time).
func (w *Watcher) deliver() {
	infos := slices.Collect(maps.Values(w.members))
	sortInfos(infos)
	if w.sent && slices.EqualFunc(infos, w.delivered, Info.equal) {
		return
	}
	w.sent, w.delivered = true, infos
	w.onChange(slices.Clone(infos))
}

// setStream records the cancel func of the current watch stream.
func (w *Watcher) setStream(cancel context.CancelFunc) {
	w.mu.Lock()
	w.mu.stopStream = cancel
	w.mu.Unlock()
}

// breakStream ends the current watch stream as a network failure would;
// the Watcher resumes after its last applied revision. For tests.
func (w *Watcher) breakStream() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.stopStream == nil {
		return false
	}
	w.mu.stopStream()
	return true
}
