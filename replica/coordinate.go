package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/replication"
	"github.com/tsdb/tsdb/router"
)

// The router's way to the partition replicas (router.Replicas): this
// server's own directly, the others over the internal API.

// Insert has the target replica coordinate rows.
func (s *Server) Insert(ctx context.Context, t router.Target, rows []model.Row, opts model.InsertOptions) error {
	if t.Server == s.cfg.Self {
		return localRouteError(s.coordinate(ctx, t.File.Table, t.File.TxnSeq, t.Partition, t.Placement, rows, opts))
	}
	addr, err := s.dir.Addr(ctx, t.Server)
	if err != nil {
		return fmt.Errorf("%w: %w", router.ErrUnavailable, err)
	}
	return s.forward(ctx, addr, t, rows, opts)
}

// maxForwardBytes bounds the encoded rows of one forwarded insert: a
// quarter of the body limit (which the cluster's servers share), well under
// it once JSON's base64 is added. A large client insert is forwarded in
// several parts.
func (s *Server) maxForwardBytes() int { return s.cfg.MaxBodyBytes / 4 }

// forward sends rows to the coordinating replica, in parts of at most
// maxForwardBytes. One attempt each: a refusal or a timeout fails over to
// another replica, and "outcome unknown" is the client's answer, not a
// reason to resend.
func (s *Server) forward(ctx context.Context, addr string, t router.Target, rows []model.Row, opts model.InsertOptions) error {
	enc := replication.AppendRows(nil, rows)
	if len(enc) > s.maxForwardBytes() && len(rows) > 1 {
		half := len(rows) / 2
		if err := s.forward(ctx, addr, t, rows[:half], opts); err != nil {
			return err
		}
		return s.forward(ctx, addr, t, rows[half:], opts)
	}
	req := wire.ForwardInsertRequest{
		Table: t.File.Table, PartitionID: t.Partition.ID, ToPlacement: t.Placement, TxnSeq: t.File.TxnSeq,
		InsertOptions: opts, Rows: enc, Count: len(rows),
	}
	var resp wire.ForwardInsertResponse
	return routeError(s.rpcOnce.Call(ctx, addr, wire.PathInsert, req, &resp))
}

// Scan reads the target replica.
func (s *Server) Scan(ctx context.Context, t router.Target, q model.Query) ([]model.Row, bool, error) {
	if t.Server == s.cfg.Self {
		rep, err := s.readable(ctx, t.File.Table, t.File.TxnSeq, t.Partition, t.Placement, q.Consistency)
		if err != nil {
			return nil, false, localRouteError(err)
		}
		return rep.Scan(q)
	}
	resp, err := s.subQuery(ctx, t, wire.SubQueryRequest{Query: q, MaxBytes: s.cfg.MaxSubQueryBytes})
	if err != nil {
		return nil, false, err
	}
	rows, err := replication.DecodeRows(resp.Rows)
	if err != nil {
		return nil, false, fmt.Errorf("%w: answer of %s: %w", router.ErrUnavailable, t.Server, err)
	}
	return rows, resp.Truncated, nil
}

// Aggregate computes partial aggregates on the target replica.
func (s *Server) Aggregate(ctx context.Context, t router.Target, q model.Query) ([]model.SeriesAgg, error) {
	if t.Server == s.cfg.Self {
		rep, err := s.readable(ctx, t.File.Table, t.File.TxnSeq, t.Partition, t.Placement, q.Consistency)
		if err != nil {
			return nil, localRouteError(err)
		}
		return rep.Aggregate(q)
	}
	resp, err := s.subQuery(ctx, t, wire.SubQueryRequest{Query: q, Agg: true, MaxBytes: s.cfg.MaxSubQueryBytes})
	if err != nil {
		return nil, err
	}
	aggs, err := replication.DecodeAggs(resp.Aggs)
	if err != nil {
		return nil, fmt.Errorf("%w: answer of %s: %w", router.ErrUnavailable, t.Server, err)
	}
	return aggs, nil
}

