package replica

import (
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// The acknowledgement deciders (DESIGN.md section 5): pure functions of the
// consistency level, the replication factor and servers[].

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
	return 0, fmt.Errorf("%w: consistency %q: want one, quorum or all", wire.ErrBadRequest, consistency)
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
