package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/influx"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// The default limits of the public API (declared in http/api, so that
// node and cmd can default their flags without importing this package).
const (
	DefaultMaxBodyBytes          = api.DefaultMaxBodyBytes
	DefaultMaxConcurrentRequests = api.DefaultMaxConcurrentRequests
	DefaultMaxQueryBuckets       = api.DefaultMaxQueryBuckets
)

// ReadBufferSize is fasthttp's per-connection read buffer, which bounds a
// request's line and headers: a GET /query carries its query in the URL
// (Grafana sends GET), so the 4 KiB default refused a query of a few KB.
// A request line and headers over it answer 431; longer queries go by POST.
const ReadBufferSize = 64 << 10

// Backend is what the API needs from the rest of the server.
type Backend interface {
	// CreateTable creates a table and returns its TableConfig.
	CreateTable(ctx context.Context, req api.CreateTableRequest) (metadata.TableConfig, error)
	// PatchTable changes a table's retention and returns its TableConfig.
	PatchTable(ctx context.Context, name string, req api.PatchTableRequest) (metadata.TableConfig, error)
	// DropTable drops a table (refused while a partition splits unless
	// force).
	DropTable(ctx context.Context, name string, force bool) error
	// ListTables returns every table's config, sorted by name.
	ListTables(ctx context.Context) ([]metadata.TableConfig, error)
	// Table returns a table's config and current METADATA.
	Table(ctx context.Context, name string) (metadata.TableConfig, *metadata.File, error)
	// Insert writes validated rows and returns once they are durable on as
	// many replicas as opts.Consistency asks.
	Insert(ctx context.Context, table string, rows []model.Row, opts model.InsertOptions) error
	// Query answers a raw query: q.Limit is set (DefaultQueryLimit when
	// the request names none), and so is q.Consistency (the
	// X-TSDB-Consistency header, else "one").
	Query(ctx context.Context, table string, q model.Query) ([]model.Row, bool, error)
	// Aggregate answers an aggregate query with merged partial states
	// (q.MaxBuckets is Config.MaxQueryBuckets, Consistency as for Query).
	Aggregate(ctx context.Context, table string, q model.Query) ([]model.SeriesAgg, error)
	// DeleteRows deletes the rows q selects (From/To, Series/Prefix,
	// Measurement, Tags) and returns once every tombstone is acknowledged
	// by a quorum of its partition's replicas.
	DeleteRows(ctx context.Context, table string, q model.Query) error
	// Cluster describes the servers of the cluster.
	Cluster(ctx context.Context) (api.ClusterResponse, error)
	// Replicas returns every partition of a table with its replicas' states.
	Replicas(ctx context.Context, table string) ([]wire.PartitionReplicas, error)
	// JoinServer commits JOIN_SERVER (FORCE_JOIN with req.Force) of
	// req.Server to a partition.
	JoinServer(ctx context.Context, table string, partition uuid.UUID, req api.ServerChangeRequest) (*metadata.File, error)
	// RemoveServer commits REMOVE_SERVER of req.Server from a partition.
	RemoveServer(ctx context.Context, table string, partition uuid.UUID, req api.ServerChangeRequest) (*metadata.File, error)
	// SplitPartition commits SPLIT_BEGIN of a current partition at *at, or
	// with at nil at the split point of a replica's data, and returns the
	// METADATA holding it.
	SplitPartition(ctx context.Context, table string, partition uuid.UUID, at *int64) (*metadata.File, error)
	// Metadata returns a table's config and the decoded METADATA file of
	// txnID (empty: the current one).
	Metadata(ctx context.Context, table, txnID string) (metadata.TableConfig, *metadata.File, error)
	// SetOffline commits SET_OFFLINE of a current partition: offline, or
	// back online.
	SetOffline(ctx context.Context, table string, partition uuid.UUID, offline bool) (*metadata.File, error)
	// Drain marks a server draining (on) or clears the mark.
	Drain(ctx context.Context, server string, on bool) (api.DrainResponse, error)
	// Rebalance records a rebalance request for the master.
	Rebalance(ctx context.Context) (api.RebalanceResponse, error)
	// Health reports every server's assigned partitions and every problem
	// of the cluster (tsdb admin stale).
	Health(ctx context.Context) (api.HealthResponse, error)
}

