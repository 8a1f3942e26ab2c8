package node

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/replication"
	"github.com/tsdb/tsdb/router"
)

// replicas is the router's way to the partition replicas: this server's
// own directly, the others over the internal API.
type replicas struct{ n *Node }

var _ router.Replicas = replicas{}

// Insert has the target replica coordinate rows.
func (r replicas) Insert(ctx context.Context, t router.Target, rows []model.Row, opts router.WriteOptions) error {
	if t.Server == r.n.cfg.ID {
		return localRouteError(r.n.coordinate(ctx, t.File.Table, t.File.TxnSeq, t.Partition, t.Placement, rows, opts))
	}
	addr, err := r.n.dir.addr(ctx, t.Server)
	if err != nil {
		return fmt.Errorf("%w: %w", router.ErrUnavailable, err)
	}
	return r.forward(ctx, addr, t, rows, opts)
}

// maxForwardBytes bounds the encoded rows of one forwarded insert: a
// quarter of the body limit (which the cluster's servers share), well under
// it once JSON's base64 is added. A large client insert is forwarded in
// several parts.
func (n *Node) maxForwardBytes() int { return n.cfg.MaxBodyBytes / 4 }

// forward sends rows to the coordinating replica, in parts of at most
// maxForwardBytes. One attempt each: a refusal or a timeout fails over to
// another replica, and "outcome unknown" is the client's answer, not a
// reason to resend.
func (r replicas) forward(ctx context.Context, addr string, t router.Target, rows []model.Row, opts router.WriteOptions) error {
	enc := replication.AppendRows(nil, rows)
	if len(enc) > r.n.maxForwardBytes() && len(rows) > 1 {
		half := len(rows) / 2
		if err := r.forward(ctx, addr, t, rows[:half], opts); err != nil {
			return err
		}
		return r.forward(ctx, addr, t, rows[half:], opts)
	}
	req := wire.ForwardInsertRequest{
		Table: t.File.Table, PartitionID: t.Partition.ID, ToPlacement: t.Placement, TxnSeq: t.File.TxnSeq,
		Consistency: opts.Consistency, Versioned: opts.Versioned, Rows: enc, Count: len(rows),
	}
	var resp wire.ForwardInsertResponse
	return routeError(r.n.rpcOnce.Call(ctx, addr, wire.PathInsert, req, &resp))
}

