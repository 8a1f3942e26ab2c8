package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/cluster/election"
	"github.com/tsdb/tsdb/cluster/master"
	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/frontend"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/internal/etcdclient"
	"github.com/tsdb/tsdb/internal/tlsconfig"
	"github.com/tsdb/tsdb/internal/writelimit"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/presplit"
	"github.com/tsdb/tsdb/replica"
	"github.com/tsdb/tsdb/router"
	"github.com/tsdb/tsdb/smear"
)

// Config configures one server.
type Config struct {
	// ID names the server; it must be unique in the cluster and stable across
	// restarts (its placements in METADATA refer to it).
	ID string
	// Listen is the HTTP address, e.g. 127.0.0.1:8080 (port 0 picks one).
	Listen string
	// DataDir holds the pebble DB and the metadata files.
	DataDir string
	// EtcdEndpoints are the etcd client URLs.
	EtcdEndpoints []string
	// EtcdPrefix prefixes every etcd key; default "/tsdb/".
	EtcdPrefix string
	// AuthToken, when set, is required on the public API.
	AuthToken string
	// ClusterSecret, when set, is sent on every internal call and required
	// on every internal request. It is required when AuthToken is set
	// (ErrNoClusterSecret).
	ClusterSecret string
	// MaxBodyBytes limits request bodies; default api.DefaultMaxBodyBytes.
	MaxBodyBytes int
	// TLSCertFile and TLSKeyFile, when set (both or neither), make the HTTP
	// listener, public and internal API alike, serve HTTPS only with this
	// certificate; the membership entry then tells peers to call
	// https://Advertise.
	TLSCertFile, TLSKeyFile string
	// TLSCAFile holds the CA certificates that peers' certificates must
	// chain to on internal calls to https peers; empty: the system's roots.
	TLSCAFile string
	// EtcdCertFile and EtcdKeyFile are a client certificate for etcd (both
	// or neither); EtcdCAFile the CAs etcd's certificate must chain to
	// (empty: the system's roots). Any of them, or an https endpoint, makes
	// the etcd connection use TLS.
	EtcdCertFile, EtcdKeyFile, EtcdCAFile string
	// EtcdUsername and EtcdPassword authenticate to an etcd with auth
	// enabled; empty: no etcd authentication.
	EtcdUsername, EtcdPassword string
	// SweepInterval and SweepGrace drive the metadata file sweep; defaults
	// 10 min and 1 h. SweepKeep is how many committed ancestors to keep (10).
	SweepInterval, SweepGrace time.Duration
	SweepKeep                 int
	// Advertise is the address other servers reach this one at; default
	// the listener's address, with a wildcard host (":8080", "0.0.0.0")
	// replaced by the machine's hostname.
	Advertise string
	// RegistrationTTL is the lease TTL of the membership key; default 10s.
	RegistrationTTL time.Duration
	// ReconcileInterval is how often every table is re-checked against
	// etcd (rule 10); default 30s.
	ReconcileInterval time.Duration
	// SyncTimeout bounds the loading of one table's METADATA; default 10s.
	SyncTimeout time.Duration
	// AckTimeout bounds how long an insert waits for the replicas its
	// consistency level needs; past it the answer is 503 "outcome
	// unknown". Default 10s.
	AckTimeout time.Duration
	// ReplicationQuota is how many rows a coordinator lets the slowest
	// copy that keeps up lag behind before its inserts wait for it
	// (replication.Pusher.WaitQuota, docs/replication.md "The replication
	// quota"); 0 turns it off (the default).
	ReplicationQuota int
	// LifecycleTick is how often UNLOAD replicas are checked for dropping
	// and joins for finalizing; default 500ms.
	LifecycleTick time.Duration
	// SplitCheckInterval is how often each SERVE replica's size is compared
	// with its table's partition_size_target (and a split started above
	// it); a large insert triggers a check sooner. Default 10s.
	SplitCheckInterval time.Duration
	// SealQuiet is how long an ended storage bucket (68.7 s of row time)
	// must have taken no write before its head rows are sealed into
	// column blocks (partition.Store.Seal, docs/storage-format.md "Sealed
	// blocks"): the late rows of a smeared table keep its recent buckets
	// busy until max_delay has passed, a backfill's buckets go quiet as
	// soon as it moves on. A bucket that takes rows in bursts further
	// apart later is sealed again after each (exact, at the cost of
	// rewriting its blocks). Default 5s; negative: only SealAfter.
	SealQuiet time.Duration
	// SealIdle seals an ended bucket sooner than SealQuiet once its
	// partition has taken no write at all on this server for this long:
	// the buckets a burst of writes left are sealed right after it, before
	// the reads that follow it (partition.SealPolicy.Idle). Default 1s;
	// negative: SealQuiet alone.
	SealIdle time.Duration
	// SealAfter seals a bucket this long after its end even if it never
	// goes quiet. Default 10m; negative: never seal at all.
	SealAfter time.Duration
	// SealInterval is how often the sealer seals the buckets SealAfter
	// names; default 2s. Between, it wakes when a bucket goes quiet
	// (within 100 ms of it).
	SealInterval time.Duration
	// CatchUpConcurrency bounds the catch-up pushes (a split's backfill of
	// the parent's rows, a joining server's initial copy) this server has
	// in flight at once, so bulk copies leave CPU and disk to inserts.
	// Default 1 (docs/performance.md, "Split").
	CatchUpConcurrency int
	// DeadAfter is how long a server listed in a partition may be absent
	// from the membership list before the master treats it as dead and
	// replaces it; default 30s.
	DeadAfter time.Duration
	// MasterTick is how often the master checks for dead servers; default
	// 1s.
	MasterTick time.Duration
	// MinServers is the cluster size below which the master assigns
	// nothing (no replacement, move or pre-split) and tables cannot be
	// created; default 1.
	MinServers int
	// RebalanceMoves bounds the partition moves a rebalance has in flight
	// at once; default 2.
	RebalanceMoves int
	// NoSmear turns insert smearing off on this server (tsdb server
	// --smear=false); tables and requests can also opt out.
	NoSmear bool
	// NoSmearAdmission turns the smear queue's admission control off
	// (tsdb server --smear-admission=false): a forwarder that falls
	// behind then lets rows age past the tables' max delay instead of
	// refusing new smeared inserts with 503 queue_full.
	NoSmearAdmission bool
	// CacheSize is the partition store's block cache in bytes (0:
	// AutoCacheSize(1)).
	CacheSize int64
	// SmearMaxRows and SmearMaxBytes bound the smear queue (0: the smear
	// package's defaults, 10 M rows and 1 GiB); a full queue answers 503
	// with Retry-After.
	SmearMaxRows, SmearMaxBytes int64
	// SmearDrainTimeout bounds how long Stop forwards what is still queued;
	// default 30s (the rest is forwarded after a restart).
	SmearDrainTimeout time.Duration
	// WriteLimit caps the bytes per second this server writes to its
	// stores, smear queue included (tsdb server --write-limit); 0 is no
	// limit.
	WriteLimit int64
	// CheckIndex compares every local replica's tag index with its rows
	// at start-up and repairs it (tsdb server --check-index).
	CheckIndex bool
	// NoMemoryHead stores every unsealed row as a pebble key, as before
	// the memory head (partition.Options.MemoryHead; tsdb server
	// --memory-head=false). MemoryHeadBytes bounds the memory head (0:
	// partition.DefaultMemoryHeadBytes).
	NoMemoryHead    bool
	MemoryHeadBytes int64
	// NoPresplit and NoRebalance turn those duties of the master off
	// (tsdb server --presplit=false, --rebalance=false; tests of other
	// features, whose partition maps they would change).
	NoPresplit, NoRebalance bool
	// PresplitInterval is how often the master runs pre-split; default
	// 10s.
	PresplitInterval time.Duration
	// Presplit configures pre-split (horizon, width bounds); zero fields
	// take presplit's defaults.
	Presplit presplit.Config
	// MaxClockOffset is how far this server's clock may be from a majority
	// of its peers' (as seen on pushes) before it refuses to coordinate
	// writes; default replica.DefaultMaxClockOffset.
	MaxClockOffset time.Duration
	// RPCTimeout bounds one internal call attempt; default 5s.
	RPCTimeout time.Duration
	// MaxConcurrentRequests bounds the public requests served at once
	// (503 overloaded with Retry-After above it); default
	// api.DefaultMaxConcurrentRequests.
	MaxConcurrentRequests int
	// MaxQueryBuckets bounds an aggregate answer's buckets summed over
	// its series (422 too_many_buckets above it); default
	// api.DefaultMaxQueryBuckets.
	MaxQueryBuckets int
	// MaxSubQueryBytes bounds one partition's answer to a sub-query, as
	// the front end reads it and as the replica builds it (422
	// answer_too_large above it); default replica.DefaultMaxSubQueryBytes.
	MaxSubQueryBytes int
	// Logger receives the server's logs; nil discards.
	Logger *slog.Logger
	// HTTP builds the server's HTTP server from its handlers (required):
	// node does not import the HTTP server package; cmd/tsdb and the tests
	// pass their wiring of it.
	HTTP func(Handlers) (HTTPServer, error)

	// knobs are the tests' hooks; production leaves them zero.
	knobs testingKnobs
}