// Config configures the server.
type Config struct {
	// AuthToken, when set, is required on every endpoint but /healthz,
	// /metrics, /ping and /health, as "Authorization: Bearer <token>" or
	// in one of InfluxDB's ways (auth.go).
	AuthToken string
	// Version and Commit are tsdb's version and VCS revision, answered by
	// /ping and /health (influxping.go); empty means "dev" and "".
	Version, Commit string
	// MaxBodyBytes limits request bodies, as sent and decompressed.
	MaxBodyBytes int
	// Registry receives the server's metrics and is served on /metrics.
	Registry *prometheus.Registry
	// Logger receives request errors; nil discards.
	Logger *slog.Logger
	// ClusterSecret, when set, is required in the X-TSDB-Cluster-Secret
	// header of every /internal/ request (401 without it). The bearer token
	// does not apply to the internal API; with AuthToken set and no
	// ClusterSecret, every /internal/ request is refused (401).
	ClusterSecret string
	// Internal serves /internal/; nil answers 404 there.
	Internal Internal
	// Clock, when set, receives the clock stamp (rpc.ClockHeader) of every
	// authorized internal request and stamps its answer.
	Clock *rpc.PeerClock
	// Now returns the current time in ns, for line-protocol rows without a
	// timestamp; nil means the system clock.
	Now func() int64
	// MaxConcurrentRequests bounds the public requests served at once
	// (not /healthz, /metrics or /internal/); one more is answered 503
	// api.CodeOverloaded with Retry-After. 0 means
	// DefaultMaxConcurrentRequests.
	MaxConcurrentRequests int
	// MaxQueryBuckets bounds an aggregate answer's buckets summed over
	// all its series (422 api.CodeTooManyBuckets above); 0 means
	// DefaultMaxQueryBuckets.
	MaxQueryBuckets int
	// Influx is the backend of InfluxQL's /query (package influx); nil
	// answers 501 there.
	Influx influx.Backend
}

// Server is the public HTTP API of one tsdb server.
type Server struct {
	cfg     Config
	backend Backend
	// influx executes /query's InfluxQL; nil without Config.Influx.
	influx  *influx.Executor
	log     *slog.Logger
	metrics *metrics
	srv     *fasthttp.Server
	prom    fasthttp.RequestHandler
	zstd    *zstd.Decoder // shared by requests; DecodeAll is concurrency-safe
	// slots holds a token per public request being served; its capacity is
	// Config.MaxConcurrentRequests (admit).
	slots chan struct{}
	// base is the parent of every request's context; Shutdown cancels it
	// once the grace period for in-flight requests is over.
	base       context.Context
	cancelBase context.CancelFunc
	// conns are the accepted connections, closed by Shutdown when
	// fasthttp would wait for them in vain (conns.go).
	conns connTracker
	// tokenSum is the SHA-256 of cfg.AuthToken (auth.go).
	tokenSum [32]byte
	// stopping is set when Shutdown begins: /health answers 503 "fail".
	stopping atomic.Bool
	// lnMu guards lns, the listeners Serve was given, and the setting of
	// stopping, so that a Serve that starts as Shutdown runs still stops.
	lnMu sync.Mutex
	lns  []net.Listener
}

// shutdownGrace is how long Shutdown lets in-flight requests finish
// before it cancels their contexts (an insert waiting for acknowledgements
// or a query waiting for a catch-up then ends at once instead of running
// to its own deadline).
const shutdownGrace = 5 * time.Second

