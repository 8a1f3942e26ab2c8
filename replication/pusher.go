package replication

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/internal/backoff"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// Log is the local replica a Pusher reads; *partition.Replica implements
// it.
type Log interface {
	// ReadLog returns the row changes above sequence after and at or
	// below the synced watermark, in sequence order, at most maxRows of
	// them.
	ReadLog(after uint64, maxRows int) ([]partition.LogEntry, error)
	// SyncedSeq is the replica's synced watermark.
	SyncedSeq() uint64
	// HighSeq is the replica's last assigned sequence, synced or not.
	HighSeq() uint64
	// Confirmed is the highest sequence the target placement confirmed
	// (0 if none), as recorded durably by SetConfirmed.
	Confirmed(target uuid.UUID) uint64
	// SetConfirmed records durably that target has every row up to seq.
	SetConfirmed(target uuid.UUID, seq uint64) error
	// SnapshotLog freezes the log as it is now (see LogSnapshot). It must
	// not call back into the Pusher.
	SnapshotLog() (LogSnapshot, error)
}

// LogSnapshot is a frozen view of a Log; *partition.LogSnapshot implements
// it. A joining or split target's mark is the Seq of one, and the target's
// catch-up up to the mark reads it: a row held at the mark and
// overwritten after it is in the snapshot at its old sequence, while the
// live log may have it only above the mark (it has lost the entries a
// truncation deleted, and a log written before log records lost the
// entries an overwrite superseded: DESIGN.md section 5).
type LogSnapshot interface {
	// Seq is the log's high sequence when the snapshot was taken.
	Seq() uint64
	// ReadLog is Log.ReadLog on the snapshot: the changes held then with
	// a sequence above after, all at or below Seq and synced.
	ReadLog(after uint64, maxRows int) ([]partition.LogEntry, error)
	// Close releases the snapshot. Idempotent.
	Close()
}

// TruncatingLog is a Log whose entries can be deleted once every target
// holds them (*partition.Replica, through ReplicaLog). A Pusher whose Log
// is one truncates it (Config.KeepLog) and gives a target whose cursor is
// below the truncation point a row snapshot.
type TruncatingLog interface {
	// LogStart is the truncation point: ReadLog fails with
	// partition.ErrLogTruncated for a read from below it.
	LogStart() uint64
	// TryTruncateLog deletes the entries at or below upTo (at most the
	// synced watermark) and makes upTo the truncation point, or does
	// nothing and returns false when that would wait for the log's writes
	// (the pusher tries again at its next tick).
	TryTruncateLog(upTo uint64) (bool, error)
}

// TargetLog is a Log that can leave out the values a target holds
// (*partition.Replica, through ReplicaLog: Replica.ReadLogFor): an entry
// whose Origin is target comes back with its Seq, Origin and Row.Time
// only. filterRows sends such an entry nowhere at a replica target, so a
// Pusher reads a replica target's batches this way and spares decoding
// the rows that target pushed here.
type TargetLog interface {
	ReadLogFor(after uint64, maxRows int, target uuid.UUID) ([]partition.LogEntry, error)
}

// RelayLog is a TargetLog that can also leave out the values relayed from
// a third replica with a known sequence there (*partition.Replica,
// through ReplicaLog: Replica.ReadLogBare): such an entry comes back Bare,
// with its Seq, Origin, OriginSeq and Row.Time only. A push to a replica
// target claims those rows held instead of carrying them
// (wire.PushRequest.Held), unless Config.SendRelays.
type RelayLog interface {
	TargetLog
	ReadLogBare(after uint64, maxRows int, target uuid.UUID) ([]partition.LogEntry, error)
	// ReadRelayed returns, decoded, the entries above after and at most
	// through whose value origin pushed here and whose OriginSeq is 0 or
	// above above (partition.Replica.ReadRelayed).
	ReadRelayed(after, through uint64, origin uuid.UUID, above uint64) ([]partition.LogEntry, error)
}

// LogValuesLog is a Log that can be told whether its log will be read
// (*partition.Replica, through ReplicaLog: Replica.SetLogValues). The
// Pusher turns the values off while its view, once set, has no target and
// no mark, and on otherwise. A hint only: the log reads the same either
// way.
type LogValuesLog interface {
	SetLogValues(on bool)
}

// SharingLog is a Log that can tell whether a local replica reads the same
// rows (*partition.Replica, through ReplicaLog: Replica.SharesData): a
// split child or a re-added placement on this server in the replica's
// data space. A push to such a target has nothing to carry: the Pusher
// confirms its cursor up to the synced watermark instead (every row of
// the log up to it is stored, synced, where the target reads it).
type SharingLog interface {
	SharesData(target uuid.UUID) bool
}

// LoggedRowsLog is a Log that can tell whether every row its replica
// holds is a change of its own log (*partition.Replica, through
// ReplicaLog: Replica.RowsAllLogged): its data space was never shared. A
// row snapshot of such a log at sequence H holds only folds of changes at
// or below H, so a replica that holds this log up to H holds every row of
// it, and the receiver may record H as the rows' origin sequence
// (wire.PushRequest.SnapshotLogged), as it does for a push read from the
// log: its own pushes then claim them held instead of carrying them.
type LoggedRowsLog interface {
	RowsAllLogged() bool
}

// Inheritance is Config.Inherited's answer about one target.
type Inheritance int

const (
	// InheritNone: no live replica the rows were inherited from serves
	// the target; it gets a row snapshot.
	InheritNone Inheritance = iota
	// InheritPending: such a replica serves the target and has not
	// confirmed all of its own log yet; the target waits (no push, a
	// failed step for Status and the laggard test of truncateLog) and is
	// asked again within a Tick.
	InheritPending
	// InheritHeld: every such replica serving the target confirmed its
	// whole log to it: the target holds the inherited rows, and its
	// cursor moves to 1 without a push.
	InheritHeld
)

// RowSnapshot is a LogSnapshot whose rows can be read in key order
// (*partition.LogSnapshot): a row snapshot of the replica at Seq.
type RowSnapshot interface {
	LogSnapshot
	// ReadRows returns the rows held at Seq in the time range rr after
	// the row at after (nil: from the first) in key order, at most maxRows
	// of them, once Seq is synced.
	ReadRows(after *partition.RowPos, rr partition.RowRange, maxRows int) ([]model.Row, error)
}

// ChunkSnapshot is a RowSnapshot whose rows can also be read as snapshot
// chunks (*partition.LogSnapshot): stored rows as they are, sent in one
// push each and ingested by the receiver (ChunkApplier).
type ChunkSnapshot interface {
	RowSnapshot
	// ReadChunk appends to dst the rows ReadRows would return, as a
	// chunk of about maxBytes (at least one row).
	ReadChunk(dst []byte, after *partition.RowPos, rr partition.RowRange, maxBytes int) (partition.Chunk, error)
}

// ReplicaLog returns r as a Log.
func ReplicaLog(r *partition.Replica) Log { return partitionLog{r} }

// partitionLog adapts *partition.Replica to Log.
type partitionLog struct{ *partition.Replica }

