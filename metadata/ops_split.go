package metadata

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// SplitBeginOp starts a split of a current partition (DESIGN.md sections 6
// and 8): the partition gets a Split record whose children tile its range at
// Points. Every id and placement is chosen by the requester.
type SplitBeginOp struct {
	// PartitionID is the partition to split.
	PartitionID uuid.UUID `json:"partition_id"`
	// Points are the split points, strictly increasing and strictly inside
	// the partition's (begin, end): one for a size split, k-1 for a
	// pre-split into k children.
	Points []int64 `json:"points"`
	// Children are the len(Points)+1 children in range order, each with a
	// fresh id and fresh placements.
	Children []SplitChild `json:"children"`
	// Presplit marks a pre-split by the master (section 8). Apply does not
	// check "data on both sides" (the requester needs the data for that);
	// it only requires a size split (Presplit false) to have one point.
	Presplit bool `json:"presplit"`
}

// SplitChild is one child a SPLIT_BEGIN creates. Its range is derived from
// the parent's range and the split points.
type SplitChild struct {
	// ID is the child's partition id, unused anywhere in the file.
	ID uuid.UUID `json:"id"`
	// Servers will hold the child: at least one, no server twice, fresh
	// placement ids.
	Servers []Placement `json:"servers"`
}

// SplitFinalizeOp replaces a splitting partition by its children (section
// 6, rule 7).
type SplitFinalizeOp struct {
	// PartitionID is the splitting partition.
	PartitionID uuid.UUID `json:"partition_id"`
	// Confirmed maps each child id to the ids of its servers that confirmed
	// the parent's rows. They become the child's servers; its other listed
	// servers become joining. Each child needs a majority of its listed
	// servers here.
	Confirmed map[uuid.UUID][]string `json:"confirmed"`
}

// SplitAbortOp cancels a split in progress: the partition keeps its range
// and servers and loses its Split record; the children's servers then see
// their placements UNLOAD.
type SplitAbortOp struct {
	// PartitionID is the splitting partition.
	PartitionID uuid.UUID `json:"partition_id"`
}

func applySplitBegin(next *File, op *SplitBeginOp) (*File, error) {
	p, err := currentPartition(next, op.PartitionID)
	if err != nil {
		return nil, err
	}
	switch {
	case p.Split != nil:
		return nil, fmt.Errorf("partition %s is already splitting at %v", p.ID, p.Split.Points)
	case len(p.Joining) > 0:
		return nil, fmt.Errorf("partition %s has joining servers %q; they must finalize or be removed before a split",
			p.ID, serverIDs(p.Joining))
	case len(p.Servers) == 0:
		return nil, fmt.Errorf("partition %s has no servers to push its rows to the children; FORCE_JOIN first", p.ID)
	}
	if err := checkSplitPoints(p, op.Points, op.Presplit); err != nil {
		return nil, err
	}
	children, err := newChildren(next, p, op)
	if err != nil {
		return nil, err
	}
	p.Split = &Split{Points: append(make([]int64, 0, len(op.Points)), op.Points...), Children: children}
	return next, nil
}

// checkSplitPoints checks that points are strictly increasing and strictly
// inside the partition's range, never on an edge.
func checkSplitPoints(p *Partition, points []int64, presplit bool) error {
	if len(points) == 0 {
		return fmt.Errorf("no split points")
	}
	if !presplit && len(points) != 1 {
		return fmt.Errorf("a size split (presplit=false) takes exactly one point, got %d", len(points))
	}
	for i, pt := range points {
		if i > 0 && pt <= points[i-1] {
			return fmt.Errorf("points[%d] = %d is not above points[%d] = %d", i, pt, i-1, points[i-1])
		}
		if !p.Contains(pt) || (p.Begin != nil && pt == *p.Begin) {
			return fmt.Errorf("points[%d] = %d is not strictly inside partition %s %s",
				i, pt, p.ID, fmtRange(p.Begin, p.End))
		}
	}
	return nil
}

