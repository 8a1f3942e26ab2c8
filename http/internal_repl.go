package http

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/model"
)

// The internal endpoints of replication and forwarding (DESIGN.md sections 5
// and 10). Like the metadata endpoints they check every field before the
// backend runs; a request naming a partition must carry the partition id,
// the receiving placement and the sender's txnseq (DESIGN.md rule 8).

func (s *Server) handleInternalReplicate(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusOK, checkPush,
		func(c context.Context, req wire.PushRequest) (any, error) {
			resp, err := s.cfg.Internal.Replicate(c, req)
			if err != nil || len(resp.Shares) == 0 && len(resp.Unheld) == 0 {
				return nil, err // an empty body: the zero PushResponse
			}
			return resp, nil
		})
}

func (s *Server) handleInternalInsert(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusOK, checkForwardInsert, s.cfg.Internal.ForwardInsert)
}

func (s *Server) handleInternalQuery(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusOK, checkSubQuery, s.cfg.Internal.SubQuery)
}

func (s *Server) handleInternalMeta(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusOK, checkMetaQuery, s.cfg.Internal.MetaQuery)
}

func (s *Server) handleInternalReplicas(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusOK, checkReplicas, s.cfg.Internal.Replicas)
}

func (s *Server) handleInternalCatchUp(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusNoContent, checkCatchUp,
		func(c context.Context, req wire.CatchUpRequest) (any, error) {
			return nil, s.cfg.Internal.CatchUp(c, req)
		})
}

func (s *Server) handleInternalSplitPoint(ctx *fasthttp.RequestCtx) {
	serveInternal(s, ctx, http.StatusOK, checkSplitPoint, s.cfg.Internal.SplitPoint)
}

func checkSplitPoint(r *wire.SplitPointRequest) error {
	return joinProblems(checkTable(r.Table), checkReplicaRef(r.PartitionID, r.Placement, r.TxnSeq))
}

func checkCatchUp(r *wire.CatchUpRequest) error {
	p := []error{checkTable(r.Table), checkReplicaRef(r.PartitionID, r.ToPlacement, r.TxnSeq),
		checkServerID("to_server", r.ToServer), checkUUID("from_placement", r.FromPlacement)}
	if r.FromPlacement != uuid.Nil && r.FromPlacement == r.ToPlacement {
		p = append(p, badRequest("to_placement: equals from_placement"))
	}
	return joinProblems(p...)
}

func checkPush(r *wire.PushRequest) error {
	p := []error{checkTable(r.Table), checkReplicaRef(r.PartitionID, r.ToPlacement, r.TxnSeq),
		checkServerID("from_server", r.FromServer), checkUUID("from_placement", r.FromPlacement)}
	if r.FromPlacement != uuid.Nil && r.FromPlacement == r.ToPlacement {
		p = append(p, badRequest("to_placement: equals from_placement (a replica never pushes to itself)"))
	}
	p = append(p, checkRows(r.Rows, r.Count))
	if r.Count > 0 && r.LastSeq == 0 {
		p = append(p, badRequest("last_seq: required with rows (sequences start at 1)"))
	}
	for i, h := range r.Held {
		switch {
		case h.Origin == uuid.Nil:
			p = append(p, badRequest("held[%d].origin: required", i))
		case h.Origin == r.ToPlacement || h.Origin == r.FromPlacement:
			p = append(p, badRequest("held[%d].origin: %s is the push's own sender or receiver", i, h.Origin))
		case h.Seq == 0:
			p = append(p, badRequest("held[%d].seq: required (sequences start at 1)", i))
		case h.Rows <= 0:
			p = append(p, badRequest("held[%d].rows: %d (want at least 1)", i, h.Rows))
		}
	}
	if len(r.Held) > 0 && r.LastSeq == 0 {
		p = append(p, badRequest("last_seq: required with held (sequences start at 1)"))
	}
	return joinProblems(p...)
}