// testingKnobs are hooks for tests: the replica machinery's
// (replica.TestingKnobs: table syncs, missed table events, blocked pushes,
// the SPLIT_BEGIN planner, refused coordination, the sub-query limit, log
// truncation past a down target) and those of the parts node builds
// itself.
type testingKnobs struct {
	replica.TestingKnobs
	// clockSkew shifts this server's wall clock.
	clockSkew time.Duration
	// smearDelay picks a smeared insert's delay instead of a uniform draw
	// from [0, max].
	smearDelay func(max time.Duration) time.Duration
	// smearQueue adjusts the smear queue's options (admission control's
	// periods); smearSender wraps the forwarder's sender.
	smearQueue  func(*smear.Options)
	smearSender func(smear.Sender) smear.Sender
	// beforeCAS is the committer's fault-injection hook.
	beforeCAS func(table, txnID string) error
}

func (c *Config) ensureDefaults() {
	if c.EtcdPrefix == "" {
		c.EtcdPrefix = "/tsdb/"
	}
	orDefault(&c.MaxBodyBytes, api.DefaultMaxBodyBytes)
	orDefault(&c.SweepInterval, 10*time.Minute)
	orDefault(&c.SweepGrace, time.Hour)
	orDefault(&c.SweepKeep, 10)
	orDefault(&c.ReconcileInterval, 30*time.Second)
	orDefault(&c.SyncTimeout, 10*time.Second)
	orDefault(&c.AckTimeout, 10*time.Second)
	orDefault(&c.MaxClockOffset, replica.DefaultMaxClockOffset)
	orDefault(&c.LifecycleTick, 500*time.Millisecond)
	orDefault(&c.DeadAfter, 30*time.Second)
	orDefault(&c.MasterTick, time.Second)
	orDefault(&c.SmearDrainTimeout, 30*time.Second)
	orDefault(&c.MinServers, 1)
	orDefault(&c.RebalanceMoves, 2)
	orDefault(&c.PresplitInterval, 10*time.Second)
	c.Presplit.EnsureDefaults()
	orDefault(&c.CatchUpConcurrency, 1)
	orDefault(&c.SplitCheckInterval, 10*time.Second)
	if c.SealAfter == 0 {
		c.SealAfter = DefaultSealAfter
	}
	if c.SealQuiet == 0 {
		c.SealQuiet = DefaultSealQuiet
	}
	if c.SealIdle == 0 {
		c.SealIdle = DefaultSealIdle
	}
	orDefault(&c.SealInterval, 2*time.Second)
	orDefault(&c.MaxConcurrentRequests, api.DefaultMaxConcurrentRequests)
	orDefault(&c.MaxQueryBuckets, api.DefaultMaxQueryBuckets)
	orDefault(&c.MaxSubQueryBytes, replica.DefaultMaxSubQueryBytes)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// orDefault sets *v to d when it is not positive (not set).
func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.ID == "" {
		errs = append(errs, errors.New("node: ID is required"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("node: DataDir is required"))
	}
	if len(c.EtcdEndpoints) == 0 {
		errs = append(errs, errors.New("node: at least one etcd endpoint is required"))
	}
	if c.Listen == "" {
		errs = append(errs, errors.New("node: Listen address is required"))
	}
	if c.HTTP == nil {
		errs = append(errs, errors.New("node: HTTP (the HTTP server's constructor) is required"))
	}
	if c.AuthToken != "" && c.ClusterSecret == "" {
		errs = append(errs, ErrNoClusterSecret)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("node: TLS needs both a certificate file and a key file"))
	}
	if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
		errs = append(errs, errors.New("node: an etcd client certificate needs both its certificate file and its key file"))
	}
	if (c.EtcdUsername == "") != (c.EtcdPassword == "") {
		errs = append(errs, errors.New("node: etcd authentication needs both a username and a password"))
	}
	return errors.Join(errs...)
}

