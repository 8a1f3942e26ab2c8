package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/router"
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
	// on every internal request.
	ClusterSecret string
	// MaxBodyBytes limits request bodies; default tsdbhttp.DefaultMaxBodyBytes.
	MaxBodyBytes int
	// SweepInterval and SweepGrace drive the metadata file sweep; defaults
	// 10 min and 1 h. SweepKeep is how many committed ancestors to keep (10).
	SweepInterval, SweepGrace time.Duration
	SweepKeep                 int
	// Logger receives the server's logs; nil discards.
	Logger *slog.Logger
}

func (c *Config) ensureDefaults() {
	if c.EtcdPrefix == "" {
		c.EtcdPrefix = "/tsdb/"
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = tsdbhttp.DefaultMaxBodyBytes
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = 10 * time.Minute
	}
	if c.SweepGrace <= 0 {
		c.SweepGrace = time.Hour
	}
	if c.SweepKeep <= 0 {
		c.SweepKeep = 10
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
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
	return errors.Join(errs...)
}

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
	api       *tsdbhttp.Server
	ln        net.Listener
	registry  *prometheus.Registry
	started   time.Time

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
	var closers []func()
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("node: create data dir: %w", err)
	}
	n.store, err = partition.Open(partition.Options{Dir: filepath.Join(cfg.DataDir, "pebble"), Logger: n.log})
	if err != nil {
		return nil, fmt.Errorf("node: open partition store: %w", err)
	}
	closers = append(closers, func() { n.store.Close() })
	n.files, err = metadata.OpenFileStore(filepath.Join(cfg.DataDir, "metadata"))
	if err != nil {
		return nil, fmt.Errorf("node: open metadata file store: %w", err)
	}
	n.etcd, err = clientv3.New(clientv3.Config{
		Endpoints:   cfg.EtcdEndpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("node: etcd client: %w", err)
	}
	closers = append(closers, func() { n.etcd.Close() })
	n.meta = metadata.NewEtcdStore(n.etcd, cfg.EtcdPrefix)
	n.committer = &metadata.Committer{Store: n.meta, Files: n.files, Self: cfg.ID, Logger: n.log}
	n.router = router.New(router.Config{
		Self:   cfg.ID,
		Meta:   n.committer,
		Store:  n.store,
		Clock:  model.NewClock(cfg.ID, nil),
		Logger: n.log,
	})
	if err := n.loadTables(ctx); err != nil {
		return nil, err
	}

	n.registry = prometheus.NewRegistry()
	n.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerStoreMetrics(n.registry, n.store)
	n.api = tsdbhttp.NewServer(tsdbhttp.Config{
		AuthToken:    cfg.AuthToken,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Registry:     n.registry,
		Logger:       n.log,
	}, backend{n})
	n.ln, err = net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("node: listen on %s: %w", cfg.Listen, err)
	}
	bg, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.goAttach(func() {
		if err := n.api.Serve(n.ln); err != nil {
			n.log.Error("http server stopped", "err", err)
		}
	})
	n.goAttach(func() { n.sweepLoop(bg) })
	n.log.Info("server started", "addr", n.Addr(), "data", cfg.DataDir)
	return n, nil
}