// DefaultMaxSubQueryBytes is the default bound of one partition's answer to
// a sub-query (Config.MaxSubQueryBytes), as the front end reads it.
const DefaultMaxSubQueryBytes = 256 << 20

// subQuery asks the target replica for its part of a query. An answer over
// MaxSubQueryBytes is not read past the limit and fails the query with
// partition.ErrAnswerTooLarge.
func (s *Server) subQuery(ctx context.Context, t router.Target, req wire.SubQueryRequest) (wire.SubQueryResponse, error) {
	addr, err := s.dir.Addr(ctx, t.Server)
	if err != nil {
		return wire.SubQueryResponse{}, fmt.Errorf("%w: %w", router.ErrUnavailable, err)
	}
	req.Table, req.PartitionID, req.ToPlacement, req.TxnSeq = t.File.Table, t.Partition.ID, t.Placement, t.File.TxnSeq
	var resp wire.SubQueryResponse
	err = s.rpcQuery.Call(ctx, addr, wire.PathQuery, req, &resp)
	if errors.Is(err, rpc.ErrResponseTooLarge) {
		// The client stopped reading at the limit. Every replica holds the
		// same rows: the query fails rather than try another.
		return resp, fmt.Errorf("%w: the answer of partition %s from server %s is over %d bytes "+
			"(tsdb server --max-subquery-bytes); narrow the time range, the series or the fields, "+
			"or lower limit (raw rows) or use a bigger step (aggregates): %v",
			partition.ErrAnswerTooLarge, t.Partition.ID, t.Server, s.cfg.MaxSubQueryBytes, err)
	}
	return resp, routeError(err)
}

// limitError is a replica's refusal of an answer over a query limit, as
// the front end passes it on: the replica's message (which names the
// limit and what to change) matching the partition package's sentinel.
type limitError struct {
	sentinel error
	msg      string
}

func (e *limitError) Error() string { return e.msg }
func (e *limitError) Unwrap() error { return e.sentinel }

// routeError sorts an internal call's failure for the router: "moved" and
// "stale placement" answers need new METADATA; an insert whose outcome is
// unknown is the client's answer (retrying elsewhere would not make it
// known); a refusal of the request itself is passed on; anything else
// (unreachable, timeout, 5xx) is worth trying on another replica.
func routeError(err error) error {
	if err == nil {
		return nil
	}
	var se *rpc.StatusError
	if errors.As(err, &se) {
		switch {
		case errors.Is(se, errcode.ErrMoved) || errors.Is(se, errcode.ErrStalePlacement):
			return fmt.Errorf("%w: %w", router.ErrMoved, err)
		case errors.Is(se, errcode.ErrInsertOutcomeUnknown):
			return fmt.Errorf("%w: %s", wire.ErrInsertOutcomeUnknown, se.Message)
		case errors.Is(se, errcode.ErrTooManyBuckets):
			return &limitError{partition.ErrTooManyBuckets, se.Message}
		case errors.Is(se, errcode.ErrAnswerTooLarge):
			return &limitError{partition.ErrAnswerTooLarge, se.Message}
		case se.Status >= 400 && se.Status < 500 && se.Status != 408 && se.Status != 429:
			return err
		}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %w", router.ErrUnavailable, err)
}

// localRouteError sorts a failure of this server's own replica for the
// router, as routeError does for a remote one: "moved" needs new METADATA,
// "unavailable" another replica.
func localRouteError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, wire.ErrMoved) && !errors.Is(err, router.ErrMoved):
		return fmt.Errorf("%w: %w", router.ErrMoved, err)
	case errors.Is(err, wire.ErrUnavailable) && !errors.Is(err, router.ErrUnavailable):
		return fmt.Errorf("%w: %w", router.ErrUnavailable, err)
	}
	return err
}