// ErrNoClusterSecret refuses a server whose public API wants a bearer token
// but that has no cluster secret: its internal API, which reads any row,
// writes rows with any version and commits METADATA ops, would be open to
// anyone who can reach the port.
var ErrNoClusterSecret = errors.New("node: an auth token protects the public API but no cluster secret protects the internal API " +
	"(/internal/...), which would let anyone read and write every table through it; set a cluster secret")

// Node is one running tsdb server.
type Node struct {
	cfg       Config
	log       *slog.Logger
	etcd      *clientv3.Client
	meta      metadata.Store
	files     *metadata.FileStore
	committer *metadata.Committer
	store     *partition.Store
	router    *router.Router
	api       HTTPServer
	ln        net.Listener
	registry  *prometheus.Registry
	started   time.Time
	rpc       *rpc.Client
	rpcOnce   *rpc.Client // one attempt per call: forwarded inserts
	rpcQuery  *rpc.Client // sub-queries: answers bounded by MaxSubQueryBytes
	dir       *membership.Directory
	reg       *membership.Registration
	clock     *model.Clock
	rmetrics  *replica.Metrics
	mmetrics  master.Metrics
	// load measures what summary publishes in the membership key.
	load   *replica.Load
	clocks *replica.ClockCheck
	// peerClock stamps this server's clock on internal calls and feeds
	// the peers' stamps to clocks.
	peerClock *rpc.PeerClock
	// replica is the local replicas' machinery (package replica).
	replica *replica.Server
	// bg is the context of background work, cancelled by Stop.
	bg context.Context
	// master runs the master's term while this server leads.
	master *master.Master
	// front is the public API's backend.
	front *frontend.Frontend
	// limiter paces and counts the store writes (WriteLimit).
	limiter *writelimit.Limiter
	// smearQ and smearFwd are the smear queue and its forwarder.
	smearQ   *smear.Queue
	smearFwd *smear.Forwarder

	cancel   context.CancelFunc
	wg       sync.WaitGroup // background goroutines
	stopOnce sync.Once
	stopErr  error
}

