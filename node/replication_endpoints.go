package node

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/rpc"
	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/replication"
	"github.com/tsdb/tsdb/router"
)

// pushSender delivers a replica's pushes over the internal API.
type pushSender struct{ n *Node }

// Push sends one push; a "stale placement" answer matches
// replication.ErrStalePlacement.
func (s pushSender) Push(ctx context.Context, t metadata.Target, req api.PushRequest) error {
	addr, err := s.n.dir.addr(ctx, t.ServerID)
	if err != nil {
		return err
	}
	if s.n.cfg.blockPush != nil && s.n.cfg.blockPush(t) {
		return fmt.Errorf("push to %s blocked by the test", t.ServerID)
	}
	req.SentAt = s.n.now().UnixNano()
	err = s.n.rpc.Call(ctx, addr, api.PathReplicate, req, nil)
	if err != nil {
		s.n.rmetrics.pushErrors.Inc()
	} else {
		s.n.rmetrics.pushRows.Add(float64(req.Count))
		s.n.rmetrics.pushBytes.Add(float64(len(req.Rows)))
	}
	var se *rpc.StatusError
	if errors.As(err, &se) && se.Code == api.CodeStalePlacement {
		return fmt.Errorf("%w: %w", replication.ErrStalePlacement, err)
	}
	return err
}

// Replicate applies a push to the local replica it names, if this server
// holds that placement as LOAD or SERVE (rule 4); otherwise it answers
// "stale placement" and the sender re-runs discovery. A sender with a newer
// METADATA than this server's makes it catch up first (rule 8).
func (i internal) Replicate(ctx context.Context, req api.PushRequest) error {
	n := i.n
	n.clocks.observe(req.FromServer, req.SentAt, n.now())
	if n.store.Lost(req.ToPlacement) {
		// Never confirmed: the sender re-checks its view and backs off
		// until the master removed the placement (node/lost.go).
		return fmt.Errorf("%w: %w", tsdbhttp.ErrStalePlacement, n.errLost(req.ToPlacement))
	}
	st, ok := n.replicaStatus(req.ToPlacement)
	if !ok || st.TxnSeq < req.TxnSeq {
		if err := n.syncTable(ctx, req.Table); err != nil {
			return fmt.Errorf("%w: catching up with %q: %w", tsdbhttp.ErrUnavailable, req.Table, err)
		}
		st, ok = n.replicaStatus(req.ToPlacement)
	}
	rep, exists := n.store.Replica(req.ToPlacement)
	if !ok || !exists || st.Table != req.Table || st.Discovery.Status == metadata.StatusUnload || rep.Unloading() {
		return fmt.Errorf("%w: %s holds no LOAD or SERVE replica %s of %q", tsdbhttp.ErrStalePlacement, n.cfg.ID, req.ToPlacement, req.Table)
	}
	applier := &observingApplier{rep: rep, observe: func(v model.Version) { n.observeVersion(v, "a push from "+req.FromServer) }}
	received, err := replication.Receive(applier, req)
	if errors.Is(err, partition.ErrUnloading) || errors.Is(err, partition.ErrDropped) {
		return fmt.Errorf("%w: %w", tsdbhttp.ErrStalePlacement, err)
	}
	if err != nil {
		return err
	}
	n.rmetrics.recvRows.Add(float64(received))
	n.joins.Record(req.ToPlacement, req.FromServer, req.Complete)
	rt := n.runtime(req.ToPlacement)
	if rt != nil {
		rt.pusher.Notify() // the rows may be due to other targets
	}
	if applier.changed > 0 && req.TxnSeq < st.TxnSeq && st.Discovery.Status == metadata.StatusServe {
		return n.confirmSplitPush(ctx, rt, st, applier.last)
	}
	return nil
}

// confirmSplitPush holds the confirmation of a push from a sender that has
// not learned of a split this replica knows of, until each child's
// majority holds the rows the push wrote here (DESIGN.md section 6: a
// parent replica's push confirmations, like its acknowledgements, wait for
// the children). Otherwise the sender could acknowledge an insert on this
// replica's confirmation while the row is after this replica's mark and in
// no child yet, and a finalize could hide it. Rows the push did not change
// are not waited for (they were written here before, and are covered by
// this replica's mark or by their writer's own wait), nor are rows at or
// below the mark (the finalize waits for those).
func (n *Node) confirmSplitPush(ctx context.Context, rt *replicaRuntime, st ReplicaStatus, seq uint64) error {
	_, file, ok := n.router.Cached(st.Table)
	if !ok {
		return nil
	}
	p, ok := file.Partition(st.PartitionID)
	if !ok || p.Split == nil {
		return nil
	}
	if rt == nil {
		return fmt.Errorf("%w: replica %s has no replication running yet", tsdbhttp.ErrUnavailable, st.Placement)
	}
	wctx, cancel := context.WithTimeout(ctx, n.cfg.AckTimeout)
	defer cancel()
	for _, c := range p.Split.Children {
		if err := rt.pusher.WaitChildAfterMark(wctx, seq, c.ID, serverIDs(c.Servers), len(c.Servers)/2+1); err != nil {
			return fmt.Errorf("%w: holding a push from an older view until split child %s has the rows: %w", tsdbhttp.ErrUnavailable, c.ID, err)
		}
	}
	return nil
}