// Scan reads the target replica.
func (r replicas) Scan(ctx context.Context, t router.Target, q partition.ScanQuery, consistency string) ([]model.Row, bool, error) {
	if t.Server == r.n.cfg.ID {
		rep, err := r.n.readable(ctx, t.File.Table, t.File.TxnSeq, t.Partition, t.Placement, consistency)
		if err != nil {
			return nil, false, localRouteError(err)
		}
		return rep.Scan(q)
	}
	resp, err := r.subQuery(ctx, t, wire.SubQueryRequest{
		From: q.From, To: q.To, Series: q.Series, Prefix: q.Prefix, Fields: q.Fields, Limit: q.Limit,
		Consistency: consistency, MaxBytes: r.n.cfg.MaxSubQueryBytes,
	})
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
func (r replicas) Aggregate(ctx context.Context, t router.Target, q partition.AggQuery, consistency string) ([]model.SeriesAgg, error) {
	if t.Server == r.n.cfg.ID {
		rep, err := r.n.readable(ctx, t.File.Table, t.File.TxnSeq, t.Partition, t.Placement, consistency)
		if err != nil {
			return nil, localRouteError(err)
		}
		return rep.Aggregate(q)
	}
	resp, err := r.subQuery(ctx, t, wire.SubQueryRequest{
		From: q.From, To: q.To, Series: q.Series, Prefix: q.Prefix, Fields: q.Fields,
		Agg: true, Step: q.Step, Origin: q.Origin, GroupAll: q.GroupAll, Consistency: consistency,
		MaxBuckets: q.MaxBuckets, MaxBytes: r.n.cfg.MaxSubQueryBytes,
	})
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
func (r replicas) subQuery(ctx context.Context, t router.Target, req wire.SubQueryRequest) (wire.SubQueryResponse, error) {
	addr, err := r.n.dir.addr(ctx, t.Server)
	if err != nil {
		return wire.SubQueryResponse{}, fmt.Errorf("%w: %w", router.ErrUnavailable, err)
	}
	req.Table, req.PartitionID, req.ToPlacement, req.TxnSeq = t.File.Table, t.Partition.ID, t.Placement, t.File.TxnSeq
	var resp wire.SubQueryResponse
	err = r.n.rpcQuery.Call(ctx, addr, wire.PathQuery, req, &resp)
	if errors.Is(err, rpc.ErrResponseTooLarge) {
		// The client stopped reading at the limit. Every replica holds the
		// same rows: the query fails rather than try another.
		return resp, fmt.Errorf("%w: the answer of partition %s from server %s is over %d bytes "+
			"(tsdb server --max-subquery-bytes); narrow the time range, the series or the fields, "+
			"or lower limit (raw rows) or use a bigger step (aggregates): %v",
			partition.ErrAnswerTooLarge, t.Partition.ID, t.Server, r.n.cfg.MaxSubQueryBytes, err)
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
		case se.Code == api.CodeMoved || se.Code == api.CodeStalePlacement:
			return fmt.Errorf("%w: %w", router.ErrMoved, err)
		case se.Code == api.CodeOutcomeUnknownRows:
			return fmt.Errorf("%w: %s", tsdbhttp.ErrInsertOutcomeUnknown, se.Message)
		case se.Code == api.CodeTooManyBuckets:
			return &limitError{partition.ErrTooManyBuckets, se.Message}
		case se.Code == api.CodeAnswerTooLarge:
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
	case errors.Is(err, tsdbhttp.ErrMoved) && !errors.Is(err, router.ErrMoved):
		return fmt.Errorf("%w: %w", router.ErrMoved, err)
	case errors.Is(err, tsdbhttp.ErrUnavailable) && !errors.Is(err, router.ErrUnavailable):
		return fmt.Errorf("%w: %w", router.ErrUnavailable, err)
	}
	return err
}

// serving returns the local replica of placement if it serves reads and
// writes (SERVE, not unloading) under a view at least as new as
// senderTxnSeq; otherwise the error matches tsdbhttp.ErrMoved (the sender
// reloads METADATA), or tsdbhttp.ErrUnavailable for a placement whose data
// this server lost (the sender goes to another replica, node/lost.go). A
// sender with a newer view than this server's makes it catch up first
// (rule 8).
func (n *Node) serving(table string, senderTxnSeq uint64, placement uuid.UUID) (*partition.Replica, error) {
	st, ok := n.replicaStatus(placement)
	// Rule 8: a sender with a newer view makes this server catch up first,
	// whether it already knows the placement (an older answer) or not yet
	// (the table change that created it is still on its way here).
	if ok && st.TxnSeq < senderTxnSeq || !ok && n.syncedSeq(table) < senderTxnSeq {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.SyncTimeout)
		err := n.syncTable(ctx, table)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%w: catching up to txnseq %d of %q: %w", tsdbhttp.ErrUnavailable, senderTxnSeq, table, err)
		}
		st, ok = n.replicaStatus(placement)
	}
	rep, exists := n.store.Replica(placement)
	switch {
	case !exists && n.store.Lost(placement):
		return nil, n.errLost(placement)
	case !exists:
		return nil, fmt.Errorf("%w: no replica %s here", tsdbhttp.ErrMoved, placement)
	case rep.Unloading():
		return nil, fmt.Errorf("%w: replica %s is unloading", tsdbhttp.ErrMoved, placement)
	case ok && st.Discovery.Status != metadata.StatusServe:
		return nil, fmt.Errorf("%w: replica %s is %s", tsdbhttp.ErrMoved, placement, st.Discovery.Status)
	}
	return rep, nil
}

