package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/internal/gate"
	"github.com/tsdb/tsdb/internal/pebbleclose"
	"github.com/tsdb/tsdb/model"
)

// Options configure a Store.
type Options struct {
	// Dir is the pebble directory; it is created if missing. Required.
	Dir string
	// Logger receives the store's and pebble's log lines (pebble's
	// informational lines at debug level). nil discards them.
	Logger *slog.Logger
	// MemTableSize is pebble's memtable size in bytes; 0 means 64 MiB.
	MemTableSize uint64
	// CacheSize is the block cache size in bytes; 0 means 128 MiB. Pebble's
	// cache is larger by three memtables, which it reserves in the cache
	// (cacheCapacity).
	CacheSize int64
	// FS is the filesystem pebble uses; nil means the real one. Tests pass
	// pebble's vfs/errorfs to inject failures.
	FS vfs.FS
	// Throttle, when set, is called by each Apply that changed anything,
	// with the size of the batch it wrote, before the Apply waits for its
	// sync; it may block to pace the store's writes (the server's
	// --write-limit: the Apply returns once the bytes are paid for) and
	// count them. The batch holds each row's value twice (row and log
	// entry) unless SetLogValues(false) holds (one short entry a batch).
	Throttle func(bytes int)
	// NoShare makes every new replica start a data space of its own, as
	// before data spaces existed: a split child on a server holding the
	// parent then receives a copy of the parent's rows. For comparisons
	// (benchmarks) and tests.
	NoShare bool
	// CheckIndex makes Open compare every replica's tag index with its
	// rows and repair what differs (CheckIndex(true)), logging what it
	// found; without it Open builds the index only for a store written
	// before the index existed (tsdb server --check-index).
	CheckIndex bool
	// CloseFlushTimeout bounds the memtable flush Close does before it
	// closes pebble, so that the WAL does not outlive the memtables at rest
	// (internal/pebbleclose); 0 means pebbleclose.DefaultFlushTimeout (10 s)
	// and a negative value skips the flush (the WAL is then kept as pebble
	// leaves it, replayed at the next Open).
	CloseFlushTimeout time.Duration
	// MemoryHead keeps the rows an Apply writes in memory, per data
	// space, instead of one pebble key per row: the batch's log record
	// is their durable form, Open replays it, and seals move the rows
	// from memory into blocks (memhead.go; docs/storage-plan.md, step
	// 6).
	MemoryHead bool
	// MemoryHeadBytes bounds the memory heads of all data spaces: past
	// it, each Seal writes the oldest buckets in memory to pebble's head
	// until they fit (as rows were stored without a memory head). 0 means
	// DefaultMemoryHeadBytes.
	MemoryHeadBytes int64
}

// DefaultMemoryHeadBytes is Options.MemoryHeadBytes' default.
const DefaultMemoryHeadBytes = 256 << 20

const (
	defaultMemTableSize = 64 << 20
	defaultCacheSize    = 128 << 20
)

