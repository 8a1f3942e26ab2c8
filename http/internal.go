package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// Internal is what the internal API (/internal/…, DESIGN.md section 10)
// needs from the rest of the server. Errors are classified like the public
// API's, plus the metadata package's sentinels (conflict, invalid op, not a
// metadata server, stale, no quorum, outcome unknown) and this package's
// replication ones (cluster/wire's ErrStalePlacement, ErrMoved,
// ErrInsertOutcomeUnknown).
type Internal interface {
	// FetchMetadata returns an encoded METADATA file this server holds.
	FetchMetadata(ctx context.Context, req wire.FetchMetadataRequest) (wire.FetchMetadataResponse, error)
	// StoreMetadata stores a proposed file durably.
	StoreMetadata(ctx context.Context, req wire.StoreMetadataRequest) error
	// ChangeMetadata coordinates one METADATA change.
	ChangeMetadata(ctx context.Context, req wire.ChangeMetadataRequest) (wire.ChangeMetadataResponse, error)
	// JoinMetadata makes this server a metadata server of a table.
	JoinMetadata(ctx context.Context, req wire.JoinMetadataRequest) (wire.JoinMetadataResponse, error)
	// Discover runs partition discovery for another server's replicas.
	Discover(ctx context.Context, req wire.DiscoveryRequest) (wire.DiscoveryResponse, error)
	// Replicate applies a push from another replica (answered once
	// synced: 204, or 200 with the PushResponse when it names sharers).
	Replicate(ctx context.Context, req wire.PushRequest) (wire.PushResponse, error)
	// ForwardInsert coordinates an insert a front end forwarded.
	ForwardInsert(ctx context.Context, req wire.ForwardInsertRequest) (wire.ForwardInsertResponse, error)
	// SubQuery answers one partition replica's part of a query.
	SubQuery(ctx context.Context, req wire.SubQueryRequest) (wire.SubQueryResponse, error)
	// MetaQuery answers one partition replica's part of a metadata query
	// (its series keys or field keys).
	MetaQuery(ctx context.Context, req wire.MetaQueryRequest) (wire.MetaQueryResponse, error)
	// Replicas lists this server's local replicas and their replication state.
	Replicas(ctx context.Context, req wire.ReplicasRequest) (wire.ReplicasResponse, error)
	// CatchUp pushes a peer replica everything the local one holds now and
	// returns once the peer confirmed it.
	CatchUp(ctx context.Context, req wire.CatchUpRequest) error
	// SplitPoint answers the split point of a local replica's data
	// (partition.ErrCannotSplit when its rows are all at one time).
	SplitPoint(ctx context.Context, req wire.SplitPointRequest) (wire.SplitPointResponse, error)
}

// internalRoute is one endpoint of the internal API: its metrics route name
// and its handler.
type internalRoute struct {
	name  string
	serve func(s *Server, ctx *fasthttp.RequestCtx)
}

// internalRoutes are the endpoints under /internal/, by path.
var internalRoutes = map[string]internalRoute{
	wire.PathMetadataFetch:  {"internal_metadata_fetch", (*Server).handleInternalFetch},
	wire.PathMetadataStore:  {"internal_metadata_store", (*Server).handleInternalStore},
	wire.PathMetadataChange: {"internal_metadata_change", (*Server).handleInternalChange},
	wire.PathMetadataJoin:   {"internal_metadata_join", (*Server).handleInternalJoin},
	wire.PathDiscovery:      {"internal_discovery", (*Server).handleInternalDiscovery},
	wire.PathReplicate:      {"internal_replicate", (*Server).handleInternalReplicate},
	wire.PathInsert:         {"internal_insert", (*Server).handleInternalInsert},
	wire.PathQuery:          {"internal_query", (*Server).handleInternalQuery},
	wire.PathMeta:           {"internal_meta", (*Server).handleInternalMeta},
	wire.PathReplicas:       {"internal_replicas", (*Server).handleInternalReplicas},
	wire.PathCatchUp:        {"internal_catchup", (*Server).handleInternalCatchUp},
	wire.PathSplitPoint:     {"internal_splitpoint", (*Server).handleInternalSplitPoint},
}

// routeInternal serves a path under /internal/ and returns the route's name
// for metrics. The public bearer token plays no part here: the cluster
// secret, when configured, is the only credential. With a bearer token and
// no secret the internal API refuses everything (401) rather than be open.
func (s *Server) routeInternal(ctx *fasthttp.RequestCtx, path string) string {
	if s.cfg.Internal == nil {
		rpc.WriteError(ctx, http.StatusNotFound, api.CodeNotFound, "this server does not serve the internal API")
		return "internal_not_found"
	}
	if s.cfg.ClusterSecret == "" && s.cfg.AuthToken != "" {
		// Fail closed: the public API is protected, so an open internal
		// API would be a way around it (node refuses to start like this).
		s.metrics.internalUnauthorized.Inc()
		rpc.WriteError(ctx, http.StatusUnauthorized, api.CodeUnauthorized,
			"the internal API is closed: this server requires a bearer token on its public API and has no cluster secret")
		return "internal_unauthorized"
	}
	if !rpc.Authorized(ctx, s.cfg.ClusterSecret) {
		s.metrics.internalUnauthorized.Inc()
		rpc.WriteError(ctx, http.StatusUnauthorized, api.CodeUnauthorized,
			"missing or invalid cluster secret (header "+rpc.SecretHeader+")")
		return "internal_unauthorized"
	}
	if pc := s.cfg.Clock; pc != nil {
		pc.Receive(ctx.Request.Header.Peek(rpc.ClockHeader))
		// Stamped once the answer is ready: the time the handler took is
		// not mistaken for an offset by the caller.
		defer func() { ctx.Response.Header.Set(rpc.ClockHeader, pc.Stamp()) }()
	}
	r, ok := internalRoutes[path]
	if !ok {
		rpc.WriteError(ctx, http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("no such endpoint: %s %s", ctx.Method(), path))
		return "internal_not_found"
	}
	if s.method(ctx, "POST") {
		r.serve(s, ctx)
	}
	return r.name
}

