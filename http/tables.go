package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

func (s *Server) handleCreateTable(ctx *fasthttp.RequestCtx) {
	body, release, err := requestBody(ctx, s.cfg.MaxBodyBytes, s.zstd)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	defer release()
	var req api.CreateTableRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.writeError(ctx, fmt.Errorf("%w: table definition: %v", ErrBadRequest, err))
		return
	}
	if err := model.ValidateTableName(req.Name); err != nil {
		s.writeError(ctx, err)
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	cfg, err := s.backend.CreateTable(rctx, req)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.writeJSON(ctx, 201, cfg)
}

func (s *Server) handleListTables(ctx *fasthttp.RequestCtx) {
	rctx, cancel := s.requestContext()
	defer cancel()
	tables, err := s.backend.ListTables(rctx)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	resp := api.TablesResponse{Tables: tables}
	if resp.Tables == nil {
		resp.Tables = []api.TableConfig{}
	}
	s.writeJSON(ctx, 200, resp)
}

func (s *Server) handleGetTable(ctx *fasthttp.RequestCtx, table string) {
	if err := model.ValidateTableName(table); err != nil {
		s.writeError(ctx, err)
		return
	}
	replicas, err := wantReplicas(ctx.QueryArgs())
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	if replicas {
		s.handleTableReplicas(ctx, table)
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	cfg, file, err := s.backend.Table(rctx, table)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.writeJSON(ctx, 200, api.TableResponse{Config: cfg, Partitions: file.Partitions})
}

func (s *Server) handleCluster(ctx *fasthttp.RequestCtx) {
	rctx, cancel := s.requestContext()
	defer cancel()
	c, err := s.backend.Cluster(rctx)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.writeJSON(ctx, 200, c)
}

// handleTableMetadata answers GET /api/v1/tables/{t}/metadata[?txnid=X]:
// the current METADATA file, or the one of transaction X while a metadata
// server still keeps it.
func (s *Server) handleTableMetadata(ctx *fasthttp.RequestCtx, table string) {
	if err := model.ValidateTableName(table); err != nil {
		s.writeError(ctx, err)
		return
	}
	txnID := string(ctx.QueryArgs().Peek("txnid"))
	if txnID != "" && !metadata.ValidTxnID(txnID) {
		s.writeError(ctx, fmt.Errorf("%w: txnid: %q is not 40 lowercase hex characters", ErrBadRequest, txnID))
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	cfg, file, err := s.backend.Metadata(rctx, table, txnID)
	if txnID != "" && errors.Is(err, metadata.ErrFileNotFound) {
		msg := err.Error()
		if !strings.Contains(msg, txnID) {
			msg = fmt.Sprintf("txnid %s of table %q: %s", txnID, table, msg)
		}
		s.writeAPIError(ctx, http.StatusNotFound, api.CodeNotFound, msg)
		return
	}
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.writeJSON(ctx, http.StatusOK, api.MetadataResponse{Config: cfg, Metadata: file})
}

// handlePatchTable changes a table's retention (PATCH /api/v1/tables/{t}).
// A field other than retention is refused, named in the 400.
func (s *Server) handlePatchTable(ctx *fasthttp.RequestCtx, table string) {
	if err := model.ValidateTableName(table); err != nil {
		s.writeError(ctx, err)
		return
	}
	body, release, err := requestBody(ctx, s.cfg.MaxBodyBytes, s.zstd)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	defer release()
	var req api.PatchTableRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.writeError(ctx, fmt.Errorf("%w: table patch (only \"retention\" may change): %v", ErrBadRequest, err))
		return
	}
	if req.Retention == nil {
		s.writeError(ctx, fmt.Errorf("%w: table patch: \"retention\" is required (the only field that may change)", ErrBadRequest))
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	cfg, err := s.backend.PatchTable(rctx, table, req)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.writeJSON(ctx, 200, cfg)
}

// handleDropTable drops a table (DELETE /api/v1/tables/{t}[?force=true]).
func (s *Server) handleDropTable(ctx *fasthttp.RequestCtx, table string) {
	if err := model.ValidateTableName(table); err != nil {
		s.writeError(ctx, err)
		return
	}
	force := false
	if v := ctx.QueryArgs().Peek("force"); v != nil {
		switch string(v) {
		case "true", "1":
			force = true
		case "false", "0", "":
		default:
			s.writeError(ctx, fmt.Errorf("%w: force=%q: want true or false", ErrBadRequest, v))
			return
		}
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	if err := s.backend.DropTable(rctx, table, force); err != nil {
		s.writeError(ctx, err)
		return
	}
	ctx.SetStatusCode(204)
}