// goAttach runs f in a goroutine that Stop waits for.
func (n *Node) goAttach(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// loadTables loads the METADATA of every table this server is a metadata
// server of and makes sure its local replicas exist (they are re-opened from
// the partition store's registry; a placement assigned while this server was
// down is created now). Without etcd the server cannot start; a table that
// fails to load is logged and retried on its first use, so one bad table does
// not keep the others down.
func (n *Node) loadTables(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	tables, err := n.meta.ListTables(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("node: list tables in etcd at %s (is etcd running there?): %w",
			strings.Join(n.cfg.EtcdEndpoints, ","), err)
	}
	for _, t := range tables {
		if !contains(t.MetadataServers, n.cfg.ID) {
			continue
		}
		cfg, file, err := n.committer.Load(ctx, t.Name)
		if err == nil {
			n.router.Update(cfg, file)
			_, err = n.router.EnsureLocalReplicas(file)
		}
		if err != nil {
			n.log.Error("table not loaded at start; retried on first use", "table", t.Name, "err", err)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sweepLoop removes METADATA files off the committed chain (DESIGN.md
// section 4, rule 6) until ctx ends.
func (n *Node) sweepLoop(ctx context.Context) {
	t := time.NewTicker(n.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := n.sweepOnce(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("metadata sweep failed", "err", err)
		}
	}
}

func (n *Node) sweepOnce(ctx context.Context) error {
	tables, err := n.meta.ListTables(ctx)
	if err != nil {
		return err
	}
	current := make(map[string]string, len(tables))
	for _, t := range tables {
		current[t.Name] = t.MetadataTxnID
	}
	deleted, err := n.files.Sweep(time.Now(), n.cfg.SweepGrace, n.cfg.SweepKeep, func(table string) (string, bool) {
		id, ok := current[table]
		return id, ok
	})
	if deleted > 0 {
		n.log.Info("metadata sweep", "deleted", deleted)
	}
	return err
}

// Addr returns the address the HTTP API listens on.
func (n *Node) Addr() string { return n.ln.Addr().String() }

// URL returns the base URL of the HTTP API.
func (n *Node) URL() string { return "http://" + n.Addr() }

// ID returns the server id.
func (n *Node) ID() string { return n.cfg.ID }

// Stop stops serving, waits for background work and closes storage.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		var errs []error
		if err := n.api.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		n.cancel()
		n.wg.Wait()
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

// backend adapts the node to the HTTP API's Backend interface.
type backend struct{ n *Node }

var _ tsdbhttp.Backend = backend{}

// liveServers is the number of servers a new table may be placed on. Until
// membership arrives (issue 4) a table lives on the server that creates it.
func (b backend) liveServers() int { return 1 }

func (b backend) CreateTable(ctx context.Context, req api.CreateTableRequest) (metadata.TableConfig, error) {
	n := b.n
	live := b.liveServers()
	cfg := metadata.TableConfig{
		Name:                req.Name,
		ReplicationFactor:   req.ReplicationFactor,
		PartitionSizeTarget: req.PartitionSizeTarget,
		MetadataServers:     []string{n.cfg.ID},
		CreatedAt:           time.Now().UTC(),
	}
	if cfg.ReplicationFactor == 0 {
		cfg.ReplicationFactor = min(3, live)
	}
	if req.Retention != nil {
		cfg.Retention = metadata.Duration(*req.Retention)
	}
	cfg.EnsureDefaults()
	if req.Smear != nil {
		if req.Smear.Enabled != nil {
			cfg.Smear.Enabled = *req.Smear.Enabled
		}
		if req.Smear.MaxDelay != nil {
			cfg.Smear.MaxDelay = metadata.Duration(*req.Smear.MaxDelay)
		}
		if req.Smear.KeyrangeThreshold != nil {
			cfg.Smear.KeyrangeThreshold = metadata.Duration(*req.Smear.KeyrangeThreshold)
		}
	}
	if err := cfg.Validate(); err != nil {
		return metadata.TableConfig{}, err
	}
	if cfg.ReplicationFactor > live {
		return metadata.TableConfig{}, fmt.Errorf("%w: replication_factor %d exceeds the %d live server(s)",
			metadata.ErrInvalidConfig, cfg.ReplicationFactor, live)
	}
	op := metadata.CreateOp{
		Table:       cfg.Name,
		PartitionID: uuid.New(),
		Servers:     []metadata.Placement{{ServerID: n.cfg.ID, PlacementID: uuid.New()}},
	}
	cfg, file, err := n.committer.Create(ctx, cfg, op)
	if err != nil {
		return metadata.TableConfig{}, err
	}
	n.router.Update(cfg, file)
	if _, err := n.router.EnsureLocalReplicas(file); err != nil {
		return metadata.TableConfig{}, err
	}
	n.log.Info("table created", "table", cfg.Name, "txnid", cfg.MetadataTxnID)
	return cfg, nil
}

func (b backend) ListTables(ctx context.Context) ([]metadata.TableConfig, error) {
	return b.n.meta.ListTables(ctx)
}

func (b backend) Table(ctx context.Context, name string) (metadata.TableConfig, *metadata.File, error) {
	return b.n.router.Table(ctx, name)
}

func (b backend) Insert(ctx context.Context, table string, rows []model.Row) error {
	_, err := b.n.router.Insert(ctx, table, rows)
	return err
}

func (b backend) Query(ctx context.Context, table string, q tsdbhttp.RawQuery) ([]model.Row, bool, error) {
	return b.n.router.Query(ctx, table, router.RawQuery{
		From: q.From, To: q.To, Series: q.Series, Prefix: q.Prefix, Fields: q.Fields, Limit: q.Limit,
	})
}

func (b backend) Aggregate(ctx context.Context, table string, q tsdbhttp.AggQuery) ([]model.SeriesAgg, error) {
	return b.n.router.Aggregate(ctx, table, router.AggQuery{
		From: q.From, To: q.To, Series: q.Series, Prefix: q.Prefix, Fields: q.Fields,
		Step: q.Step, GroupAll: q.GroupAll,
	})
}

func (b backend) Metadata(ctx context.Context, table, txnID string) (metadata.TableConfig, *metadata.File, error) {
	return metadata.TableConfig{}, nil, errors.New("not implemented yet")
}

func (b backend) Cluster(ctx context.Context) (api.ClusterResponse, error) {
	n := b.n
	return api.ClusterResponse{Servers: []api.ServerInfo{{
		ID: n.cfg.ID, Addr: n.Addr(), StartedAt: n.started, Replicas: len(n.store.Replicas()),
	}}}, nil
}