func (l partitionLog) SnapshotLog() (LogSnapshot, error) {
	s, err := l.Replica.SnapshotLog()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Sender delivers one push to the target's server. It returns the
// receiver's answer once the target has synced the rows. An error matching
// ErrStalePlacement means the target refused the push (409
// stale_placement). Push must not keep req.Rows after it returns: the
// Pusher reuses the buffer.
type Sender interface {
	Push(ctx context.Context, target metadata.Target, req wire.PushRequest) (wire.PushResponse, error)
}

// Defaults of Config.
const (
	// DefaultBatchRows is Config.BatchRows when unset.
	DefaultBatchRows = 2048
	// DefaultMaxBatchBytes is Config.MaxBatchBytes when unset: well under
	// the receiver's default 32 MiB body limit once base64 and JSON are
	// added.
	DefaultMaxBatchBytes = 4 << 20
	// DefaultRetryMin is Config.RetryMin when unset.
	DefaultRetryMin = 50 * time.Millisecond
	// DefaultRetryMax is Config.RetryMax when unset.
	DefaultRetryMax = 5 * time.Second
	// DefaultTick is Config.Tick when unset.
	DefaultTick = time.Second
	// DefaultTruncateMin is Config.TruncateMin when unset.
	DefaultTruncateMin = 4096
	// DefaultLaggardAfter is Config.LaggardAfter when unset: longer than
	// a server's restart or a network blip of seconds (RetryMax is 5 s, so
	// a minute is a dozen failed attempts or more), after which the
	// membership has declared the server dead twice over (node's
	// DeadAfter is 30 s).
	DefaultLaggardAfter = time.Minute
	// DefaultMaxLogLag is Config.MaxLogLag when unset: a million entries,
	// about 100 MB of log at ~100 bytes a row, is little disk, and a
	// target that comes back reads them sequentially in seconds, cheaper
	// than a row snapshot of a replica of that size or more; beyond it the
	// log would grow with the insert rate for as long as the target stays
	// down.
	DefaultMaxLogLag = 1_000_000
)

// Config configures a Pusher.
type Config struct {
	// Table is the table of the replica, sent with every push.
	Table string
	// Placement is this replica's placement id; a target with the same
	// placement is ignored.
	Placement uuid.UUID
	// Self is this server's id, sent as the push's FromServer.
	Self string
	// Log is the local replica read and whose cursors are kept. Required.
	Log Log
	// Sender delivers pushes. Required.
	Sender Sender
	// Logger receives state changes (a target failing, recovering). nil
	// discards them.
	Logger *slog.Logger
	// BatchRows is the most rows per push; 0 means DefaultBatchRows.
	BatchRows int
	// MaxBatchBytes bounds a push's encoded rows (about; at least one row
	// goes): default DefaultMaxBatchBytes.
	MaxBatchBytes int
	// RetryMin and RetryMax bound the backoff after a failed push: it
	// starts at RetryMin, doubles per failure up to RetryMax, and each
	// wait is drawn uniformly from [d/2, d]. 0 means the defaults.
	RetryMin, RetryMax time.Duration
	// Tick is the period of the wake that catches missed notifications
	// and re-sends a joining target its Complete signal; 0 means
	// DefaultTick.
	Tick time.Duration
	// CatchUpSlots, when set, bounds how many catch-up pushes (a split
	// target's backfill, a joining target below its mark, a row snapshot
	// to a target below the log's truncation point) run at once
	// across every Pusher sharing it, so bulk copies leave the machine to
	// inserts and their replication; its capacity is the bound.
	CatchUpSlots chan struct{}
	// CatchUpBatchRows is the most rows per catch-up push; 0 means
	// BatchRows. Smaller catch-up batches hold the receiver's replica for
	// less time, so the pushes of new rows wait less behind them.
	CatchUpBatchRows int
	// KeepLog turns the pusher's log truncation off. Without it, a Pusher
	// whose Log is a TruncatingLog deletes, about once per Tick, the log
	// entries every target of its view (and every split target's tail
	// stream) confirmed. It does not keep a replica nobody reads from
	// truncating its own log as it writes (partition.Replica.SetLogValues).
	KeepLog bool
	// RowSnapshots makes row snapshots send rows (merged by the receiver
	// like any push) instead of snapshot chunks (ingested as sstables,
	// partition.Replica.IngestChunk) when the snapshot can be read as
	// chunks. For tests of the rows path.
	RowSnapshots bool
	// SendRelays makes pushes to replica targets carry the rows relayed
	// from third replicas, as pushes did before held claims, instead of
	// claiming them held (wire.PushRequest.Held) when the Log is a
	// RelayLog. For tests of the relayed rows' path.
	SendRelays bool
	// TruncateMin is the fewest log entries a truncation deletes (counted
	// as sequences): fewer wait, so a busy replica writes one range
	// deletion per few thousand rows, not one per Tick. 0 means
	// DefaultTruncateMin.
	TruncateMin int
	// LaggardAfter and MaxLogLag bound the log a down target pins: a
	// target of the view whose steps have all failed for at least
	// LaggardAfter (no success since its first failure) and whose cursor
	// is more than MaxLogLag sequences below the synced watermark no
	// longer holds the truncation point back (see truncateLog); when it
	// comes back, its cursor is below the point and it gets a row
	// snapshot. A split target's tail stream is never passed. 0 means
	// DefaultLaggardAfter and DefaultMaxLogLag.
	LaggardAfter time.Duration
	MaxLogLag    int
	// Now is the clock of LaggardAfter (the time a target's failures
	// began and the truncation's check of it); nil means time.Now. Tests
	// set it to move time without sleeping.
	Now func() time.Time
	// OnStale is called, on the target's goroutine, when a target answers
	// stale placement: the node re-runs discovery (and may call SetView
	// from OnStale). nil ignores it.
	OnStale func(metadata.Target)
	// Inherited, if set, answers for a target whose cursor is 0 while
	// the log's truncation point is 1 (a replica sharing a data space:
	// the rows it held at its creation are in no entry of its log)
	// whether the replicas it inherited those rows from deliver them to
	// that target themselves (see Inheritance). Nil, or InheritNone,
	// sends the target a row snapshot as for any cursor below the point.
	Inherited func(target uuid.UUID) Inheritance
	// OnSnapshotEnd, if set, is called on the target's goroutine when a
	// row snapshot towards target ends: rows is what its confirmed
	// batches delivered, elapsed the time since it began, result one of
	// SnapshotDone, SnapshotFailed, SnapshotDropped. It must not block
	// (the node counts it in its metrics). Stats counts them too.
	OnSnapshotEnd func(target uuid.UUID, rows int, elapsed time.Duration, result string)
	// Quota is the replication quota in rows (WaitQuota, quota.go): how
	// far the slowest replica target that keeps up may lag before
	// WaitQuota waits for it. 0 turns it off. QuotaStall is how long a
	// target behind it may go without a successful push before it no
	// longer counts; 0 means DefaultQuotaStall.
	Quota      uint64
	QuotaStall time.Duration
}

func (c *Config) ensureDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.BatchRows <= 0 {
		c.BatchRows = DefaultBatchRows
	}
	if c.CatchUpBatchRows <= 0 {
		c.CatchUpBatchRows = c.BatchRows
	}
	if c.QuotaStall <= 0 {
		c.QuotaStall = DefaultQuotaStall
	}
	if c.RetryMin <= 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	c.RetryMax = max(c.RetryMax, c.RetryMin)
	if c.Tick <= 0 {
		c.Tick = DefaultTick
	}
	if c.TruncateMin <= 0 {
		c.TruncateMin = DefaultTruncateMin
	}
	if c.LaggardAfter <= 0 {
		c.LaggardAfter = DefaultLaggardAfter
	}
	if c.MaxLogLag <= 0 {
		c.MaxLogLag = DefaultMaxLogLag
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Pusher pushes one local replica's rows to its targets (DESIGN.md section
// 5): one goroutine per target, each tailing the replica's log from the
// target's confirmed cursor. See the package documentation.
//
// All methods are safe for concurrent use, and SetView, Notify, Drained,
// WaitConfirmed and Status may be called before, during and after Run.
type Pusher struct {
	cfg Config
	log *slog.Logger

	// loops counts running target goroutines (tests check it is 0 after
	// Run returns).
	loops atomic.Int64
	// truncateChecks counts the Ticks whose truncation check returned
	// (tests wait for some instead of sleeping).
	truncateChecks atomic.Int64
	// stats are the counters behind Stats.
	stats pusherStats

	// confirmMu serializes the read-compare-write of a cursor, so that a
	// slower goroutine of a removed and re-added target never moves a
	// cursor back.
	confirmMu sync.Mutex

	mu struct {
		sync.Mutex
		// run is Run's context while Run is active, else nil; wg counts
		// the target goroutines Run waits for.
		run context.Context
		wg  *sync.WaitGroup
		// txnSeq is the txnseq of the current view.
		txnSeq uint64
		// turningOn counts the SetView calls with a target between their
		// early SetLogValues(true) and their install: while one is in
		// flight, no other view turns the values off.
		turningOn int
		// viewSet: SetView installed a view (before it, an empty view
		// says nothing about the targets: see truncateLog).
		viewSet bool
		// keepLoad: the view is LOAD and the log is whole (logWhole). It
		// is kept whole, values on, for the targets the replica will have
		// once it serves (see SetView).
		keepLoad bool
		// view is the current targets in discovery order; targets the
		// same by placement.
		view    []*target
		targets map[uuid.UUID]*target
		// marks are the join and split marks: the Seq of a snapshot of
		// the log (Log.SnapshotLog) taken when a placement first appeared
		// as a joining or split target of this Pusher.
		marks map[uuid.UUID]uint64
		// frozen are those snapshots, kept while the target's cursor is
		// below its mark: its catch-up up to the mark reads the snapshot.
		// A mark whose target's cursor is below it always has one here.
		frozen map[uuid.UUID]LogSnapshot
		// changed is closed and replaced on every confirmation and view
		// change; WaitConfirmed waits on it.
		changed chan struct{}
	}
}

// target is one push destination.
type target struct {
	id uuid.UUID
	// wake is the coalesced wake-up (capacity 1).
	wake chan struct{}
	// retry ends a backoff early (capacity 1): RetryNow, when the target's
	// server may be back. Inserts do not end a backoff.
	retry chan struct{}
	// ticked is set by Run's ticker: a complete joining target gets its
	// Complete signal again (a restarted receiver forgets it).
	ticked atomic.Bool
	// levelTicked is set by Run's ticker too: an idle replica target whose
	// cursor moved past the last ClaimsTo it was told gets it once
	// (refreshLevel).
	levelTicked atomic.Bool

	// tailOf is the split target this target is the tail stream of (nil
	// for a target of the view). Immutable.
	tailOf *target

	// Guarded by Pusher.mu:
	// tail is the tail stream of a split target (see tailCursor and
	// step), nil if none.
	tail         *target
	spec         metadata.Target
	cancel       context.CancelFunc // stops the goroutine; nil if none runs
	lastErr      string
	lastPush     time.Time
	completeSent bool // a push with Complete=true was delivered
	// keepsUp: inserts wait for this replica target when it lags more
	// than the replication quota (quota.go). Set once its lag is within
	// the quota, cleared when it fails or stalls while behind.
	keepsUp bool
	// behindSince is when the quota first found this target behind by
	// more than the quota (zero while it is not).
	behindSince time.Time
	// passed: a truncation passed this target's cursor while it was a
	// laggard (logged once per outage; cleared once it is none).
	passed bool

	// failingSince is when the current run of failed steps began
	// (Config.Now, Unix nanoseconds), 0 once a step succeeds: the
	// laggard test of truncateLog. Atomic: set by noteFailure, cleared by
	// every successful step without taking Pusher.mu (a goroutine that
	// restarts with Run must clear what the previous one left). Wall
	// clock: a clock step only changes when a target is passed, which
	// costs it a row snapshot and never a row.
	failingSince atomic.Int64

	// Owned by the target's goroutine:
	rows []model.Row
	// relayed are the runs of rows that carry their origin's sequence
	// (wire.PushRequest.Relayed).
	relayed []wire.RelaySpan
	// own are the runs of rows that are this replica's own changes
	// (wire.PushRequest.Own).
	own []wire.Span
	// held are the claims of the push (wire.PushRequest.Held): the
	// relayed rows it leaves out, per origin.
	held []wire.HeldRelay
	// unheld is a batch whose push was applied but whose receiver
	// answered claims unheld, and whose rows for them were not delivered
	// (pushUnheld failed): the next step, at the same cursor, pushes
	// only those rows, instead of the whole batch again.
	unheld *unheldBatch
	buf    []byte
	// ahead is how far reads got past the cursor aheadOf without the
	// cursor moving: a batch cut by its size that skips a sequence (a row
	// overwritten since, now at a higher sequence, maybe beyond the batch)
	// cannot be confirmed (see step). Valid while the cursor is aheadOf.
	ahead, aheadOf uint64
	// rs is the row snapshot the target is being sent, nil if none (see
	// readRowSnapshot).
	rs *rowSnap
	// sharers is the last push answer's Shares: replicas on the target's
	// server whose rows the target holds in its range (see
	// confirmAliased).
	sharers []uuid.UUID
	// asked reports that a push to the target was answered since the
	// goroutine started, so sharers is the receiver's word (see probe).
	asked bool
	// claimed is the highest ClaimsTo a push delivered to the target
	// since the goroutine started (see refreshLevel).
	claimed uint64
}

// rowSnap is a row snapshot in progress towards one target: the target's
// cursor is below the log's truncation point, so the log cannot give it
// the rows it lacks; the rows held at high are pushed instead, in key
// order, and the cursor claims high only once the last batch is confirmed
// (rule 1: every row up to high is then synced at the target). A failed
// push keeps the snapshot: its position moves only once a batch got
// through, so the retry resends the batch that failed. The snapshot is
// dropped (and the next step starts a new one from the first row) only on
// a read error of the snapshot, a change of the target's range, a cursor
// that got past it another way, or the goroutine stopping.
type rowSnap struct {
	snap RowSnapshot
	// own: the snapshot was taken for this (closed when dropped); else it
	// is the target's mark snapshot, owned by the Pusher.
	own  bool
	high uint64
	// cursor is the target's cursor when the snapshot began: below the
	// log's truncation point then.
	cursor uint64
	// logged: every row of the snapshot is a change of this log at or
	// below high (LoggedRowsLog, asked once the snapshot was taken).
	logged bool
	// rng is the target's range when the snapshot began: only its rows
	// are read. after is the last row delivered (nil: none yet); done is
	// set once the last batch is delivered.
	rng   partition.RowRange
	after *partition.RowPos
	done  bool
	rows  int
	start time.Time
	// next, nextDone and nextRows are the position the batch read last
	// reaches: they become after, done and rows once it is delivered
	// (advance).
	next     *partition.RowPos
	nextDone bool
	nextRows int
}

// advance moves the snapshot past the batch read last, once delivered.
func (rs *rowSnap) advance() {
	rs.after, rs.done = rs.next, rs.nextDone
	rs.rows += rs.nextRows
	rs.nextRows = 0
}

// NewPusher returns a Pusher with no targets; Run starts pushing. It panics
// if cfg.Log or cfg.Sender is nil.
func NewPusher(cfg Config) *Pusher {
	if cfg.Log == nil || cfg.Sender == nil {
		panic("replication: NewPusher needs Config.Log and Config.Sender")
	}
	cfg.ensureDefaults()
	p := &Pusher{cfg: cfg, log: cfg.Logger.With("table", cfg.Table, "placement", cfg.Placement)}
	p.mu.targets = make(map[uuid.UUID]*target)
	p.mu.marks = make(map[uuid.UUID]uint64)
	p.mu.frozen = make(map[uuid.UUID]LogSnapshot)
	p.mu.changed = make(chan struct{})
	return p
}

// Run pushes until ctx ends, with one goroutine per current target, and
// returns once all of them have exited. Run must not be called again
// before it returned.
func (p *Pusher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	p.mu.Lock()
	if p.mu.run != nil {
		p.mu.Unlock()
		panic("replication: Pusher.Run called while running")
	}
	p.mu.run, p.mu.wg = ctx, &wg
	p.mu.Unlock()
	// A previous Run released the snapshots of the marks not reached.
	p.setMarks()
	p.mu.Lock()
	for _, t := range p.mu.view {
		p.startLocked(t)
		if t.tail != nil {
			p.startLocked(t.tail)
		}
	}
	p.mu.Unlock()

	ticker := time.NewTicker(p.cfg.Tick)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-ticker.C:
			p.tick()
			p.truncateLog()
			p.truncateChecks.Add(1)
		}
	}
	ticker.Stop()

	p.mu.Lock()
	p.mu.run, p.mu.wg = nil, nil
	for _, t := range p.mu.view {
		t.stopLocked()
		if t.tail != nil {
			t.tail.stopLocked()
		}
	}
	p.mu.Unlock()
	wg.Wait()
	// No snapshot outlives Run: a mark not reached is dropped with its
	// snapshot, and set again by the next Run or SetView.
	p.mu.Lock()
	var release []LogSnapshot
	for id := range p.mu.frozen {
		release = append(release, p.unmarkLocked(id))
	}
	p.mu.Unlock()
	closeAll(release)
}