// serveInternal decodes a request with rpc.DecodeRequest under the server's
// body limit, checks it, calls the backend and answers with status and its
// result (a nil result answers 204 with an empty body).
func serveInternal[Req, Resp any](s *Server, ctx *fasthttp.RequestCtx, status int,
	check func(*Req) error, call func(context.Context, Req) (Resp, error)) {
	var req Req
	if rpc.DecodeRequest(ctx, s.cfg.MaxBodyBytes, &req) != nil {
		return // already answered
	}
	if err := check(&req); err != nil {
		s.writeInternalError(ctx, err)
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	resp, err := call(rctx, req)
	if err != nil {
		s.writeInternalError(ctx, err)
		return
	}
	if any(resp) == nil {
		status = http.StatusNoContent // nothing to say
	}
	rpc.WriteResponse(ctx, status, resp)
}

// writeInternalError answers an internal request with err's status and the
// JSON error body, uncompressed.
func (s *Server) writeInternalError(ctx *fasthttp.RequestCtx, err error) {
	status, code, msg := classify(err)
	if status >= 500 {
		s.log.Error("internal request failed", "path", string(ctx.Path()), "err", err)
	}
	rpc.WriteError(ctx, status, code, msg)
}

func (s *Server) handleInternalFetch(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusOK, checkFetch,
		func(c context.Context, req wire.FetchMetadataRequest) (wire.FetchMetadataResponse, error) {
			resp, err := s.cfg.Internal.FetchMetadata(c, req)
			if errors.Is(err, metadata.ErrFileNotFound) {
				// Here it means "I do not hold it": the caller asks
				// another metadata server instead of retrying this one.
				return resp, &apiError{http.StatusNotFound, api.CodeNotFound, err.Error()}
			}
			return resp, err
		})
}

func (s *Server) handleInternalStore(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusNoContent, checkStore,
		func(c context.Context, req wire.StoreMetadataRequest) (any, error) {
			return nil, s.cfg.Internal.StoreMetadata(c, req)
		})
}

func (s *Server) handleInternalChange(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusOK, checkChange, s.cfg.Internal.ChangeMetadata)
}

func (s *Server) handleInternalJoin(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusOK, checkJoin, s.cfg.Internal.JoinMetadata)
}

func (s *Server) handleInternalDiscovery(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusOK, checkDiscovery, s.cfg.Internal.Discover)
}

func checkFetch(r *wire.FetchMetadataRequest) error {
	return joinProblems(checkTable(r.Table), checkTxnID("txnid", r.TxnID, false))
}

func checkStore(r *wire.StoreMetadataRequest) error {
	p := []error{checkTable(r.Table), checkTxnID("txnid", r.TxnID, true)}
	if len(r.Encoded) == 0 {
		p = append(p, badRequest("encoded: required"))
	}
	return joinProblems(p...)
}

func checkChange(r *wire.ChangeMetadataRequest) error {
	p := []error{checkTable(r.Table), checkTxnID("base_txnid", r.BaseTxnID, true),
		checkTxnID("new_txnid", r.NewTxnID, true)}
	if r.BaseTxnID != "" && r.BaseTxnID == r.NewTxnID {
		p = append(p, badRequest("new_txnid: equals base_txnid"))
	}
	if r.Op.Type == "" {
		p = append(p, badRequest("op.type: required"))
	}
	return joinProblems(p...)
}

func checkJoin(r *wire.JoinMetadataRequest) error {
	return checkTable(r.Table)
}

func checkDiscovery(r *wire.DiscoveryRequest) error {
	p := []error{checkTable(r.Table)}
	if r.Server == "" {
		p = append(p, badRequest("server: required"))
	}
	for i, ref := range r.Replicas {
		if ref.PartitionID == uuid.Nil {
			p = append(p, badRequest("replicas[%d].partition_id: required", i))
		}
		if ref.PlacementID == uuid.Nil {
			p = append(p, badRequest("replicas[%d].placement_id: required", i))
		}
	}
	return joinProblems(p...)
}

// checkTable checks the table field of an internal request.
func checkTable(table string) error {
	if table == "" {
		return badRequest("table: required")
	}
	if err := model.ValidateTableName(table); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	return nil
}

// checkTxnID checks a txnid field: 40 lowercase hex characters, or empty
// when the field is optional.
func checkTxnID(field, id string, required bool) error {
	switch {
	case id == "" && required:
		return badRequest("%s: required", field)
	case id != "" && !metadata.ValidTxnID(id):
		return badRequest("%s: %q is not 40 lowercase hex characters", field, id)
	}
	return nil
}

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, args...)...)
}

// joinProblems returns nil, the one non-nil error, or an error listing all
// of them on one line (errors.Join's newlines read badly in an HTTP error
// message) that errors.Is matches against each.
func joinProblems(errs ...error) error {
	var p problems
	for _, err := range errs {
		if err != nil {
			p = append(p, err)
		}
	}
	switch len(p) {
	case 0:
		return nil
	case 1:
		return p[0]
	}
	return p
}

// problems is several validation errors reported together.
type problems []error

func (p problems) Error() string {
	msgs := make([]string, len(p))
	for i, err := range p {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (p problems) Unwrap() []error { return p }