// NewServer builds a server around a backend.
func NewServer(cfg Config, backend Backend) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Now == nil {
		cfg.Now = func() int64 { return time.Now().UnixNano() }
	}
	if cfg.MaxConcurrentRequests <= 0 {
		cfg.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	if cfg.MaxQueryBuckets <= 0 {
		cfg.MaxQueryBuckets = DefaultMaxQueryBuckets
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, backend: backend, log: cfg.Logger,
		slots: make(chan struct{}, cfg.MaxConcurrentRequests), tokenSum: tokenSum([]byte(cfg.AuthToken))}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	if cfg.Influx != nil {
		s.influx = influx.NewExecutor(cfg.Influx, influx.Config{MaxBuckets: cfg.MaxQueryBuckets})
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.metrics = newMetrics(cfg.Registry)
	s.zstd = newZstdDecoder(cfg.MaxBodyBytes)
	s.prom = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{}))
	s.srv = &fasthttp.Server{
		Handler:            s.Handle,
		Name:               "tsdb",
		MaxRequestBodySize: cfg.MaxBodyBytes,
		ReadBufferSize:     ReadBufferSize,
		ReadTimeout:        60 * time.Second,
		WriteTimeout:       60 * time.Second,
		IdleTimeout:        120 * time.Second,
		ErrorHandler:       s.handleTransportError,
		ExpectHandler:      s.handleExpect,
		Logger:             fasthttpLogger{s.log},
		NoDefaultDate:      true,
	}
	return s
}

