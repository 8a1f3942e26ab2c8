package metadata

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/model"
)

// The TableWatcher follows the same resume-and-resync scheme as
// cluster/membership's Watcher over the server list. The two are kept
// separate on purpose: metadata imports nothing of this module but model
// (DESIGN.md section 11), and each delivers what its callers need (per-table
// events in revision order here, whole lists there).

// DefaultWatchResync is how often a TableWatcher re-reads every TableConfig
// even when its watch looks healthy (DESIGN.md section 4 and rule 10: a
// missed notification delays but never strands).
const DefaultWatchResync = 30 * time.Second

var (
	// errStreamEnded: the watch stream closed without an error while the
	// TableWatcher still runs.
	errStreamEnded = errors.New("metadata: watch stream ended")
	// errResync: the periodic full re-read is due.
	errResync = errors.New("metadata: periodic resync")
)

// TableEvent is one observed state of a table's TableConfig.
type TableEvent struct {
	// Name is the table name.
	Name string
	// Config is the table's config; zero when Deleted.
	Config TableConfig
	// Deleted says the table's key is gone.
	Deleted bool
	// ModRevision is the etcd revision of the observed state: the key's
	// ModRevision, or for a deletion the revision of the delete (seen on
	// the watch) or of the read that found the key gone.
	ModRevision int64
}

// etcdWatcher is the part of the etcd client a TableWatcher uses.
// *clientv3.Client satisfies it.
type etcdWatcher interface {
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
	Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan
}

// TableWatcher follows every TableConfig under a prefix and reports each
// state it observes. It is made by WatchTables and stops when WatchTables'
// ctx ends (or on Stop).
type TableWatcher struct {
	cli     etcdWatcher
	prefix  string // tables prefix, e.g. "/tsdb/tables/"
	onEvent func(TableEvent)
	cfg     watchConfig
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns

	// delivered maps each table to the ModRevision of the last event
	// delivered for it (deleted tables are removed). Owned by the run
	// goroutine.
	delivered map[string]int64

	// Counters for tests and debugging.
	gets      atomic.Int64 // full reads of the prefix
	compacted atomic.Int64 // watches refused with ErrCompacted

	mu struct {
		sync.Mutex
		// stopStream cancels the current watch stream (tests break it).
		stopStream context.CancelFunc
	}
}

// WatchOption configures WatchTables.
type WatchOption func(*watchConfig)

type watchConfig struct {
	logger *slog.Logger
	resync time.Duration
	// beforeWatch, a test hook, runs after each full read and before the
	// watch stream that follows it opens.
	beforeWatch func()
}

// WithWatchLogger sets the TableWatcher's logger (default: discard).
func WithWatchLogger(l *slog.Logger) WatchOption {
	return func(c *watchConfig) { c.logger = l }
}

// WithResync sets the period of the full re-read (default
// DefaultWatchResync); d <= 0 turns it off.
func WithResync(d time.Duration) WatchOption {
	return func(c *watchConfig) { c.resync = d }
}

// WatchTables follows the TableConfigs under prefix ("" means "/tsdb/"):
// it Gets the tables prefix (TablesPrefix(prefix)), delivers one event per
// table, then watches from that read's revision + 1 and delivers every PUT
// and DELETE in revision order. On any watch error, a closed stream, or
// ErrCompacted, it Gets the prefix again and resumes from the new revision,
// delivering an event for each table whose ModRevision differs from the
// last one delivered and a Deleted event for each table gone meanwhile. It
// also re-Gets every resync interval (WithResync) with the same diff rule,
// so a missed notification delays but never strands (DESIGN.md rule 10).
// Values that fail DecodeTableConfig, keys that are not a table name, and
// values whose name differs from their key are logged and skipped. onEvent
// is called from one goroutine, never concurrently, in order; it should
// return quickly, since the watch waits for it. Failed Gets are retried
// with backoff and jitter until ctx ends. cli and onEvent are required.
func WatchTables(ctx context.Context, cli *clientv3.Client, prefix string, onEvent func(TableEvent), opts ...WatchOption) *TableWatcher {
	if cli == nil || onEvent == nil {
		panic("metadata: WatchTables needs a client and an onEvent func")
	}
	return watchTables(ctx, cli, prefix, onEvent, opts...)
}

func watchTables(ctx context.Context, cli etcdWatcher, prefix string, onEvent func(TableEvent), opts ...WatchOption) *TableWatcher {
	cfg := watchConfig{resync: DefaultWatchResync}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &TableWatcher{
		cli:       cli,
		prefix:    TablesPrefix(prefix),
		onEvent:   onEvent,
		cfg:       cfg,
		cancel:    cancel,
		done:      make(chan struct{}),
		delivered: make(map[string]int64),
	}
	go w.run(ctx)
	return w
}

// Wait blocks until the TableWatcher has stopped (its ctx ended) and will
// call onEvent no more.
func (w *TableWatcher) Wait() { <-w.done }

// Stop stops the TableWatcher and waits for it.
func (w *TableWatcher) Stop() {
	w.cancel()
	w.Wait()
}