// startLocked starts t's goroutine if Run is active.
func (p *Pusher) startLocked(t *target) {
	if p.mu.run == nil || t.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(p.mu.run)
	t.cancel = cancel
	wg := p.mu.wg
	wg.Add(1)
	p.loops.Add(1)
	go func() {
		defer wg.Done()
		defer p.loops.Add(-1)
		p.runTarget(ctx, t)
	}()
}

// Notify tells the Pusher that rows were stored: every target goroutine
// wakes (coalesced; a push in flight is never cancelled, the goroutine
// looks again when it is done).
func (p *Pusher) Notify() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.mu.view {
		t.signal()
		if t.tail != nil {
			t.tail.signal()
		}
	}
}

// RetryNow ends the backoff of every target that is failing, so that a
// server that came back (the membership list changed) gets its pushes now
// rather than after up to RetryMax.
func (p *Pusher) RetryNow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.mu.view {
		for _, s := range []*target{t, t.tail} {
			if s == nil {
				continue
			}
			select {
			case s.retry <- struct{}{}:
			default:
			}
			s.signal()
		}
	}
}

func (p *Pusher) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.mu.view {
		t.ticked.Store(true)
		t.levelTicked.Store(true)
		t.signal()
	}
}

// stopLocked cancels t's goroutine, if one runs.
func (t *target) stopLocked() {
	if t.cancel != nil {
		t.cancel()
		t.cancel = nil
	}
}

func (t *target) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// SetView installs the discovery answer d for this replica at METADATA
// txnseq txnSeq. The targets become d.Targets minus this replica's own
// placement: new ones start pushing from their recorded cursor, removed
// ones stop (a push in flight to a removed target is cancelled), and the
// kind and range of the others are updated. A placement seen as joining
// for the first time gets its join mark. Every target wakes. A view with
// an older txnSeq than the current one is ignored. A LogValuesLog is told
// to write its entries without row values while the view has no target
// and no mark, with them otherwise; a LOAD view of a whole log (logWhole)
// keeps them on, and the log whole (see truncateLog).
func (p *Pusher) SetView(txnSeq uint64, d metadata.Discovery) {
	// A view with a target needs every entry from now on: the log's values
	// go on before the marks' snapshots are taken, so that no Apply after
	// a snapshot writes the form nobody reads (partition.Replica.
	// SetLogValues: only its newest change's entry, the truncation point
	// raised to below it), which would send the mark's tail to a row
	// snapshot of the whole range. On is always safe; the view installed
	// last sets it for good below.
	lv, hasLV := p.cfg.Log.(LogValuesLog)
	// A LOAD replica pushes nothing, so its view has no target; but one
	// whose log is whole (never truncated, or truncated at 1: a split
	// child sharing its parent's rows, entry 1 standing for them) keeps
	// it whole, values on, while it loads. Once it serves, its targets
	// read it: a sibling of a child sharing its parent's rows waits for
	// the parents to deliver the inherited rows, then reads the few
	// entries pushed here meanwhile (Config.Inherited); a replica the
	// joiner got its rows from finds them named as its own and skips
	// them, and the others are claimed held (filterRows). A log truncated
	// while loading would leave them below its truncation point: a row
	// snapshot of the whole range to every target, of rows they hold.
	keepLoad := d.Status == metadata.StatusLoad && p.logWhole()
	turnOn := hasLV && (keepLoad || slices.ContainsFunc(d.Targets, func(t metadata.Target) bool { return t.PlacementID != p.cfg.Placement }))
	if turnOn {
		p.mu.Lock()
		p.mu.turningOn++
		p.mu.Unlock()
		lv.SetLogValues(true)
	}
	// Snapshots for the new marks are taken before p.mu: SnapshotLog takes
	// the replica's apply lock, under which DropReady takes p.mu.
	frozen := p.freeze(d.Targets)
	p.mu.Lock()
	defer func() {
		p.mu.Unlock()
		closeAll(frozen)
	}()
	if turnOn {
		p.mu.turningOn--
	}
	if txnSeq < p.mu.txnSeq {
		p.log.Debug("older view ignored", "txnseq", txnSeq, "current", p.mu.txnSeq)
		return
	}
	p.mu.txnSeq = txnSeq
	view := make([]*target, 0, len(d.Targets))
	seen := make(map[uuid.UUID]bool, len(d.Targets))
	for _, spec := range d.Targets {
		if spec.PlacementID == p.cfg.Placement || seen[spec.PlacementID] {
			continue
		}
		seen[spec.PlacementID] = true
		view = append(view, p.updateTargetLocked(spec, &frozen))
	}
	for id, t := range p.mu.targets {
		if !seen[id] {
			frozen = append(frozen, p.removeTargetLocked(t))
		}
	}
	p.mu.view = view
	p.mu.viewSet = true
	p.mu.keepLoad = keepLoad
	if hasLV {
		// Under p.mu, so that views installed concurrently set it in
		// order; it takes no lock. A view with a target still on its way
		// (turningOn) keeps it on: its marks' snapshots may be taken.
		lv.SetLogValues(len(view) > 0 || len(p.mu.marks) > 0 || p.mu.turningOn > 0 || keepLoad)
	}
	for _, t := range view {
		p.startLocked(t)
		t.signal()
		if t.tail != nil {
			p.startLocked(t.tail)
			t.tail.signal()
		}
	}
	p.broadcastLocked()
}

// updateTargetLocked returns the target of spec, created if new, with its
// spec replaced by a copy of spec. A new mark takes its snapshot from
// frozen.
func (p *Pusher) updateTargetLocked(spec metadata.Target, frozen *[]LogSnapshot) *target {
	t, ok := p.mu.targets[spec.PlacementID]
	if !ok {
		t = &target{id: spec.PlacementID, wake: make(chan struct{}, 1), retry: make(chan struct{}, 1)}
		p.mu.targets[spec.PlacementID] = t
		p.log.Info("replication target added", "server", spec.ServerID, "target", spec.PlacementID, "kind", spec.Kind)
	}
	spec.Begin, spec.End = cloneBound(spec.Begin), cloneBound(spec.End)
	t.spec = spec
	p.setMarkLocked(t, frozen)
	switch {
	case spec.Kind == metadata.TargetSplit && t.tail == nil:
		t.tail = &target{id: tailCursor(t.id), tailOf: t, wake: make(chan struct{}, 1), retry: make(chan struct{}, 1)}
	case spec.Kind != metadata.TargetSplit && t.tail != nil:
		t.tail.stopLocked()
		t.tail = nil
	}
	if t.tail != nil {
		t.tail.spec = t.spec
	}
	return t
}

// tailCursor is the cursor id of a split target's tail stream: a fixed
// function of the target's placement, so it survives restarts.
func tailCursor(placement uuid.UUID) uuid.UUID {
	return uuid.NewSHA1(placement, []byte("split-tail"))
}

// removeTargetLocked stops and forgets t. A mark t had not reached is
// dropped too (a re-added target gets a new one); its snapshot is
// returned for the caller to close once p.mu is released (nil if none).
func (p *Pusher) removeTargetLocked(t *target) LogSnapshot {
	t.stopLocked()
	if t.tail != nil {
		t.tail.stopLocked()
		t.tail = nil
	}
	delete(p.mu.targets, t.id)
	p.log.Info("replication target removed", "server", t.spec.ServerID, "target", t.id)
	return p.unmarkLocked(t.id)
}

// needsMark reports whether a target of kind gets a mark: a joiner or a
// split child must get everything this replica held when it first saw it,
// a fixed mark, so its catch-up converges under load (the joiner is told
// Complete; a split's finalizer reads the mark from Status).
func needsMark(kind metadata.TargetKind) bool {
	return kind == metadata.TargetJoining || kind == metadata.TargetSplit
}

// freeze returns one snapshot of the log for each of specs that needs a
// mark and has none yet (possibly more: callers close what they do not
// use). It must be called without p.mu. A snapshot that cannot be taken
// (the replica was dropped or the store closed) is logged and leaves its
// target without a mark until the next SetView or Run: such a target is
// never reported past a mark nor told Complete.
func (p *Pusher) freeze(specs []metadata.Target) []LogSnapshot {
	p.mu.Lock()
	n := 0
	for _, spec := range specs {
		if _, ok := p.mu.marks[spec.PlacementID]; !ok && needsMark(spec.Kind) && spec.PlacementID != p.cfg.Placement {
			n++
		}
	}
	p.mu.Unlock()
	var out []LogSnapshot
	for range n {
		s, err := p.cfg.Log.SnapshotLog()
		if err != nil {
			p.log.Warn("cannot snapshot the log for a mark; retried with the next view", "err", err)
			break
		}
		out = append(out, s)
	}
	return out
}