// observingApplier applies pushed rows to a replica after moving the
// hybrid logical clock past their versions (rule 2: versions this server
// assigns later order after what it has seen; a version beyond the max
// clock offset ahead is stored as it is, but the clock does not follow
// it). It remembers how many rows its applies changed and the last
// sequence they reached.
type observingApplier struct {
	rep     *partition.Replica
	observe func(model.Version)
	changed int
	last    uint64
}

// ApplyFrom applies rows pushed from the placement origin.
func (a *observingApplier) ApplyFrom(rows []model.Row, origin uuid.UUID) (partition.ApplyResult, error) {
	var newest model.Version
	for _, r := range rows {
		for _, f := range r.Fields {
			if newest.Less(f.Version) {
				newest = f.Version
			}
		}
	}
	a.observe(newest)
	res, err := a.rep.ApplyFrom(rows, origin)
	if err == nil {
		a.changed += res.Changed
		a.last = max(a.last, res.LastSeq)
	}
	return res, err
}

// ForwardInsert coordinates an insert a front end forwarded.
func (i internal) ForwardInsert(ctx context.Context, req api.ForwardInsertRequest) (api.ForwardInsertResponse, error) {
	n := i.n
	rows, err := replication.DecodeRows(req.Rows)
	if err != nil {
		return api.ForwardInsertResponse{}, fmt.Errorf("%w: rows: %w", tsdbhttp.ErrBadRequest, err)
	}
	for j := range rows {
		if err := rows[j].Validate(); err != nil {
			return api.ForwardInsertResponse{}, fmt.Errorf("%w: row %d: %w", tsdbhttp.ErrBadRequest, j, err)
		}
	}
	_, file, err := n.router.Table(ctx, req.Table)
	if err != nil {
		return api.ForwardInsertResponse{}, err
	}
	if file.TxnSeq < req.TxnSeq {
		if err := n.syncTable(ctx, req.Table); err != nil {
			return api.ForwardInsertResponse{}, fmt.Errorf("%w: %w", tsdbhttp.ErrUnavailable, err)
		}
		_, file, _ = n.router.Table(ctx, req.Table)
	}
	p, ok := file.Partition(req.PartitionID)
	if !ok || !slices.ContainsFunc(p.Servers, func(pl metadata.Placement) bool {
		return pl.ServerID == n.cfg.ID && pl.PlacementID == req.ToPlacement
	}) {
		return api.ForwardInsertResponse{}, fmt.Errorf("%w: partition %s is not served by %s placement %s under txnseq %d",
			tsdbhttp.ErrMoved, req.PartitionID, n.cfg.ID, req.ToPlacement, file.TxnSeq)
	}
	for _, r := range rows {
		if !p.Contains(r.Time) {
			return api.ForwardInsertResponse{}, fmt.Errorf("%w: row at %d is outside partition %s", tsdbhttp.ErrMoved, r.Time, p.ID)
		}
	}
	if err := n.coordinate(ctx, req.Table, file.TxnSeq, p, req.ToPlacement, rows, router.WriteOptions{Consistency: req.Consistency, Versioned: req.Versioned}); err != nil {
		return api.ForwardInsertResponse{}, err
	}
	return api.ForwardInsertResponse{Rows: len(rows)}, nil
}

// SubQuery answers one partition replica's part of a query.
func (i internal) SubQuery(ctx context.Context, req api.SubQueryRequest) (api.SubQueryResponse, error) {
	n := i.n
	_, file, err := n.router.Table(ctx, req.Table)
	if err != nil {
		return api.SubQueryResponse{}, err
	}
	p, ok := file.Partition(req.PartitionID)
	if !ok {
		return api.SubQueryResponse{}, fmt.Errorf("%w: partition %s is not in txnseq %d of %q", tsdbhttp.ErrMoved, req.PartitionID, file.TxnSeq, req.Table)
	}
	rep, err := n.readable(ctx, req.Table, req.TxnSeq, p, req.ToPlacement, req.Consistency)
	if err != nil {
		return api.SubQueryResponse{}, err
	}
	// The front end's limits, or this server's for a sender that sent none.
	maxBytes, maxBuckets := cmp.Or(req.MaxBytes, n.cfg.MaxSubQueryBytes), cmp.Or(req.MaxBuckets, n.cfg.MaxQueryBuckets)
	if req.Agg {
		aggs, err := rep.Aggregate(partition.AggQuery{
			From: req.From, To: req.To, Series: req.Series, Prefix: req.Prefix, Fields: req.Fields,
			Step: req.Step, Origin: req.Origin, GroupAll: req.GroupAll, MaxBuckets: maxBuckets,
		})
		if err != nil {
			return api.SubQueryResponse{}, err
		}
		enc := replication.AppendAggs(nil, aggs)
		if err := n.checkAnswerSize(p, len(enc), maxBytes); err != nil {
			return api.SubQueryResponse{}, err
		}
		return api.SubQueryResponse{Aggs: enc}, nil
	}
	scan := partition.ScanQuery{
		From: req.From, To: req.To, Series: req.Series, Prefix: req.Prefix, Fields: req.Fields, Limit: req.Limit,
	}
	if !n.ignoringSubQueryLimit() {
		// The scan stops as soon as the rows' values alone would make an
		// answer over the limit once base64-encoded.
		scan.MaxBytes = max(1, (maxBytes-subQueryFraming)/4*3)
	}
	rows, truncated, err := rep.Scan(scan)
	if errors.Is(err, partition.ErrAnswerTooLarge) {
		return api.SubQueryResponse{}, n.answerTooLarge(p,
			fmt.Sprintf("would be larger (the values of its rows alone are over %d bytes before base64)", scan.MaxBytes), maxBytes)
	}
	if err != nil {
		return api.SubQueryResponse{}, err
	}
	enc := replication.AppendRows(nil, rows)
	if err := n.checkAnswerSize(p, len(enc), maxBytes); err != nil {
		return api.SubQueryResponse{}, err
	}
	return api.SubQueryResponse{Rows: enc, Count: len(rows), Truncated: truncated}, nil
}