// newChildren checks the op's children against the file and builds them
// with ranges derived from the parent's range and the points.
func newChildren(f *File, p *Partition, op *SplitBeginOp) ([]Child, error) {
	if len(op.Children) != len(op.Points)+1 {
		return nil, fmt.Errorf("want %d children for %d points, got %d", len(op.Points)+1, len(op.Points), len(op.Children))
	}
	ids, placements := usedIDs(f), usedPlacements(f)
	children := make([]Child, len(op.Children))
	for i, c := range op.Children {
		if err := checkChild(c, ids, placements); err != nil {
			return nil, fmt.Errorf("children[%d]: %w", i, err)
		}
		ids[c.ID] = true
		for _, pl := range c.Servers {
			placements[pl.PlacementID] = true
		}
		begin, end := p.Begin, p.End
		if i > 0 {
			begin = &op.Points[i-1]
		}
		if i < len(op.Points) {
			end = &op.Points[i]
		}
		children[i] = Child{ID: c.ID, Begin: model.CloneBound(begin), End: model.CloneBound(end), Servers: model.ClonePlacements(c.Servers)}
	}
	return children, nil
}

// checkChild checks one new child: a fresh non-nil id and a valid list of
// fresh placements. ids and placements hold what is already used, in the
// file and by the op's earlier children.
func checkChild(c SplitChild, ids, placements map[uuid.UUID]bool) error {
	if c.ID == uuid.Nil {
		return fmt.Errorf("nil id")
	}
	if ids[c.ID] {
		return fmt.Errorf("id %s is already used in the file or by another child", c.ID)
	}
	if err := checkNewPlacements(c.Servers); err != nil {
		return err
	}
	for j, pl := range c.Servers {
		if placements[pl.PlacementID] {
			return fmt.Errorf("servers[%d]: placement_id %s of server %q is already used in the file or by another child",
				j, pl.PlacementID, pl.ServerID)
		}
	}
	return nil
}

func applySplitFinalize(next *File, op *SplitFinalizeOp) (*File, error) {
	p, err := currentPartition(next, op.PartitionID)
	if err != nil {
		return nil, err
	}
	if p.Split == nil {
		return nil, fmt.Errorf("partition %s is not splitting", p.ID)
	}
	if err := checkConfirmedChildren(p, op.Confirmed); err != nil {
		return nil, err
	}
	parts := make([]Partition, 0, len(p.Split.Children))
	for i := range p.Split.Children {
		c := &p.Split.Children[i]
		part, err := finalizedChild(c, op.Confirmed[c.ID])
		if err != nil {
			return nil, err
		}
		part.Offline = p.Offline // the operator's mark covers the range
		parts = append(parts, part)
	}
	at := partitionIndex(next, p.ID)
	out := make([]Partition, 0, len(next.Partitions)-1+len(parts))
	out = append(out, next.Partitions[:at]...)
	out = append(out, parts...)
	next.Partitions = append(out, next.Partitions[at+1:]...)
	return next, nil
}