// Serve accepts connections on ln until Shutdown. Called after Shutdown
// began, it closes ln and returns nil at once: fasthttp's Shutdown closes
// only the listeners its Serve had taken when it ran, and a server stopped
// right after it started would otherwise accept for ever, its Stop waiting
// on this goroutine.
func (s *Server) Serve(ln net.Listener) error {
	s.lnMu.Lock()
	if s.stopping.Load() {
		s.lnMu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.lns = append(s.lns, ln)
	s.lnMu.Unlock()
	err := s.srv.Serve(s.track(ln))
	if s.stopping.Load() {
		return nil // its listener closed by Shutdown
	}
	return err
}

// Shutdown stops accepting connections and waits for open requests; after
// shutdownGrace it cancels their contexts, so a request waiting on
// replicas (up to its 55 s deadline) ends then rather than hold up the stop.
func (s *Server) Shutdown(ctx context.Context) error {
	s.lnMu.Lock()
	s.stopping.Store(true)
	lns := s.lns
	s.lnMu.Unlock()
	grace := time.AfterFunc(shutdownGrace, s.cancelBase)
	defer grace.Stop()
	// A connection that never read a byte has no request in flight, but
	// fasthttp would wait for it until ReadTimeout.
	stopNew := make(chan struct{})
	defer close(stopNew)
	go func() {
		for {
			s.conns.closeUnused()
			select {
			case <-stopNew:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	err := s.srv.ShutdownWithContext(ctx)
	// A Serve given its listener before fasthttp's Serve took it is not
	// stopped by fasthttp's Shutdown: close the listeners here too (after
	// it, whose own Close must come first to answer nil; a second Close
	// only fails).
	for _, ln := range lns {
		_ = ln.Close()
	}
	s.cancelBase()
	s.zstd.Close()
	return err
}

type fasthttpLogger struct{ l *slog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	f.l.Debug(fmt.Sprintf(format, args...))
}

// handleTransportError answers errors fasthttp meets before a handler runs,
// such as a body over MaxRequestBodySize, in the API's JSON error form.
func (s *Server) handleTransportError(ctx *fasthttp.RequestCtx, err error) {
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		s.writeError(ctx, fmt.Errorf("%w: the limit is %d bytes", ErrBodyTooLarge, s.cfg.MaxBodyBytes))
		return
	}
	var small *fasthttp.ErrSmallBuffer
	if errors.As(err, &small) {
		// The request line and headers overflow the read buffer; the path
		// is unknown then (fasthttp's Path is "/"). Nearly always a long GET /query (Grafana): the
		// answer is in InfluxDB 1.x's shape, which its clients show.
		msg := fmt.Sprintf("request line and headers too large: the limit is %d bytes (send a long query to /query with POST)", ReadBufferSize)
		if p := string(ctx.Path()); p != "" && p != "/" {
			s.writeAPIError(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, api.CodeBadRequest, msg)
			return
		}
		writeInfluxV1Error(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, msg)
		ctx.Response.Header.Set(headerTSDBErrorCode, api.CodeBadRequest)
		return
	}
	s.writeError(ctx, fmt.Errorf("%w: %v", ErrBadRequest, err))
}

// handleExpect answers "Expect: 100-continue" (curl sends it for bodies over
// 1 MiB): a body declared larger than the limit is refused with 413 before
// the client sends it. Without Expect, a body over the limit is refused as
// soon as its Content-Length is read and the connection is closed; a client
// still writing the body may then see the reset before the 413.
func (s *Server) handleExpect(ctx *fasthttp.RequestCtx) int {
	if n := ctx.Request.Header.ContentLength(); n > s.cfg.MaxBodyBytes {
		// fasthttp writes the response as it stands after this returns; the
		// JSON body tells the client why.
		s.writeError(ctx, fmt.Errorf("%w: %d bytes declared, the limit is %d bytes", ErrBodyTooLarge, n, s.cfg.MaxBodyBytes))
		return fasthttp.StatusRequestEntityTooLarge
	}
	return fasthttp.StatusContinue
}

// Handle is the fasthttp handler of every route. A panic in a handler is a
// bug; it is logged with its stack and answered with 500 instead of taking
// the whole server down (fasthttp does not recover panics).
func (s *Server) Handle(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	route := "panic"
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("BUG: handler panicked", "method", string(ctx.Method()), "path", string(ctx.Path()),
				"panic", p, "stack", string(debug.Stack()))
			s.writeAPIError(ctx, 500, api.CodeInternal, "internal error (logged)")
		}
		s.metrics.observe(route, ctx.Response.StatusCode(), time.Since(start))
	}()
	route = s.admit(ctx, string(ctx.Path()))
}

// route dispatches one request and returns the route's name for metrics.
func (s *Server) route(ctx *fasthttp.RequestCtx, path string) string {
	switch path {
	case "/healthz":
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"status":"ok"}`)
		return "healthz"
	case "/metrics":
		s.prom(ctx)
		return "metrics"
	}
	if strings.HasPrefix(path, "/internal/") {
		return s.routeInternal(ctx, path)
	}
	if influxRoute(path) {
		s.setInfluxHeaders(ctx)
	}
	// Open like InfluxDB's: probes and clients check them before they
	// have credentials (influxping.go).
	switch path {
	case "/ping":
		if s.method(ctx, "GET", "HEAD") {
			s.handlePing(ctx)
		}
		return "ping"
	case "/health":
		if s.method(ctx, "GET", "HEAD") {
			s.handleInfluxHealth(ctx)
		}
		return "health"
	}
	if res := s.checkAuth(ctx, path); res != authOK {
		s.writeUnauthorized(ctx, res)
		return "unauthorized"
	}
	if name, ok := s.routePublic(ctx, path); ok {
		return name
	}
	s.writeAPIError(ctx, 404, api.CodeNotFound, fmt.Sprintf("no such endpoint: %s %s", ctx.Method(), path))
	return "not_found"
}

// routePublic dispatches an authorized request of the public API and
// returns the route's name for metrics; ok is false for no such endpoint.
func (s *Server) routePublic(ctx *fasthttp.RequestCtx, path string) (name string, ok bool) {
	switch {
	case path == "/write" || path == "/api/v2/write":
		if !s.method(ctx, "POST") {
			return "write", true
		}
		s.handleWrite(ctx, path == "/api/v2/write")
		return "write", true
	case path == "/query":
		s.handleInfluxQuery(ctx)
		return "influx_query", true
	case path == "/api/v1/tables":
		switch string(ctx.Method()) {
		case "POST":
			s.handleCreateTable(ctx)
		case "GET":
			s.handleListTables(ctx)
		default:
			s.methodNotAllowed(ctx, "GET, POST")
		}
		return "tables", true
	case path == "/api/v1/cluster":
		if s.method(ctx, "GET") {
			s.handleCluster(ctx)
		}
		return "cluster", true
	case path == "/api/v1/cluster/health":
		if s.method(ctx, "GET") {
			s.handleHealth(ctx)
		}
		return "cluster_health", true
	case path == "/api/v1/cluster/rebalance":
		if s.method(ctx, "POST") {
			s.handleRebalance(ctx)
		}
		return "cluster_rebalance", true
	case strings.HasPrefix(path, "/api/v1/servers/"):
		id, ok := strings.CutSuffix(path[len("/api/v1/servers/"):], "/drain")
		if !ok {
			break
		}
		if s.method(ctx, "POST", "DELETE") {
			s.handleDrain(ctx, id, string(ctx.Method()) == "POST")
		}
		return "server_drain", true
	case strings.HasPrefix(path, "/api/v1/tables/"):
		return s.routeTable(ctx, path[len("/api/v1/tables/"):])
	}
	return "", false
}

// routeTable dispatches a request under /api/v1/tables/{table}/ (rest is
// the path after that prefix); ok is false for no such endpoint.
func (s *Server) routeTable(ctx *fasthttp.RequestCtx, rest string) (name string, ok bool) {
	table, action, _ := strings.Cut(rest, "/")
	switch action {
	case "":
		switch string(ctx.Method()) {
		case "GET":
			s.handleGetTable(ctx, table)
		case "PATCH":
			s.handlePatchTable(ctx, table)
		case "DELETE":
			s.handleDropTable(ctx, table)
		default:
			s.methodNotAllowed(ctx, "GET, PATCH, DELETE")
		}
		return "table", true
	case "insert":
		if s.method(ctx, "POST") {
			s.handleInsert(ctx, table)
		}
		return "insert", true
	case "query":
		if s.method(ctx, "GET", "POST") {
			s.handleQuery(ctx, table)
		}
		return "query", true
	case "metadata":
		if s.method(ctx, "GET") {
			s.handleTableMetadata(ctx, table)
		}
		return "table_metadata", true
	case "delete":
		if s.method(ctx, "POST") {
			s.handleDelete(ctx, table)
		}
		return "delete", true
	}
	if p, ok := strings.CutPrefix(action, "partitions/"); ok {
		return s.routePartition(ctx, table, p), true
	}
	return "", false
}

func (s *Server) method(ctx *fasthttp.RequestCtx, allowed ...string) bool {
	m := string(ctx.Method())
	for _, a := range allowed {
		if m == a {
			return true
		}
	}
	s.methodNotAllowed(ctx, strings.Join(allowed, ", "))
	return false
}

func (s *Server) methodNotAllowed(ctx *fasthttp.RequestCtx, allow string) {
	ctx.Response.Header.Set("Allow", allow)
	s.writeAPIError(ctx, 405, api.CodeMethodNotAllowed,
		fmt.Sprintf("method %s not allowed on %s (allowed: %s)", ctx.Method(), ctx.Path(), allow))
}

// writeError answers err with its status and the JSON error body.
func (s *Server) writeError(ctx *fasthttp.RequestCtx, err error) {
	status, code, msg := classify(err)
	if status >= 500 && !errors.Is(err, api.ErrQueueFull) {
		s.log.Error("request failed", "method", string(ctx.Method()), "path", string(ctx.Path()), "err", err)
	}
	s.writeAPIError(ctx, status, code, msg)
	var re *api.RetryError
	if errors.As(err, &re) {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(retryAfterSeconds(re.After)))
	}
}

// writeAPIError answers an error in the shape of the request's route
// (influxerr.go): tsdb's {"error":{"code","message"}}, or InfluxDB's on
// the InfluxDB-compatible routes, with code in the X-Tsdb-Error-Code
// header.
func (s *Server) writeAPIError(ctx *fasthttp.RequestCtx, status int, code, msg string) {
	switch errorShape(string(ctx.Path())) {
	case shapeInfluxV1:
		writeInfluxV1Error(ctx, status, msg)
		ctx.Response.Header.Set(headerTSDBErrorCode, code)
		return
	case shapeInfluxV2:
		writeInfluxV2Error(ctx, status, msg)
		ctx.Response.Header.Set(headerTSDBErrorCode, code)
		return
	}
	body, _ := json.Marshal(api.ErrorResponse{Error: api.ErrorBody{Code: code, Message: msg}})
	ctx.ResetBody()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

func (s *Server) writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.writeError(ctx, fmt.Errorf("encode answer: %w", err))
		return
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// requestContext bounds a backend call by the server's write timeout.
func (s *Server) requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.base, 55*time.Second)
}
