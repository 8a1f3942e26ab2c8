package replica

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/replication"
	"github.com/tsdb/tsdb/router"
)

// Session is this server's membership registration as the replica
// machinery needs it (*membership.Registration): whether its etcd session
// is valid, and a channel closed when the current one is lost.
type Session interface {
	Valid() bool
	Done() <-chan struct{}
	Epoch() int64
}

// Config is what New builds a Server from: the parts the node opened, and
// the settings of node.Config that concern the local replicas.
type Config struct {
	// Self is this server's id.
	Self string
	// Store holds the local partition replicas.
	Store *partition.Store
	// Committer loads and commits METADATA; Meta lists the tables; Files
	// is the local METADATA file store.
	Committer *metadata.Committer
	Meta      metadata.Store
	Files     *metadata.FileStore
	// Etcd and EtcdPrefix reach the operator's marks (drains, lost
	// placements).
	Etcd       *clientv3.Client
	EtcdPrefix string
	// Session is this server's membership registration.
	Session Session
	// Directory resolves the live servers.
	Directory *membership.Directory
	// RPC makes internal calls (pushes, METADATA changes, listings);
	// RPCOnce makes one attempt per call (forwarded inserts, catch-ups);
	// RPCQuery reads sub-query answers, cut at MaxSubQueryBytes.
	RPC, RPCOnce, RPCQuery *rpc.Client
	// Clock assigns versions; Clocks is the peers' view of it (rule 2).
	Clock  *model.Clock
	Clocks *ClockCheck
	// Now is this server's wall clock; nil is time.Now.
	Now func() time.Time
	// Metrics receives the counters; nil creates them.
	Metrics *Metrics
	// Logger receives the logs; nil discards.
	Logger *slog.Logger

	// The settings of node.Config of the same names.
	SyncTimeout, AckTimeout, MaxClockOffset, SplitCheckInterval         time.Duration
	CatchUpConcurrency, MaxBodyBytes, MaxSubQueryBytes, MaxQueryBuckets int
	WriteLimit                                                          int64
	// ReplicationQuota is node.Config.ReplicationQuota: 0 turns the
	// quota off.
	ReplicationQuota int

	// Knobs are the tests' hooks.
	Knobs TestingKnobs
}

// TestingKnobs are hooks for tests; production leaves them zero.
type TestingKnobs struct {
	// OnTableSynced is called after each table sync with the txnseq the
	// server now holds.
	OnTableSynced func(table string, txnSeq uint64)
	// MissEvent makes the table watch drop an event, as if the
	// notification had been missed.
	MissEvent func(metadata.TableEvent) bool
	// BlockPush fails this server's pushes to a target while it returns
	// true.
	BlockPush func(metadata.Target) bool
	// BeforeSplitBegin runs in the SPLIT_BEGIN planner, once per plan,
	// before the op is sent.
	BeforeSplitBegin func()
	// RefuseCoordinate makes this server's replicas refuse to coordinate
	// inserts (as a failed clock check does) while it returns true.
	RefuseCoordinate func() bool
	// IgnoreSubQueryLimit makes this server answer sub-queries over the
	// front end's byte limit while it holds true (as a replica whose
	// estimate is wrong would), so the front end's own read limit is what
	// stops them.
	IgnoreSubQueryLimit *atomic.Bool
	// LaggardAfter, MaxLogLag and TruncateMin, when set, replace the
	// pushers' replication.Config defaults of the same names (log
	// truncation past a target that is down), so a test passes a down
	// target within seconds and a few hundred rows.
	LaggardAfter time.Duration
	MaxLogLag    int
	TruncateMin  int
	// HoldInherited, while it returns true for a replica, makes that
	// replica's pusher wait (replication.InheritPending) instead of
	// asking the replicas it inherited its rows from, so a test can
	// drop them first.
	HoldInherited func(placement uuid.UUID) bool
	// GenerationMargin, when set, replaces the minute by which a replica
	// must predate its table to belong to a dropped table of the same
	// name (droptable.go).
	GenerationMargin time.Duration
}