// Start opens the server's storage, connects to etcd, loads the tables this
// server holds, and starts serving. The returned node runs until Stop.
func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("server", cfg.ID), started: time.Now().UTC()}
	var u undo
	defer func() {
		if err != nil {
			u.run()
		}
	}()
	if err := n.openStorage(&u); err != nil {
		return nil, err
	}
	tlsc, err := cfg.tlsConfigs()
	if err != nil {
		return nil, err
	}
	if err := n.connectEtcd(&u); err != nil {
		return nil, err
	}
	n.buildClients(&u, tlsc.peer)
	if n.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("node: listen on %s: %w", cfg.Listen, err)
	}
	u.add(func() { n.ln.Close() })
	advertise, err := membership.AdvertiseAddr(cfg.Advertise, n.ln.Addr())
	if err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	n.bg, n.cancel = bg, cancel
	u.add(func() {
		cancel()
		n.wg.Wait()
		if n.replica != nil {
			n.replica.Close()
		}
	})
	if err := n.join(ctx, &u, advertise, tlsc.server != nil); err != nil {
		return nil, err
	}
	if err := n.buildServing(&u); err != nil {
		return nil, err
	}
	n.startLoops(bg, tlsc.server)
	n.log.Info("server started", "addr", n.Addr(), "advertise", advertise, "data", cfg.DataDir)
	return n, nil
}

// undo is what a failed Start closes, in reverse order.
type undo []func()

func (u *undo) add(f func()) { *u = append(*u, f) }

func (u undo) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// tlsConfigs are the TLS configurations of the listener (nil: plain
// HTTP) and of internal calls to peers (the etcd connection's is
// etcdclient's).
type tlsConfigs struct{ server, peer *tls.Config }

func (c *Config) tlsConfigs() (tlsConfigs, error) {
	var t tlsConfigs
	var err error
	if c.TLSCertFile != "" {
		if t.server, err = tlsconfig.Server(c.TLSCertFile, c.TLSKeyFile); err != nil {
			return t, fmt.Errorf("node: TLS listener: %w", err)
		}
	}
	if t.peer, err = tlsconfig.Client(c.TLSCAFile, "", ""); err != nil {
		return t, fmt.Errorf("node: TLS for internal calls: %w", err)
	}
	return t, nil
}

