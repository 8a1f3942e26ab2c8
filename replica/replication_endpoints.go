package replica

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/replication"
)

// pushSender delivers a replica's pushes over the internal API.
type pushSender struct{ s *Server }

// Push sends one push; a "stale placement" answer matches
// replication.ErrStalePlacement.
func (p pushSender) Push(ctx context.Context, t metadata.Target, req wire.PushRequest) (wire.PushResponse, error) {
	addr, err := p.s.dir.Addr(ctx, t.ServerID)
	if err != nil {
		return wire.PushResponse{}, err
	}
	if p.s.cfg.Knobs.BlockPush != nil && p.s.cfg.Knobs.BlockPush(t) {
		return wire.PushResponse{}, fmt.Errorf("push to %s blocked by the test", t.ServerID)
	}
	req.SentAt = p.s.now().UnixNano()
	var resp wire.PushResponse
	err = p.s.rpc.Call(ctx, addr, wire.PathReplicate, req, &resp)
	p.s.metrics.countPush(t.Kind, req, err)
	return resp, errcode.Translate(err, replication.ErrStalePlacement)
}

// Replicate applies a push to the local replica it names (replicate) and
// answers with the local replicas that share that replica's rows and cover
// its range (partition.Replica.CoveringSharers), and those dropped since
// whose rows in its range stayed (departed.go): the sender may count the
// target as holding what it confirmed to one of them.
func (s *Server) Replicate(ctx context.Context, req wire.PushRequest) (wire.PushResponse, error) {
	rep, unheld, err := s.replicate(ctx, req)
	if err != nil {
		return wire.PushResponse{}, err
	}
	shares := append(rep.CoveringSharers(), s.departed.aliases(rep.Info().Placement)...)
	return wire.PushResponse{Shares: shares, Unheld: unheld}, nil
}

// replicate applies a push to the local replica it names, if this server
// holds that placement as LOAD or SERVE (rule 4); otherwise it answers
// "stale placement" and the sender re-runs discovery. A sender with a newer
// METADATA than this server's makes it catch up first (rule 8).
func (s *Server) replicate(ctx context.Context, req wire.PushRequest) (*partition.Replica, []wire.OriginLevel, error) {
	s.clocks.Observe(req.FromServer, req.SentAt, s.now())
	if s.store.Lost(req.ToPlacement) {
		// Never confirmed: the sender re-checks its view and backs off
		// until the master removed the placement (lost.go).
		return nil, nil, fmt.Errorf("%w: %w", wire.ErrStalePlacement, s.errLost(req.ToPlacement))
	}
	st, ok := s.StatusOf(req.ToPlacement)
	if !ok || st.TxnSeq < req.TxnSeq {
		if err := s.syncTable(ctx, req.Table); err != nil {
			return nil, nil, fmt.Errorf("%w: catching up with %q: %w", wire.ErrUnavailable, req.Table, err)
		}
		st, ok = s.StatusOf(req.ToPlacement)
	}
	rep, exists := s.store.Replica(req.ToPlacement)
	if !ok || !exists || st.Table != req.Table || st.Discovery.Status == metadata.StatusUnload || rep.Unloading() {
		return nil, nil, fmt.Errorf("%w: %s holds no LOAD or SERVE replica %s of %q", wire.ErrStalePlacement, s.cfg.Self, req.ToPlacement, req.Table)
	}
	applier := &observingApplier{rep: rep, observe: func(v model.Version) { s.observeVersion(v, "a push from "+req.FromServer) }}
	got, err := replication.ReceiveWith(applier, req, &s.applied)
	received := got.Rows
	if errors.Is(err, partition.ErrUnloading) || errors.Is(err, partition.ErrDropped) {
		return nil, nil, fmt.Errorf("%w: %w", wire.ErrStalePlacement, err)
	}
	if errors.Is(err, replication.ErrCorrupt) {
		return nil, nil, fmt.Errorf("%w: %w", errcode.ErrBadRequest, err) // 400: the body, not this server
	}
	if err != nil {
		return nil, nil, err
	}
	s.metrics.ReceivedRows.Add(float64(received))
	s.metrics.RelayRowsDropped.Add(float64(got.Dropped))
	s.metrics.RelayClaimsUnheld.Add(float64(len(got.Unheld)))
	s.joins.Record(req.ToPlacement, req.FromServer, req.Complete)
	rt := s.runtime(req.ToPlacement)
	if rt != nil {
		rt.pusher.Notify() // the rows may be due to other targets
	}
	if received > 0 && req.TxnSeq < st.TxnSeq && st.Discovery.Status == metadata.StatusServe {
		seq := applier.last
		if applier.changed < received {
			// Some rows were here already, possibly relayed by another
			// parent replica from the same older-view coordinator (whose
			// own confirmation that replica holds): their sequences here
			// are unknown, so wait for everything this replica holds.
			seq = max(seq, rep.HighSeq())
		}
		return rep, got.Unheld, s.confirmSplitPush(ctx, rt, st, seq)
	}
	return rep, got.Unheld, nil
}

