package smear

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tsdb/tsdb/internal/gate"
	"github.com/tsdb/tsdb/internal/pebbleclose"
	"github.com/tsdb/tsdb/model"
)

// RowCodec encodes the rows of a queue entry. The node passes the
// replication package's row codec (CodecFuncs{replication.AppendRows,
// replication.DecodeRows}); smear does not import its sibling. The encoding
// must keep every field's name, value and version exactly.
type RowCodec interface {
	// AppendRows appends the encoding of rows to dst.
	AppendRows(dst []byte, rows []model.Row) []byte
	// DecodeRows decodes what AppendRows wrote. The result must not share
	// memory with b (the queue reuses b).
	DecodeRows(b []byte) ([]model.Row, error)
}

// CodecFuncs adapts a pair of functions to RowCodec.
type CodecFuncs struct {
	// Append is RowCodec.AppendRows.
	Append func(dst []byte, rows []model.Row) []byte
	// Decode is RowCodec.DecodeRows.
	Decode func(b []byte) ([]model.Row, error)
}

// AppendRows implements RowCodec.
func (c CodecFuncs) AppendRows(dst []byte, rows []model.Row) []byte { return c.Append(dst, rows) }

// DecodeRows implements RowCodec.
func (c CodecFuncs) DecodeRows(b []byte) ([]model.Row, error) { return c.Decode(b) }

// Options configure a Queue.
type Options struct {
	// Codec encodes rows in entries. Required.
	Codec RowCodec
	// MaxRows bounds the rows in the queue; 0 means DefaultMaxRows.
	MaxRows int64
	// MaxBytes bounds the bytes of the queue's entries (keys and values as
	// written, before pebble's compression); 0 means DefaultMaxBytes.
	MaxBytes int64
	// RetryAfter is what RetryAfter suggests to a client refused with
	// ErrFull; 0 means DefaultRetryAfter.
	RetryAfter time.Duration
	// BeforeWrite, when set, is called before every write to the queue's
	// DB (Enqueue, and the forwarder's requeue and delete batches) with the
	// bytes about to be written (keys plus values). An error aborts the
	// write and is returned wrapped. The node plugs its server-wide write
	// limiter in here.
	BeforeWrite func(ctx context.Context, bytes int) error
	// NoAdmission turns admission control off: Enqueue never fails with
	// ErrBehind (see doc.go, "Admission").
	NoAdmission bool
	// AdmitTick is the period of admission control's rate measurements;
	// 0 means DefaultAdmitTick (1 s).
	AdmitTick time.Duration
	// RateWindow is the time constant of the rates' moving averages; 0
	// means DefaultRateWindow (2 s).
	RateWindow time.Duration
	// OverdueAfter is how long after its due time a queued row counts as
	// overdue; 0 means DefaultOverdueAfter (2 s).
	OverdueAfter time.Duration
	// InitialForwardRate is the forward capacity admission assumes until
	// it has measured one, rows/s; 0 means DefaultInitialForwardRate.
	InitialForwardRate float64
	// BehindFor is how long rows must stay overdue while the queue
	// accepts rows faster than it forwards them before admission closes;
	// 0 means DefaultBehindFor (3 s).
	BehindFor time.Duration
	// Now is the clock (enqueue times, due checks); nil is time.Now.
	Now func() time.Time
	// Logger receives the queue's and pebble's lines; nil discards them.
	Logger *slog.Logger
	// Metrics receives the queue's and its forwarder's metrics; nil uses
	// an unregistered set.
	Metrics *Metrics
	// MemTableSize is pebble's memtable size; 0 means 32 MiB.
	MemTableSize uint64
	// FS is the filesystem pebble uses; nil is the real one.
	FS vfs.FS
}

