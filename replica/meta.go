package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/router"
)

// The metadata sub-queries (series keys, field keys): the router's way to a
// partition replica's answer (router.Replicas), this server's own replica
// directly, another's over /internal/meta, and the handler of that
// endpoint. The replica is chosen, caught up (Query.Consistency) and
// refused as moved exactly as for a raw or aggregate sub-query.

// SeriesKeys lists the keys of the target replica's series matching q.
func (s *Server) SeriesKeys(ctx context.Context, t router.Target, q model.Query, limit int) ([]string, error) {
	if t.Server == s.cfg.Self {
		rep, err := s.readable(ctx, t.File.Table, t.File.TxnSeq, t.Partition, t.Placement, q.Consistency)
		if err != nil {
			return nil, localRouteError(err)
		}
		return rep.SeriesKeys(q, limit)
	}
	resp, err := s.metaQuery(ctx, t, wire.MetaQueryRequest{Kind: wire.MetaSeriesKeys, Query: q, Limit: max(limit, 0)})
	return resp.SeriesKeys, err
}

// FieldKeys lists the field keys of the target replica's rows of
// q.Measurement ("" = all).
func (s *Server) FieldKeys(ctx context.Context, t router.Target, q model.Query) ([]model.FieldKey, error) {
	if t.Server == s.cfg.Self {
		rep, err := s.readable(ctx, t.File.Table, t.File.TxnSeq, t.Partition, t.Placement, q.Consistency)
		if err != nil {
			return nil, localRouteError(err)
		}
		return rep.FieldKeys(q.Measurement)
	}
	// Only what the replica reads is sent.
	req := wire.MetaQueryRequest{Kind: wire.MetaFieldKeys,
		Query: model.Query{From: q.From, To: q.To, Measurement: q.Measurement, Consistency: q.Consistency}}
	resp, err := s.metaQuery(ctx, t, req)
	return resp.FieldKeys, err
}

// metaQuery asks the target replica for its part of a metadata query. The
// answer is bounded as a sub-query's is (MaxSubQueryBytes).
func (s *Server) metaQuery(ctx context.Context, t router.Target, req wire.MetaQueryRequest) (wire.MetaQueryResponse, error) {
	addr, err := s.dir.Addr(ctx, t.Server)
	if err != nil {
		return wire.MetaQueryResponse{}, fmt.Errorf("%w: %w", router.ErrUnavailable, err)
	}
	req.Table, req.PartitionID, req.ToPlacement, req.TxnSeq = t.File.Table, t.Partition.ID, t.Placement, t.File.TxnSeq
	var resp wire.MetaQueryResponse
	err = s.rpcQuery.Call(ctx, addr, wire.PathMeta, req, &resp)
	if errors.Is(err, rpc.ErrResponseTooLarge) {
		// Every replica holds the same series: the query fails rather
		// than try another.
		return wire.MetaQueryResponse{}, fmt.Errorf("%w: the %s of partition %s from server %s are over %d bytes "+
			"(tsdb server --max-subquery-bytes); narrow the measurement or the tag predicate, or set a limit: %v",
			partition.ErrAnswerTooLarge, req.Kind, t.Partition.ID, t.Server, s.cfg.MaxSubQueryBytes, err)
	}
	if err != nil {
		return wire.MetaQueryResponse{}, routeError(err)
	}
	return resp, nil
}

// MetaQuery answers one partition replica's part of a metadata query
// (/internal/meta).
func (s *Server) MetaQuery(ctx context.Context, req wire.MetaQueryRequest) (wire.MetaQueryResponse, error) {
	file, err := s.tableAtLeast(ctx, req.Table, req.TxnSeq)
	if err != nil {
		return wire.MetaQueryResponse{}, err
	}
	p, ok := file.Partition(req.PartitionID)
	if !ok {
		return wire.MetaQueryResponse{}, fmt.Errorf("%w: partition %s is not in txnseq %d of %q", wire.ErrMoved, req.PartitionID, file.TxnSeq, req.Table)
	}
	rep, err := s.readable(ctx, req.Table, req.TxnSeq, p, req.ToPlacement, req.Query.Consistency)
	if err != nil {
		return wire.MetaQueryResponse{}, err
	}
	switch req.Kind {
	case wire.MetaSeriesKeys:
		keys, err := rep.SeriesKeys(req.Query, req.Limit)
		if err != nil {
			return wire.MetaQueryResponse{}, err
		}
		return wire.MetaQueryResponse{SeriesKeys: keys}, nil
	case wire.MetaFieldKeys:
		keys, err := rep.FieldKeys(req.Query.Measurement)
		if err != nil {
			return wire.MetaQueryResponse{}, err
		}
		return wire.MetaQueryResponse{FieldKeys: keys}, nil
	}
	return wire.MetaQueryResponse{}, fmt.Errorf("%w: kind: %q (want %s or %s)", wire.ErrBadRequest, req.Kind, wire.MetaSeriesKeys, wire.MetaFieldKeys)
}