func checkForwardInsert(r *wire.ForwardInsertRequest) error {
	p := []error{checkTable(r.Table), checkReplicaRef(r.PartitionID, r.ToPlacement, r.TxnSeq), checkRows(r.Rows, r.Count)}
	switch r.Consistency {
	case "", api.ConsistencyOne, api.ConsistencyQuorum, api.ConsistencyAll:
	default:
		p = append(p, badRequest("consistency: %q (want %s, %s or %s; empty means %s)", r.Consistency,
			api.ConsistencyOne, api.ConsistencyQuorum, api.ConsistencyAll, api.ConsistencyQuorum))
	}
	return joinProblems(p...)
}

func checkSubQuery(r *wire.SubQueryRequest) error {
	p := []error{checkTable(r.Table), checkReplicaRef(r.PartitionID, r.ToPlacement, r.TxnSeq)}
	if r.From > r.To {
		p = append(p, badRequest("to: %d is before from (%d)", r.To, r.From))
	}
	if r.Limit < 0 {
		p = append(p, badRequest("limit: %d is negative (0 means none)", r.Limit))
	}
	switch {
	case r.Step < 0:
		p = append(p, badRequest("step: %d is negative", r.Step))
	case r.Step > 0 && !r.Agg:
		p = append(p, badRequest("step: set without agg"))
	}
	if r.GroupAll && len(r.GroupBy) > 0 {
		p = append(p, badRequest("group_all and group_by: both set"))
	}
	p = append(p, checkSelection(&r.Query), checkReadConsistency(r.Consistency))
	return joinProblems(p...)
}

// checkSelection checks a sub-query's tag predicate.
func checkSelection(q *model.Query) error {
	if _, err := q.Matcher(); err != nil {
		return badRequest("tags: %v", err)
	}
	return nil
}

// checkReadConsistency checks a sub-query's read consistency.
func checkReadConsistency(c string) error {
	switch c {
	case "", api.ConsistencyOne, api.ConsistencyQuorum, api.ConsistencyAll:
		return nil
	}
	return badRequest("consistency: %q (want %s, %s or %s)", c,
		api.ConsistencyOne, api.ConsistencyQuorum, api.ConsistencyAll)
}

func checkMetaQuery(r *wire.MetaQueryRequest) error {
	p := []error{checkTable(r.Table), checkReplicaRef(r.PartitionID, r.ToPlacement, r.TxnSeq),
		checkSelection(&r.Query), checkReadConsistency(r.Query.Consistency)}
	switch r.Kind {
	case wire.MetaSeriesKeys, wire.MetaFieldKeys:
	default:
		p = append(p, badRequest("kind: %q (want %s or %s)", r.Kind, wire.MetaSeriesKeys, wire.MetaFieldKeys))
	}
	if r.Limit < 0 {
		p = append(p, badRequest("limit: %d is negative (0 means none)", r.Limit))
	}
	return joinProblems(p...)
}

func checkReplicas(r *wire.ReplicasRequest) error {
	if r.Table == "" {
		return nil // every table
	}
	return checkTable(r.Table)
}

// checkReplicaRef checks the fields that name the receiving replica.
func checkReplicaRef(partition, placement uuid.UUID, txnSeq uint64) error {
	p := []error{checkUUID("partition_id", partition), checkUUID("to_placement", placement)}
	if txnSeq == 0 {
		p = append(p, badRequest("txnseq: required (the sender's METADATA txnseq)"))
	}
	return joinProblems(p...)
}

// checkRows checks an encoded row batch against its count.
func checkRows(rows []byte, count int) error {
	switch {
	case count < 0:
		return badRequest("count: %d is negative", count)
	case count > 0 && len(rows) == 0:
		return badRequest("rows: required when count is %d", count)
	}
	return nil
}

func checkUUID(field string, id uuid.UUID) error {
	if id == uuid.Nil {
		return badRequest("%s: required", field)
	}
	return nil
}

// checkServerID checks a field naming a server by the membership rules.
func checkServerID(field, id string) error {
	if id == "" {
		return badRequest("%s: required", field)
	}
	if err := membership.ValidateID(id); err != nil {
		return badRequest("%s: %v", field, err)
	}
	return nil
}