// Server is the local replicas of one tsdb server and everything they do
// (see the package doc). It implements router.Replicas and the internal
// API's handlers.
type Server struct {
	cfg       Config
	log       *slog.Logger
	store     *partition.Store
	committer *metadata.Committer
	meta      metadata.Store
	files     *metadata.FileStore
	etcd      *clientv3.Client
	reg       Session
	dir       *membership.Directory
	rpc       *rpc.Client
	rpcOnce   *rpc.Client
	rpcQuery  *rpc.Client
	clock     *model.Clock
	clocks    *ClockCheck
	router    *router.Router
	metrics   *Metrics
	joins     *replication.JoinProgress
	// applied is the relay filter of this server's receiving replicas
	// (replication.Applied): what each sender's pushes delivered.
	applied replication.Applied
	// farVersions counts the versions the clock refused to follow.
	farVersions *farVersions
	// resync asks the resync loop to re-sync a table (a push was refused
	// as stale).
	resync chan string
	// splitKick asks the split loop for a size check now (a large insert).
	splitKick chan struct{}
	// catchUpSlots bounds the catch-up pushes (split backfills, join
	// catch-ups) in flight from this server (CatchUpConcurrency).
	catchUpSlots chan struct{}
	// departed are the records the replicas dropped from shared data
	// spaces left for the members created after them (departed.go).
	departed departedSharers

	// bg is the context of the pushers, cancelled by Close; wg waits for
	// them.
	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// discoverMu serializes discoverLocal: recording a replica's newest
	// discovery answer and acting on it are one step, so an older
	// METADATA's answer (UNLOAD of a replica a newer file created) is never
	// acted on after a newer one, and a caller never sees a replica whose
	// answer is recorded but whose replication is not running yet.
	discoverMu sync.Mutex

	// installMu serializes Install, so that a table's METADATA files are
	// installed in txnseq order: a sync that read an older file (the
	// start-up reconciliation racing the watch) finds a newer one
	// installed and skips, instead of creating the replicas of a map
	// already replaced.
	installMu sync.Mutex

	// syncs shares concurrent syncs of one table (syncflight.go).
	syncs *syncCoalescer

	mu struct {
		sync.Mutex
		// synced is the txnseq of each table's last processed METADATA.
		synced map[string]uint64
		// replicas is the last discovery answer of each local replica.
		replicas map[uuid.UUID]Status
		// runtimes is the replication machinery of each local replica.
		runtimes map[uuid.UUID]*replicaRuntime
		// unsplittable holds the local replicas found above their size
		// target with every row at one time.
		unsplittable map[uuid.UUID]unsplittable
		// lostMarked is, per lost placement, whether this process put
		// (true) or cleared (false) its lost mark in etcd.
		lostMarked map[uuid.UUID]bool
	}
}

// New builds the server and the router whose replicas it is (Router). It
// starts nothing: install (LoadTables, the table watch) starts each local
// replica's pusher, the node runs the loops (Reconcile, LifecycleTick,
// RunSplits, RunResync, RunSession), and Close stops the pushers.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger, store: cfg.Store, committer: cfg.Committer, meta: cfg.Meta, files: cfg.Files,
		etcd: cfg.Etcd, reg: cfg.Session, dir: cfg.Directory, rpc: cfg.RPC, rpcOnce: cfg.RPCOnce, rpcQuery: cfg.RPCQuery,
		clock: cfg.Clock, clocks: cfg.Clocks, metrics: cfg.Metrics,
		joins:        &replication.JoinProgress{},
		farVersions:  newFarVersions(cfg.MaxClockOffset, cfg.Logger),
		resync:       make(chan string, 1),
		splitKick:    make(chan struct{}, 1),
		catchUpSlots: make(chan struct{}, max(cfg.CatchUpConcurrency, 1)),
	}
	s.applied.Wait = replication.DefaultRelayWait
	s.bg, s.cancel = context.WithCancel(context.Background())
	s.syncs = newSyncCoalescer(s.loadAndInstall, s.goAttach)
	s.mu.synced = make(map[string]uint64)
	s.mu.replicas = make(map[uuid.UUID]Status)
	s.mu.runtimes = make(map[uuid.UUID]*replicaRuntime)
	s.mu.unsplittable = make(map[uuid.UUID]unsplittable)
	s.mu.lostMarked = make(map[uuid.UUID]bool)
	s.router = router.New(router.Config{
		Self:     cfg.Self,
		Meta:     cfg.Committer,
		Store:    cfg.Store,
		Clock:    cfg.Clock,
		Replicas: s,
		Logger:   cfg.Logger,
	})
	return s
}

var _ router.Replicas = (*Server)(nil)

// Router returns the router of this server's front end, whose Replicas
// this server is.
func (s *Server) Router() *router.Router { return s.router }

// Close stops every local replica's pusher and waits for them. The node
// calls it once the loops have returned and no request is served any more.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// now is this server's wall clock (shifted in clock tests).
func (s *Server) now() time.Time { return s.cfg.Now() }

// goAttach runs f in a goroutine that Close waits for.
func (s *Server) goAttach(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Pusher returns the pusher of a local replica, nil if it has none (tests
// read its state).
func (s *Server) Pusher(placement uuid.UUID) *replication.Pusher {
	if rt := s.runtime(placement); rt != nil {
		return rt.pusher
	}
	return nil
}

// Metrics returns the server's counters.
func (s *Server) Metrics() *Metrics { return s.metrics }