// openStorage opens the data directory's stores: the partition store
// (paced by the write limit) and the metadata file store.
func (n *Node) openStorage(u *undo) error {
	cfg := n.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("node: create data dir: %w", err)
	}
	n.limiter = writelimit.New(cfg.WriteLimit)
	var err error
	cacheSize := cfg.CacheSize
	if cacheSize <= 0 {
		cacheSize = AutoCacheSize(1)
	}
	n.store, err = partition.Open(partition.Options{Dir: filepath.Join(cfg.DataDir, "pebble"), Logger: n.log,
		Throttle: func(b int) { _ = n.limiter.Wait(context.Background(), b) }, CheckIndex: cfg.CheckIndex,
		CacheSize: cacheSize, MemoryHead: !cfg.NoMemoryHead, MemoryHeadBytes: cfg.MemoryHeadBytes})
	if err != nil {
		return fmt.Errorf("node: open partition store: %w", err)
	}
	u.add(func() { n.store.Close() })
	n.files, err = metadata.OpenFileStore(filepath.Join(cfg.DataDir, "metadata"))
	if err != nil {
		return fmt.Errorf("node: open metadata file store: %w", err)
	}
	return nil
}

// connectEtcd creates the etcd client (it connects lazily; package
// etcdclient) and the METADATA store on it.
func (n *Node) connectEtcd(u *undo) error {
	cfg := n.cfg
	var err error
	n.etcd, err = etcdclient.New(etcdclient.Config{Endpoints: cfg.EtcdEndpoints,
		CAFile: cfg.EtcdCAFile, CertFile: cfg.EtcdCertFile, KeyFile: cfg.EtcdKeyFile,
		Username: cfg.EtcdUsername, Password: cfg.EtcdPassword})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	u.add(func() { n.etcd.Close() })
	n.meta = metadata.NewEtcdStore(n.etcd, cfg.EtcdPrefix)
	return nil
}

// buildClients builds the server directory, the peer clock check, the
// internal-API clients, the METADATA committer, the hybrid logical clock
// and the metrics the replica machinery and the master count in.
func (n *Node) buildClients(u *undo, peerTLS *tls.Config) {
	cfg := n.cfg
	n.dir = membership.NewDirectory(n.etcd, cfg.EtcdPrefix)
	// Every internal call, both ways, samples the peers' clocks (rule 2).
	n.clocks = replica.NewClockCheck(cfg.MaxClockOffset)
	n.peerClock = &rpc.PeerClock{ServerID: cfg.ID, Now: n.now, Observe: func(peer string, sentAt int64, at time.Time) {
		if n.dir.Known(peer) { // only live servers' samples count (and take memory)
			n.clocks.Observe(peer, sentAt, at)
		}
	}}
	n.rpc = rpc.NewClient(rpc.Config{Secret: cfg.ClusterSecret, TLS: peerTLS, Timeout: cfg.RPCTimeout, MaxResponseBytes: 512 << 20, Clock: n.peerClock})
	u.add(n.rpc.Close)
	// Sub-query answers get a client of their own, whose answers are cut
	// at the sub-query limit (the client stops reading past it), without
	// bounding METADATA files and listings by the same number.
	n.rpcQuery = rpc.NewClient(rpc.Config{Secret: cfg.ClusterSecret, TLS: peerTLS, Timeout: cfg.RPCTimeout, MaxResponseBytes: cfg.MaxSubQueryBytes, Clock: n.peerClock})
	u.add(n.rpcQuery.Close)
	n.rpcOnce = rpc.NewClient(rpc.Config{Secret: cfg.ClusterSecret, TLS: peerTLS, Timeout: cfg.AckTimeout + 5*time.Second, MaxAttempts: 1, Clock: n.peerClock})
	u.add(n.rpcOnce.Close)
	n.committer = &metadata.Committer{
		Store:     n.meta,
		Files:     n.files,
		Peers:     replica.Peers{Dir: n.dir, RPC: n.rpc},
		Self:      cfg.ID,
		Logger:    n.log,
		BeforeCAS: cfg.knobs.beforeCAS,
	}
	n.clock = model.NewClock(cfg.ID, func() int64 { return n.now().UnixNano() })
	n.clock.SetMaxAhead(cfg.MaxClockOffset)
	n.rmetrics = replica.NewMetrics()
	n.mmetrics = master.NewMetrics()
	n.load = replica.NewLoad(n.store, n.rmetrics)
}