// confirmSplitPush holds the confirmation of a push from a sender that has
// not learned of a split this replica knows of, until each child's
// majority holds the rows the push wrote here (DESIGN.md section 6: a
// parent replica's push confirmations, like its acknowledgements, wait for
// the children). Otherwise the sender could acknowledge an insert on this
// replica's confirmation while the row is after this replica's mark and in
// no child yet, and a finalize could hide it. Rows at or below the mark are
// not waited for (the finalize waits for those). A push whose rows were all
// new here waits for the sequences it wrote; one with rows already here
// waits for everything this replica holds: another parent replica may have
// relayed them from the same unaware coordinator, and nobody else would
// hold that coordinator's acknowledgement.
func (s *Server) confirmSplitPush(ctx context.Context, rt *replicaRuntime, st Status, seq uint64) error {
	_, file, ok := s.router.Cached(st.Table)
	if !ok {
		return nil
	}
	p, ok := file.Partition(st.PartitionID)
	if !ok || p.Split == nil {
		return nil
	}
	if rt == nil {
		return fmt.Errorf("%w: replica %s has no replication running yet", wire.ErrUnavailable, st.Placement)
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.AckTimeout)
	defer cancel()
	for _, c := range p.Split.Children {
		if err := rt.pusher.WaitChildAfterMark(wctx, seq, c.ID, serverIDs(c.Servers), len(c.Servers)/2+1); err != nil {
			return fmt.Errorf("%w: holding a push from an older view until split child %s has the rows: %w", wire.ErrUnavailable, c.ID, err)
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

// ApplyPush applies rows pushed from the placement p.Origin.
func (a *observingApplier) ApplyPush(rows []model.Row, p partition.Push) (partition.ApplyResult, error) {
	var newest model.Version
	for _, r := range rows {
		for _, f := range r.Fields {
			if newest.Less(f.Version) {
				newest = f.Version
			}
		}
	}
	a.observe(newest)
	res, err := a.rep.ApplyPush(rows, p)
	if err == nil {
		a.changed += res.Changed
		a.last = max(a.last, res.LastSeq)
	}
	return res, err
}

// IngestChunk stores a row snapshot's chunk pushed here, moving the clock
// past its versions first, like ApplyPush.
func (a *observingApplier) IngestChunk(chunk []byte, count int, from partition.Push) (partition.ApplyResult, error) {
	res, err := a.rep.IngestChunkObserved(chunk, count, from, a.observe)
	if err == nil {
		a.changed += res.Changed
		a.last = max(a.last, res.LastSeq)
	}
	return res, err
}

// ForwardInsert coordinates an insert a front end forwarded.
func (s *Server) ForwardInsert(ctx context.Context, req wire.ForwardInsertRequest) (wire.ForwardInsertResponse, error) {
	rows, err := replication.DecodeRows(req.Rows)
	if err != nil {
		return wire.ForwardInsertResponse{}, fmt.Errorf("%w: rows: %w", wire.ErrBadRequest, err)
	}
	for j := range rows {
		if err := rows[j].ValidateInternal(); err != nil {
			return wire.ForwardInsertResponse{}, fmt.Errorf("%w: row %d: %w", wire.ErrBadRequest, j, err)
		}
	}
	_, file, err := s.router.Table(ctx, req.Table)
	if err != nil {
		return wire.ForwardInsertResponse{}, err
	}
	if file.TxnSeq < req.TxnSeq {
		if err := s.syncTable(ctx, req.Table); err != nil {
			return wire.ForwardInsertResponse{}, fmt.Errorf("%w: %w", wire.ErrUnavailable, err)
		}
		_, file, _ = s.router.Table(ctx, req.Table)
	}
	p, ok := file.Partition(req.PartitionID)
	if !ok || !slices.ContainsFunc(p.Servers, func(pl metadata.Placement) bool {
		return pl.ServerID == s.cfg.Self && pl.PlacementID == req.ToPlacement
	}) {
		return wire.ForwardInsertResponse{}, fmt.Errorf("%w: partition %s is not served by %s placement %s under txnseq %d",
			wire.ErrMoved, req.PartitionID, s.cfg.Self, req.ToPlacement, file.TxnSeq)
	}
	for _, r := range rows {
		if !p.Contains(r.Time) {
			return wire.ForwardInsertResponse{}, fmt.Errorf("%w: row at %d is outside partition %s", wire.ErrMoved, r.Time, p.ID)
		}
	}
	if err := s.coordinate(ctx, req.Table, file.TxnSeq, p, req.ToPlacement, rows, req.InsertOptions); err != nil {
		return wire.ForwardInsertResponse{}, err
	}
	return wire.ForwardInsertResponse{Rows: len(rows)}, nil
}

// tableAtLeast returns this server's METADATA of table, caught up first
// when the sender's txnseq is newer (DESIGN.md section 12, rule 8): a
// partition a newer split made is then found, not answered as moved from
// the older view (which sent the front end back and forth until its
// retries ran out).
func (s *Server) tableAtLeast(ctx context.Context, table string, txnSeq uint64) (*metadata.File, error) {
	_, file, err := s.router.Table(ctx, table)
	if err != nil {
		return nil, err
	}
	if file.TxnSeq < txnSeq {
		if err := s.syncTable(ctx, table); err != nil {
			return nil, fmt.Errorf("%w: %w", wire.ErrUnavailable, err)
		}
		_, file, err = s.router.Table(ctx, table)
	}
	return file, err
}

// SubQuery answers one partition replica's part of a query.
func (s *Server) SubQuery(ctx context.Context, req wire.SubQueryRequest) (wire.SubQueryResponse, error) {
	file, err := s.tableAtLeast(ctx, req.Table, req.TxnSeq)
	if err != nil {
		return wire.SubQueryResponse{}, err
	}
	p, ok := file.Partition(req.PartitionID)
	if !ok {
		return wire.SubQueryResponse{}, fmt.Errorf("%w: partition %s is not in txnseq %d of %q", wire.ErrMoved, req.PartitionID, file.TxnSeq, req.Table)
	}
	rep, err := s.readable(ctx, req.Table, req.TxnSeq, p, req.ToPlacement, req.Consistency)
	if err != nil {
		return wire.SubQueryResponse{}, err
	}
	// The front end's limits, or this server's for a sender that sent none.
	maxBytes, q := cmp.Or(req.MaxBytes, s.cfg.MaxSubQueryBytes), req.Query
	q.MaxBuckets = cmp.Or(q.MaxBuckets, s.cfg.MaxQueryBuckets)
	q.MaxBytes = 0 // not sent; derived from maxBytes below
	if req.Agg {
		aggs, err := rep.Aggregate(q)
		if err != nil {
			return wire.SubQueryResponse{}, err
		}
		enc := replication.AppendAggs(nil, aggs)
		if err := s.checkAnswerSize(p, len(enc), maxBytes); err != nil {
			return wire.SubQueryResponse{}, err
		}
		return wire.SubQueryResponse{Aggs: enc}, nil
	}
	if !s.ignoringSubQueryLimit() {
		// The scan stops as soon as the rows' values alone would make an
		// answer over the limit once base64-encoded.
		q.MaxBytes = max(1, (maxBytes-subQueryFraming)/4*3)
	}
	// The rows are encoded and dropped here: an arena lends them.
	arena := model.GetRowArena()
	defer arena.Release()
	q.Arena = arena
	rows, truncated, err := rep.Scan(q)
	if errors.Is(err, partition.ErrAnswerTooLarge) {
		return wire.SubQueryResponse{}, s.answerTooLarge(p,
			fmt.Sprintf("would be larger (the values of its rows alone are over %d bytes before base64)", q.MaxBytes), maxBytes)
	}
	if err != nil {
		return wire.SubQueryResponse{}, err
	}
	enc := replication.AppendRows(nil, rows)
	if err := s.checkAnswerSize(p, len(enc), maxBytes); err != nil {
		return wire.SubQueryResponse{}, err
	}
	return wire.SubQueryResponse{Rows: enc, Count: len(rows), Truncated: truncated}, nil
}

// subQueryFraming bounds the JSON around a sub-query answer's encoded
// rows or aggregates (field names, count, truncated).
const subQueryFraming = 128

// checkAnswerSize refuses a sub-query answer of encoded bytes (sent as
// base64 in JSON) that would be over the front end's limit maxBytes: the
// front end would stop reading it and fail the query anyway, so it is
// not sent. The row limit (raw) and the bucket cap (aggregates) bound
// what was built before this check.
func (s *Server) checkAnswerSize(p *metadata.Partition, encoded, maxBytes int) error {
	size := base64.StdEncoding.EncodedLen(encoded) + subQueryFraming
	if size <= maxBytes || s.ignoringSubQueryLimit() {
		return nil
	}
	return s.answerTooLarge(p, fmt.Sprintf("would be %d bytes", size), maxBytes)
}

// answerTooLarge is the refusal of a sub-query answer that would be over
// maxBytes (how is said by size): it names the limit and what to change.
func (s *Server) answerTooLarge(p *metadata.Partition, size string, maxBytes int) error {
	return fmt.Errorf("%w: the answer of partition %s on server %s %s, over the limit of %d bytes "+
		"(tsdb server --max-subquery-bytes); narrow the time range, the series or the fields, "+
		"or lower limit (raw rows) or use a bigger step (aggregates)",
		partition.ErrAnswerTooLarge, p.ID, s.cfg.Self, size, maxBytes)
}

// ignoringSubQueryLimit reports whether a test made this server send
// sub-query answers over the front end's limit.
func (s *Server) ignoringSubQueryLimit() bool {
	return s.cfg.Knobs.IgnoreSubQueryLimit != nil && s.cfg.Knobs.IgnoreSubQueryLimit.Load()
}

// Replicas lists the local replicas (of one table, or all) with their
// discovery status, size, sequences and replication state.
func (s *Server) Replicas(ctx context.Context, req wire.ReplicasRequest) (wire.ReplicasResponse, error) {
	resp := wire.ReplicasResponse{Server: s.cfg.Self, Replicas: []wire.ReplicaStatus{}}
	for _, rep := range s.store.Replicas() {
		if err := ctx.Err(); err != nil {
			return wire.ReplicasResponse{}, err // shutting down, or past the request's deadline
		}
		info := rep.Info()
		if req.Table != "" && info.Table != req.Table || req.Placement != uuid.Nil && info.Placement != req.Placement {
			continue
		}
		st, _ := s.StatusOf(info.Placement)
		rs := wire.ReplicaStatus{
			Server: s.cfg.Self, Table: info.Table, PartitionID: info.PartitionID, Placement: info.Placement,
			Begin: info.Begin, End: info.End, Status: string(st.Discovery.Status), TxnSeq: st.TxnSeq,
			Rows: -1, HighSeq: rep.HighSeq(), SyncedSeq: rep.SyncedSeq(), Targets: []wire.TargetStatus{},
		}
		switch {
		case req.NoBytes:
		case req.SizeScanned(info.End):
			if b, err := rep.Size(req.SizeScan); err == nil {
				rs.Bytes = b
			}
		default:
			if b, err := rep.DiskUsage(); err == nil {
				rs.Bytes = b
			}
		}
		if req.Counts {
			if sum, err := rep.Checksum(); err == nil {
				rs.Rows, rs.Checksum = sum.Rows, sum.Sum
			}
		}
		rs.LogStart = rep.LogStart()
		if rs.HighSeq > rs.LogStart {
			rs.LogLength = rs.HighSeq - rs.LogStart
		}
		if rt := s.runtime(info.Placement); rt != nil {
			rs.Targets = rt.pusher.Status()
			rs.Snapshots, rs.Moved = pusherStats(rt.pusher.Stats())
		}
		resp.Replicas = append(resp.Replicas, rs)
	}
	return resp, nil
}

// pusherStats converts a Pusher's Stats to the replica state's snapshot
// counts and moved data by kind.
func pusherStats(st replication.Stats) (api.SnapshotCounts, map[string]api.Moved) {
	sc := api.SnapshotCounts{Active: st.SnapshotsActive, Done: st.SnapshotsDone, Failed: st.SnapshotsFailed, Dropped: st.SnapshotsDropped}
	if len(st.Moved) == 0 {
		return sc, nil
	}
	moved := make(map[string]api.Moved, len(st.Moved))
	for k, m := range st.Moved {
		moved[string(k)] = api.Moved{Rows: m.Rows, Bytes: m.Bytes}
	}
	return sc, moved
}

// ReplicasOn asks server (this one or another) for its local replicas.
func (s *Server) ReplicasOn(ctx context.Context, server string, req wire.ReplicasRequest) (wire.ReplicasResponse, error) {
	if server == s.cfg.Self {
		return s.Replicas(ctx, req)
	}
	var resp wire.ReplicasResponse
	addr, err := s.dir.Addr(ctx, server)
	if err == nil {
		err = s.rpc.Call(ctx, addr, wire.PathReplicas, req, &resp)
	}
	return resp, err
}