// checkConfirmedChildren refuses confirmations for ids that are not
// children of p, naming them in sorted order so the message is the same on
// every server.
func checkConfirmedChildren(p *Partition, confirmed map[uuid.UUID][]string) error {
	var unknown []string
	for id := range confirmed {
		if !p.Split.HasChild(id) {
			unknown = append(unknown, id.String())
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("confirmed: %s: not a child of partition %s", strings.Join(unknown, ", "), p.ID)
	}
	return nil
}

// finalizedChild turns child c into a partition: the servers that confirmed
// (in c's listed order) serve, the others join. Rule 7 needs a majority of
// c's listed servers to have confirmed.
func finalizedChild(c *Child, confirmed []string) (Partition, error) {
	ok := make(map[string]bool, len(confirmed))
	for _, s := range confirmed {
		if ok[s] {
			return Partition{}, fmt.Errorf("confirmed[%s]: server %q listed twice", c.ID, s)
		}
		if _, listed := model.FindServer(c.Servers, s); !listed {
			return Partition{}, fmt.Errorf("confirmed[%s]: server %q is not a server of child %s", c.ID, s, c.ID)
		}
		ok[s] = true
	}
	if need := len(c.Servers)/2 + 1; len(ok) < need {
		return Partition{}, fmt.Errorf("child %s: %d of its %d servers confirmed, a majority (%d) must",
			c.ID, len(ok), len(c.Servers), need)
	}
	part := Partition{ID: c.ID, Begin: model.CloneBound(c.Begin), End: model.CloneBound(c.End), Servers: []Placement{}, Joining: []Placement{}}
	for _, pl := range c.Servers {
		if ok[pl.ServerID] {
			part.Servers = append(part.Servers, pl)
		} else {
			part.Joining = append(part.Joining, pl)
		}
	}
	return part, nil
}

func applySplitAbort(next *File, op *SplitAbortOp) (*File, error) {
	p, err := currentPartition(next, op.PartitionID)
	if err != nil {
		return nil, err
	}
	if p.Split == nil {
		return nil, fmt.Errorf("partition %s is not splitting", p.ID)
	}
	p.Split = nil
	return next, nil
}

// currentPartition returns the current partition with the given id, or an
// error naming the id (and its parent, if it is a split child).
func currentPartition(f *File, id uuid.UUID) (*Partition, error) {
	if p, ok := f.Partition(id); ok {
		return p, nil
	}
	if parent, ok := splitParentOf(f, id); ok {
		return nil, fmt.Errorf("partition %s is a split child of %s, not a current partition", id, parent.ID)
	}
	return nil, fmt.Errorf("partition %s is not a current partition", id)
}

// splitParentOf returns the splitting partition that lists id as a child.
func splitParentOf(f *File, id uuid.UUID) (*Partition, bool) {
	for i := range f.Partitions {
		if s := f.Partitions[i].Split; s != nil && s.HasChild(id) {
			return &f.Partitions[i], true
		}
	}
	return nil, false
}

// partitionIndex returns the index of the current partition id, or -1.
func partitionIndex(f *File, id uuid.UUID) int {
	for i := range f.Partitions {
		if f.Partitions[i].ID == id {
			return i
		}
	}
	return -1
}

// usedIDs returns every partition and split-child id of f.
func usedIDs(f *File) map[uuid.UUID]bool {
	ids := make(map[uuid.UUID]bool, len(f.Partitions))
	for i := range f.Partitions {
		p := &f.Partitions[i]
		ids[p.ID] = true
		if p.Split != nil {
			for _, c := range p.Split.Children {
				ids[c.ID] = true
			}
		}
	}
	return ids
}

// usedPlacements returns every placement id of f: servers, joining and
// split children.
func usedPlacements(f *File) map[uuid.UUID]bool {
	used := make(map[uuid.UUID]bool, 3*len(f.Partitions))
	add := func(ps []Placement) {
		for _, pl := range ps {
			used[pl.PlacementID] = true
		}
	}
	for i := range f.Partitions {
		p := &f.Partitions[i]
		add(p.Servers)
		add(p.Joining)
		if p.Split != nil {
			for _, c := range p.Split.Children {
				add(c.Servers)
			}
		}
	}
	return used
}

// serverIDs lists the server ids of ps, for messages.
func serverIDs(ps []Placement) []string {
	out := make([]string, len(ps))
	for i, pl := range ps {
		out[i] = pl.ServerID
	}
	return out
}

// fmtRange formats [begin, end) for messages, with open ends as -inf/+inf.
func fmtRange(begin, end *int64) string {
	b, e := "-inf", "+inf"
	if begin != nil {
		b = strconv.FormatInt(*begin, 10)
	}
	if end != nil {
		e = strconv.FormatInt(*end, 10)
	}
	return "[" + b + ", " + e + ")"
}