// setMarkLocked gives t its mark if it needs one and has none, taking a
// snapshot from frozen; without one left, t stays without a mark.
func (p *Pusher) setMarkLocked(t *target, frozen *[]LogSnapshot) {
	if _, ok := p.mu.marks[t.id]; ok || !needsMark(t.spec.Kind) || len(*frozen) == 0 {
		return
	}
	s := (*frozen)[len(*frozen)-1]
	*frozen = (*frozen)[:len(*frozen)-1]
	mark := s.Seq()
	p.mu.marks[t.id] = mark
	p.mu.frozen[t.id] = s
	p.log.Info("mark set", "kind", t.spec.Kind, "server", t.spec.ServerID, "target", t.id, "mark", mark)
}

// setMarks gives the targets of the current view that need a mark one.
// It must be called without p.mu.
func (p *Pusher) setMarks() {
	p.mu.Lock()
	specs := make([]metadata.Target, 0, len(p.mu.view))
	for _, t := range p.mu.view {
		specs = append(specs, t.spec)
	}
	p.mu.Unlock()
	frozen := p.freeze(specs)
	p.mu.Lock()
	for _, t := range p.mu.view {
		p.setMarkLocked(t, &frozen)
	}
	p.mu.Unlock()
	closeAll(frozen)
}

// unmarkLocked forgets target id's mark if it still has its snapshot (its
// cursor is below the mark) and returns that snapshot for the caller to
// close without p.mu; nil if none.
func (p *Pusher) unmarkLocked(id uuid.UUID) LogSnapshot {
	s, ok := p.mu.frozen[id]
	if !ok {
		return nil
	}
	delete(p.mu.frozen, id)
	delete(p.mu.marks, id)
	return s
}

// thaw releases target id's snapshot once its cursor reached the mark
// (the mark stays).
func (p *Pusher) thaw(id uuid.UUID, s LogSnapshot) {
	p.mu.Lock()
	if p.mu.frozen[id] == s {
		delete(p.mu.frozen, id)
	}
	p.mu.Unlock()
	s.Close()
}

// closeAll closes every non-nil snapshot of ss.
func closeAll(ss []LogSnapshot) {
	for _, s := range ss {
		if s != nil {
			s.Close()
		}
	}
}

func (p *Pusher) broadcastLocked() {
	close(p.mu.changed)
	p.mu.changed = make(chan struct{})
}

func sameBound(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func cloneBound(b *int64) *int64 {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// WaitConfirmed blocks until at least need targets of kind replica whose
// server is in servers have confirmed seq (each server counts once). need
// <= 0 returns nil at once. It is woken by every confirmation and view
// change, and returns ctx's error (wrapped) when ctx ends first.
func (p *Pusher) WaitConfirmed(ctx context.Context, seq uint64, servers []string, need int) error {
	return p.waitCount(ctx, need, func() int {
		return p.countLocked(servers, func(t *target) bool {
			return t.spec.Kind == metadata.TargetReplica && p.hasLocked(t, seq)
		})
	}, func(n int, err error) error {
		return fmt.Errorf("replication: %d of %d replicas confirmed sequence %d: %w", n, need, seq, err)
	})
}

// WaitConfirmedChild is WaitConfirmed for a split child: it counts the
// targets whose partition is child (a split's insert acknowledgements also
// wait for the covering child's majority, DESIGN.md section 6). Targets of
// every kind count: once the split finalizes, this replica (now UNLOAD)
// sees the child's servers as replica or joining targets, under the same
// placements and cursors, and a wait begun before must still end.
func (p *Pusher) WaitConfirmedChild(ctx context.Context, seq uint64, child uuid.UUID, servers []string, need int) error {
	return p.waitCount(ctx, need, func() int {
		return p.countLocked(servers, func(t *target) bool {
			return t.spec.PartitionID == child && p.hasLocked(t, seq)
		})
	}, func(n int, err error) error {
		return fmt.Errorf("replication: %d of %d servers of child %s confirmed sequence %d: %w", n, need, child, seq, err)
	})
}

// WaitChildAfterMark is WaitConfirmedChild for rows a parent replica
// received after it learned of the split: a target counts once its tail
// stream (or its cursor) is past seq, or at once when seq is at or below
// its mark, since such rows are covered by the mark the finalize waits for
// (rule 7). It never waits for a backfill.
func (p *Pusher) WaitChildAfterMark(ctx context.Context, seq uint64, child uuid.UUID, servers []string, need int) error {
	return p.waitCount(ctx, need, func() int {
		return p.countLocked(servers, func(t *target) bool {
			mark, ok := p.mu.marks[t.id]
			return t.spec.PartitionID == child && (ok && seq <= mark || p.hasLocked(t, seq))
		})
	}, func(n int, err error) error {
		return fmt.Errorf("replication: %d of %d servers of child %s confirmed sequence %d: %w", n, need, child, seq, err)
	})
}

// waitCount blocks until count, run under p.mu after every confirmation
// and view change, reaches need (need <= 0: at once); when ctx ends first
// it returns fail of the last count and ctx's error.
func (p *Pusher) waitCount(ctx context.Context, need int, count func() int, fail func(n int, err error) error) error {
	if need <= 0 {
		return nil
	}
	for {
		p.mu.Lock()
		n := count()
		changed := p.mu.changed
		p.mu.Unlock()
		if n >= need {
			return nil
		}
		select {
		case <-ctx.Done():
			return fail(n, ctx.Err())
		case <-changed:
		}
	}
}

// countLocked counts the distinct servers among servers having a target
// for which counts holds.
func (p *Pusher) countLocked(servers []string, counts func(*target) bool) int {
	var counted []string
	for _, t := range p.mu.view {
		s := t.spec.ServerID
		if slices.Contains(servers, s) && !slices.Contains(counted, s) && counts(t) {
			counted = append(counted, s)
		}
	}
	return len(counted)
}

// hasLocked reports whether target t confirmed every row up to seq, or,
// for a row above t's mark, whether the tail stream did (see tailCursor).
func (p *Pusher) hasLocked(t *target, seq uint64) bool {
	if p.confirmedLocked(t) >= seq {
		return true
	}
	mark, ok := p.mu.marks[t.id]
	return ok && seq > mark && p.cfg.Log.Confirmed(tailCursor(t.id)) >= seq
}

// confirmedLocked is the highest sequence up to which t has every row: its
// cursor, or once that reached t's mark, the tail stream's cursor if
// higher.
func (p *Pusher) confirmedLocked(t *target) uint64 {
	c := p.cfg.Log.Confirmed(t.id)
	if mark, ok := p.mu.marks[t.id]; ok && c >= mark {
		c = max(c, p.cfg.Log.Confirmed(tailCursor(t.id)))
	}
	return c
}

// DropReady is the drop condition of DESIGN.md section 12, rule 3, for
// partition.Store.DropReplicaIf on the replica r this Pusher reads: r
// refuses writes (Unloading), no Apply is in flight on it (one that made
// its batch visible and has not returned yet could still acknowledge its
// rows), and Drained holds: every target confirmed r's high sequence,
// synced or not. It is the one condition the node's lifecycle drops
// replicas with; DropReplicaIf calls it under r's apply lock, so no Apply
// begins meanwhile.
func (p *Pusher) DropReady(r *partition.Replica) bool {
	return r.Unloading() && r.ApplyInFlight() == 0 && p.Drained()
}

// Drained reports whether there is at least one target and every target
// has confirmed the replica's high sequence (not only its synced
// watermark: a visible batch not yet synced is a write about to be
// acknowledged): the replication half of the drop check of DESIGN.md
// section 12, rule 3.
func (p *Pusher) Drained() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mu.view) == 0 {
		return false
	}
	high := p.cfg.Log.HighSeq()
	for _, t := range p.mu.view {
		if p.confirmedLocked(t) < high {
			return false
		}
	}
	return true
}

// Status returns the replication state towards each current target, in
// discovery order.
func (p *Pusher) Status() []wire.TargetStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	synced := p.cfg.Log.SyncedSeq()
	out := make([]wire.TargetStatus, 0, len(p.mu.view))
	for _, t := range p.mu.view {
		c := p.confirmedLocked(t)
		var lag uint64
		if synced > c {
			lag = synced - c
		}
		ts := wire.TargetStatus{
			Server: t.spec.ServerID, Placement: t.id, PartitionID: t.spec.PartitionID, Kind: string(t.spec.Kind),
			Confirmed: c, Lag: lag, LastError: t.lastErr, LastPush: t.lastPush,
		}
		if mark, ok := p.mu.marks[t.id]; ok {
			ts.Mark, ts.MarkReached = mark, c >= mark
		}
		out = append(out, ts)
	}
	return out
}

// runTarget is the goroutine of one target: push while there is something
// above the cursor, back off after a failure, otherwise sleep until woken.
func (p *Pusher) runTarget(ctx context.Context, t *target) {
	attempt := 0
	t.ahead, t.aheadOf = 0, 0
	t.sharers, t.asked, t.claimed = nil, false, 0
	defer p.dropRowSnap(t, "stopped")
	for {
		more, err := p.step(ctx, t)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			// A row snapshot survives a failed push: the retry resends
			// the batch that failed (readRowSnapshot).
			attempt++
			p.noteFailure(t, attempt, err)
			delay := p.retryPolicy().Delay(attempt)
			if errors.Is(err, errInheritPending) {
				delay = min(delay, p.cfg.Tick)
			}
			if !backoff.SleepOrWake(ctx, delay, t.retry) {
				return
			}
		case more:
			p.noteSuccess(t, &attempt)
		default:
			p.noteSuccess(t, &attempt)
			select {
			case <-ctx.Done():
				return
			case <-t.wake:
			}
		}
	}
}

// pushState is what one step needs of a target, copied under Pusher.mu.
type pushState struct {
	spec         metadata.Target
	txnSeq       uint64
	mark         uint64
	hasMark      bool
	completeSent bool
	// frozen is the snapshot the mark was taken from while the target's
	// cursor is below it (nil for a tail stream).
	frozen LogSnapshot
}

func (p *Pusher) pushState(t *target) pushState {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := t.id
	if t.tailOf != nil {
		id = t.tailOf.id
	}
	mark, ok := p.mu.marks[id]
	st := pushState{
		spec: t.spec, txnSeq: p.mu.txnSeq,
		mark: mark, hasMark: ok, completeSent: t.completeSent,
	}
	if t.tailOf == nil {
		st.frozen = p.mu.frozen[id]
	}
	return st
}

