package metadata

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// ReplicaRef names one local replica for partition discovery: the partition
// id and placement it was created for, and the last range it knew. The range
// is what lets discovery answer for an id that has left the map.
type ReplicaRef struct {
	// PartitionID is the replica's partition (or split child) id.
	PartitionID uuid.UUID `json:"partition_id"`
	// PlacementID is the replica's placement id.
	PlacementID uuid.UUID `json:"placement_id"`
	// Begin is the inclusive lower bound the replica knew; nil means open.
	Begin *int64 `json:"begin"`
	// End is the exclusive upper bound the replica knew; nil means open.
	End *int64 `json:"end"`
}

// DiscoveryStatus is what a replica must do under a METADATA file.
type DiscoveryStatus string

// The discovery statuses (DESIGN.md section 4).
const (
	// StatusLoad: the replica receives pushes and serves nothing (a joining
	// server, or a split child before SPLIT_FINALIZE).
	StatusLoad DiscoveryStatus = "LOAD"
	// StatusServe: the replica serves reads and writes and pushes to its
	// targets.
	StatusServe DiscoveryStatus = "SERVE"
	// StatusUnload: the replica refuses writes and pushes, pushes what its
	// targets lack, and is dropped once every target confirmed (rule 3).
	StatusUnload DiscoveryStatus = "UNLOAD"
	// StatusDrop: retention deleted the replica's whole range (it ends at
	// or before the file's DroppedBefore): the replica refuses writes and
	// pushes, pushes nothing, and is dropped at once (rule 3, retention
	// form). Its rows are expired; moving them would keep them.
	StatusDrop DiscoveryStatus = "DROP"
)

// TargetKind says why a replica is a target.
type TargetKind string

// The target kinds.
const (
	// TargetReplica: a server of the target partition's servers list.
	TargetReplica TargetKind = "replica"
	// TargetJoining: a server of the target partition's joining list.
	TargetJoining TargetKind = "joining"
	// TargetSplit: a server of a split child not yet finalized; rows pushed
	// to it are filtered to the child's range.
	TargetSplit TargetKind = "split"
)

// Target is one replica another replica pushes to or takes as context. The
// caller resolves the server's address from membership.
type Target struct {
	// ServerID is the target's server.
	ServerID string `json:"server_id"`
	// PlacementID is the target replica's placement.
	PlacementID uuid.UUID `json:"placement_id"`
	// PartitionID is the target's partition or split-child id.
	PartitionID uuid.UUID `json:"partition_id"`
	// Begin is the target's inclusive lower bound; nil means open.
	Begin *int64 `json:"begin"`
	// End is the target's exclusive upper bound; nil means open.
	End *int64 `json:"end"`
	// Kind says which list of the target the server is in.
	Kind TargetKind `json:"kind"`
}

// Discovery is the answer of partition discovery for one replica.
type Discovery struct {
	// Status is what the replica must do.
	Status DiscoveryStatus `json:"status"`
	// Begin is the replica's range as of the file (its current range for
	// SERVE and LOAD; the range the targets were computed from for UNLOAD).
	Begin *int64 `json:"begin"`
	// End is the exclusive upper bound of that range; nil means open.
	End *int64 `json:"end"`
	// Targets are sorted by server id, then begin, end, partition id and
	// placement id; never nil.
	Targets []Target `json:"targets"`
}