// Store holds the partition replicas of one server in one pebble DB.
type Store struct {
	db       *pebble.DB
	dir      string
	fs       vfs.FS
	log      *slog.Logger
	gate     gate.Gate
	throttle func(bytes int)
	// checkIndex is Options.CheckIndex.
	checkIndex bool
	// noShare is Options.NoShare.
	noShare bool
	// memoryHead is Options.MemoryHead, or a store of a memory head's format
	// being opened without it; memBudget is Options.MemoryHeadBytes.
	memoryHead bool
	memBudget  int64
	// memDrained counts the rows written from memory heads to pebble's
	// head (MemoryHeadDrainedRows).
	memDrained atomic.Int64
	// memSealed counts the rows sealed early for the memory budget
	// (MemoryHeadEarlySealedRows).
	memSealed atomic.Int64
	// sealed counts what seals did (seal.go).
	sealed sealCounters
	// sealRetries counts the seal batches read outside the apply lock
	// and read again under it, as the space changed meanwhile
	// (SealRetries).
	sealRetries atomic.Int64
	// opened is when Open opened the store (wall clock ns): the sealer
	// takes a bucket not written since as written then.
	opened int64
	// rowAggregates makes Aggregate read sealed blocks row by row, as
	// the head, instead of by columns and summaries (tests, benchmarks).
	rowAggregates bool
	// aggWorkers, when > 0, replaces aggregateWorkers() (tests).
	aggWorkers int
	// aggSplits counts the Aggregates walked in stretches (tests).
	aggSplits atomic.Int64
	// aggSummaries counts the fields of blocks that Aggregates answered
	// from their summaries (tests).
	aggSummaries atomic.Int64
	// aggTails counts the fields of blocks whose last bucket's rows
	// Aggregates summed up from their summaries less the rows before
	// (Query.SumsOnly; tests).
	aggTails atomic.Int64
	// closeFlushTimeout is Options.CloseFlushTimeout with its default.
	closeFlushTimeout time.Duration
	// walFS is the FS pebble runs on: fs, noting a failed WAL write for
	// Close (pebbleclose.WatchedFS).
	walFS *pebbleclose.WatchedFS
	// upgradeSkipped counts the legacy log entries the upgrade at Open
	// left as they were (their row missing): see UpgradeSkipped.
	upgradeSkipped atomic.Int64
	// relayed are the row keys relayed to its replicas lately
	// (recentrelays.go).
	relayed recentRelays
	// ingestSeq numbers the sstables written for ingests (chunk.go);
	// chunksIngested and chunksMerged count the snapshot chunks stored
	// each way (ChunkStats), blocksIngested their blocks ingested as
	// blocks.
	ingestSeq                                    atomic.Uint64
	chunksIngested, chunksMerged, blocksIngested atomic.Int64

	closeOnce sync.Once
	closeErr  error

	// fresh is set while a store opened on an empty directory has not
	// recorded its birth (lost.go); guarded by mu.
	fresh bool

	// live is a copy of mu.replicas, replaced (never changed) under mu
	// whenever the map changes: Replica and Replicas read it without mu,
	// which a drop holds for its whole batch (a split parent's, writing
	// its rows in memory, held every insert and push of the server behind
	// it; docs/performance.md, "A split parent's drop").
	live atomic.Pointer[map[uuid.UUID]*Replica]

	mu struct {
		sync.Mutex
		// replicas are the live replicas by placement. Creating and
		// dropping hold mu for the whole registry write, so the map and
		// the registry agree.
		replicas map[uuid.UUID]*Replica
		// spaces are the data spaces of the live replicas by id
		// (space.go); a space is removed with its last member.
		spaces map[uuid.UUID]*dataSpace
		// pending are the tables not settled since the store's birth.
		pending map[string]bool
		// lost are the placements marked lost, by placement.
		lost map[uuid.UUID]ReplicaInfo
	}
	// anyLost is set, under mu, once lost holds a placement (marks are
	// never removed), so that Lost, which every push and insert asks,
	// answers without mu in a store with none: mu is held for synced
	// commits (a replica's creation, a drop), and the pushes behind it
	// waited for them.
	anyLost atomic.Bool

	// snaps are the open LogSnapshots; Close closes those still open
	// before it closes pebble (which refuses to close with snapshots).
	snaps struct {
		sync.Mutex
		m map[*LogSnapshot]struct{}
	}
}

// ReplicaInfo is the registry entry of a replica: which placement of which
// partition it stores.
type ReplicaInfo struct {
	// Placement identifies the replica; all its keys start with it.
	Placement uuid.UUID `json:"placement_id"`
	// Table is the table the partition belongs to.
	Table string `json:"table"`
	// PartitionID is the partition the placement is a replica of.
	PartitionID uuid.UUID `json:"partition_id"`
	// Begin is the partition's inclusive start in ns; nil is open (−inf).
	Begin *int64 `json:"begin"`
	// End is the partition's exclusive end in ns; nil is open (+inf).
	End *int64 `json:"end"`
	// CreatedAt is when the replica was created on this server.
	CreatedAt time.Time `json:"created_at"`
	// TableCreatedAt is the CreatedAt of the table's TableConfig when the
	// replica was created: which table of that name it belongs to, should
	// the name be dropped and created again. Zero for replicas created
	// before it was recorded (issue 18).
	TableCreatedAt time.Time `json:"table_created_at,omitzero"`
	// DataSpace is the data space the replica's rows lie in (space.go):
	// the placement of the live replica whose rows it shares, chosen by
	// CreateReplica; zero (the usual case) is its own placement. Set by
	// the store, never by a caller.
	DataSpace uuid.UUID `json:"data_space,omitzero"`
}

