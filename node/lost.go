package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/operator"
	tsdbhttp "github.com/tsdb/tsdb/http"
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
func (n *Node) settleLost(file *metadata.File) error {
	if !n.store.Pending(file.Table) {
		return nil
	}
	var lost []partition.ReplicaInfo
	add := func(pl uuid.UUID, id uuid.UUID, begin, end *int64) {
		if _, ok := n.store.Replica(pl); !ok {
			lost = append(lost, partition.ReplicaInfo{Placement: pl, Table: file.Table, PartitionID: id, Begin: begin, End: end, CreatedAt: time.Now().UTC()})
		}
	}
	for i := range file.Partitions {
		p := &file.Partitions[i]
		for _, pl := range slices.Concat(p.Servers, p.Joining) {
			if pl.ServerID == n.cfg.ID {
				add(pl.PlacementID, p.ID, p.Begin, p.End)
			}
		}
		if p.Split == nil {
			continue
		}
		for _, c := range p.Split.Children {
			for _, pl := range c.Servers {
				if pl.ServerID == n.cfg.ID {
					add(pl.PlacementID, c.ID, c.Begin, c.End)
				}
			}
		}
	}
	if err := n.store.Settle(file.Table, lost); err != nil {
		return fmt.Errorf("settle table %q after the store's birth: %w", file.Table, err)
	}
	return nil
}

// recordBirth notes, on a partition store created empty, the tables that
// exist now: their placements listed for this server are lost.
func (n *Node) recordBirth(tables []metadata.TableConfig) error {
	if !n.store.Fresh() {
		return nil
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	if err := n.store.RecordBirth(names, time.Now()); err != nil {
		return fmt.Errorf("node: record the partition store's birth: %w", err)
	}
	return nil
}

// errLost is a lost placement's answer: "unavailable", so that a front end
// tries another replica and a pusher backs off.
func (n *Node) errLost(placement uuid.UUID) error {
	return fmt.Errorf("%w: placement %s of server %s lost its data (an empty data directory); awaiting removal and re-join",
		tsdbhttp.ErrUnavailable, placement, n.cfg.ID)
}

// reportLost puts a lost mark in etcd for each lost placement the
// METADATA still lists for this server, and clears the mark of each it no
// longer lists. Each mark is written once per process (and again if the
// listing changes back, which placement ids never do).
func (n *Node) reportLost(ctx context.Context) error {
	var errs []error
	for _, info := range n.store.LostReplicas() {
		_, file, ok := n.router.Cached(info.Table)
		if !ok {
			continue
		}
		want := listsPlacement(file, n.cfg.ID, info.Placement)
		n.mu.Lock()
		marked, known := n.mu.lostMarked[info.Placement]
		n.mu.Unlock()
		if known && marked == want {
			continue
		}
		var err error
		if want {
			err = operator.MarkLost(ctx, n.etcd, n.cfg.EtcdPrefix, operator.LostMark{
				Server: n.cfg.ID, Table: info.Table, PartitionID: info.PartitionID, Placement: info.Placement, Since: time.Now().UTC(),
			})
		} else {
			err = operator.ClearLost(ctx, n.etcd, n.cfg.EtcdPrefix, info.Placement)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n.mu.Lock()
		n.mu.lostMarked[info.Placement] = want
		n.mu.Unlock()
		if want {
			n.log.Warn("placement lost; the master is asked to remove and re-join this server", "table", info.Table,
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