// Discover is partition discovery (DESIGN.md section 4), a pure function of
// the file and the replica r held by server self:
//
//   - r's id is a current partition listing (self, placement) in servers:
//     SERVE; targets are the other servers (replica), the joining servers
//     (joining) and, while it splits, every child server (split, with the
//     child's id and range).
//   - the partition lists it in joining: LOAD; targets, as context, are the
//     servers (replica) and the other joining servers (joining).
//   - r's id is a child of a split not yet finalized, listing (self,
//     placement): LOAD; targets, as context, are the child's other servers
//     (replica), the sibling children's servers (split) and the parent's
//     servers and joining (replica, joining).
//   - otherwise (the id left the map, or no longer lists this placement):
//     UNLOAD; targets are servers ∪ joining of every current partition and
//     the servers of every split child overlapping the replica's range,
//     except r's own placement. The range is r's, widened to the id's
//     current range when the id is still in the file (ranges only grow).
//
// Retention (File.DroppedBefore, the horizon h): a replica that would be
// UNLOAD and whose range ends at or before h is DROP, with no target; and
// every target's begin is raised to h, so no push of any status carries a
// row older than the horizon (the pusher filters rows to a target's range).
//
// With a valid file, which covers the axis, an UNLOAD replica with a
// non-empty range always has targets. If none overlap (an empty range in
// r, or overlapping partitions that lost every replica), Targets is empty,
// and rule 3 keeps the replica: it is never dropped without a target, and a
// later file that gives the range servers gives it targets.
func Discover(f *File, self string, r ReplicaRef) Discovery {
	if p, ok := f.Partition(r.PartitionID); ok {
		return discoverPartition(f, self, r, p)
	}
	if parent, ok := splitParentOf(f, r.PartitionID); ok {
		return discoverChild(f, self, r, parent)
	}
	return unload(f, r, r.Begin, r.End)
}

func discoverPartition(f *File, self string, r ReplicaRef, p *Partition) Discovery {
	ts := targets{horizon: f.DroppedBefore}
	switch {
	case listsPlacement(p.Servers, self, r.PlacementID):
		ts.add(p.ID, p.Begin, p.End, p.Servers, TargetReplica, r.PlacementID)
		ts.add(p.ID, p.Begin, p.End, p.Joining, TargetJoining, r.PlacementID)
		if p.Split != nil {
			for i := range p.Split.Children {
				c := &p.Split.Children[i]
				ts.add(c.ID, c.Begin, c.End, c.Servers, TargetSplit, r.PlacementID)
			}
		}
		return ts.answer(StatusServe, p.Begin, p.End)
	case listsPlacement(p.Joining, self, r.PlacementID):
		ts.add(p.ID, p.Begin, p.End, p.Servers, TargetReplica, r.PlacementID)
		ts.add(p.ID, p.Begin, p.End, p.Joining, TargetJoining, r.PlacementID)
		return ts.answer(StatusLoad, p.Begin, p.End)
	}
	begin, end := hull(r.Begin, r.End, p.Begin, p.End)
	return unload(f, r, begin, end)
}

func discoverChild(f *File, self string, r ReplicaRef, parent *Partition) Discovery {
	var child *Child
	for i := range parent.Split.Children {
		if parent.Split.Children[i].ID == r.PartitionID {
			child = &parent.Split.Children[i]
		}
	}
	if !listsPlacement(child.Servers, self, r.PlacementID) {
		begin, end := hull(r.Begin, r.End, child.Begin, child.End)
		return unload(f, r, begin, end)
	}
	ts := targets{horizon: f.DroppedBefore}
	for i := range parent.Split.Children {
		c := &parent.Split.Children[i]
		kind := TargetSplit
		if c == child {
			kind = TargetReplica
		}
		ts.add(c.ID, c.Begin, c.End, c.Servers, kind, r.PlacementID)
	}
	ts.add(parent.ID, parent.Begin, parent.End, parent.Servers, TargetReplica, r.PlacementID)
	ts.add(parent.ID, parent.Begin, parent.End, parent.Joining, TargetJoining, r.PlacementID)
	return ts.answer(StatusLoad, child.Begin, child.End)
}

// unload answers UNLOAD for r over [begin, end): the servers and joining of
// every current partition, and the servers of every split child, that
// overlap it, except r's own placement. A range that ends at or before the
// retention horizon answers DROP, with no target.
func unload(f *File, r ReplicaRef, begin, end *int64) Discovery {
	ts := targets{horizon: f.DroppedBefore}
	if expired(f.DroppedBefore, end) {
		return ts.answer(StatusDrop, begin, end)
	}
	for i := range f.Partitions {
		p := &f.Partitions[i]
		if !boundsOverlap(p.Begin, p.End, begin, end) {
			continue
		}
		ts.add(p.ID, p.Begin, p.End, p.Servers, TargetReplica, r.PlacementID)
		ts.add(p.ID, p.Begin, p.End, p.Joining, TargetJoining, r.PlacementID)
		if p.Split == nil {
			continue
		}
		for j := range p.Split.Children {
			c := &p.Split.Children[j]
			if boundsOverlap(c.Begin, c.End, begin, end) {
				ts.add(c.ID, c.Begin, c.End, c.Servers, TargetSplit, r.PlacementID)
			}
		}
	}
	return ts.answer(StatusUnload, begin, end)
}