// Defaults of Options.
const (
	// DefaultMaxRows bounds the queue at 10 million rows.
	DefaultMaxRows = 10_000_000
	// DefaultMaxBytes bounds the queue at 1 GiB of entries.
	DefaultMaxBytes = 1 << 30
	// DefaultRetryAfter is the suggested wait after ErrFull.
	DefaultRetryAfter = time.Second
)

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.MaxRows == 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.AdmitTick = orDefault(o.AdmitTick, DefaultAdmitTick)
	o.RateWindow = orDefault(o.RateWindow, DefaultRateWindow)
	o.OverdueAfter = orDefault(o.OverdueAfter, DefaultOverdueAfter)
	o.BehindFor = orDefault(o.BehindFor, DefaultBehindFor)
	if o.InitialForwardRate <= 0 {
		o.InitialForwardRate = DefaultInitialForwardRate
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = defaultMemTableSize
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
}

// Validate reports every problem at once, each naming its field; the error
// wraps ErrInvalidOptions.
func (o *Options) Validate() error {
	var errs []error
	if o.Codec == nil {
		errs = append(errs, errors.New("Codec is required"))
	}
	if o.MaxRows < 0 {
		errs = append(errs, fmt.Errorf("MaxRows must not be negative, got %d", o.MaxRows))
	}
	if o.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxBytes must not be negative, got %d", o.MaxBytes))
	}
	if o.RetryAfter < 0 {
		errs = append(errs, fmt.Errorf("RetryAfter must not be negative, got %s", o.RetryAfter))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
}

// Queue is the durable smear queue of one server: entries of rows with a
// due time, in their own pebble DB. See doc.go for the layout and the
// guarantees. All methods are safe for concurrent use.
type Queue struct {
	db      *pebble.DB
	dir     string
	walFS   *pebbleclose.WatchedFS // the FS pebble runs on (Close)
	opts    Options                // defaults filled
	log     *slog.Logger
	metrics *Metrics
	gate    gate.Gate

	// seq is the last entry sequence handed out; keys stay unique because
	// each one carries a fresh sequence.
	seq atomic.Uint64
	// wake has room for one signal; Enqueue of an already-due entry and
	// Forwarder.Kick post to it, a forwarder's Run loop waits on it.
	wake chan struct{}
	// bufs holds *[]byte encode buffers for Enqueue.
	bufs sync.Pool
	// hasForwarder is set by NewForwarder: one forwarder per queue (its
	// in-flight set is its own).
	hasForwarder atomic.Bool
	// passMu serializes forwarding passes, so that two passes (Run and
	// Drain, or two forwarders) never settle the same entry twice.
	passMu sync.Mutex

	closeOnce sync.Once
	closeErr  error

	// late is the forwarder's recent lateness, for DueLead.
	late lateness
	// direct counts the rows NoteDirect reported since the last
	// tickLocked, which moves them into admission's count: a direct
	// insert takes no lock of the queue.
	direct atomic.Int64

	mu struct {
		sync.Mutex
		// rows and bytes are the queue depth: committed entries plus
		// the reservations of Enqueues in flight.
		rows, bytes int64
		// scanFrom is a lower bound of the due times of every stored
		// entry, so that a pass seeks past the tombstones of forwarded
		// entries instead of iterating over them. math.MaxInt64 when
		// nothing is known to be stored.
		scanFrom int64
		// lowestPut is the earliest due time written since the current
		// pass began (math.MaxInt64 if none); a pass that ends lowers
		// its new scanFrom to it, so entries written while it scanned
		// are never skipped.
		lowestPut int64
		// adm is the admission control's state (admission.go).
		adm admission
	}
}

// maxPooledBuf is the largest encode buffer kept for reuse.
const maxPooledBuf = 4 << 20