// serving returns the local replica of placement if it serves reads and
// writes (SERVE, not unloading) under a view at least as new as
// senderTxnSeq; otherwise the error matches wire.ErrMoved (the sender
// reloads METADATA), or wire.ErrUnavailable for a placement whose data
// this server lost (the sender goes to another replica, lost.go). A
// sender with a newer view than this server's makes it catch up first
// (rule 8).
func (s *Server) serving(table string, senderTxnSeq uint64, placement uuid.UUID) (*partition.Replica, error) {
	st, ok := s.StatusOf(placement)
	// Rule 8: a sender with a newer view makes this server catch up first,
	// whether it already knows the placement (an older answer) or not yet
	// (the table change that created it is still on its way here).
	if ok && st.TxnSeq < senderTxnSeq || !ok && s.SyncedSeq(table) < senderTxnSeq {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.SyncTimeout)
		err := s.syncTable(ctx, table)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%w: catching up to txnseq %d of %q: %w", wire.ErrUnavailable, senderTxnSeq, table, err)
		}
		st, ok = s.StatusOf(placement)
	}
	rep, exists := s.store.Replica(placement)
	switch {
	case !exists && s.store.Lost(placement):
		return nil, s.errLost(placement)
	case !exists:
		return nil, fmt.Errorf("%w: no replica %s here", wire.ErrMoved, placement)
	case rep.Unloading():
		return nil, fmt.Errorf("%w: replica %s is unloading", wire.ErrMoved, placement)
	case ok && st.Discovery.Status != metadata.StatusServe:
		return nil, fmt.Errorf("%w: replica %s is %s", wire.ErrMoved, placement, st.Discovery.Status)
	}
	return rep, nil
}

// SyncedSeq is the txnseq of the table's last METADATA this server installed.
func (s *Server) SyncedSeq(table string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.synced[table]
}

// StatusOf returns the last discovery answer of a local replica (false if
// it has none).
func (s *Server) StatusOf(placement uuid.UUID) (Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.mu.replicas[placement]
	return st, ok
}

// coordinate writes rows a client sent to the local replica of p (DESIGN.md
// section 5, insert acknowledgement): one fresh version for all of them, a
// synced write, a wake-up of the replica's pushes, then a wait until W of
// p's servers[] hold them (W from the table's replication factor, see
// planAcks), this replica included only while servers[] lists it.
func (s *Server) coordinate(ctx context.Context, table string, txnSeq uint64, p *metadata.Partition, placement uuid.UUID, rows []model.Row, opts model.InsertOptions) error {
	in, err := s.admitInsert(ctx, table, txnSeq, p, placement, opts.Consistency)
	if err != nil {
		return err
	}
	// One deadline for the wait before the write and the wait after it,
	// so that a forwarded insert's answer comes within the caller's RPC
	// timeout (AckTimeout and some).
	deadline := time.Now().Add(s.cfg.AckTimeout)
	if err := s.awaitQuota(ctx, placement, deadline); err != nil {
		return err
	}
	if opts.Versioned {
		// Stamped by the front end that first accepted them (a smeared
		// insert): kept, and this clock moves past them (at most the max
		// clock offset ahead of its wall clock).
		if err := s.observeVersions(rows, "a versioned insert of "+table); err != nil {
			return err
		}
	} else {
		v := s.clock.Now()
		for i := range rows {
			rows[i].SetVersion(v)
		}
	}
	res, err := in.rep.Apply(rows)
	if err == nil {
		s.metrics.CoordinatedRows.Add(float64(len(rows)))
		if len(rows) >= splitKickRows {
			s.kickSplitCheck()
		}
	}
	if errors.Is(err, partition.ErrUnloading) || errors.Is(err, partition.ErrDropped) {
		return fmt.Errorf("%w: %w", wire.ErrMoved, err)
	}
	if err != nil {
		return err
	}
	return s.awaitCopies(ctx, table, placement, in, rows, res.LastSeq, opts.Consistency, deadline)
}