// join registers this server in the membership list, builds the replica
// machinery (and its router), starts watching the list, and loads the
// tables this server holds. It registers before loading tables: peers
// resolve this server's address from the list, and its own fetches resolve
// theirs.
func (n *Node) join(ctx context.Context, u *undo, advertise string, tls bool) error {
	cfg := n.cfg
	var err error
	// A restarted server waits for its previous incarnation's lease to
	// lapse (membership.RegisterAfterRestart).
	n.reg, err = membership.RegisterAfterRestart(ctx, membership.Config{
		Client:  n.etcd,
		Prefix:  cfg.EtcdPrefix,
		Self:    membership.Info{ID: cfg.ID, Addr: advertise, TLS: tls, StartedAt: n.started},
		TTL:     cfg.RegistrationTTL,
		Summary: n.summary,
		Logger:  n.log,
	})
	if err != nil {
		return fmt.Errorf("node: register in etcd: %w", err)
	}
	u.add(func() { n.reg.Close(context.Background()) })
	n.replica = n.newReplica()
	n.router = n.replica.Router()
	if _, err := n.dir.Refresh(ctx); err != nil {
		return fmt.Errorf("node: read the server list: %w", err)
	}
	servers := membership.Watch(n.bg, n.etcd, cfg.EtcdPrefix, func(infos []membership.Info) {
		n.dir.Set(infos)
		n.replica.RetryPushers() // a server that came back gets its pushes now, not after a backoff
	}, membership.WithLogger(n.log))
	n.goAttach(servers.Wait)
	return n.loadTables(ctx)
}

// buildServing builds what serves the cluster and the clients: the
// metrics registry, the master, the smear queue and forwarder, the front
// end and the HTTP server (through Config.HTTP).
func (n *Node) buildServing(u *undo) error {
	cfg := n.cfg
	n.registry = prometheus.NewRegistry()
	n.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	partition.RegisterMetrics(n.registry, n.store)
	n.replica.RegisterMetrics(n.registry)
	n.mmetrics.Register(n.registry)
	n.limiter.Register(n.registry)
	var err error
	if n.master, err = n.newMaster(); err != nil {
		return err
	}
	if err := n.openSmear(); err != nil {
		return err
	}
	u.add(func() { n.smearQ.Close() })
	if n.front, err = n.newFrontend(); err != nil {
		return err
	}
	n.api, err = cfg.HTTP(Handlers{
		Backend:       n.front,
		Internal:      n.replica,
		Clock:         n.peerClock,
		Registry:      n.registry,
		Logger:        n.log,
		AuthToken:     cfg.AuthToken,
		ClusterSecret: cfg.ClusterSecret,
		MaxBodyBytes:  cfg.MaxBodyBytes,
		// The limits of issue 14 item 7: bounded memory under load.
		MaxConcurrentRequests: cfg.MaxConcurrentRequests,
		MaxQueryBuckets:       cfg.MaxQueryBuckets,
	})
	if err != nil {
		return fmt.Errorf("node: HTTP server: %w", err)
	}
	return nil
}