// Open opens (creating if needed) the queue's pebble DB in dir, checks its
// format marker (format.go: a queue of an unknown version is refused with
// ErrUnknownFormat), replays it to rebuild the depth, and returns the queue. Entries that do not decode
// are quarantined (doc.go). The caller closes the queue after its
// forwarder's Run has returned.
func Open(dir string, opts Options) (*Queue, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, fmt.Errorf("%w: dir is required", ErrInvalidOptions)
	}
	cache := pebble.NewCache(cacheSize)
	defer cache.Unref() // the DB keeps its own reference
	walFS := pebbleclose.WatchWAL(opts.FS)
	popts := opts
	popts.FS = walFS
	db, err := pebble.Open(dir, pebbleOptions(&popts, cache, opts.Logger))
	if err != nil {
		return nil, fmt.Errorf("smear: open pebble in %s: %w", dir, err)
	}
	if err := checkFormat(db, dir); err != nil {
		_ = db.Close()
		return nil, err
	}
	q := &Queue{
		db:      db,
		dir:     dir,
		walFS:   walFS,
		opts:    opts,
		log:     opts.Logger,
		metrics: opts.Metrics,
		wake:    make(chan struct{}, 1),
	}
	q.mu.scanFrom, q.mu.lowestPut = math.MaxInt64, math.MaxInt64
	q.mu.adm = newAdmission(&q.opts)
	if err := q.replay(); err != nil {
		_ = db.Close()
		return nil, err
	}
	rows, bytes := q.Depth()
	q.log.Info("smear queue opened", "dir", dir, "rows", rows, "bytes", bytes)
	return q, nil
}

// replay scans every entry: it rebuilds the depth, the sequence and the
// scan hint, and quarantines entries whose key or header does not decode.
func (q *Queue) replay() error {
	it, err := q.db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsEntry}, UpperBound: []byte{nsEntry + 1}})
	if err != nil {
		return fmt.Errorf("smear: replay: %w", err)
	}
	var bad []kv
	var maxSeq uint64
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("smear: replay: %w", err)
		}
		due, seq, kerr := parseKey(it.Key())
		h, _, herr := parseHeader(v)
		if err := errors.Join(kerr, herr); err != nil {
			bad = append(bad, kv{key: clone(it.Key()), value: clone(v), err: err})
			continue
		}
		maxSeq = max(maxSeq, seq)
		q.mu.scanFrom = min(q.mu.scanFrom, due)
		q.adjust(int64(h.rows), int64(len(it.Key())+len(v)))
		q.mu.adm.add(due, int64(h.rows), h.attempts > 0)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("smear: replay: %w", err)
	}
	q.seq.Store(maxSeq)
	if len(bad) > 0 {
		return q.quarantine(bad)
	}
	return nil
}