// clone returns a deep copy (Begin and End are not shared).
func (i ReplicaInfo) clone() ReplicaInfo {
	i.Begin = cloneInt(i.Begin)
	i.End = cloneInt(i.End)
	return i
}

func cloneInt(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func sameBound(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// sameIdentity reports whether two infos describe the same replica
// (CreatedAt aside).
func (i ReplicaInfo) sameIdentity(o ReplicaInfo) bool {
	return i.Placement == o.Placement && i.Table == o.Table && i.PartitionID == o.PartitionID &&
		sameBound(i.Begin, o.Begin) && sameBound(i.End, o.End)
}

func (i ReplicaInfo) validate() error {
	if i.Placement == uuid.Nil {
		return fmt.Errorf("%w: nil placement id", ErrInvalidReplica)
	}
	if i.PartitionID == uuid.Nil {
		return fmt.Errorf("%w: nil partition id", ErrInvalidReplica)
	}
	if err := model.ValidateTableName(i.Table); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidReplica, err)
	}
	if i.Begin != nil && i.End != nil && *i.Begin >= *i.End {
		return fmt.Errorf("%w: begin %d is not before end %d", ErrInvalidReplica, *i.Begin, *i.End)
	}
	return nil
}

// Open opens or creates the DB in opts.Dir and loads the replica registry.
// It refuses a store whose format marker (format.go) names a version this
// build does not support with ErrUnknownFormat, and marks a new store, or
// one written before the marker existed, with the current version.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("partition: Options.Dir is required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cache := pebble.NewCache(cacheCapacity(opts))
	defer cache.Unref() // the DB holds its own reference
	walFS := pebbleclose.WatchWAL(opts.FS)
	popts := opts
	popts.FS = walFS
	db, err := pebble.Open(opts.Dir, pebbleOptions(popts, cache, log))
	if err != nil {
		return nil, fmt.Errorf("partition: open pebble in %s: %w", opts.Dir, err)
	}
	format, err := readFormat(db, opts.Dir)
	legacy := false
	if err == nil && format == 0 {
		legacy, err = holdsKeys(db)
	}
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	s := &Store{opened: time.Now().UnixNano(), db: db, dir: opts.Dir, fs: fs, log: log, throttle: opts.Throttle, checkIndex: opts.CheckIndex, noShare: opts.NoShare, memoryHead: opts.MemoryHead || withMemHead(format),
		closeFlushTimeout: opts.CloseFlushTimeout, walFS: walFS}
	s.memBudget = orDefault(opts.MemoryHeadBytes, DefaultMemoryHeadBytes)
	if s.closeFlushTimeout == 0 {
		s.closeFlushTimeout = pebbleclose.DefaultFlushTimeout
	}
	if err := s.cleanIngestDir(); err != nil {
		_ = db.Close()
		return nil, err
	}
	s.mu.replicas = make(map[uuid.UUID]*Replica)
	s.mu.spaces = make(map[uuid.UUID]*dataSpace)
	s.snaps.m = make(map[*LogSnapshot]struct{})
	if err := s.loadRegistry(); err != nil {
		_ = db.Close()
		return nil, err
	}
	s.publishLocked()
	if err := s.loadBirth(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := s.upgradeIndex(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := s.upgradeLog(); err != nil {
		_ = db.Close()
		return nil, err
	}
	want := storeFormat
	if opts.MemoryHead {
		want = memHeadFormat
	} else if s.memoryHead {
		// Rows in log records only, which this store's options no longer
		// read: into pebble's head, before the marker says 8.
		if err := s.drainMemHeads(); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	if format != want {
		if err := s.writeFormat(format, want, legacy); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	// The replayed logs may hold more than the budget (a log kept for a
	// target that is down holds rows sealed since): within it before the
	// first Apply.
	if err := s.fitMemHeads(); err != nil {
		_ = db.Close()
		return nil, err
	}
	log.Info("partition store opened", "dir", opts.Dir, "replicas", len(s.mu.replicas))
	return s, nil
}

// cacheCapacity is the pebble cache's capacity for opts: the block cache
// plus three memtables. Pebble reserves the arena of every memtable it
// holds in the block cache (newMemTable in pebble's db.go): the mutable
// one, those flushing or still read, and one kept for recycling. A cache
// no larger than them holds no block at all: with the defaults before
// this (a 128 MiB cache beside 64 MiB memtables), a server that had
// taken writes read every block of every query from its file
// (TestBlockCacheBesideFullMemtables). Three is the steady state of a
// writing server; a burst that queues more memtables shrinks the blocks'
// share for as long as it lasts.
func cacheCapacity(opts Options) int64 {
	c, m := orDefault(opts.CacheSize, defaultCacheSize), 3*int64(orDefault(opts.MemTableSize, defaultMemTableSize))
	if c > math.MaxInt64-m {
		return math.MaxInt64 // a cache that never fills: no overflow
	}
	return c + m
}

func orDefault[T int64 | uint64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// loadRegistry reads every registry entry and the high sequence of each
// replica.
func (s *Store) loadRegistry() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsRegistry}, UpperBound: []byte{nsRegistry + 1}})
	if err != nil {
		return fmt.Errorf("partition: read registry: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("partition: read registry: %w", err)
		}
		var info ReplicaInfo
		if err := json.Unmarshal(v, &info); err != nil {
			return fmt.Errorf("%w: registry entry %x: %w", ErrCorrupt, it.Key(), err)
		}
		if !bytes.Equal(it.Key(), registryKey(info.Placement)) {
			return fmt.Errorf("%w: registry key %x holds placement %s", ErrCorrupt, it.Key(), info.Placement)
		}
		sp := s.spaceLocked(spaceOf(info))
		r := newReplica(s, info, sp)
		if len(sp.members) == 0 {
			if err := s.loadShared(sp, &r.ks); err != nil {
				return err
			}
		}
		sp.members[info.Placement] = r
		high, err := r.lastSeq()
		if err != nil {
			return err
		}
		bound, err := r.storedTimeBound()
		if err != nil {
			return err
		}
		r.initSeq(high, bound)
		if err := r.replayLog(); err != nil {
			return err
		}
		if err := r.loadCursors(); err != nil {
			return err
		}
		s.mu.replicas[info.Placement] = r
	}
	return it.Error()
}