// startLoops starts the HTTP server and the background goroutines
// (doc.go lists them); each stops when bg ends (the HTTP server on
// Shutdown) and Stop waits for all of them.
func (n *Node) startLoops(bg context.Context, serverTLS *tls.Config) {
	cfg := n.cfg
	n.goAttach(func() {
		ln := n.ln
		if serverTLS != nil {
			ln = tls.NewListener(ln, serverTLS)
		}
		if err := n.api.Serve(ln); err != nil {
			n.log.Error("http server stopped", "err", err)
		}
	})
	tables := metadata.WatchTables(bg, n.etcd, cfg.EtcdPrefix, func(ev metadata.TableEvent) { n.replica.OnTableEvent(bg, ev) },
		metadata.WithWatchLogger(n.log))
	n.goAttach(tables.Wait)
	n.goAttach(func() { n.every(bg, cfg.SweepInterval, "metadata sweep", n.sweepOnce) })
	n.goAttach(func() { n.every(bg, cfg.ReconcileInterval, "reconciliation", n.replica.Reconcile) })
	n.goAttach(func() { n.every(bg, cfg.LifecycleTick, "replica lifecycle", n.replica.LifecycleTick) })
	n.goAttach(func() { n.replica.RunSplits(bg) })
	n.goAttach(func() {
		if err := n.smearFwd.Run(bg); err != nil {
			n.log.Error("smear forwarder stopped", "err", err)
		}
	})
	n.goAttach(func() {
		_ = election.Run(bg, election.Config{Client: n.etcd, Prefix: cfg.EtcdPrefix, Self: cfg.ID, Lease: n.reg, Logger: n.log}, n.master.Lead)
	})
	n.goAttach(func() { n.replica.RunResync(bg) })
	if cfg.SealAfter >= 0 {
		n.goAttach(func() { n.sealLoop(bg) })
	} else if !cfg.NoMemoryHead {
		// Nothing is sealed, but the memory head keeps its budget (Seal
		// fits it otherwise).
		n.goAttach(func() {
			n.every(bg, cfg.SealInterval, "memory head budget", func(context.Context) error { return n.store.FitMemoryHeads() })
		})
	}
	n.goAttach(func() { n.replica.RunSession(bg) })
}

// summary is the load this server publishes in its membership key: its
// replicas' (replica.Load) and its smear queue's depth.
func (n *Node) summary() membership.Summary {
	s := n.load.Summary()
	if n.smearQ != nil {
		s.SmearQueueRows, s.SmearQueueBytes = n.smearQ.Depth()
	}
	return s
}

// now is this server's wall clock (shifted in clock tests).
func (n *Node) now() time.Time { return time.Now().Add(n.cfg.knobs.clockSkew) }

// goAttach runs f in a goroutine that Stop waits for.
func (n *Node) goAttach(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// loadTables lists the tables in etcd and has the replica machinery load
// those this server is concerned with (replica.Server.LoadTables), before
// the server serves anything. Without etcd the server cannot start.
func (n *Node) loadTables(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, n.cfg.SyncTimeout)
	tables, err := n.meta.ListTables(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("node: list tables in etcd at %s (is etcd running there?): %w",
			strings.Join(n.cfg.EtcdEndpoints, ","), err)
	}
	return n.replica.LoadTables(ctx, tables)
}

// newReplica builds the replica machinery from the parts Start opened.
func (n *Node) newReplica() *replica.Server {
	cfg := n.cfg
	return replica.New(replica.Config{
		Self: cfg.ID, Store: n.store, Committer: n.committer, Meta: n.meta, Files: n.files,
		Etcd: n.etcd, EtcdPrefix: cfg.EtcdPrefix, Session: n.reg, Directory: n.dir,
		RPC: n.rpc, RPCOnce: n.rpcOnce, RPCQuery: n.rpcQuery,
		Clock: n.clock, Clocks: n.clocks, Now: n.now, Metrics: n.rmetrics, Logger: n.log,
		SyncTimeout: cfg.SyncTimeout, AckTimeout: cfg.AckTimeout, MaxClockOffset: cfg.MaxClockOffset,
		SplitCheckInterval: cfg.SplitCheckInterval, CatchUpConcurrency: cfg.CatchUpConcurrency,
		MaxBodyBytes: cfg.MaxBodyBytes, MaxSubQueryBytes: cfg.MaxSubQueryBytes, MaxQueryBuckets: cfg.MaxQueryBuckets,
		WriteLimit: cfg.WriteLimit, ReplicationQuota: max(cfg.ReplicationQuota, 0),
		Knobs: cfg.knobs.TestingKnobs,
	})
}

// every runs f every interval until ctx ends, logging its failures as
// what. It is how the node's periodic duties (the METADATA sweep, the
// reconciliation) run.
func (n *Node) every(ctx context.Context, interval time.Duration, what string, f func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := f(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn(what+" failed", "err", err)
		}
	}
}

// DefaultSealAfter is Config.SealAfter's default: well past the default
// smear max_delay (2 min), a bound for buckets that never go quiet.
const DefaultSealAfter = 10 * time.Minute

// DefaultSealQuiet is Config.SealQuiet's default.
const DefaultSealQuiet = 5 * time.Second

// DefaultSealIdle is Config.SealIdle's default.
const DefaultSealIdle = time.Second

