package master

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/operator"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/presplit"
)

// Planner plans one change of a table from its current config and
// METADATA; a planner that finds the change no longer needed returns an
// error (the master's is errRepairSettled).
type Planner = func(cfg metadata.TableConfig, file *metadata.File) (metadata.Op, error)

// Changes commits METADATA changes, each planned against the file current
// when it is sent (the replica code's RequestChange).
type Changes interface {
	RequestChange(ctx context.Context, table string, plan Planner) (*metadata.File, error)
}

// Servers is the live-server directory.
type Servers interface {
	// Refresh reads the live servers from etcd now.
	Refresh(ctx context.Context) ([]membership.Info, error)
	// Addr resolves a live server's address for RPC.Call.
	Addr(ctx context.Context, id string) (string, error)
}

// Replicas asks a server (this one or another) for its local replicas.
type Replicas interface {
	ReplicasOn(ctx context.Context, server string, req wire.ReplicasRequest) (wire.ReplicasResponse, error)
}

// Marks reads what the operators and the servers recorded in etcd for the
// master: the election's leader, the drain marks, the lost-placement marks
// and the last rebalance request.
type Marks interface {
	Leader(ctx context.Context) (string, error)
	Draining(ctx context.Context) (map[string]time.Time, error)
	Lost(ctx context.Context) (map[uuid.UUID]operator.LostMark, error)
	RebalanceRequest(ctx context.Context) (int64, error)
}

// Tables lists the tables' configs as etcd holds them.
type Tables interface {
	ListTables(ctx context.Context) ([]metadata.TableConfig, error)
}

// Cache is the router's METADATA cache, kept current by the table watch.
type Cache interface {
	Table(ctx context.Context, name string) (metadata.TableConfig, *metadata.File, error)
}

// Committer reads the current METADATA and keeps a table's metadata
// servers (metadata.Committer).
type Committer interface {
	Load(ctx context.Context, table string) (metadata.TableConfig, *metadata.File, error)
	JoinMetadataServer(ctx context.Context, table string) (metadata.TableConfig, error)
	RemoveMetadataServer(ctx context.Context, table, server string) (metadata.TableConfig, error)
}

// RPC calls another server's internal API (rpc.Client).
type RPC interface {
	Call(ctx context.Context, addr, path string, req, resp any) error
}

// Lease reports whether this server's etcd session is valid
// (membership.Registration).
type Lease interface {
	Valid() bool
}

// Metrics are the counters the master's decisions add to.
type Metrics struct {
	// SplitsAborted counts the SPLIT_ABORTs of a split whose child had no
	// live majority.
	SplitsAborted prometheus.Counter
	// Presplits counts the pre-split SPLIT_BEGINs.
	Presplits prometheus.Counter
	// RetentionDrops counts the partitions dropped by retention; nil
	// counts nothing.
	RetentionDrops prometheus.Counter
}

// Config configures the master duties of one server. Every field is
// required unless its comment says otherwise.
type Config struct {
	// Self is this server's id.
	Self string
	// DeadAfter is how long a listed server may be absent from the
	// membership list before it is replaced.
	DeadAfter time.Duration
	// Tick is how often the master runs its duties.
	Tick time.Duration
	// MinServers is the cluster size below which nothing is assigned.
	MinServers int
	// RebalanceMoves bounds the partition moves in flight at once.
	RebalanceMoves int
	// NoPresplit and NoRebalance turn those duties off.
	NoPresplit, NoRebalance bool
	// PresplitInterval is how often pre-split runs.
	PresplitInterval time.Duration
	// Presplit configures pre-split.
	Presplit presplit.Config
	// PickChildServers chooses k servers for each of children new
	// partitions (the replica code's split start uses the same choice).
	PickChildServers func(live []membership.Info, children, k int, rnd func(int) int) [][]membership.Info
	// Logger receives the master's logs; nil discards.
	Logger *slog.Logger

	Changes   Changes
	Servers   Servers
	Replicas  Replicas
	Marks     Marks
	Tables    Tables
	Cache     Cache
	Committer Committer
	RPC       RPC
	Lease     Lease
	Metrics   Metrics
}

// Master runs the master's term on one server (Lead) and reports the
// cluster's health (Health).
type Master struct {
	cfg Config
	log *slog.Logger
	// isMaster is set while this server leads (Lead's term).
	isMaster atomic.Bool
}

// New returns the master duties of one server; they run when Lead is
// called.
func New(cfg Config) (*Master, error) {
	if cfg.Changes == nil || cfg.Servers == nil || cfg.Replicas == nil || cfg.Marks == nil || cfg.Tables == nil ||
		cfg.Cache == nil || cfg.Committer == nil || cfg.RPC == nil || cfg.Lease == nil || cfg.PickChildServers == nil ||
		cfg.Metrics.SplitsAborted == nil || cfg.Metrics.Presplits == nil {
		return nil, errors.New("master: a dependency is missing from the config")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Master{cfg: cfg, log: cfg.Logger}, nil
}