// Close waits for in-flight operations (an Apply returns only after its
// sync), flushes the memtables (at most Options.CloseFlushTimeout), closes
// the DB and removes the WAL files the flush made obsolete
// (internal/pebbleclose), so that the directory at rest holds about the
// size of the data. A flush that fails or times out is logged and the DB
// closed with its WAL, which the next Open replays: nothing synced is
// lost. Later calls return nil; every other method fails with ErrClosed
// once Close has begun.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.drainForClose()
		if err := s.compactLogs(context.Background(), 1); err != nil {
			s.log.Warn("partition: compact the truncated logs at close", "err", err)
		}
		s.gate.Close()
		s.snaps.Lock()
		open := make([]*LogSnapshot, 0, len(s.snaps.m))
		for ls := range s.snaps.m {
			open = append(open, ls)
		}
		s.snaps.Unlock()
		for _, ls := range open {
			ls.Close()
		}
		if _, err := pebbleclose.Close(s.db, s.dir, s.walFS, s.closeFlushTimeout, s.log); err != nil {
			s.closeErr = fmt.Errorf("partition: close pebble: %w", err)
		}
		s.log.Info("partition store closed")
	})
	return s.closeErr
}

// Metrics returns pebble's metrics for the /metrics exporter. It returns
// nil after Close.
func (s *Store) Metrics() *pebble.Metrics {
	if err := s.gate.Enter(ErrClosed); err != nil {
		return nil
	}
	defer s.gate.Exit()
	return s.db.Metrics()
}

// DB returns the underlying pebble DB. It is an escape hatch for
// benchmarks and diagnostics only: writing through it bypasses sequences,
// the merge rule and the sync watermark, and it must not be used after
// Close.
func (s *Store) DB() *pebble.DB { return s.db }

