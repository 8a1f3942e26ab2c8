package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
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
func (s *Server) readable(ctx context.Context, table string, txnSeq uint64, p *metadata.Partition, placement uuid.UUID, consistency string) (*partition.Replica, error) {
	rep, err := s.serving(table, txnSeq, placement)
	if err != nil {
		return nil, err
	}
	if consistency == "" || consistency == api.ConsistencyOne {
		return rep, nil
	}
	cfg, _, err := s.router.Table(ctx, table)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", table, err)
	}
	acks, err := planAcks(consistency, cfg.ReplicationFactor, p.Servers, s.cfg.Self, placement)
	if err != nil {
		return nil, err
	}
	if err := s.catchUp(ctx, table, txnSeq, p, placement, acks.fromOthers()); err != nil {
		return nil, fmt.Errorf("%w: %w", wire.ErrUnavailable, err)
	}
	return rep, nil
}

// catchUp asks the partition's other servers, in parallel, to push this
// replica everything they hold now, and returns once need of them have.
func (s *Server) catchUp(ctx context.Context, table string, txnSeq uint64, p *metadata.Partition, placement uuid.UUID, need int) error {
	if need <= 0 {
		return nil
	}
	if peers := len(slices.DeleteFunc(serverIDs(p.Servers), func(id string) bool { return id == s.cfg.Self })); peers < need {
		return fmt.Errorf("catching up partition %s: %d of its other replicas needed and it lists %d", p.ID, need, peers)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.AckTimeout)
	defer cancel()
	results := make(chan error, len(p.Servers))
	asked := 0
	for _, pl := range p.Servers {
		if pl.ServerID == s.cfg.Self {
			continue
		}
		asked++
		go func() {
			addr, err := s.dir.Addr(cctx, pl.ServerID)
			if err == nil {
				err = s.rpcOnce.Call(cctx, addr, wire.PathCatchUp, wire.CatchUpRequest{
					Table: table, PartitionID: p.ID, FromPlacement: pl.PlacementID, ToPlacement: placement,
					ToServer: s.cfg.Self, TxnSeq: txnSeq,
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
func (s *Server) CatchUp(ctx context.Context, req wire.CatchUpRequest) error {
	if _, err := s.serving(req.Table, req.TxnSeq, req.FromPlacement); err != nil {
		return err
	}
	rep, _ := s.store.Replica(req.FromPlacement)
	rt := s.runtime(req.FromPlacement)
	if rt == nil {
		return fmt.Errorf("%w: replica %s has no replication running", wire.ErrUnavailable, req.FromPlacement)
	}
	head := rep.SyncedSeq()
	rt.pusher.RetryNow() // now, even if the target was backing off
	wctx, cancel := context.WithTimeout(ctx, s.cfg.AckTimeout)
	defer cancel()
	if err := rt.pusher.WaitConfirmed(wctx, head, []string{req.ToServer}, 1); err != nil {
		return fmt.Errorf("%w: %s has not confirmed sequence %d of replica %s: %w", wire.ErrUnavailable,
			req.ToServer, head, req.FromPlacement, err)
	}
	return nil
}