// awaitQuota waits, before an insert is written, until the replica's
// slowest copy that keeps up is within the replication quota
// (replication.Pusher.WaitQuota), for at most half the time to deadline:
// the rest is for the copies of the insert itself. Past it the insert is
// refused with nothing written (503 unavailable, safe to retry).
func (s *Server) awaitQuota(ctx context.Context, placement uuid.UUID, deadline time.Time) error {
	if s.cfg.ReplicationQuota <= 0 {
		return nil
	}
	rt := s.runtime(placement)
	if rt == nil {
		return nil
	}
	qctx, cancel := context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/2))
	defer cancel()
	waited, err := rt.pusher.WaitQuota(qctx)
	if waited > 0 {
		s.metrics.QuotaWaitSeconds.Observe(waited.Seconds())
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		s.metrics.QuotaRefusals.Inc()
		return fmt.Errorf("%w: insert refused before it was written: %w", wire.ErrUnavailable, err)
	}
	return nil
}

// admittedInsert is what coordinate writes to and waits for: the local
// replica, the partition as this server's view has it, the table's
// replication factor and the acknowledgement plan.
type admittedInsert struct {
	rep  *partition.Replica
	p    *metadata.Partition
	rf   int
	acks ackPlan
}

// admitInsert checks, before anything is written, that the local replica
// of placement may coordinate an insert at consistency: it serves (rule
// 8), this server's clock is good (rule 2), and p lists enough servers for
// the copies the consistency needs.
func (s *Server) admitInsert(ctx context.Context, table string, txnSeq uint64, p *metadata.Partition, placement uuid.UUID, consistency string) (admittedInsert, error) {
	rep, err := s.serving(table, txnSeq, placement)
	if err != nil {
		return admittedInsert{}, err
	}
	// Acknowledge by this server's own view when it is the newer one (a
	// split the sender has not seen yet must still be waited for).
	cfg, file, err := s.router.Table(ctx, table)
	if err != nil {
		return admittedInsert{}, fmt.Errorf("table %q: %w", table, err)
	}
	if file.TxnSeq > txnSeq {
		if mine, ok := file.Partition(p.ID); ok {
			p = mine
		}
	}
	if err := s.CheckClock(); err != nil {
		// Another replica coordinates instead (the router fails over).
		return admittedInsert{}, fmt.Errorf("%w: %w: %w", router.ErrUnavailable, wire.ErrUnavailable, err)
	}
	if s.cfg.Knobs.RefuseCoordinate != nil && s.cfg.Knobs.RefuseCoordinate() {
		return admittedInsert{}, fmt.Errorf("%w: %w: coordination refused by the test", router.ErrUnavailable, wire.ErrUnavailable)
	}
	acks, err := planAcks(consistency, cfg.ReplicationFactor, p.Servers, s.cfg.Self, placement)
	if err != nil {
		return admittedInsert{}, err
	}
	if len(acks.others) < acks.fromOthers() {
		// Refused before anything is written: no outcome is in doubt.
		return admittedInsert{}, fmt.Errorf("%w: %w: consistency %q needs %d copies (replication factor %d) and partition %s lists only %d server(s) here",
			router.ErrUnavailable, wire.ErrUnavailable, consistency, acks.need, cfg.ReplicationFactor, p.ID, len(p.Servers))
	}
	return admittedInsert{rep: rep, p: p, rf: cfg.ReplicationFactor, acks: acks}, nil
}