// syncedSeq is the txnseq of the table's last METADATA this server installed.
func (n *Node) syncedSeq(table string) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.synced[table]
}

// replicaStatus returns the last discovery answer of a local replica.
func (n *Node) replicaStatus(placement uuid.UUID) (ReplicaStatus, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st, ok := n.mu.replicas[placement]
	return st, ok
}

// coordinate writes rows a client sent to the local replica of p (DESIGN.md
// section 5, insert acknowledgement): one fresh version for all of them, a
// synced write, a wake-up of the replica's pushes, then a wait until W of
// p's servers[] hold them (W from the table's replication factor, see
// planAcks), this replica included only while servers[] lists it.
func (n *Node) coordinate(ctx context.Context, table string, txnSeq uint64, p *metadata.Partition, placement uuid.UUID, rows []model.Row, opts router.WriteOptions) error {
	consistency := opts.Consistency
	rep, err := n.serving(table, txnSeq, placement)
	if err != nil {
		return err
	}
	// Acknowledge by this server's own view when it is the newer one (a
	// split the sender has not seen yet must still be waited for).
	cfg, file, err := n.router.Table(ctx, table)
	if err != nil {
		return fmt.Errorf("table %q: %w", table, err)
	}
	if file.TxnSeq > txnSeq {
		if mine, ok := file.Partition(p.ID); ok {
			p = mine
		}
	}
	if err := n.checkClock(); err != nil {
		// Another replica coordinates instead (the router fails over).
		return fmt.Errorf("%w: %w: %w", router.ErrUnavailable, tsdbhttp.ErrUnavailable, err)
	}
	if n.cfg.refuseCoordinate != nil && n.cfg.refuseCoordinate() {
		return fmt.Errorf("%w: %w: coordination refused by the test", router.ErrUnavailable, tsdbhttp.ErrUnavailable)
	}
	acks, err := planAcks(consistency, cfg.ReplicationFactor, p.Servers, n.cfg.ID, placement)
	if err != nil {
		return err
	}
	if len(acks.others) < acks.fromOthers() {
		// Refused before anything is written: no outcome is in doubt.
		return fmt.Errorf("%w: %w: consistency %q needs %d copies (replication factor %d) and partition %s lists only %d server(s) here",
			router.ErrUnavailable, tsdbhttp.ErrUnavailable, consistency, acks.need, cfg.ReplicationFactor, p.ID, len(p.Servers))
	}
	if opts.Versioned {
		// Stamped by the front end that first accepted them (a smeared
		// insert): kept, and this clock moves past them (at most the max
		// clock offset ahead of its wall clock).
		if err := n.observeVersions(rows, "a versioned insert of "+table); err != nil {
			return err
		}
	} else {
		v := n.clock.Now()
		for i := range rows {
			rows[i].SetVersion(v)
		}
	}
	res, err := rep.Apply(rows)
	if err == nil {
		n.rmetrics.coordRows.Add(float64(len(rows)))
		if len(rows) >= splitKickRows {
			n.kickSplitCheck()
		}
	}
	if errors.Is(err, partition.ErrUnloading) || errors.Is(err, partition.ErrDropped) {
		return fmt.Errorf("%w: %w", tsdbhttp.ErrMoved, err)
	}
	if err != nil {
		return err
	}
	rt := n.runtime(placement)
	if rt == nil {
		// The replica was created a moment ago and discovery has not run
		// for it yet (the watch is on its way): run it now.
		if _, file, ok := n.router.Cached(table); ok {
			n.discoverLocal(file)
		}
		rt = n.runtime(placement)
	}
	if rt == nil {
		if acks.fromOthers() > 0 || p.Split != nil {
			return fmt.Errorf("%w: replica %s has no replication running", tsdbhttp.ErrInsertOutcomeUnknown, placement)
		}
		return nil
	}
	rt.pusher.Notify()
	wctx, cancel := context.WithTimeout(ctx, n.cfg.AckTimeout)
	defer cancel()
	if k := acks.fromOthers(); k > 0 {
		if err := rt.pusher.WaitConfirmed(wctx, res.LastSeq, acks.others, k); err != nil {
			return fmt.Errorf("%w: fewer than %d copies (replication factor %d, %d servers listed) confirmed within %v: %v", tsdbhttp.ErrInsertOutcomeUnknown,
				acks.need, cfg.ReplicationFactor, len(p.Servers), n.cfg.AckTimeout, err)
		}
	}
	return n.waitChildren(wctx, rt, p, cfg.ReplicationFactor, rows, res.LastSeq, consistency)
}