// CreateReplica registers a replica durably (synced) and returns it. It is
// idempotent: when the placement is already registered with the same
// table, partition and range, the existing replica is returned (its
// CreatedAt is kept). It fails with ErrDropped if the placement was ever
// dropped (DESIGN.md section 12, rule 4), with ErrLost if it is marked
// lost (lost.go), and with ErrReplicaConflict if it
// is registered with different info. A zero CreatedAt is set to now.
func (s *Store) CreateReplica(info ReplicaInfo) (*Replica, error) {
	if err := info.validate(); err != nil {
		return nil, err
	}
	if err := s.gate.Enter(ErrClosed); err != nil {
		return nil, err
	}
	defer s.gate.Exit()
	info = info.clone()
	if info.CreatedAt.IsZero() {
		info.CreatedAt = time.Now().UTC()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.mu.replicas[info.Placement]; ok {
		if !r.info.sameIdentity(info) {
			return nil, fmt.Errorf("%w: placement %s", ErrReplicaConflict, info.Placement)
		}
		return r, nil
	}
	dropped, err := s.isDropped(info.Placement)
	if err != nil {
		return nil, err
	}
	if dropped {
		return nil, fmt.Errorf("create replica %s: %w", info.Placement, ErrDropped)
	}
	if _, lost := s.mu.lost[info.Placement]; lost {
		return nil, fmt.Errorf("create replica %s: %w", info.Placement, ErrLost)
	}
	info.DataSpace = s.chooseSpaceLocked(info)
	enc, err := json.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("partition: encode replica info: %w", err)
	}
	sp := s.spaceLocked(spaceOf(info))
	r := newReplica(s, info, sp)
	// A placement that was never registered has no data of its own, so
	// the registry entry (and, joining a space, its shared marker) is all
	// there is to write.
	b := s.db.NewBatch()
	defer b.Close()
	err = b.Set(r.ks.registry, enc, nil)
	var high uint64
	if err == nil && info.DataSpace != uuid.Nil {
		err = sp.markSharedOps(b, &r.ks)
		// The rows it shares are in no entry of its log: the log starts
		// truncated at 1, so a target from 0 takes a row snapshot (of the
		// shared rows in its range) instead of an empty log.
		high = 1
		if err == nil {
			err = b.Set(r.ks.trunc, binary.BigEndian.AppendUint64(nil, high), nil)
		}
	}
	if err == nil {
		err = b.Commit(pebble.Sync)
	}
	if err != nil {
		if len(sp.members) == 0 {
			delete(s.mu.spaces, sp.id)
		}
		return nil, fmt.Errorf("partition: register replica %s: %w", info.Placement, err)
	}
	if info.DataSpace != uuid.Nil && !sp.shared.Load() {
		// The space's Applies read shared under its lock. Once shared
		// it stays so, and a later member need not wait for the lock
		// here: under a split storm at "now" the space's lock has a
		// queue of Applies, and s.mu (which every push's lookup takes)
		// would wait with it.
		sp.Lock()
		sp.shared.Store(true)
		sp.Unlock()
	}
	r.trunc.Store(high)
	r.initSeq(high, math.MinInt64)
	sp.members[info.Placement] = r
	s.mu.replicas[info.Placement] = r
	s.publishLocked()
	s.log.Info("replica created", "placement", info.Placement, "table", info.Table, "partition", info.PartitionID,
		"data_space", sp.id)
	return r, nil
}

func (s *Store) isDropped(p uuid.UUID) (bool, error) {
	_, closer, err := s.db.Get(tombstoneKey(p))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("partition: read tombstone of %s: %w", p, err)
	}
	_ = closer.Close()
	return true, nil
}

// UpgradeSkipped returns how many legacy log entries the upgrade at Open
// left as they were because the row they name is missing (or stored with
// another sequence): each was logged; reading the log across one fails
// with ErrCorrupt, as it did before the upgrade.
func (s *Store) UpgradeSkipped() int64 { return s.upgradeSkipped.Load() }

// Replica returns the live replica of a placement.
func (s *Store) Replica(placement uuid.UUID) (*Replica, bool) {
	r, ok := (*s.live.Load())[placement]
	return r, ok
}