// subQueryFraming bounds the JSON around a sub-query answer's encoded
// rows or aggregates (field names, count, truncated).
const subQueryFraming = 128

// checkAnswerSize refuses a sub-query answer of encoded bytes (sent as
// base64 in JSON) that would be over the front end's limit maxBytes: the
// front end would stop reading it and fail the query anyway, so it is
// not sent. The row limit (raw) and the bucket cap (aggregates) bound
// what was built before this check.
func (n *Node) checkAnswerSize(p *metadata.Partition, encoded, maxBytes int) error {
	size := base64.StdEncoding.EncodedLen(encoded) + subQueryFraming
	if size <= maxBytes || n.ignoringSubQueryLimit() {
		return nil
	}
	return n.answerTooLarge(p, fmt.Sprintf("would be %d bytes", size), maxBytes)
}

// answerTooLarge is the refusal of a sub-query answer that would be over
// maxBytes (how is said by size): it names the limit and what to change.
func (n *Node) answerTooLarge(p *metadata.Partition, size string, maxBytes int) error {
	return fmt.Errorf("%w: the answer of partition %s on server %s %s, over the limit of %d bytes "+
		"(tsdb server --max-subquery-bytes); narrow the time range, the series or the fields, "+
		"or lower limit (raw rows) or use a bigger step (aggregates)",
		partition.ErrAnswerTooLarge, p.ID, n.cfg.ID, size, maxBytes)
}

// ignoringSubQueryLimit reports whether a test made this server send
// sub-query answers over the front end's limit.
func (n *Node) ignoringSubQueryLimit() bool {
	return n.cfg.ignoreSubQueryLimit != nil && n.cfg.ignoreSubQueryLimit.Load()
}

// Replicas lists the local replicas (of one table, or all) with their
// discovery status, size, sequences and replication state.
func (i internal) Replicas(ctx context.Context, req api.ReplicasRequest) (api.ReplicasResponse, error) {
	n := i.n
	resp := api.ReplicasResponse{Server: n.cfg.ID, Replicas: []api.ReplicaStatus{}}
	for _, rep := range n.store.Replicas() {
		info := rep.Info()
		if req.Table != "" && info.Table != req.Table {
			continue
		}
		st, _ := n.replicaStatus(info.Placement)
		rs := api.ReplicaStatus{
			Server: n.cfg.ID, Table: info.Table, PartitionID: info.PartitionID, Placement: info.Placement,
			Begin: info.Begin, End: info.End, Status: st.Discovery.Status, TxnSeq: st.TxnSeq,
			Rows: -1, HighSeq: rep.HighSeq(), SyncedSeq: rep.SyncedSeq(), Targets: []api.TargetStatus{},
		}
		if req.SizeScan > 0 && (info.End == nil || *info.End > req.SizeScanAfter) {
			if b, err := rep.Size(req.SizeScan); err == nil {
				rs.Bytes = b
			}
		} else if b, err := rep.DiskUsage(); err == nil {
			rs.Bytes = b
		}
		if req.Counts {
			if sum, err := rep.Checksum(); err == nil {
				rs.Rows, rs.Checksum = sum.Rows, sum.Sum
			}
		}
		if rt := n.runtime(info.Placement); rt != nil {
			rs.Targets = rt.pusher.Status()
		}
		resp.Replicas = append(resp.Replicas, rs)
	}
	return resp, nil
}

// replicasOn asks server (this one or another) for its local replicas.
func (n *Node) replicasOn(ctx context.Context, server string, req api.ReplicasRequest) (api.ReplicasResponse, error) {
	if server == n.cfg.ID {
		return internal{n}.Replicas(ctx, req)
	}
	var resp api.ReplicasResponse
	addr, err := n.dir.addr(ctx, server)
	if err == nil {
		err = n.rpc.Call(ctx, addr, api.PathReplicas, req, &resp)
	}
	return resp, err
}