// awaitCopies wakes the replica's pushes and waits until the copies the
// plan needs hold the rows written up to seq, and, in a splitting
// partition, the children's (waitChildren).
func (s *Server) awaitCopies(ctx context.Context, table string, placement uuid.UUID, in admittedInsert, rows []model.Row, seq uint64, consistency string, deadline time.Time) error {
	rt := s.runtime(placement)
	if rt == nil {
		// The replica was created a moment ago and discovery has not run
		// for it yet (the watch is on its way): run it now.
		if _, file, ok := s.router.Cached(table); ok {
			s.discoverLocal(file)
		}
		rt = s.runtime(placement)
	}
	if rt == nil {
		if in.acks.fromOthers() > 0 || in.p.Split != nil {
			return fmt.Errorf("%w: replica %s has no replication running", wire.ErrInsertOutcomeUnknown, placement)
		}
		return nil
	}
	rt.pusher.Notify()
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if k := in.acks.fromOthers(); k > 0 {
		if err := rt.pusher.WaitConfirmed(wctx, seq, in.acks.others, k); err != nil {
			return fmt.Errorf("%w: fewer than %d copies (replication factor %d, %d servers listed) confirmed within %v: %v", wire.ErrInsertOutcomeUnknown,
				in.acks.need, in.rf, len(in.p.Servers), s.cfg.AckTimeout, err)
		}
	}
	return s.waitChildren(wctx, rt, s.splitView(table, in.p), in.rf, rows, seq, consistency)
}

// splitView is the partition whose split an insert must wait for: p as
// the insert was admitted, or, when p was not splitting then, p as this
// server's newest METADATA has it. A coordinator that learns of a split
// while its insert waits sends its later pushes under the newer view, so
// its peers no longer hold their confirmations for the children
// (confirmSplitPush): the coordinator must wait for them itself. (A split
// that has already finalized by then is not waited for here: this
// server's pusher may no longer have the children as targets; see
// docs/split.md.)
func (s *Server) splitView(table string, p *metadata.Partition) *metadata.Partition {
	if p.Split != nil {
		return p
	}
	if _, file, ok := s.router.Cached(table); ok {
		if cur, ok := file.Partition(p.ID); ok && cur.Split != nil {
			return cur
		}
	}
	return p
}

// observeVersions checks that versioned rows carry their versions and moves
// the clock past the newest (within the max offset: observeVersion).
func (s *Server) observeVersions(rows []model.Row, from string) error {
	var newest model.Version
	for i := range rows {
		for _, f := range rows[i].Fields {
			if f.Version == (model.Version{}) {
				return fmt.Errorf("%w: row %d: field %q of a versioned insert has no version", wire.ErrBadRequest, i, f.Name)
			}
			if newest.Less(f.Version) {
				newest = f.Version
			}
		}
	}
	s.observeVersion(newest, from)
	return nil
}

// waitChildren makes an insert into a splitting partition also wait until
// a majority (or all, for consistency all) of the servers of every child
// covering its rows hold them (DESIGN.md section 6): with quorum
// intersection, every acknowledged row is then in the children when the
// split finalizes.
func (s *Server) waitChildren(ctx context.Context, rt *replicaRuntime, p *metadata.Partition, rf int, rows []model.Row, seq uint64, consistency string) error {
	if p.Split == nil || consistency == api.ConsistencyOne {
		return nil
	}
	for _, c := range p.Split.Children {
		child := metadata.Partition{Begin: c.Begin, End: c.End}
		if !slices.ContainsFunc(rows, func(r model.Row) bool { return child.Contains(r.Time) }) {
			continue
		}
		need, err := ackCount(consistency, rf, len(c.Servers))
		if err != nil {
			return err
		}
		if err := rt.pusher.WaitConfirmedChild(ctx, seq, c.ID, serverIDs(c.Servers), need); err != nil {
			return fmt.Errorf("%w: fewer than %d of split child %s's %d servers confirmed within %v: %v",
				wire.ErrInsertOutcomeUnknown, need, c.ID, len(c.Servers), s.cfg.AckTimeout, err)
		}
	}
	return nil
}

// serverIDs lists the servers of placements, in order.
func serverIDs(pls []metadata.Placement) []string {
	ids := make([]string, len(pls))
	for i, pl := range pls {
		ids[i] = pl.ServerID
	}
	return ids
}