// expired reports whether a range ending at end lies wholly before the
// retention horizon (nil: nothing dropped yet).
func expired(horizon, end *int64) bool {
	return horizon != nil && end != nil && *end <= *horizon
}

// targets collects the targets of one answer.
type targets struct {
	// horizon is the file's DroppedBefore: no target's begin is below it.
	horizon *int64
	list    []Target
}

// add appends a target for every placement of ps except skip. Bounds are
// copied so the answer shares no memory with the file; a begin below the
// retention horizon is raised to it, so no push carries an expired row.
func (ts *targets) add(id uuid.UUID, begin, end *int64, ps []Placement, kind TargetKind, skip uuid.UUID) {
	if ts.horizon != nil && compareBegin(begin, ts.horizon) < 0 {
		begin = ts.horizon
	}
	for _, pl := range ps {
		if pl.PlacementID == skip {
			continue
		}
		ts.list = append(ts.list, Target{
			ServerID: pl.ServerID, PlacementID: pl.PlacementID, PartitionID: id,
			Begin: model.CloneBound(begin), End: model.CloneBound(end), Kind: kind,
		})
	}
}

// answer sorts the targets and builds the Discovery.
func (ts targets) answer(status DiscoveryStatus, begin, end *int64) Discovery {
	out := append(make([]Target, 0, len(ts.list)), ts.list...)
	slices.SortFunc(out, compareTargets)
	return Discovery{Status: status, Begin: model.CloneBound(begin), End: model.CloneBound(end), Targets: out}
}

// compareTargets orders targets by server id, begin (open first), end (open
// last), partition id and placement id: a total order, since placement ids
// are unique in a file.
func compareTargets(a, b Target) int {
	return cmp.Or(
		cmp.Compare(a.ServerID, b.ServerID),
		compareBegin(a.Begin, b.Begin),
		compareEnd(a.End, b.End),
		bytes.Compare(a.PartitionID[:], b.PartitionID[:]),
		bytes.Compare(a.PlacementID[:], b.PlacementID[:]),
	)
}

// compareBegin orders lower bounds, nil (−∞) first.
func compareBegin(a, b *int64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return cmp.Compare(*a, *b)
}

// compareEnd orders upper bounds, nil (+∞) last.
func compareEnd(a, b *int64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Compare(*a, *b)
}

// listsPlacement reports whether ps holds exactly (server, placement).
func listsPlacement(ps []Placement, server string, placement uuid.UUID) bool {
	for _, pl := range ps {
		if pl.ServerID == server && pl.PlacementID == placement {
			return true
		}
	}
	return false
}

// boundsOverlap reports whether [aBegin, aEnd) and [bBegin, bEnd) intersect;
// nil bounds are open, and an empty range overlaps nothing.
func boundsOverlap(aBegin, aEnd, bBegin, bEnd *int64) bool {
	lo := aBegin
	if compareBegin(bBegin, lo) > 0 {
		lo = bBegin
	}
	hi := aEnd
	if compareEnd(bEnd, hi) < 0 {
		hi = bEnd
	}
	return lo == nil || hi == nil || *lo < *hi
}

// hull returns the smallest range containing both [aBegin, aEnd) and
// [bBegin, bEnd).
func hull(aBegin, aEnd, bBegin, bEnd *int64) (*int64, *int64) {
	begin, end := aBegin, aEnd
	if compareBegin(bBegin, begin) < 0 {
		begin = bBegin
	}
	if compareEnd(bEnd, end) > 0 {
		end = bEnd
	}
	return begin, end
}