// run is the TableWatcher's goroutine: read, follow, repeat.
func (w *TableWatcher) run(ctx context.Context) {
	defer close(w.done)
	defer w.cancel()
	failures := 0
	for {
		rev, err := w.read(ctx)
		if err == nil {
			var progress bool
			progress, err = w.follow(ctx, rev)
			if progress {
				failures = 0
			}
		}
		if ctx.Err() != nil {
			return
		}
		switch {
		case errors.Is(err, errResync):
			continue
		case errors.Is(err, rpctypes.ErrCompacted):
			w.compacted.Add(1)
			w.cfg.logger.Info("metadata: table watch history compacted; re-reading the tables", "rev", rev)
			continue
		case errors.Is(err, errStreamEnded):
			w.cfg.logger.Info("metadata: table watch stream ended; re-reading the tables", "rev", rev)
		default:
			w.cfg.logger.Warn("metadata: table watch failed; re-reading the tables", "err", err)
		}
		if !sleepBackoff(ctx, failures) {
			return
		}
		failures++
	}
}

// read Gets the whole prefix, delivers the differences from what was
// delivered, and returns the read's revision.
func (w *TableWatcher) read(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, defaultEtcdTimeout)
	defer cancel()
	resp, err := w.cli.Get(ctx, w.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	w.gets.Add(1)
	present := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		name := strings.TrimPrefix(string(kv.Key), w.prefix)
		present[name] = true
		if rev, ok := w.delivered[name]; ok && rev == kv.ModRevision {
			continue
		}
		if ev, ok := w.decode(kv); ok {
			w.deliver(ev)
		}
	}
	var gone []string
	for name := range w.delivered {
		if !present[name] {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	for _, name := range gone {
		w.deliver(TableEvent{Name: name, Deleted: true, ModRevision: resp.Header.Revision})
	}
	return resp.Header.Revision, nil
}

// follow watches the prefix from rev+1 and delivers each event until the
// stream ends, fails, or the resync is due. progress says whether any
// event arrived.
func (w *TableWatcher) follow(ctx context.Context, rev int64) (progress bool, err error) {
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
	wch := w.cli.Watch(wctx, w.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for {
		select {
		case <-resync:
			return progress, errResync
		case wr, ok := <-wch:
			if !ok || (wctx.Err() != nil && ctx.Err() == nil) {
				return progress, errStreamEnded
			}
			if err := wr.Err(); err != nil {
				return progress, err
			}
			for _, ev := range wr.Events {
				w.apply(ev)
				progress = true
			}
		}
	}
}

// apply delivers one watch event.
func (w *TableWatcher) apply(ev *clientv3.Event) {
	kv := ev.Kv
	if ev.Type == mvccpb.DELETE {
		name := strings.TrimPrefix(string(kv.Key), w.prefix)
		if _, ok := w.delivered[name]; ok {
			w.deliver(TableEvent{Name: name, Deleted: true, ModRevision: kv.ModRevision})
		}
		return
	}
	name := strings.TrimPrefix(string(kv.Key), w.prefix)
	if rev, ok := w.delivered[name]; ok && rev == kv.ModRevision {
		return
	}
	if e, ok := w.decode(kv); ok {
		w.deliver(e)
	}
}

// decode turns a key and value under the prefix into an event; it logs and
// refuses what is not a valid TableConfig of the table its key names.
func (w *TableWatcher) decode(kv *mvccpb.KeyValue) (TableEvent, bool) {
	name := strings.TrimPrefix(string(kv.Key), w.prefix)
	if err := model.ValidateTableName(name); err != nil {
		w.cfg.logger.Warn("metadata: skipping a key that names no table", "key", string(kv.Key), "err", err)
		return TableEvent{}, false
	}
	cfg, err := DecodeTableConfig(kv.Value)
	if err != nil {
		w.cfg.logger.Warn("metadata: skipping a malformed TableConfig", "key", string(kv.Key), "mod_revision", kv.ModRevision, "err", err)
		return TableEvent{}, false
	}
	if cfg.Name != name {
		w.cfg.logger.Warn("metadata: skipping a TableConfig stored under another name", "key", string(kv.Key), "name", cfg.Name)
		return TableEvent{}, false
	}
	return TableEvent{Name: name, Config: cfg, ModRevision: kv.ModRevision}, true
}

// deliver records ev as the last state delivered for its table and calls
// onEvent.
func (w *TableWatcher) deliver(ev TableEvent) {
	if ev.Deleted {
		delete(w.delivered, ev.Name)
	} else {
		w.delivered[ev.Name] = ev.ModRevision
	}
	w.onEvent(ev)
}

// setStream records the cancel func of the current watch stream.
func (w *TableWatcher) setStream(cancel context.CancelFunc) {
	w.mu.Lock()
	w.mu.stopStream = cancel
	w.mu.Unlock()
}

// breakStream ends the current watch stream as a network failure would;
// the TableWatcher re-reads and resumes. For tests.
func (w *TableWatcher) breakStream() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.stopStream == nil {
		return false
	}
	w.mu.stopStream()
	return true
}