// observeVersions checks that versioned rows carry their versions and moves
// the clock past the newest (within the max offset: observeVersion).
func (n *Node) observeVersions(rows []model.Row, from string) error {
	var newest model.Version
	for i := range rows {
		for _, f := range rows[i].Fields {
			if f.Version == (model.Version{}) {
				return fmt.Errorf("%w: row %d: field %q of a versioned insert has no version", tsdbhttp.ErrBadRequest, i, f.Name)
			}
			if newest.Less(f.Version) {
				newest = f.Version
			}
		}
	}
	n.observeVersion(newest, from)
	return nil
}

// waitChildren makes an insert into a splitting partition also wait until
// a majority (or all, for consistency all) of the servers of every child
// covering its rows hold them (DESIGN.md section 6): with quorum
// intersection, every acknowledged row is then in the children when the
// split finalizes.
func (n *Node) waitChildren(ctx context.Context, rt *replicaRuntime, p *metadata.Partition, rf int, rows []model.Row, seq uint64, consistency string) error {
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
				tsdbhttp.ErrInsertOutcomeUnknown, need, c.ID, len(c.Servers), n.cfg.AckTimeout, err)
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

// ackCount is W (DESIGN.md section 5): how many of a partition's servers[]
// must hold an insert at consistency, for a table of replication factor rf
// whose partition lists servers servers: ⌊n/2⌋+1 for quorum, 1 for one, n
// for all, with n = max(rf, servers). Joining servers are not in servers,
// so a partition listing fewer than rf (a split finalized while some child
// servers still join, servers removed as dead) needs as many copies as a
// full one; a partition listing more (a move adds before it removes) needs
// a majority of them, so that write and read quorums still intersect.
func ackCount(consistency string, rf, servers int) (int, error) {
	n := max(rf, servers, 1)
	switch consistency {
	case "", api.ConsistencyQuorum:
		return n/2 + 1, nil
	case api.ConsistencyOne:
		return 1, nil
	case api.ConsistencyAll:
		return n, nil
	}
	return 0, fmt.Errorf("%w: consistency %q: want one, quorum or all", tsdbhttp.ErrBadRequest, consistency)
}

// ackPlan is what an acknowledgement (or a quorum read's catch-up) needs of
// a partition's replicas: need copies in all, among which this replica's
// own counts only when servers[] lists it (self), the rest confirmed by
// others (servers[] without this server).
type ackPlan struct {
	need   int
	self   bool
	others []string
}

// fromOthers is how many of others must confirm.
func (a ackPlan) fromOthers() int {
	if a.self {
		return a.need - 1
	}
	return a.need
}

// planAcks computes the ackPlan of the replica placement on server self,
// for a partition listing servers (the newest servers[] self knows) of a
// table of replication factor rf. A replica no longer listed (removed, or
// its server listed under another placement) holds a copy that counts for
// nothing.
func planAcks(consistency string, rf int, servers []metadata.Placement, self string, placement uuid.UUID) (ackPlan, error) {
	need, err := ackCount(consistency, rf, len(servers))
	if err != nil {
		return ackPlan{}, err
	}
	plan := ackPlan{need: need, others: make([]string, 0, len(servers))}
	for _, s := range servers {
		switch {
		case s.ServerID != self:
			if !slices.Contains(plan.others, s.ServerID) {
				plan.others = append(plan.others, s.ServerID)
			}
		case s.PlacementID == placement:
			plan.self = true
		}
	}
	return plan, nil
}
