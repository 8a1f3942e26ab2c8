package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/http/ingest"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// wantReplicas reads the replicas parameter of GET /api/v1/tables/{t}.
func wantReplicas(args *fasthttp.Args) (bool, error) {
	if !args.Has("replicas") {
		return false, nil
	}
	switch v := string(args.Peek("replicas")); v {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	default:
		return false, fmt.Errorf("%w: replicas: %q (want 1, true, 0 or false)", ErrBadRequest, v)
	}
}

// handleTableReplicas answers GET /api/v1/tables/{t}?replicas=1. The
// config comes from the table lookup (which also answers 404 for an unknown
// table), the partitions from the backend's replica survey.
func (s *Server) handleTableReplicas(ctx *fasthttp.RequestCtx, table string) {
	rctx, cancel := s.requestContext()
	defer cancel()
	cfg, _, err := s.backend.Table(rctx, table)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	parts, err := s.backend.Replicas(rctx, table)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	resp := api.TableReplicasResponse{Config: cfg, Partitions: parts}
	if resp.Partitions == nil {
		resp.Partitions = []api.PartitionReplicas{}
	}
	s.writeJSON(ctx, http.StatusOK, resp)
}

// routePartition serves /api/v1/tables/{t}/partitions/{p}/{verb} and
// returns the route's name for metrics.
func (s *Server) routePartition(ctx *fasthttp.RequestCtx, table, rest string) string {
	id, verb, _ := strings.Cut(rest, "/")
	switch verb {
	case "join", "leave", "split", "offline", "online":
	default:
		s.writeAPIError(ctx, http.StatusNotFound, api.CodeNotFound,
			fmt.Sprintf("no such endpoint: %s %s (want …/partitions/{id}/join, …/leave, …/split, …/offline or …/online)", ctx.Method(), ctx.Path()))
		return "not_found"
	}
	route := "partition_" + verb
	if !s.method(ctx, "POST") {
		return route
	}
	if err := model.ValidateTableName(table); err != nil {
		s.writeError(ctx, err)
		return route
	}
	pid, err := parsePartitionID(id)
	if err != nil {
		s.writeError(ctx, err)
		return route
	}
	switch verb {
	case "split":
		s.handleSplit(ctx, table, pid)
	case "offline", "online":
		s.handleSetOffline(ctx, table, pid, verb == "offline")
	default:
		s.handleServerChange(ctx, table, pid, verb == "join")
	}
	return route
}

// handleSplit starts a split of a partition (tsdb admin split): at the
// body's "at", or at a point the server chooses near the middle of the
// partition's data by bytes. It answers once SPLIT_BEGIN is committed.
func (s *Server) handleSplit(ctx *fasthttp.RequestCtx, table string, pid uuid.UUID) {
	at, err := s.decodeSplit(ctx)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	f, err := s.backend.SplitPartition(rctx, table, pid, at)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	p, ok := f.Partition(pid)
	if !ok || p.Split == nil || len(p.Split.Points) != 1 {
		s.writeError(ctx, fmt.Errorf("BUG: the split of partition %s committed without a split in the METADATA", pid))
		return
	}
	resp := api.SplitResponse{TxnID: f.TxnID, TxnSeq: f.TxnSeq, At: p.Split.Points[0]}
	for _, c := range p.Split.Children {
		resp.Children = append(resp.Children, c.ID)
	}
	s.writeJSON(ctx, http.StatusOK, resp)
}

// decodeSplit reads the optional body of a split: empty, or {"at": TIME}.
func (s *Server) decodeSplit(ctx *fasthttp.RequestCtx) (*int64, error) {
	body, release, err := requestBody(ctx, s.cfg.MaxBodyBytes, s.zstd)
	if err != nil {
		return nil, err
	}
	defer release()
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	var req api.SplitRequest
	if err := decodeObject(body, &req, `nothing, or {"at": TIME} with TIME in RFC 3339 or integer nanoseconds`); err != nil {
		return nil, err
	}
	if req.At == "" {
		return nil, nil
	}
	at, err := ingest.ParseTime(req.At)
	if err != nil {
		return nil, fmt.Errorf("%w: at: %v", ErrBadRequest, err)
	}
	return &at, nil
}

// handleServerChange commits JOIN_SERVER (FORCE_JOIN with "force") or
// REMOVE_SERVER for the server named in the body, and answers the new
// transaction's txnid and txnseq.
func (s *Server) handleServerChange(ctx *fasthttp.RequestCtx, table string, pid uuid.UUID, join bool) {
	req, err := s.decodeServerChange(ctx, join)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	var f *metadata.File
	if join {
		f, err = s.backend.JoinServer(rctx, table, pid, req)
	} else {
		f, err = s.backend.RemoveServer(rctx, table, pid, req)
	}
	if err == nil && f == nil {
		err = fmt.Errorf("BUG: the server change of partition %s succeeded without a METADATA file", pid)
	}
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.writeJSON(ctx, http.StatusOK, api.ChangeResponse{TxnID: f.TxnID, TxnSeq: f.TxnSeq})
}

// parsePartitionID reads the {p} of a partition path: a full uuid.
func parsePartitionID(id string) (uuid.UUID, error) {
	pid, err := uuid.Parse(id)
	if err != nil {
		return uuid.Nil, fmt.Errorf("%w: partition id %q is not a uuid", ErrBadRequest, id)
	}
	if pid == uuid.Nil {
		return uuid.Nil, fmt.Errorf("%w: partition id %s is the nil uuid", ErrBadRequest, id)
	}
	return pid, nil
}

// decodeServerChange reads and checks the body of a join or leave.
func (s *Server) decodeServerChange(ctx *fasthttp.RequestCtx, join bool) (api.ServerChangeRequest, error) {
	var req api.ServerChangeRequest
	body, release, err := requestBody(ctx, s.cfg.MaxBodyBytes, s.zstd)
	if err != nil {
		return req, err
	}
	defer release()
	if err := decodeObject(body, &req, `{"server": "ID"`+forceHint(join)+`}`); err != nil {
		return req, err
	}
	p := []error{checkServerID("server", req.Server)}
	if req.Force && !join {
		p = append(p, badRequest("force: only a join can be forced"))
	}
	return req, joinProblems(p...)
}

// decodeObject decodes body, one JSON object with known fields only, into
// v; an error (ErrBadRequest) names the problem and want, the expected body.
func decodeObject(body []byte, v any, want string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: request body: %v (want %s)", ErrBadRequest, err, want)
	}
	if err := dec.Decode(new(json.RawMessage)); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: request body: data after the JSON object", ErrBadRequest)
	}
	return nil
}

func forceHint(join bool) string {
	if join {
		return `, "force"?: bool`
	}
	return ""
}
