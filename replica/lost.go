package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/operator"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
)

// A wiped disk (DESIGN.md section 5). A server restarted on an empty data
// directory keeps its id, and the METADATA still lists it for placements
// whose data is gone. The partition store tells them apart from placements
// assigned later (partition/lost.go): the first METADATA of each table
// that existed at the store's birth settles it, marking the placements it
// lists for this server lost. A lost placement is never created here, and
// this server neither serves it nor confirms pushes to it (it answers
// "unavailable", so front ends and pushers go elsewhere); it puts a lost
// mark in etcd, on which the master removes it from the partition as dead
// and joins it again under a new placement (a fresh replica that receives
// everything from the others before it serves).

// settleLost settles a table pending since the store's birth: the
// placements file lists for this server are marked lost.
func (s *Server) settleLost(file *metadata.File) error {
	if !s.store.Pending(file.Table) {
		return nil
	}
	var lost []partition.ReplicaInfo
	add := func(pl uuid.UUID, id uuid.UUID, begin, end *int64) {
		if _, ok := s.store.Replica(pl); !ok {
			lost = append(lost, partition.ReplicaInfo{Placement: pl, Table: file.Table, PartitionID: id, Begin: begin, End: end, CreatedAt: time.Now().UTC()})
		}
	}
	for i := range file.Partitions {
		p := &file.Partitions[i]
		for _, pl := range slices.Concat(p.Servers, p.Joining) {
			if pl.ServerID == s.cfg.Self {
				add(pl.PlacementID, p.ID, p.Begin, p.End)
			}
		}
		if p.Split == nil {
			continue
		}
		for _, c := range p.Split.Children {
			for _, pl := range c.Servers {
				if pl.ServerID == s.cfg.Self {
					add(pl.PlacementID, c.ID, c.Begin, c.End)
				}
			}
		}
	}
	if err := s.store.Settle(file.Table, lost); err != nil {
		return fmt.Errorf("settle table %q after the store's birth: %w", file.Table, err)
	}
	return nil
}

// recordBirth notes, on a partition store created empty, the tables that
// exist now: their placements listed for this server are lost.
func (s *Server) recordBirth(tables []metadata.TableConfig) error {
	if !s.store.Fresh() {
		return nil
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	if err := s.store.RecordBirth(names, time.Now()); err != nil {
		return fmt.Errorf("node: record the partition store's birth: %w", err)
	}
	return nil
}

// errLost is a lost placement's answer: "unavailable", so that a front end
// tries another replica and a pusher backs off.
func (s *Server) errLost(placement uuid.UUID) error {
	return fmt.Errorf("%w: placement %s of server %s lost its data (an empty data directory); awaiting removal and re-join",
		wire.ErrUnavailable, placement, s.cfg.Self)
}

// reportLost puts a lost mark in etcd for each lost placement the
// METADATA still lists for this server, and clears the mark of each it no
// longer lists. Each mark is written once per process (and again if the
// listing changes back, which placement ids never do).
func (s *Server) reportLost(ctx context.Context) error {
	var errs []error
	for _, info := range s.store.LostReplicas() {
		_, file, ok := s.router.Cached(info.Table)
		if !ok {
			continue
		}
		want := listsPlacement(file, s.cfg.Self, info.Placement)
		s.mu.Lock()
		marked, known := s.mu.lostMarked[info.Placement]
		s.mu.Unlock()
		if known && marked == want {
			continue
		}
		var err error
		if want {
			err = operator.MarkLost(ctx, s.etcd, s.cfg.EtcdPrefix, operator.LostMark{
				Server: s.cfg.Self, Table: info.Table, PartitionID: info.PartitionID, Placement: info.Placement, Since: time.Now().UTC(),
			})
		} else {
			err = operator.ClearLost(ctx, s.etcd, s.cfg.EtcdPrefix, info.Placement)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		s.mu.lostMarked[info.Placement] = want
		s.mu.Unlock()
		if want {
			s.log.Warn("placement lost; the master is asked to remove and re-join this server", "table", info.Table,
				"partition", info.PartitionID, "placement", info.Placement)
		}
	}
	return errors.Join(errs...)
}

// listsPlacement reports whether file lists (server, placement) in a
// partition's servers or joining or in a split child.
func listsPlacement(file *metadata.File, server string, placement uuid.UUID) bool {
	is := func(pl metadata.Placement) bool { return pl.ServerID == server && pl.PlacementID == placement }
	for i := range file.Partitions {
		p := &file.Partitions[i]
		if slices.ContainsFunc(p.Servers, is) || slices.ContainsFunc(p.Joining, is) {
			return true
		}
		if p.Split != nil {
			for _, c := range p.Split.Children {
				if slices.ContainsFunc(c.Servers, is) {
					return true
				}
			}
		}
	}
	return false
}
