package metadata

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/internal/etcdwatch"
	"github.com/tsdb/tsdb/model"
)

// The TableWatcher runs the module's one Get→Watch→resync loop
// (internal/etcdwatch, shared with cluster/membership's Watcher) and keeps
// here only what tables need: per-table events in revision order, and the
// diff of each re-read against what was delivered.

// DefaultWatchResync is how often a TableWatcher re-reads every TableConfig
// even when its watch looks healthy (DESIGN.md section 4 and rule 10: a
// missed notification delays but never strands).
const DefaultWatchResync = 30 * time.Second

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
type etcdWatcher = etcdwatch.Client

// TableWatcher follows every TableConfig under a prefix and reports each
// state it observes. It is made by WatchTables and stops when WatchTables'
// ctx ends (or on Stop).
type TableWatcher struct {
	prefix  string // tables prefix, e.g. "/tsdb/tables/"
	onEvent func(TableEvent)
	log     *slog.Logger
	loop    *etcdwatch.Loop

	// delivered maps each table to the ModRevision of the last event
	// delivered for it (deleted tables are removed). Owned by the loop's
	// goroutine.
	delivered map[string]int64

	// Counters for tests and debugging (the loop's).
	gets      *atomic.Int64 // full reads of the prefix
	compacted *atomic.Int64 // watches refused with ErrCompacted
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
	w := &TableWatcher{
		prefix:    TablesPrefix(prefix),
		onEvent:   onEvent,
		log:       cfg.logger,
		delivered: make(map[string]int64),
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.loop = etcdwatch.Start(ctx, etcdwatch.Config{
		Client:      cli,
		Prefix:      w.prefix,
		OnGet:       w.read,
		OnEvents:    w.apply,
		GetTimeout:  defaultEtcdTimeout,
		Resync:      cfg.resync,
		Backoff:     retryBackoff,
		Logger:      w.log,
		Name:        "metadata",
		What:        "the tables",
		BeforeWatch: cfg.beforeWatch,
	})
	w.gets, w.compacted = &w.loop.Gets, &w.loop.Compacted
	return w
}

// Wait blocks until the TableWatcher has stopped (its ctx ended) and will
// call onEvent no more.
func (w *TableWatcher) Wait() { w.loop.Wait() }

// Stop stops the TableWatcher and waits for it.
func (w *TableWatcher) Stop() { w.loop.Stop() }

// read delivers the differences between a full read of the prefix and
// what was delivered.
func (w *TableWatcher) read(resp *clientv3.GetResponse) {
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
}

// apply delivers a batch of watch events, in order.
func (w *TableWatcher) apply(events []*clientv3.Event) {
	for _, ev := range events {
		kv := ev.Kv
		name := strings.TrimPrefix(string(kv.Key), w.prefix)
		if ev.Type == mvccpb.DELETE {
			if _, ok := w.delivered[name]; ok {
				w.deliver(TableEvent{Name: name, Deleted: true, ModRevision: kv.ModRevision})
			}
			continue
		}
		if rev, ok := w.delivered[name]; ok && rev == kv.ModRevision {
			continue
		}
		if e, ok := w.decode(kv); ok {
			w.deliver(e)
		}
	}
}

// decode turns a key and value under the prefix into an event; it logs and
// refuses what is not a valid TableConfig of the table its key names.
func (w *TableWatcher) decode(kv *mvccpb.KeyValue) (TableEvent, bool) {
	name := strings.TrimPrefix(string(kv.Key), w.prefix)
	if err := model.ValidateTableName(name); err != nil {
		w.log.Warn("metadata: skipping a key that names no table", "key", string(kv.Key), "err", err)
		return TableEvent{}, false
	}
	cfg, err := DecodeTableConfig(kv.Value)
	if err != nil {
		w.log.Warn("metadata: skipping a malformed TableConfig", "key", string(kv.Key), "mod_revision", kv.ModRevision, "err", err)
		return TableEvent{}, false
	}
	if cfg.Name != name {
		w.log.Warn("metadata: skipping a TableConfig stored under another name", "key", string(kv.Key), "name", cfg.Name)
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

// breakStream ends the current watch stream as a network failure would;
// the TableWatcher re-reads and resumes. For tests.
func (w *TableWatcher) breakStream() bool { return w.loop.BreakStream() }
