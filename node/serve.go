package node

import (
	"context"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/frontend"
	"github.com/tsdb/tsdb/replica"
)

// HTTPServer is a server's HTTP server, as Config.HTTP builds it.
type HTTPServer interface {
	// Serve serves on ln until Shutdown.
	Serve(ln net.Listener) error
	// Shutdown stops accepting, lets the requests in flight finish (ctx
	// bounds the wait) and makes Serve return.
	Shutdown(ctx context.Context) error
}

// Handlers is what a server's HTTP server serves, and its settings;
// Start hands it to Config.HTTP.
type Handlers struct {
	// Backend serves the public API.
	Backend *frontend.Frontend
	// Internal serves the internal API (/internal/...).
	Internal *replica.Server
	// Clock reads the clock stamp of every authorized internal request
	// and stamps its answer.
	Clock *rpc.PeerClock
	// Registry holds the server's metrics, served on /metrics.
	Registry *prometheus.Registry
	// Logger receives request errors.
	Logger *slog.Logger
	// AuthToken, ClusterSecret, MaxBodyBytes, MaxConcurrentRequests and
	// MaxQueryBuckets are the Config's.
	AuthToken, ClusterSecret                             string
	MaxBodyBytes, MaxConcurrentRequests, MaxQueryBuckets int
}