// step reads one batch above t's cursor and delivers it. more reports that
// the batch was full, so more rows may follow at once.
func (p *Pusher) step(ctx context.Context, t *target) (more bool, err error) {
	st := p.pushState(t)
	if err := p.confirmShared(t); err != nil {
		return false, err
	}
	if err := p.confirmAliased(t); err != nil {
		return false, err
	}
	cursor, backfill, done, err := p.cursorOf(t, &st)
	if done || err != nil {
		return false, err
	}
	if cursor == 0 && t.rs == nil {
		switch p.inherited(t) {
		case InheritPending:
			// A failure for Status and the laggard test (a target
			// down for long no longer holds the log's truncation back,
			// and past it takes a row snapshot); retried within a Tick.
			return false, errInheritPending
		case InheritHeld:
			if err := p.confirm(t.id, 1); err != nil {
				return false, err
			}
			cursor = 1
		}
	}
	if u := t.unheld; u != nil {
		t.unheld = nil
		if u.cursor == cursor && t.rs == nil {
			// The batch's push was applied: push the rows it left out
			// that the receiver did not hold, then count the batch.
			if err := p.pushUnheld(ctx, t, &st, u.b, u.claimsTo, u.levels); err != nil {
				t.unheld = u
				return false, fmt.Errorf("push the relayed rows up to sequence %d the target does not hold: %w", u.b.last, err)
			}
			t.ahead, t.aheadOf = u.b.ahead, cursor
			return u.b.more, p.confirmStep(t, u.b)
		}
	}
	if t.rs != nil && cursor >= t.rs.high {
		p.dropRowSnap(t, "passed") // the cursor got there another way
	}
	if t.rs != nil && t.rs.rows == 0 && cursor > t.rs.cursor && p.logServes(&st, cursor) {
		// Before any batch of the snapshot was delivered, the cursor
		// moved to where the log still has every change above it: the
		// answer to the snapshot's first push (a probe) named a replica
		// there that holds the rows (an alias confirmation, a split child
		// beside a parent replica). The log's changes since are what the
		// alias leaves to send, not the range's rows.
		p.dropRowSnap(t, "passed to the log")
	}
	if t.rs != nil && !(sameBound(t.rs.rng.Begin, st.spec.Begin) && sameBound(t.rs.rng.End, st.spec.End)) {
		p.dropRowSnap(t, "restarted for a new range") // never expected: a placement's range is fixed
	}
	catchUp := backfill || st.spec.Kind == metadata.TargetJoining && st.hasMark && cursor < st.mark ||
		t.rs != nil || p.belowLogStart(cursor) // a row snapshot is a bulk copy too
	// The catch-up slot, taken by acquire and given back by release (at
	// the latest when the step returns).
	release, held := func() {}, false
	took := func() { release, held = sync.OnceFunc(func() { <-p.cfg.CatchUpSlots }), true }
	if catchUp && !t.asked {
		// The first batch of a bulk copy goes to a target the receiver has
		// not answered about yet, which is asked first (below). A read of
		// one row tells whether there is anything to ask about: the whole
		// batch, read before the question, was read for nothing whenever
		// the answer named a replica holding the rows (every split child
		// beside a parent replica: in the smear load test those reads
		// were 12% of the servers' CPU; docs/performance.md, "A bulk copy
		// asks before it reads"). A first row the target does not take
		// leaves the question to the whole batch's read.
		look, err := p.readBatch(t, &st, cursor, catchUp, backfill, true)
		if err != nil {
			return false, err
		}
		t.rows, t.relayed, t.own, t.held = filterRows(t.rows[:0], t.relayed[:0], t.own[:0], t.held[:0], look.entries, &st)
		if len(t.rows) > 0 || look.chunk.Rows > 0 {
			if err := p.probe(ctx, t, &st); err != nil {
				return false, err
			}
			return true, nil
		}
	}
	acquire := func() error {
		select {
		case p.cfg.CatchUpSlots <- struct{}{}:
			took()
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { release() }()
	if catchUp && p.cfg.CatchUpSlots != nil {
		select {
		case p.cfg.CatchUpSlots <- struct{}{}:
			took()
		default:
			// The slot is busy with another target's bulk copy. A target
			// with nothing to copy (the empty range of a pre-split
			// child) need not queue behind it: a read of one row tells.
			empty, err := p.nothingToCopy(t, &st, cursor, backfill)
			if err == nil && !empty {
				err = acquire()
			}
			if err != nil {
				return false, err
			}
		}
	}
	b, err := p.readBatch(t, &st, cursor, catchUp, backfill, false)
	if err != nil {
		return false, err
	}
	if catchUp && p.cfg.CatchUpSlots != nil && !held && (len(b.entries) > 0 || b.chunk.Rows > 0) {
		// Rows came since the look (a live log): they go under a slot.
		if err := acquire(); err != nil {
			return false, err
		}
	}
	// Complete: after this push the target has everything up to its mark.
	complete := st.spec.Kind == metadata.TargetJoining && st.hasMark && b.confirmTo >= st.mark
	signal := complete && (!st.completeSent || t.ticked.Swap(false))
	t.rows, t.relayed, t.own, t.held = filterRows(t.rows[:0], t.relayed[:0], t.own[:0], t.held[:0], b.entries, &st)
	if len(t.rows) == 0 && len(t.held) == 0 && b.chunk.Rows == 0 && !signal {
		// Nothing for this target (or nothing at all): advance only.
		t.ahead, t.aheadOf = b.ahead, cursor
		if err := p.confirmStep(t, b); err != nil {
			return false, err
		}
		if !b.more {
			return false, p.refreshLevel(ctx, t, &st)
		}
		return true, nil
	}
	if catchUp && !t.asked && (len(t.rows) > 0 || b.chunk.Rows > 0) {
		// The first batch of a bulk copy, towards a target the receiver
		// has not answered about yet: ask it first, with an empty push,
		// whether a replica there already holds the rows (a split child
		// beside a parent replica). The next step then confirms by alias
		// instead of sending the batch (read again if still needed: the
		// snapshot's position moves only once a batch is delivered). A
		// target with nothing to receive (a pre-split child's empty
		// range) is not asked: its cursor advances without contact, as
		// before. The probe carries no rows: it gives the catch-up slot
		// back first (the batch is read again next step), so that one
		// receiver slow to answer (catching up with the METADATA of a
		// split storm) does not hold every other target's bulk copy on
		// this server.
		release()
		if err := p.probe(ctx, t, &st); err != nil {
			return false, err
		}
		// Aliased or not, the next step reads the batch again: under a
		// slot, after the answer's confirmation (confirmAliased).
		return true, nil
	}
	req := p.request(t, &st)
	req.Count, req.LastSeq, req.Complete = len(t.rows), b.last, complete
	req.Held = t.held
	req.Snapshot = t.rs != nil // the batch was read from t's row snapshot
	req.SnapshotLogged = req.Snapshot && t.rs.logged
	if st.spec.Kind == metadata.TargetReplica && t.tailOf == nil && b.confirmTo > cursor {
		// What the receiver holds of this log once the push is applied:
		// its copies relayed by third replicas are then dropped there.
		req.ClaimsTo = b.confirmTo
	}
	switch {
	case b.chunk.Rows > 0:
		// A snapshot chunk needs no filter: it holds the target's range
		// only, and snapshot rows carry no origin.
		req.Rows, req.Count = b.chunk.Data, b.chunk.Rows
	case len(t.rows) > 0:
		t.buf = AppendRows(t.buf[:0], t.rows)
		req.Rows = t.buf
		req.Relayed = t.relayed
		if !req.Snapshot {
			// A row snapshot's rows are read from the data space, not
			// from log entries: nothing says whose changes they are.
			req.Own = t.own
		}
	}
	clear(t.rows) // drop references to the entries
	resp, err := p.send(ctx, t, &st, req)
	if err != nil {
		return false, fmt.Errorf("push %d rows up to sequence %d: %w", req.Count, b.last, err)
	}
	p.stats.countMoved(KindOf(st.spec.Kind, req), req)
	if len(resp.Unheld) > 0 {
		if err := p.pushUnheld(ctx, t, &st, b, req.ClaimsTo, resp.Unheld); err != nil {
			t.unheld = &unheldBatch{cursor: cursor, b: b, claimsTo: req.ClaimsTo, levels: slices.Clone(resp.Unheld)}
			return false, fmt.Errorf("push the relayed rows up to sequence %d the target does not hold: %w", b.last, err)
		}
	}
	if len(resp.Unheld) == 0 {
		t.claimed = max(t.claimed, req.ClaimsTo)
	}
	p.mu.Lock()
	t.lastPush = time.Now()
	t.completeSent = t.completeSent || complete
	p.mu.Unlock()
	t.ahead, t.aheadOf = b.ahead, cursor
	return b.more, p.confirmStep(t, b)
}

// refreshLevel tells an idle replica target, once per Tick at most, how
// far its cursor moved past the last ClaimsTo it was told: an empty push
// whose ClaimsTo is the cursor. A cursor moves without a push when every
// change read was the target's own (or outside its range), and the
// receiver's level of this log (replication.Applied) would stay behind
// until this replica writes a row of its own: a third replica's claims
// on rows relayed from here (a joiner's rows came as this replica's row
// snapshot, at its high sequence) would then be answered unheld, and the
// rows pushed after all.
func (p *Pusher) refreshLevel(ctx context.Context, t *target, st *pushState) error {
	if st.spec.Kind != metadata.TargetReplica || t.tailOf != nil || t.rs != nil || !t.levelTicked.Load() {
		return nil
	}
	cursor := p.cfg.Log.Confirmed(t.id)
	if cursor <= t.claimed {
		return nil
	}
	t.levelTicked.Store(false)
	req := p.request(t, st)
	req.LastSeq, req.ClaimsTo = cursor, cursor
	if _, err := p.send(ctx, t, st, req); err != nil {
		return fmt.Errorf("tell the target its level of this log (%d): %w", cursor, err)
	}
	t.claimed = cursor
	return nil
}

// unheldBatch is target.unheld.
type unheldBatch struct {
	cursor   uint64 // the target's cursor when b was read
	b        batch
	claimsTo uint64
	levels   []wire.OriginLevel // the receiver's answer
}

// request returns the push request of a step towards t, without rows.
func (p *Pusher) request(t *target, st *pushState) wire.PushRequest {
	to := t.id
	if t.tailOf != nil {
		to = t.tailOf.id
	}
	return wire.PushRequest{
		Table: p.cfg.Table, PartitionID: st.spec.PartitionID,
		FromServer: p.cfg.Self, FromPlacement: p.cfg.Placement, ToPlacement: to,
		TxnSeq: st.txnSeq,
	}
}

// send delivers req to t's server, keeps the answer's sharers (see
// confirmAliased) and returns the answer. A stale placement answer is
// reported to OnStale. An answer naming unheld origins of claims req did
// not make is an error.
func (p *Pusher) send(ctx context.Context, t *target, st *pushState, req wire.PushRequest) (wire.PushResponse, error) {
	resp, err := p.cfg.Sender.Push(ctx, st.spec, req)
	if err != nil {
		if errors.Is(err, ErrStalePlacement) && p.cfg.OnStale != nil {
			p.cfg.OnStale(st.spec)
		}
		return wire.PushResponse{}, err
	}
	t.sharers, t.asked = resp.Shares, true
	for _, o := range resp.Unheld {
		if !slices.ContainsFunc(req.Held, func(h wire.HeldRelay) bool { return h.Origin == o.Origin }) {
			return wire.PushResponse{}, fmt.Errorf("the receiver answers origin %s unheld, which the push claimed nothing of", o.Origin)
		}
	}
	return resp, nil
}

// pushUnheld pushes t the rows of b that the push of b left out as held
// (wire.PushRequest.Held) for the origins its receiver answered unheld,
// above the levels it holds of their logs: their entries are read again,
// decoded, from the log (the cursor has not moved, so no truncation took
// them), and pushed with the claim claimsTo of b's push. The step counts
// b as delivered only once this push is confirmed too.
func (p *Pusher) pushUnheld(ctx context.Context, t *target, st *pushState, b batch, claimsTo uint64, unheld []wire.OriginLevel) error {
	rl, ok := p.cfg.Log.(RelayLog)
	if !ok {
		return errors.New("the log cannot read relayed entries (never expected: held claims come from a RelayLog)")
	}
	var entries []partition.LogEntry
	for _, o := range unheld {
		es, err := rl.ReadRelayed(b.from, b.last, o.Origin, o.Seq)
		if err != nil {
			return fmt.Errorf("read the entries of %s between sequences %d and %d: %w", o.Origin, b.from, b.last, err)
		}
		entries = append(entries, es...)
	}
	if len(unheld) > 1 {
		slices.SortFunc(entries, func(x, y partition.LogEntry) int { return cmp.Compare(x.Seq, y.Seq) })
	}
	rows, spans := t.rows[:0], t.relayed[:0]
	for i := range entries {
		e := &entries[i]
		if !inRange(e.Row.Time, st.spec.Begin, st.spec.End) {
			continue
		}
		if e.OriginSeq > 0 {
			spans = appendRelayed(spans, len(rows), e)
		}
		rows = append(rows, e.Row)
	}
	t.rows, t.relayed = rows, spans
	if len(rows) == 0 {
		// Never expected: the highest claim of an unheld origin is the
		// OriginSeq of an entry still in [from, last] (0 once its hint
		// is forgotten, and read then too). The step is retried.
		return fmt.Errorf("no entry of the unheld origins %v found again between sequences %d and %d", unheld, b.from, b.last)
	}
	req := p.request(t, st)
	t.buf = AppendRows(t.buf[:0], rows)
	req.Rows, req.Count, req.LastSeq, req.ClaimsTo, req.Relayed = t.buf, len(rows), b.last, claimsTo, spans
	clear(t.rows)
	if _, err := p.send(ctx, t, st, req); err != nil {
		return fmt.Errorf("push %d rows: %w", req.Count, err)
	}
	p.stats.countMoved(KindOf(st.spec.Kind, req), req)
	return nil
}

// probe sends t an empty push (no rows, nothing confirmed by it) for the
// answer's sharers: confirmAliased then raises t's cursor at the next step
// if it named any. It costs one round trip per target and goroutine
// start, against a batch of up to CatchUpBatchRows rows (a 4 MiB snapshot
// chunk) a split child on a server holding the parent would otherwise
// receive before the answer that names its sharer.
func (p *Pusher) probe(ctx context.Context, t *target, st *pushState) error {
	if _, err := p.send(ctx, t, st, p.request(t, st)); err != nil {
		return fmt.Errorf("ask %s for the replicas sharing its rows: %w", t.id, err)
	}
	return nil
}

// confirmAliased raises t's cursor to this Pusher's cursor for a replica
// the target's server named as sharing the target's rows and covering its
// range (wire.PushResponse.Shares, kept from the last push answered since
// the goroutine started): every row of this log up to that cursor in that
// replica's range is stored, synced, in the rows the target reads, and
// stays there while the target lives (a drop deletes only rows no live
// member covers). A split child on a server that holds the parent is so
// confirmed, after the answer to its first push, up to what the parent
// replica there confirmed: its backfill or row snapshot stops at its
// first batch.
func (p *Pusher) confirmAliased(t *target) error {
	if len(t.sharers) == 0 {
		return nil
	}
	cursor := p.cfg.Log.Confirmed(t.id)
	best := cursor
	p.mu.Lock()
	for _, q := range t.sharers {
		c := p.cfg.Log.Confirmed(q)
		if qt := p.mu.targets[q]; qt != nil {
			c = p.confirmedLocked(qt)
		}
		best = max(best, c)
	}
	p.mu.Unlock()
	if best <= cursor {
		return nil
	}
	p.stats.aliasConfirms.Add(1)
	return p.confirm(t.id, best)
}

// errInheritPending is a step's answer while the replicas this one
// inherited its rows from have not delivered them to the target
// (InheritPending).
var errInheritPending = errors.New("waiting for the replicas this one shares its rows with to deliver them (inherited rows)")

// loggedFromOne reports whether the log is a TruncatingLog truncated at 1:
// its only missing entry stands for the rows the replica held when it was
// created in a shared data space (see inherited).
func (p *Pusher) loggedFromOne() bool {
	tl, ok := p.cfg.Log.(TruncatingLog)
	return ok && tl.LogStart() == 1
}

// logWhole reports whether the log is a TruncatingLog never truncated, or
// truncated at 1 only (loggedFromOne): a target from cursor 0 can be
// served from it.
func (p *Pusher) logWhole() bool {
	tl, ok := p.cfg.Log.(TruncatingLog)
	return ok && tl.LogStart() <= 1
}

// inherited asks Config.Inherited about t when the log's truncation point
// is 1: its only missing entry stands for the rows the replica held when
// it was created. InheritNone otherwise.
func (p *Pusher) inherited(t *target) Inheritance {
	if p.cfg.Inherited == nil || !p.loggedFromOne() {
		return InheritNone
	}
	to := t.id
	if t.tailOf != nil {
		to = t.tailOf.id
	}
	inh := p.cfg.Inherited(to)
	if inh == InheritHeld {
		p.stats.inheritedConfirms.Add(1)
	}
	return inh
}

// Delivered reports whether target is a target of this Pusher's view
// (served) and, if so, whether it has confirmed every row of the log up
// to its high sequence (all): the node's Config.Inherited for a replica
// that shares this one's rows asks it.
func (p *Pusher) Delivered(target uuid.UUID) (served, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.mu.targets[target]
	if t == nil {
		return false, false
	}
	return true, p.confirmedLocked(t) >= p.deliveryNeed()
}

// Deliveries reports Delivered for every target of the Pusher: its
// placement, and whether it confirmed the whole log. A replica dropped
// from a shared data space leaves this answer to the members created
// after it (the node's Config.Inherited): once it is dropped its log
// never grows, so the answer is final.
func (p *Pusher) Deliveries() map[uuid.UUID]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	need := p.deliveryNeed()
	out := make(map[uuid.UUID]bool, len(p.mu.targets))
	for id, t := range p.mu.targets {
		out[id] = p.confirmedLocked(t) >= need
	}
	return out
}

// deliveryNeed is the cursor a target must have confirmed to hold every
// row of the log (Delivered): its high sequence, or the truncation point
// of a log truncated above it (a shared member that never wrote: the
// target must have had the rows that point stands for).
func (p *Pusher) deliveryNeed() uint64 {
	need := p.cfg.Log.HighSeq()
	if tl, ok := p.cfg.Log.(TruncatingLog); ok {
		need = max(need, tl.LogStart())
	}
	return need
}

// confirmShared confirms t up to the synced watermark when t's replica
// shares this replica's rows (SharingLog): nothing is pushed to it. A
// joining target still gets its Complete signal from the step (an empty
// push).
func (p *Pusher) confirmShared(t *target) error {
	sl, ok := p.cfg.Log.(SharingLog)
	if !ok {
		return nil
	}
	to := t.id
	if t.tailOf != nil {
		to = t.tailOf.id
	}
	// The watermark is read first: every entry up to it is stored
	// (synced) in the shared rows when SharesData answers.
	synced := p.cfg.Log.SyncedSeq()
	if synced <= p.cfg.Log.Confirmed(t.id) || !sl.SharesData(to) {
		return nil
	}
	p.stats.sharedConfirms.Add(1)
	return p.confirm(t.id, synced)
}

// logServes reports whether a read of the log from cursor (of the mark's
// snapshot while st has one, as readBatch reads it) would be answered,
// not refused as truncated.
func (p *Pusher) logServes(st *pushState, cursor uint64) bool {
	if st.frozen != nil {
		_, err := st.frozen.ReadLog(cursor, 1)
		return err == nil
	}
	return !p.belowLogStart(cursor)
}

// belowLogStart reports whether cursor is below the log's truncation
// point: the step reads a row snapshot.
func (p *Pusher) belowLogStart(cursor uint64) bool {
	tl, ok := p.cfg.Log.(TruncatingLog)
	return ok && cursor < tl.LogStart()
}

// confirmStep confirms a delivered batch and ends the target's row
// snapshot once its last batch is confirmed.
func (p *Pusher) confirmStep(t *target, b batch) error {
	if t.rs != nil {
		t.rs.advance()
	}
	if err := p.confirm(t.id, b.confirmTo); err != nil {
		return err
	}
	if p.cfg.Quota > 0 {
		// A target that caught up to within the quota counts again
		// (WaitQuota), whether or not an insert looks meanwhile.
		p.mu.Lock()
		p.quotaStandingLocked(t, p.cfg.Log.SyncedSeq(), time.Now())
		p.mu.Unlock()
	}
	if t.rs != nil && t.rs.done {
		p.dropRowSnap(t, "done")
	}
	return nil
}

// cursorOf returns the sequence t's confirmed cursor is at for this step,
// after thawing a log snapshot t has read past (st.frozen is then nil),
// and whether the step is a split target's backfill (its own stream up to
// its mark only). done: nothing to push now (the tail stream pushes the
// rest).
func (p *Pusher) cursorOf(t *target, st *pushState) (cursor uint64, backfill, done bool, err error) {
	cursor = p.cfg.Log.Confirmed(t.id)
	if st.frozen != nil && cursor >= st.mark {
		p.thaw(t.id, st.frozen)
		st.frozen = nil
	}
	// Up to its mark, a target reads the snapshot the mark was taken from:
	// a row held then and overwritten since is not in the live log at or
	// below the mark.
	switch {
	case t.tailOf != nil:
		cursor = max(cursor, st.mark)
	case st.spec.Kind == metadata.TargetSplit && st.hasMark:
		if cursor >= st.mark {
			return cursor, false, true, nil // the tail stream pushes the rest
		}
		if st.frozen == nil {
			return cursor, false, false, fmt.Errorf("split target below its mark %d has no log snapshot", st.mark)
		}
		backfill = true
	case st.hasMark && cursor >= st.mark:
		// A former split target (the split finalized): continue from
		// where its tail stream got.
		if tc := p.cfg.Log.Confirmed(tailCursor(t.id)); tc > cursor {
			if err := p.confirm(t.id, tc); err != nil {
				return cursor, false, false, err
			}
			cursor = tc
		}
	}
	return cursor, backfill, false, nil
}

// batch is one read of a step: the entries to filter and push, and what
// the target's cursor may claim after them.
type batch struct {
	entries []partition.LogEntry
	// chunk, when it holds rows, is a row snapshot's batch read as a
	// snapshot chunk (entries is then empty): sent as it is.
	chunk partition.Chunk
	// more: the batch was full (or the snapshot was read to its end), so
	// more rows may follow at once.
	more bool
	// from is the sequence the batch was read after; last is the
	// sequence the push reaches (its LastSeq).
	from, last uint64
	// confirmTo is what the cursor may claim after the push; ahead, when
	// not 0, is where the next read goes on from while the cursor stays.
	confirmTo, ahead uint64
}

// nothingToCopy reports whether a catch-up step towards t would find no
// row to push, by a read of at most one row (one entry of a log, one row
// of a row snapshot's chunk): exact for a row snapshot and for a log with
// no entry left, and false for any entry read (it may lie outside t's
// range, which only the full read's filter tells). The read leaves
// nothing behind but what the full read redoes (a row snapshot started,
// its pending position).
func (p *Pusher) nothingToCopy(t *target, st *pushState, cursor uint64, backfill bool) (bool, error) {
	b, err := p.readBatch(t, st, cursor, true, backfill, true)
	if err != nil {
		return false, err
	}
	return len(b.entries) == 0 && b.chunk.Rows == 0, nil
}

// readBatch reads the batch above cursor (from the snapshot while st has
// one, else the live log), in CatchUpBatchRows when catchUp (one row when
// peek: nothingToCopy), and decides what the cursor may claim after it.
func (p *Pusher) readBatch(t *target, st *pushState, cursor uint64, catchUp, backfill, peek bool) (batch, error) {
	frozen := st.frozen != nil
	batchRows := p.cfg.BatchRows
	if catchUp {
		batchRows = p.cfg.CatchUpBatchRows
	}
	if peek {
		batchRows = 1
	}
	// A cursor below the log's truncation point cannot be served from
	// the log: the target gets a row snapshot (readRowSnapshot).
	if tl, ok := p.cfg.Log.(TruncatingLog); ok && t.rs == nil && !frozen && cursor < tl.LogStart() {
		if err := p.startRowSnap(t, st, cursor); err != nil {
			return batch{}, err
		}
	}
	if t.rs != nil {
		return p.readRowSnapshot(t, cursor, batchRows, peek)
	}
	from := cursor
	if t.aheadOf == cursor && t.ahead > cursor {
		from = t.ahead
	}
	var entries []partition.LogEntry
	var err error
	tl, targeted := p.cfg.Log.(TargetLog)
	rl, relaying := p.cfg.Log.(RelayLog)
	switch {
	case frozen:
		entries, err = st.frozen.ReadLog(from, batchRows)
	case relaying && !p.cfg.SendRelays && st.spec.Kind == metadata.TargetReplica && t.tailOf == nil:
		// The condition of filterRows' claims: the relayed rows are
		// left out, claimed held (pushUnheld sends them if not).
		entries, err = rl.ReadLogBare(from, batchRows, st.spec.PlacementID)
	case targeted && st.spec.Kind == metadata.TargetReplica:
		// The condition of filterRows' skip of the target's own values.
		entries, err = tl.ReadLogFor(from, batchRows, st.spec.PlacementID)
	default:
		entries, err = p.cfg.Log.ReadLog(from, batchRows)
	}
	if errors.Is(err, partition.ErrLogTruncated) {
		// Truncated since the check above, or a mark taken after a
		// truncation: its log lacks the entries below the point too.
		if err := p.startRowSnap(t, st, cursor); err != nil {
			return batch{}, err
		}
		return p.readRowSnapshot(t, cursor, batchRows, peek)
	}
	if err != nil {
		return batch{}, fmt.Errorf("read log after %d: %w", from, err)
	}
	cut := len(entries) >= batchRows
	if n := cutBatch(entries, p.cfg.MaxBatchBytes); n < len(entries) {
		entries, cut = entries[:n], true
	}
	// The snapshot holds nothing more: every row it holds up to the mark
	// is in entries or was pushed before.
	reachedMark := frozen && !cut
	b := batch{entries: entries, more: cut || reachedMark && !backfill} // the live log above the mark follows at once
	b.from, b.last = from, from
	if len(entries) > 0 {
		b.last = entries[len(entries)-1].Seq
	}
	if reachedMark {
		b.last = st.mark // the sequences up to the mark not read were overwritten before the snapshot
	}
	// What the cursor may claim after this push. A read that got to the
	// end of the log (or snapshot) has every row written up to last: a
	// sequence it skipped was overwritten by a change it holds (in a log
	// written before log records; since them no write deletes an entry,
	// and a log skips no sequence above its truncation point). A batch
	// cut by its size has that only if it skips no sequence, straight
	// from the cursor: a row overwritten after an earlier read (its entry
	// below last gone, its new one maybe beyond the batch) would otherwise
	// count as held by the target (an insert acknowledged, a split child
	// past a write) while it is not. The reads then go on from last and
	// the cursor stays until one gets to the end.
	b.confirmTo = b.last
	if cut && !reachedMark && (from != cursor || !contiguous(entries, from)) {
		b.confirmTo, b.ahead = cursor, b.last
	}
	if len(entries) == 0 && b.confirmTo > p.cfg.Log.SyncedSeq() {
		// An empty read from a tail stream's cursor, its mark, while the
		// mark's last rows are still being synced (a mark is the log's
		// high sequence): claim nothing yet (rule 1; SetConfirmed would
		// refuse it). The sync's notification brings the next step.
		b.confirmTo = p.cfg.Log.Confirmed(t.id)
	}
	return b, nil
}

// startRowSnap gives t a row snapshot: of its mark's snapshot while it
// reads one (the rows held at the mark, which is what that snapshot's log
// from the cursor would give: a target below a truncation point has none
// of the truncated entries), else of the log as it is now.
func (p *Pusher) startRowSnap(t *target, st *pushState, cursor uint64) error {
	rs := &rowSnap{start: time.Now(), cursor: cursor, rng: partition.RowRange{Begin: cloneBound(st.spec.Begin), End: cloneBound(st.spec.End)}}
	if st.frozen != nil {
		s, ok := st.frozen.(RowSnapshot)
		if !ok {
			return fmt.Errorf("the log is truncated above cursor %d and the mark's snapshot cannot be read as rows", cursor)
		}
		rs.snap, rs.high = s, s.Seq()
	} else {
		s, err := p.cfg.Log.SnapshotLog()
		if err != nil {
			return fmt.Errorf("snapshot the log for a row snapshot: %w", err)
		}
		rsnap, ok := s.(RowSnapshot)
		if !ok {
			s.Close()
			return fmt.Errorf("the log is truncated above cursor %d and its snapshot cannot be read as rows", cursor)
		}
		rs.snap, rs.own, rs.high = rsnap, true, s.Seq()
	}
	// Asked after the snapshot was taken: a space never shared now was
	// never shared when the snapshot was.
	if ll, ok := p.cfg.Log.(LoggedRowsLog); ok {
		rs.logged = ll.RowsAllLogged()
	}
	t.rs = rs
	p.snapshotStarted()
	p.log.Info("row snapshot started", "target", t.id, "cursor", cursor, "seq", rs.high, "of_mark", !rs.own)
	return nil
}

// readRowSnapshot reads t's next row snapshot batch: the rows after the
// last one delivered, in key order, cut like a log batch (the position
// moves once the batch is delivered: confirmStep). The cursor stays until
// the batch that gets to the end of the snapshot, which confirms the
// snapshot's sequence: every row live then is in it or in an earlier
// batch of the same snapshot, all delivered. A read error drops the
// snapshot: the next step starts a new one. The rows carry no origin: a row may go
// back to the placement it came from, where it ties and changes nothing.
func (p *Pusher) readRowSnapshot(t *target, cursor uint64, batchRows int, peek bool) (batch, error) {
	rs := t.rs
	if cs, ok := rs.snap.(ChunkSnapshot); ok && !p.cfg.RowSnapshots {
		maxBytes := p.cfg.MaxBatchBytes
		if peek {
			maxBytes = 1 // one row
		}
		return p.readChunk(t, cs, cursor, maxBytes)
	}
	rows, err := rs.snap.ReadRows(rs.after, rs.rng, batchRows)
	if err != nil {
		p.dropRowSnap(t, "failed")
		return batch{}, fmt.Errorf("read row snapshot at sequence %d: %w", rs.high, err)
	}
	entries := make([]partition.LogEntry, len(rows))
	for i := range rows {
		entries[i] = partition.LogEntry{Seq: rs.high, Row: rows[i]}
	}
	cut := len(entries) >= batchRows
	if n := cutBatch(entries, p.cfg.MaxBatchBytes); n < len(entries) {
		entries, cut = entries[:n], true
	}
	rs.next, rs.nextDone, rs.nextRows = rs.after, !cut, len(entries)
	if len(entries) > 0 {
		last := &entries[len(entries)-1].Row
		rs.next = &partition.RowPos{Series: last.Series, Time: last.Time}
	}
	b := batch{entries: entries, more: true, last: rs.high, confirmTo: cursor}
	if !cut {
		b.confirmTo = rs.high
	}
	return b, nil
}

// readChunk is readRowSnapshot for a snapshot read as chunks: one chunk
// of up to Config.MaxBatchBytes of stored rows, which the receiver
// ingests as sstables. The position, the cursor and the end of the
// snapshot follow the same rules as a batch of rows.
func (p *Pusher) readChunk(t *target, cs ChunkSnapshot, cursor uint64, maxBytes int) (batch, error) {
	rs := t.rs
	c, err := cs.ReadChunk(t.buf[:0], rs.after, rs.rng, maxBytes)
	if err != nil {
		p.dropRowSnap(t, "failed")
		return batch{}, fmt.Errorf("read snapshot chunk at sequence %d: %w", rs.high, err)
	}
	if c.Data != nil {
		t.buf = c.Data // reused by the next read once this push returned
	}
	rs.next, rs.nextDone, rs.nextRows = rs.after, c.Done, c.Rows
	if c.Last != nil {
		rs.next = c.Last
	}
	b := batch{chunk: c, more: true, last: rs.high, confirmTo: cursor}
	if c.Done {
		b.confirmTo = rs.high
	}
	return b, nil
}

// dropRowSnap ends t's row snapshot, if any (closing it if taken for t).
func (p *Pusher) dropRowSnap(t *target, why string) {
	rs := t.rs
	if rs == nil {
		return
	}
	t.rs = nil
	if rs.own {
		rs.snap.Close()
	}
	elapsed := time.Since(rs.start)
	p.log.Info("row snapshot "+why, "target", t.id, "seq", rs.high, "rows", rs.rows,
		"elapsed", elapsed.Round(time.Millisecond))
	p.snapshotEnded(t.id, rs.rows, elapsed, snapshotResult(why))
}

// truncateLog deletes the log entries every target of the view confirmed
// (each split target's tail stream included) when the Log is a
// TruncatingLog, Config.KeepLog is off and that deletes at least
// Config.TruncateMin sequences. With no target and no mark in a view
// SetView installed, it deletes the entries up to the synced watermark:
// nobody reads them (before the first SetView nothing is truncated, so a
// restart does not force row snapshots on targets not installed yet),
// unless the view is LOAD and the log whole (logWhole): a joiner or a split
// child keeps its log for the targets it will push to once it serves
// (SetView). A
// target added meanwhile, or whose cursor comes back lower after a crash
// (cursor writes are not synced), finds its cursor below the truncation
// point and gets a row snapshot; marks pin the pebble state they read, so
// a truncation never takes rows from a LogSnapshot taken before it.
//
// A laggard does not hold the point back, so that a target that is down
// does not make the log (whose entries carry the rows' values) grow
// without bound: a target of the view whose steps have all failed for at
// least Config.LaggardAfter and whose cursor is more than
// Config.MaxLogLag sequences below the synced watermark (laggard). The
// point is then the lowest cursor of the other targets (the synced
// watermark if none), and the laggard, once back, finds its cursor below
// it and gets a row snapshot like a new target. Never passed: a split
// target's tail stream (a split pins the log only while it lasts, and no
// test here sends a tail stream a row snapshot), and a mark's snapshot,
// which holds its own pebble state and truncation point
// (partition.LogSnapshot), so a joiner or split child below its mark
// reads it whatever the live log's point. Acknowledgement
// (WaitConfirmed) and the drop condition (Drained, DropReady: rule 3) read
// cursors, never the truncation point, so passing a target changes
// neither: an insert still waits for its quorum's cursors, and a replica
// with a target down is still not drained.
func (p *Pusher) truncateLog() {
	tl, ok := p.cfg.Log.(TruncatingLog)
	if !ok || p.cfg.KeepLog {
		return
	}
	p.mu.Lock()
	if len(p.mu.view) == 0 {
		idle := p.mu.viewSet && len(p.mu.marks) == 0 && !p.mu.keepLoad
		p.mu.Unlock()
		if idle {
			p.truncateTo(tl, p.cfg.Log.SyncedSeq())
		}
		return
	}
	synced := p.cfg.Log.SyncedSeq()
	now := p.cfg.Now()
	low := synced
	type passing struct {
		t     *target
		since int64 // its failingSince when found a laggard
	}
	var laggards []passing
	for _, t := range p.mu.view {
		if c := p.cfg.Log.Confirmed(t.id); p.laggard(t, c, synced, now) {
			laggards = append(laggards, passing{t, t.failingSince.Load()})
		} else {
			low = min(low, c)
			t.passed = false
		}
		if t.tail != nil {
			low = min(low, p.cfg.Log.Confirmed(t.tail.id))
		}
	}
	p.mu.Unlock()
	p.truncateTo(tl, low)
	if len(laggards) == 0 {
		return
	}
	start := tl.LogStart()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range laggards {
		t := l.t
		if c := p.cfg.Log.Confirmed(t.id); c < start && !t.passed && p.mu.targets[t.id] == t {
			t.passed = true
			p.log.Info("log truncated past a down target", "server", t.spec.ServerID, "target", t.id,
				"cursor", c, "truncated_to", start, "failing_for", now.Sub(time.Unix(0, l.since)).Round(time.Second))
		}
	}
}

// laggard reports whether t, whose cursor is c, no longer holds the log's
// truncation point back: its steps have all failed for at least
// Config.LaggardAfter and c is more than Config.MaxLogLag sequences below
// synced (see truncateLog).
func (p *Pusher) laggard(t *target, c, synced uint64, now time.Time) bool {
	since := t.failingSince.Load()
	return since != 0 && now.Sub(time.Unix(0, since)) >= p.cfg.LaggardAfter &&
		synced > c && synced-c > uint64(p.cfg.MaxLogLag)
}

// truncateTo truncates the log up to low if that deletes at least
// Config.TruncateMin sequences.
func (p *Pusher) truncateTo(tl TruncatingLog, low uint64) {
	if start := tl.LogStart(); low <= start || low-start < uint64(p.cfg.TruncateMin) {
		return
	}
	// Not under p.mu: TryTruncateLog takes the replica's apply lock, under
	// which DropReady takes p.mu. When the lock is busy it truncates
	// nothing, and the next tick tries again.
	if _, err := tl.TryTruncateLog(low); err != nil && !errors.Is(err, partition.ErrDropped) && !errors.Is(err, partition.ErrClosed) {
		p.log.Warn("log truncation failed", "up_to", low, "err", err)
	}
}

// contiguous reports whether entries hold every sequence from after+1 on,
// none skipped.
func contiguous(entries []partition.LogEntry, after uint64) bool {
	for i := range entries {
		if entries[i].Seq != after+uint64(i)+1 {
			return false
		}
	}
	return true
}

// cutBatch returns how many of entries fit in a push of about maxBytes
// (at least one): a batch of large rows must stay under the receiver's
// body limit, or it would be refused forever.
func cutBatch(entries []partition.LogEntry, maxBytes int) int {
	size := 0
	for i := range entries {
		size += rowSize(&entries[i].Row)
		if size > maxBytes && i > 0 {
			return i
		}
	}
	return len(entries)
}

// rowSize is an upper estimate of a row's encoded size.
func rowSize(r *model.Row) int {
	n := 24 + len(r.Series)
	for i := range r.Fields {
		n += 32 + len(r.Fields[i].Name) + len(r.Fields[i].Value.S)
	}
	return n
}

// filterRows appends to dst the rows of entries that go to the target:
//   - replica: all but the rows whose stored value was pushed here by the
//     target's placement (LogEntry.Origin): it holds them already;
//   - split: the rows inside the child's range;
//   - joining (and any other kind): all.
//
// For a replica target it also appends to spans the runs of those rows
// that another replica pushed here with its log's sequence
// (LogEntry.OriginSeq): the receiver drops them if that replica's own
// push has delivered them (wire.PushRequest.Relayed). For every target it
// appends to own the runs of rows that are this replica's own changes
// (no LogEntry.Origin): the receiver writes them without a read
// (wire.PushRequest.Own).
//
// An entry read Bare (ReadLogBare: a relayed value, not decoded) of
// another origin than the target is not sent: it is counted in held, the
// claims of the push per origin (wire.PushRequest.Held), with the
// highest OriginSeq of that origin's entries.
//
// The skip rule is keyed on the placement that sent a row, never on the
// server whose node id its versions carry: a row stamped by a front end
// (a smeared insert) may be stored first by another replica, and the
// stamping server's own replica may lack it.
func filterRows(dst []model.Row, spans []wire.RelaySpan, own []wire.Span, held []wire.HeldRelay, entries []partition.LogEntry, st *pushState) ([]model.Row, []wire.RelaySpan, []wire.Span, []wire.HeldRelay) {
	for i := range entries {
		r := &entries[i].Row
		// Every target gets only the rows of its own range: a split child
		// before SPLIT_FINALIZE, and after it the children an UNLOAD parent
		// drains into (replica targets of other, narrower partitions).
		if !inRange(r.Time, st.spec.Begin, st.spec.End) {
			continue
		}
		if st.spec.Kind == metadata.TargetReplica && entries[i].Origin == st.spec.PlacementID {
			continue
		}
		if e := &entries[i]; e.Bare {
			k := slices.IndexFunc(held, func(h wire.HeldRelay) bool { return h.Origin == e.Origin })
			if k < 0 {
				held = append(held, wire.HeldRelay{Origin: e.Origin})
				k = len(held) - 1
			}
			held[k].Seq = max(held[k].Seq, e.OriginSeq)
			held[k].Rows++
			continue
		}
		if e := &entries[i]; st.spec.Kind == metadata.TargetReplica && e.Origin != uuid.Nil && e.OriginSeq > 0 {
			spans = appendRelayed(spans, len(dst), e)
		}

		if entries[i].Origin == uuid.Nil {
			n := len(dst)
			if k := len(own) - 1; k >= 0 && own[k].End == n {
				own[k].End++
			} else {
				own = append(own, wire.Span{Start: n, End: n + 1})
			}
		}
		dst = append(dst, *r)
	}
	return dst, spans, own, held
}

// appendRelayed appends to spans the row n of a push, relayed as e says
// (wire.RelaySpan): the last span grows when it ends at n with the same
// origin and sequence.
func appendRelayed(spans []wire.RelaySpan, n int, e *partition.LogEntry) []wire.RelaySpan {
	if k := len(spans) - 1; k >= 0 && spans[k].End == n && spans[k].Origin == e.Origin && spans[k].Seq == e.OriginSeq {
		spans[k].End++
		return spans
	}
	return append(spans, wire.RelaySpan{Start: n, End: n + 1, Origin: e.Origin, Seq: e.OriginSeq})
}

func inRange(t int64, begin, end *int64) bool {
	return (begin == nil || t >= *begin) && (end == nil || t < *end)
}

// confirm records durably that target has every row up to seq and wakes
// WaitConfirmed. A cursor never moves back.
func (p *Pusher) confirm(target uuid.UUID, seq uint64) error {
	p.confirmMu.Lock()
	if seq <= p.cfg.Log.Confirmed(target) {
		p.confirmMu.Unlock()
		return nil
	}
	err := p.cfg.Log.SetConfirmed(target, seq)
	p.confirmMu.Unlock()
	if err != nil {
		return fmt.Errorf("record confirmed sequence %d: %w", seq, err)
	}
	p.mu.Lock()
	p.broadcastLocked()
	p.mu.Unlock()
	return nil
}

// noteFailure records err for Status. Only the first failure of a run of
// them is logged at warning level (an outage of minutes retries hundreds of
// times); noteSuccess logs the recovery.
func (p *Pusher) noteFailure(t *target, attempt int, err error) {
	t.failingSince.CompareAndSwap(0, p.cfg.Now().UnixNano())
	p.mu.Lock()
	t.lastErr = err.Error()
	spec := t.spec
	if p.cfg.Quota > 0 && t.keepsUp {
		p.broadcastLocked() // WaitQuota no longer waits for it
	}
	p.mu.Unlock()
	level := slog.LevelDebug
	if attempt == 1 && !errors.Is(err, errInheritPending) { // a wait, expected after every split
		level = slog.LevelWarn
	}
	p.log.Log(context.Background(), level, "push failed", "server", spec.ServerID, "target", t.id, "attempt", attempt, "err", err)
}

func (p *Pusher) noteSuccess(t *target, attempt *int) {
	if t.failingSince.Load() != 0 {
		t.failingSince.Store(0)
	}
	if *attempt == 0 {
		return
	}
	p.mu.Lock()
	t.lastErr = ""
	spec := t.spec
	p.mu.Unlock()
	p.log.Info("push recovered", "server", spec.ServerID, "target", t.id, "attempts", *attempt)
	*attempt = 0
}

// retryPolicy is the backoff after failed pushes: the wait after the
// attempt-th consecutive failure (attempt >= 1) is drawn uniformly from
// [d/2, d], d = min(RetryMin·2^(attempt−1), RetryMax).
func (p *Pusher) retryPolicy() backoff.Policy {
	return backoff.Policy{Base: p.cfg.RetryMin, Max: p.cfg.RetryMax}
}