// publishLocked replaces the copy of the live replicas that Replica and
// Replicas read (Store.live) after a change of mu.replicas. The caller
// holds mu. A replica being dropped stays in it until its drop is done:
// its methods then fail with ErrDropped, as they do for a caller that
// looked it up just before the drop.
func (s *Store) publishLocked() {
	m := make(map[uuid.UUID]*Replica, len(s.mu.replicas))
	for p, r := range s.mu.replicas {
		m[p] = r
	}
	s.live.Store(&m)
}

// Replicas returns all live replicas, sorted by placement.
func (s *Store) Replicas() []*Replica {
	live := *s.live.Load()
	out := make([]*Replica, 0, len(live))
	for _, r := range live {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Replica) int { return bytes.Compare(a.info.Placement[:], b.info.Placement[:]) })
	return out
}

// DropReplica deletes a replica's data and registry entry and writes its
// tombstone, in one synced batch, under the replica's apply lock: Applies
// after it fail with ErrDropped, and the placement is never created again.
// The Applies in flight when it begins (past the apply lock, not returned)
// are waited for and fail with ErrDropped too.
// Dropping an unknown or already dropped placement writes the tombstone
// (and removes any stray data) and succeeds. The replication safety checks
// of DESIGN.md section 12 rule 3 are the caller's.
func (s *Store) DropReplica(placement uuid.UUID) error {
	if err := s.gate.Enter(ErrClosed); err != nil {
		return err
	}
	defer s.gate.Exit()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.mu.replicas[placement]
	if !ok {
		// Its own keys, and its space's rows unless the space still has
		// live members (it was theirs first): then it drops under the
		// space's lock with an empty range, so no row is its own.
		info := ReplicaInfo{Placement: placement}
		live := s.mu.spaces[placement]
		if live != nil {
			info.Begin, info.End = new(int64), new(int64)
		}
		r = newReplica(s, info, live)
	}
	if err := r.drop(); err != nil {
		return err
	}
	s.forgetLocked(r)
	s.log.Info("replica dropped", "placement", placement)
	return nil
}

// forgetLocked removes a dropped replica from the registry maps and its
// space. The caller holds s.mu.
func (s *Store) forgetLocked(r *Replica) {
	p := r.info.Placement
	if s.mu.replicas[p] == r {
		delete(s.mu.replicas, p)
		s.publishLocked()
	}
	sp := r.applyMu
	if s.mu.spaces[sp.id] != sp {
		return // a placeholder space (DropReplica of an unknown placement)
	}
	delete(sp.members, p)
	if len(sp.members) == 0 {
		delete(s.mu.spaces, sp.id)
	}
}

// spaceOf returns the id of info's data space.
func spaceOf(info ReplicaInfo) uuid.UUID {
	if info.DataSpace != uuid.Nil {
		return info.DataSpace
	}
	return info.Placement
}

// DropReplicaIf drops the replica like DropReplica, but only if cond,
// called with the replica's apply lock held (so no Apply interleaves),
// returns true: the final check and the DeleteRange are atomic with respect
// to Applies (DESIGN.md section 12, rule 3). cond must not call Apply,
// ReadLog, Scan, Aggregate, Checksum or any Store method; it may call
// HighSeq, SyncedSeq, Confirmed, Cursors, Unloading, ApplyInFlight and
// Info. When it returns true, the Applies still in flight are waited for
// and fail with ErrDropped, as with DropReplica. Cursors may
// still rise between cond and the drop (SetConfirmed does not take the
// apply lock), never fall. It returns whether it dropped; an unknown or
// already dropped placement gives (false, nil) and writes nothing.
func (s *Store) DropReplicaIf(placement uuid.UUID, cond func(*Replica) bool) (bool, error) {
	if err := s.gate.Enter(ErrClosed); err != nil {
		return false, err
	}
	defer s.gate.Exit()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.mu.replicas[placement]
	if !ok {
		return false, nil
	}
	dropped, err := r.dropIf(cond)
	if err != nil || !dropped {
		return false, err
	}
	s.forgetLocked(r)
	s.log.Info("replica dropped", "placement", placement, "conditional", true)
	return true, nil
}