// kv is a stored entry that did not decode.
type kv struct {
	key, value []byte
	err        error
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// quarantine moves entries that do not decode under the quarantine
// namespace, in one synced batch. They leave the depth (which never
// counted them if they come from replay) but stay on disk for an operator.
func (q *Queue) quarantine(bad []kv) error {
	b := q.db.NewBatch()
	defer b.Close()
	for _, e := range bad {
		q.log.Error("smear: quarantining a queue entry that does not decode; its rows are kept on disk but not forwarded",
			"key", fmt.Sprintf("%x", e.key), "bytes", len(e.value), "err", e.err)
		if err := b.Set(quarantineKey(e.key), e.value, nil); err != nil {
			return fmt.Errorf("smear: quarantine: %w", err)
		}
		if err := b.Delete(e.key, nil); err != nil {
			return fmt.Errorf("smear: quarantine: %w", err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("smear: quarantine: %w", err)
	}
	q.metrics.quarantined.Add(float64(len(bad)))
	return nil
}

// Close waits for operations in flight, flushes the memtable (at most
// pebbleclose.DefaultFlushTimeout), closes the DB and removes the WAL
// files the flush made obsolete (internal/pebbleclose), so that no WAL of
// up to 110% of MemTableSize stays behind at rest. A flush that fails or
// times out is logged and the DB closed with its WAL, which the next Open
// replays. Later calls return nil; every other method fails with
// ErrClosed once Close began.
func (q *Queue) Close() error {
	q.closeOnce.Do(func() {
		q.gate.Close()
		if _, err := pebbleclose.Close(q.db, q.dir, q.walFS, pebbleclose.DefaultFlushTimeout, q.log); err != nil {
			q.closeErr = fmt.Errorf("smear: close pebble: %w", err)
		}
	})
	return q.closeErr
}

// Depth returns the rows and bytes in the queue, Enqueues in flight
// included. It is kept in memory and rebuilt by Open.
func (q *Queue) Depth() (rows, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.rows, q.mu.bytes
}

// RetryAfter is the wait to suggest to a client refused with ErrFull or
// ErrBehind: Options.RetryAfter, or while admission is closed the time
// the forwarder needs for the overdue rows at its current rate (at most
// 10 s), if longer.
func (q *Queue) RetryAfter() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.adm.retryAfter(q.opts.RetryAfter)
}

func (q *Queue) now() time.Time { return q.opts.Now() }

// Enqueue writes rows of table, due at due, durably to the queue: when it
// returns nil the entry is synced to disk, so the caller may acknowledge
// the insert. The rows keep their versions and times; they are encoded (so
// copied) before Enqueue returns, and the caller may reuse rows at once.
// Concurrent Enqueues share fsyncs (pebble's group commit, see doc.go).
//
// It fails with an error wrapping ErrFull when the queue is too full to
// admit the rows, ErrBehind while admission control refuses smeared
// inserts (the forwarder is behind), ErrTooLarge when the rows alone
// exceed the bounds,
// ErrClosed after Close, ctx's error when ctx is done before the write,
// or BeforeWrite's error; in every failure case nothing was written. An
// empty rows is a no-op.
func (q *Queue) Enqueue(ctx context.Context, table string, rows []model.Row, due time.Time) error {
	if len(rows) == 0 {
		return nil
	}
	if err := model.ValidateTableName(table); err != nil {
		return fmt.Errorf("smear: enqueue: %w", err)
	}
	if err := q.gate.Enter(ErrClosed); err != nil {
		return err
	}
	defer q.gate.Exit()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("smear: enqueue: %w", err)
	}
	now := q.now().UnixNano()
	dueNs := due.UnixNano()
	bp := q.getBuf()
	defer q.putBuf(bp)
	h := header{enqueued: now, table: table, rows: len(rows)}
	buf := appendKey((*bp)[:0], dueNs, q.seq.Add(1))
	buf = appendHeader(buf, &h)
	buf = q.opts.Codec.AppendRows(buf, rows)
	*bp = buf
	n, size := int64(len(rows)), int64(len(buf))
	if err := q.reserve(n, size, dueNs); err != nil {
		return err
	}
	if err := q.put(ctx, buf[:keyLen], buf[keyLen:]); err != nil {
		q.unreserve(n, size, dueNs)
		return err
	}
	q.notePut(dueNs)
	q.metrics.enqueuedRows.Add(float64(n))
	if dueNs <= now {
		q.signal()
	}
	return nil
}

// put writes one key and value, synced.
func (q *Queue) put(ctx context.Context, key, value []byte) error {
	if err := q.beforeWrite(ctx, len(key)+len(value)); err != nil {
		return err
	}
	b := q.db.NewBatch()
	defer b.Close()
	if err := b.Set(key, value, nil); err != nil {
		return fmt.Errorf("smear: enqueue: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("smear: enqueue: %w", err)
	}
	return nil
}

func (q *Queue) beforeWrite(ctx context.Context, bytes int) error {
	if q.opts.BeforeWrite == nil {
		return nil
	}
	if err := q.opts.BeforeWrite(ctx, bytes); err != nil {
		return fmt.Errorf("smear: write limiter: %w", err)
	}
	return nil
}

func (q *Queue) getBuf() *[]byte {
	if bp, ok := q.bufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 4096)
	return &b
}

func (q *Queue) putBuf(bp *[]byte) {
	if cap(*bp) <= maxPooledBuf {
		q.bufs.Put(bp)
	}
}

// reserve admits n rows of size bytes, due at due, into the depth and the
// admission counts, or refuses them. The rows are counted before their
// entry is committed, so that a pass that forwards the entry at once finds
// them counted.
func (q *Queue) reserve(n, size, due int64) error {
	if n > q.opts.MaxRows || size > q.opts.MaxBytes {
		q.metrics.fullRejects.Inc()
		return fmt.Errorf("%w: %d rows, %d bytes; the queue holds at most %d rows, %d bytes",
			ErrTooLarge, n, size, q.opts.MaxRows, q.opts.MaxBytes)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tickLocked()
	if a := &q.mu.adm; a.closed {
		q.metrics.behindRejects.Inc()
		return fmt.Errorf("%w: %d rows overdue by more than %s; accepting %.0f rows/s, forwarding %.0f rows/s",
			ErrBehind, a.overdue, time.Duration(a.overdueAfter), a.acceptRate, a.forwardRate)
	}
	if a := &q.mu.adm; !q.opts.NoAdmission && a.acceptFull(n) {
		q.metrics.behindRejects.Inc()
		return fmt.Errorf("%w: %d rows accepted in this tick, at most %d with %d more (%.2f times the forward capacity of %.0f rows/s, or one insert beyond it)",
			ErrBehind, a.accepted, a.withEntry(a.acceptLimit(), n), n, a.acceptFactor(), a.capacity)
	}
	if a := &q.mu.adm; !q.opts.NoAdmission && a.slotFull(q.now().UnixNano(), due, n) {
		// Not counted in behindRejects: the caller draws another due
		// time, and counts a refused insert with RefusedDueFull.
		return fmt.Errorf("%w: %d rows already due in the second of %s (forward capacity %.0f rows/s)",
			ErrDueFull, a.future[a.bucket(due)], time.Unix(0, due).UTC().Format(time.RFC3339), a.capacity)
	}
	if q.mu.rows+n > q.opts.MaxRows || q.mu.bytes+size > q.opts.MaxBytes {
		q.metrics.fullRejects.Inc()
		return fmt.Errorf("%w: %d rows, %d bytes queued (limits %d rows, %d bytes)",
			ErrFull, q.mu.rows, q.mu.bytes, q.opts.MaxRows, q.opts.MaxBytes)
	}
	q.adjustLocked(n, size)
	q.mu.adm.add(due, n, false)
	q.mu.adm.accepted += n
	return nil
}

// RefusedDueFull counts an insert refused because every due time it drew
// failed with ErrDueFull (tsdb_smear_behind_rejections_total counts
// refused inserts, not refused draws).
func (q *Queue) RefusedDueFull() { q.metrics.behindRejects.Inc() }

// unreserve undoes reserve after a failed write.
func (q *Queue) unreserve(n, size, due int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.adjustLocked(-n, -size)
	q.mu.adm.remove(due, n, false)
	q.mu.adm.accepted = max(q.mu.adm.accepted-n, 0)
}

func (q *Queue) adjust(rows, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.adjustLocked(rows, bytes)
}

func (q *Queue) adjustLocked(rows, bytes int64) {
	q.mu.rows += rows
	q.mu.bytes += bytes
	if q.mu.rows == 0 && q.mu.adm.reset() {
		q.noteTransition(nowEmpty)
	}
	q.metrics.queueRows.Set(float64(q.mu.rows))
	q.metrics.queueBytes.Set(float64(q.mu.bytes))
}

// notePut records that an entry due at due was committed (after the
// commit, so a pass that began before it either sees the entry or sees
// lowestPut lowered; see Queue.mu).
func (q *Queue) notePut(due int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.scanFrom = min(q.mu.scanFrom, due)
	q.mu.lowestPut = min(q.mu.lowestPut, due)
}

// signal wakes a waiting forwarder without blocking.
func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
