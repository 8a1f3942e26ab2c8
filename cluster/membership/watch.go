package membership

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/internal/backoff"
	"github.com/tsdb/tsdb/internal/etcdwatch"
)

// DefaultResync is how often a Watcher re-reads the whole list even when its
// watch looks healthy (DESIGN.md rule 10: a missed notification delays but
// never strands).
const DefaultResync = time.Minute

// Watcher follows the membership list and reports every change. It is made
// by Watch and stops when Watch's ctx ends (or on Stop).
type Watcher struct {
	prefix   string // servers prefix, e.g. "/tsdb/servers/"
	onChange func([]Info)
	log      *slog.Logger
	loop     *etcdwatch.Loop

	// Owned by the loop's goroutine.
	members   map[string]Info
	delivered []Info
	sent      bool // onChange was called at least once

	// Counters for tests and debugging (the loop's).
	gets      *atomic.Int64 // full reads of the prefix
	compacted *atomic.Int64 // watches refused with ErrCompacted
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
	w := &Watcher{prefix: ServersPrefix(prefix), onChange: onChange, log: cfg.logger}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.loop = etcdwatch.Start(ctx, etcdwatch.Config{
		Client:            cli,
		Prefix:            w.prefix,
		OnGet:             w.read,
		OnEvents:          w.apply,
		GetTimeout:        listTimeout,
		Resync:            cfg.resync,
		Backoff:           backoff.Policy{Base: 100 * time.Millisecond, Max: 5 * time.Second},
		ResumeOnStreamEnd: true,
		Logger:            w.log,
		Name:              "membership",
		What:              "the server list",
		BeforeWatch:       cfg.beforeWatch,
	})
	w.gets, w.compacted = &w.loop.Gets, &w.loop.Compacted
	return w
}

// Wait blocks until the Watcher has stopped (its ctx ended) and will call
// onChange no more.
func (w *Watcher) Wait() { w.loop.Wait() }

// Stop stops the Watcher and waits for it.
func (w *Watcher) Stop() { w.loop.Stop() }

// read replaces the member set with a fresh read of the prefix and
// delivers it if it changed.
func (w *Watcher) read(resp *clientv3.GetResponse) {
	infos, problems := decodeList(w.prefix, resp.Kvs)
	for _, p := range problems {
		w.log.Warn("membership: malformed server entry", "err", p)
	}
	w.members = make(map[string]Info, len(infos))
	for _, info := range infos {
		w.members[info.ID] = info
	}
	w.deliver()
}

// apply folds a batch of watch events into the member set and delivers it
// if it changed.
func (w *Watcher) apply(events []*clientv3.Event) {
	for _, ev := range events {
		if ev.Type == clientv3.EventTypeDelete {
			if id, ok := idFromKey(w.prefix, ev.Kv.Key); ok {
				delete(w.members, id)
			}
			continue
		}
		info, ok, err := decodeInfo(w.prefix, ev.Kv.Key, ev.Kv.Value)
		if err != nil {
			w.log.Warn("membership: malformed server entry", "err", err)
		}
		if ok {
			w.members[info.ID] = info
		}
	}
	w.deliver()
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

// breakStream ends the current watch stream as a network failure would;
// the Watcher resumes after its last applied revision. For tests.
func (w *Watcher) breakStream() bool { return w.loop.BreakStream() }
