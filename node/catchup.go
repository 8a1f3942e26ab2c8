package node

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
)

// readable returns the local replica of placement for a read at the given
// consistency: as it is for "one" (or ""), and for "quorum" or "all" only
// after it has caught up from that many of the partition's replicas
// (planAcks: counted from the table's replication factor, itself included
// only while servers[] lists it; DESIGN.md section 5): each peer asked
// pushes it everything the peer holds at that moment. Every row
// acknowledged by a quorum is then in the answer of a quorum read.
func (n *Node) readable(ctx context.Context, table string, txnSeq uint64, p *metadata.Partition, placement uuid.UUID, consistency string) (*partition.Replica, error) {
	rep, err := n.serving(table, txnSeq, placement)
	if err != nil {
		return nil, err
	}
	if consistency == "" || consistency == api.ConsistencyOne {
		return rep, nil
	}
	cfg, _, err := n.router.Table(ctx, table)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", table, err)
	}
	acks, err := planAcks(consistency, cfg.ReplicationFactor, p.Servers, n.cfg.ID, placement)
	if err != nil {
		return nil, err
	}
	if err := n.catchUp(ctx, table, txnSeq, p, placement, acks.fromOthers()); err != nil {
		return nil, fmt.Errorf("%w: %w", tsdbhttp.ErrUnavailable, err)
	}
	return rep, nil
}

// catchUp asks the partition's other servers, in parallel, to push this
// replica everything they hold now, and returns once need of them have.
func (n *Node) catchUp(ctx context.Context, table string, txnSeq uint64, p *metadata.Partition, placement uuid.UUID, need int) error {
	if need <= 0 {
		return nil
	}
	if peers := len(slices.DeleteFunc(serverIDs(p.Servers), func(s string) bool { return s == n.cfg.ID })); peers < need {
		return fmt.Errorf("catching up partition %s: %d of its other replicas needed and it lists %d", p.ID, need, peers)
	}
	cctx, cancel := context.WithTimeout(ctx, n.cfg.AckTimeout)
	defer cancel()
	results := make(chan error, len(p.Servers))
	asked := 0
	for _, pl := range p.Servers {
		if pl.ServerID == n.cfg.ID {
			continue
		}
		asked++
		go func() {
			addr, err := n.dir.addr(cctx, pl.ServerID)
			if err == nil {
				err = n.rpcOnce.Call(cctx, addr, wire.PathCatchUp, wire.CatchUpRequest{
					Table: table, PartitionID: p.ID, FromPlacement: pl.PlacementID, ToPlacement: placement,
					ToServer: n.cfg.ID, TxnSeq: txnSeq,
				}, nil)
			}
			if err != nil {
				err = fmt.Errorf("%s: %w", pl.ServerID, err)
			}
			results <- err
		}()
	}
	var errs []error
	for done := 0; done < asked; done++ {
		if err := <-results; err != nil {
			errs = append(errs, err)
		} else if need--; need == 0 {
			return nil // the other calls end with cctx
		}
		if asked-done-1 < need {
			break
		}
	}
	return fmt.Errorf("catching up partition %s from its replicas: %d more needed: %w", p.ID, need, errors.Join(errs...))
}

// CatchUp pushes the asking replica everything the local replica holds now
// (its synced sequence at this moment) and returns once it confirmed.
func (i internal) CatchUp(ctx context.Context, req wire.CatchUpRequest) error {
	n := i.n
	if _, err := n.serving(req.Table, req.TxnSeq, req.FromPlacement); err != nil {
		return err
	}
	rep, _ := n.store.Replica(req.FromPlacement)
	rt := n.runtime(req.FromPlacement)
	if rt == nil {
		return fmt.Errorf("%w: replica %s has no replication running", tsdbhttp.ErrUnavailable, req.FromPlacement)
	}
	head := rep.SyncedSeq()
	rt.pusher.RetryNow() // now, even if the target was backing off
	wctx, cancel := context.WithTimeout(ctx, n.cfg.AckTimeout)
	defer cancel()
	if err := rt.pusher.WaitConfirmed(wctx, head, []string{req.ToServer}, 1); err != nil {
		return fmt.Errorf("%w: %s has not confirmed sequence %d of replica %s: %w", tsdbhttp.ErrUnavailable,
			req.ToServer, head, req.FromPlacement, err)
	}
	return nil
}
