package http

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/http/api"
)

// The operator's endpoints (http/api/admin.go): offline and online, drain,
// rebalance and the health report behind tsdb admin stale.

// handleSetOffline commits SET_OFFLINE of a partition and answers the
// transaction.
func (s *Server) handleSetOffline(ctx *fasthttp.RequestCtx, table string, pid uuid.UUID, offline bool) {
	rctx, cancel := s.requestContext()
	defer cancel()
	f, err := s.backend.SetOffline(rctx, table, pid, offline)
	if err == nil && f == nil {
		err = fmt.Errorf("BUG: SET_OFFLINE of partition %s succeeded without a METADATA file", pid)
	}
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.writeJSON(ctx, http.StatusOK, api.ChangeResponse{TxnID: f.TxnID, TxnSeq: f.TxnSeq})
}

// handleDrain marks a server draining (POST) or clears the mark (DELETE).
func (s *Server) handleDrain(ctx *fasthttp.RequestCtx, id string, on bool) {
	if id == "" || strings.ContainsAny(id, "/ ") {
		s.writeError(ctx, fmt.Errorf("%w: server id %q: want …/servers/{id}/drain", ErrBadRequest, id))
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	resp, err := s.backend.Drain(rctx, id, on)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.writeJSON(ctx, http.StatusOK, resp)
}

// handleRebalance records a rebalance request; the master acts on it.
func (s *Server) handleRebalance(ctx *fasthttp.RequestCtx) {
	rctx, cancel := s.requestContext()
	defer cancel()
	resp, err := s.backend.Rebalance(rctx)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.writeJSON(ctx, http.StatusAccepted, resp)
}

// handleHealth answers the health report.
func (s *Server) handleHealth(ctx *fasthttp.RequestCtx) {
	rctx, cancel := s.requestContext()
	defer cancel()
	resp, err := s.backend.Health(rctx)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.writeJSON(ctx, http.StatusOK, resp)
}