// minSealWait is the least time between two passes of the sealer, and
// sealRecheck how often it looks for buckets going quiet (new writes
// move them) while it waits.
const (
	minSealWait = 100 * time.Millisecond
	sealRecheck = 500 * time.Millisecond
)

// sealLoop seals every SealInterval (sealOnce with SealAfter's rule), and
// in between as soon as a storage bucket goes quiet
// (partition.Store.NextQuietSeal, looked at every sealRecheck; a pass
// that seals the quiet buckets only): a bucket is sealed within
// minSealWait of going quiet, while the buckets SealAfter's rule seals
// without waiting for quiet (an old backfill's, still taking writes) are
// sealed again no more often than every SealInterval (docs/performance.md,
// "Aggregates over the memory head").
func (n *Node) sealLoop(ctx context.Context) {
	full := time.Now().Add(n.cfg.SealInterval) // the next pass with SealAfter's rule
	for {
		wait := time.Until(full)
		now := n.now()
		if at, ok := n.store.NextQuietSeal(partition.SealPolicy{Now: now.UnixNano(), Quiet: n.cfg.SealQuiet, Idle: n.cfg.SealIdle}); ok {
			wait = min(wait, max(time.Duration(at-now.UnixNano()), minSealWait))
		}
		seal := wait <= sealRecheck
		t := time.NewTimer(max(min(wait, sealRecheck), 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !seal {
			continue // look again: writes may have moved the next quiet bucket
		}
		whole := !time.Now().Before(full)
		if whole {
			full = time.Now().Add(n.cfg.SealInterval)
		}
		if err := n.sealOnce(ctx, whole); err != nil && ctx.Err() == nil {
			n.log.Warn("seal failed", "err", err)
		}
	}
}

// sealOnce seals the storage buckets that ended and took no write for
// SealQuiet, or for SealIdle when their partition took none at all; with
// after, also those that ended SealAfter ago or earlier, and fits the
// memory head's budget (partition.SealPolicy.QuietOnly).
func (n *Node) sealOnce(ctx context.Context, after bool) error {
	start := time.Now()
	now := n.now()
	p := partition.SealPolicy{Before: math.MinInt64, Now: now.UnixNano(), Quiet: n.cfg.SealQuiet, Idle: n.cfg.SealIdle, QuietOnly: !after}
	if after {
		p.Before = now.Add(-n.cfg.SealAfter).UnixNano()
	}
	st, err := n.store.Seal(ctx, p)
	if st.Series > 0 || st.Skipped > 0 {
		n.log.Debug("sealed", "blocks", st.Series, "rows", st.Rows, "skipped", st.Skipped,
			"head_bytes", st.HeadBytes, "block_bytes", st.BlockBytes, "took", time.Since(start))
	}
	return err
}

// sweepOnce removes METADATA files off the committed chain (DESIGN.md
// section 4, rule 6).
func (n *Node) sweepOnce(ctx context.Context) error {
	tables, err := n.meta.ListTables(ctx)
	if err != nil {
		return err
	}
	deleted, err := n.files.SweepListed(time.Now(), n.cfg.SweepGrace, n.cfg.SweepKeep, tables)
	if deleted > 0 {
		n.log.Info("metadata sweep", "deleted", deleted)
	}
	return err
}

// Addr returns the address the HTTP API listens on.
func (n *Node) Addr() string { return n.ln.Addr().String() }

// URL returns the base URL of the HTTP API (https with TLSCertFile).
func (n *Node) URL() string {
	if n.cfg.TLSCertFile != "" {
		return "https://" + n.Addr()
	}
	return "http://" + n.Addr()
}

// ID returns the server id.
func (n *Node) ID() string { return n.cfg.ID }

// IsMaster reports whether this server is the elected master now.
func (n *Node) IsMaster() bool { return n.master.IsMaster() }

// Stop stops serving, waits for background work and closes storage.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		var errs []error
		if err := n.api.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		n.drainSmear(ctx)
		n.cancel()
		n.wg.Wait()
		n.replica.Close()
		if err := n.smearQ.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close smear queue: %w", err))
		}
		if err := n.reg.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("leave the server list: %w", err))
		}
		n.rpc.Close()
		n.rpcOnce.Close()
		n.rpcQuery.Close()
		if err := n.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close partition store: %w", err))
		}
		if err := n.etcd.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close etcd client: %w", err))
		}
		n.stopErr = errors.Join(errs...)
		n.log.Info("server stopped")
	})
	return n.stopErr
}
