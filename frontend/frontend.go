package frontend

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/presplit"
)

// Router routes inserts and queries to the partitions' replicas and caches
// each table's METADATA (router.Router).
type Router interface {
	Table(ctx context.Context, table string) (metadata.TableConfig, *metadata.File, error)
	Insert(ctx context.Context, table string, rows []model.Row, opts model.InsertOptions) error
	Query(ctx context.Context, table string, q model.Query) ([]model.Row, bool, error)
	Aggregate(ctx context.Context, table string, q model.Query) ([]model.SeriesAgg, error)
	SeriesKeys(ctx context.Context, table string, q model.Query, limit int) ([]string, error)
	FieldKeys(ctx context.Context, table, measurement, consistency string) ([]model.FieldKey, error)
}

// Committer creates tables and reads METADATA (metadata.Committer).
type Committer interface {
	Create(ctx context.Context, cfg metadata.TableConfig, op metadata.CreateOp) (metadata.TableConfig, *metadata.File, error)
	Load(ctx context.Context, table string) (metadata.TableConfig, *metadata.File, error)
	LocalFile(table, txnID string) ([]byte, error)
}

// Tables reads and changes the tables' configs as etcd holds them
// (metadata.Store): listing, and the compare-and-swaps of PATCH and
// DELETE of a table.
type Tables interface {
	ListTables(ctx context.Context) ([]metadata.TableConfig, error)
	GetTable(ctx context.Context, name string) (metadata.TableConfig, int64, error)
	UpdateTable(ctx context.Context, cfg metadata.TableConfig, modRevision int64) error
	DeleteTable(ctx context.Context, name string, modRevision int64) error
}

// Servers is the live-server directory.
type Servers interface {
	// Refresh reads the live servers from etcd now.
	Refresh(ctx context.Context) ([]membership.Info, error)
	// Live returns the live servers as last read.
	Live() []membership.Info
}

// Peers fetches a METADATA file from another metadata server.
type Peers interface {
	FetchFile(ctx context.Context, server, table, txnID string) ([]byte, error)
}

// Changes commits METADATA changes (the replica code's RequestChange and
// split start).
type Changes interface {
	RequestChange(ctx context.Context, table string, plan func(metadata.TableConfig, *metadata.File) (metadata.Op, error)) (*metadata.File, error)
	SplitPartition(ctx context.Context, table string, pid uuid.UUID, at *int64) (*metadata.File, error)
}

// Replicas asks a server (this one or another) for its local replicas.
type Replicas interface {
	ReplicasOn(ctx context.Context, server string, req wire.ReplicasRequest) (wire.ReplicasResponse, error)
}

// Installer installs a table's METADATA this server just created.
type Installer interface {
	Install(cfg metadata.TableConfig, file *metadata.File) error
}

// ClockCheck reports whether this server's clock may stamp versions.
type ClockCheck interface {
	CheckClock() error
}

// Marks reads and writes the operators' marks in etcd and reads the
// election's leader.
type Marks interface {
	Leader(ctx context.Context) (string, error)
	Draining(ctx context.Context) (map[string]time.Time, error)
	SetDraining(ctx context.Context, server string, on bool, now time.Time) (time.Time, error)
	RequestRebalance(ctx context.Context, now time.Time) error
}

// Health reports the cluster's servers and problems (cluster/master).
type Health interface {
	Health(ctx context.Context) (api.HealthResponse, error)
}

// Queue is this server's durable smear queue (smear.Queue).
type Queue interface {
	Enqueue(ctx context.Context, table string, rows []model.Row, due time.Time) error
	RetryAfter() time.Duration
	// DueLead is how much shorter than maxDelay the window of a due
	// time is drawn from (smear.Queue.DueLead).
	DueLead(maxDelay time.Duration) time.Duration
	// RefusedDueFull counts an insert refused after every due time it
	// drew was full (smear.ErrDueFull).
	RefusedDueFull()
	// NoteDirect counts rows written straight to their partitions
	// (smear.Queue.NoteDirect).
	NoteDirect(rows int)
}

// Config configures the front end of one server. Every dependency is
// required but Queue.
type Config struct {
	// Self is this server's id.
	Self string
	// MinServers is the cluster size below which no table is created.
	MinServers int
	// NoSmear turns insert smearing off on this server.
	NoSmear bool
	// SmearDelay, set by tests, picks a smeared insert's delay instead of
	// a uniform draw from [0, max].
	SmearDelay func(max time.Duration) time.Duration
	// Logger receives the front end's logs; nil discards.
	Logger *slog.Logger
	// Presplit, when set, makes a new table born pre-split: its first
	// METADATA already holds the partitions the master's first pre-split
	// would make (presplit.PlanTable at the creation time, rate unknown),
	// so no row is ever copied to pre-split a new table. Nil: one
	// partition, as with pre-split off.
	Presplit *presplit.Config

	Router     Router
	Committer  Committer
	Tables     Tables
	Servers    Servers
	Peers      Peers
	Changes    Changes
	Replicas   Replicas
	Installer  Installer
	ClockCheck ClockCheck
	// Clock stamps the versions of smeared rows.
	Clock  *model.Clock
	Marks  Marks
	Health Health
	// Queue is the smear queue; nil writes every insert straight to its
	// partitions.
	Queue Queue
}

// Frontend is the public API's backend on one server: the HTTP server
// calls it (it implements the server's Backend interface), and it reaches
// the cluster through the router and the interfaces of its Config.
type Frontend struct {
	cfg        Config
	log        *slog.Logger
	router     Router
	committer  Committer
	tables     Tables
	servers    Servers
	peers      Peers
	changes    Changes
	replicas   Replicas
	installer  Installer
	clockCheck ClockCheck
	clock      *model.Clock
	marks      Marks
	health     Health
	queue      Queue
}

// New returns the front end of one server.
func New(cfg Config) (*Frontend, error) {
	if cfg.Router == nil || cfg.Committer == nil || cfg.Tables == nil || cfg.Servers == nil || cfg.Peers == nil ||
		cfg.Changes == nil || cfg.Replicas == nil || cfg.Installer == nil || cfg.ClockCheck == nil || cfg.Clock == nil ||
		cfg.Marks == nil || cfg.Health == nil {
		return nil, errors.New("frontend: a dependency is missing from the config")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Frontend{cfg: cfg, log: cfg.Logger, router: cfg.Router, committer: cfg.Committer, tables: cfg.Tables,
		servers: cfg.Servers, peers: cfg.Peers, changes: cfg.Changes, replicas: cfg.Replicas, installer: cfg.Installer,
		clockCheck: cfg.ClockCheck, clock: cfg.Clock, marks: cfg.Marks, health: cfg.Health, queue: cfg.Queue}, nil
}
