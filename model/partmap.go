package model

import (
	"fmt"
	"sort"

	"github.com/google/uuid"
)

// File is the METADATA file of one transaction: a table's whole partition
// map as of txnid (DESIGN.md section 4). Package metadata encodes, stores
// and commits it; the public API answers it as is. Files are immutable
// values once encoded; an op builds a new File from a copy of its base.
type File struct {
	// Table is the table name.
	Table string `json:"table"`
	// TxnID is this transaction's id (metadata.NewTxnID).
	TxnID string `json:"txnid"`
	// TxnSeq is the parent's TxnSeq + 1; 1 for the CREATE transaction.
	TxnSeq uint64 `json:"txnseq"`
	// ParentTxnID is the transaction this one was applied to; "" for CREATE.
	ParentTxnID string `json:"parent_txnid"`
	// Partitions are sorted by Begin, contiguous, and cover the whole time
	// axis: the first Begin and the last End are open (nil).
	Partitions []Partition `json:"partitions"`
	// DroppedBefore is the retention horizon: retention (DROP_PARTITIONS)
	// deleted the partitions that ended at or before it, so no row before
	// it is kept. Partition discovery answers DROP for a replica whose whole
	// range ends at or before it and never targets a push below it
	// (metadata.Discover). Nil until the first DROP_PARTITIONS; it only
	// grows.
	DroppedBefore *int64 `json:"dropped_before,omitempty"`
}

// Partition is one entry of the partition map: the range [Begin, End) of the
// time axis (integer ns since the epoch) and the servers that hold it.
type Partition struct {
	// ID identifies the partition; it never changes for the same range.
	ID uuid.UUID `json:"id"`
	// Begin is the inclusive lower bound; nil means open (−∞).
	Begin *int64 `json:"begin"`
	// End is the exclusive upper bound; nil means open (+∞).
	End *int64 `json:"end"`
	// Servers serve reads and writes and count toward quorums.
	Servers []Placement `json:"servers"`
	// Joining receive pushes but serve nothing until JOIN_FINALIZE.
	Joining []Placement `json:"joining"`
	// Split is set between SPLIT_BEGIN and SPLIT_FINALIZE/SPLIT_ABORT.
	Split *Split `json:"split,omitempty"`
	// Offline is set by an operator (SET_OFFLINE).
	Offline bool `json:"offline,omitempty"`
}

// Placement is one assignment of a partition to a server. A server that
// leaves and rejoins gets a new PlacementID, and local data is keyed by it.
type Placement struct {
	// ServerID is the server's id.
	ServerID string `json:"server_id"`
	// PlacementID is unique to this assignment.
	PlacementID uuid.UUID `json:"placement_id"`
}

// Split describes a split in progress: the split points and the children
// that will replace the partition (two for a size split, k for a pre-split).
type Split struct {
	// Points are strictly increasing and strictly inside the parent's range.
	Points []int64 `json:"points"`
	// Children are len(Points)+1 ranges that tile the parent's range.
	Children []Child `json:"children"`
}

// Child is a partition-to-be of a split.
type Child struct {
	// ID is the child's partition id.
	ID uuid.UUID `json:"id"`
	// Begin is the inclusive lower bound; nil means open (−∞).
	Begin *int64 `json:"begin"`
	// End is the exclusive upper bound; nil means open (+∞).
	End *int64 `json:"end"`
	// Servers will hold the child.
	Servers []Placement `json:"servers"`
}

// Contains reports whether t lies in [Begin, End).
func (p *Partition) Contains(t int64) bool {
	return (p.Begin == nil || t >= *p.Begin) && (p.End == nil || t < *p.End)
}

// Overlaps reports whether [from, to) intersects [Begin, End). An empty
// interval (from >= to) overlaps nothing.
func (p *Partition) Overlaps(from, to int64) bool {
	return rangesOverlap(p.Begin, p.End, from, to)
}

// Overlaps reports whether [from, to) intersects the child's range.
func (c *Child) Overlaps(from, to int64) bool {
	return rangesOverlap(c.Begin, c.End, from, to)
}

// HasChild reports whether id is one of the split's children.
func (s *Split) HasChild(id uuid.UUID) bool {
	for i := range s.Children {
		if s.Children[i].ID == id {
			return true
		}
	}
	return false
}

func rangesOverlap(begin, end *int64, from, to int64) bool {
	if from >= to {
		return false
	}
	return (begin == nil || to > *begin) && (end == nil || from < *end)
}

// Find returns the partition containing t, by binary search on Begin.
func (f *File) Find(t int64) (*Partition, bool) {
	i := f.indexAt(t)
	if i < 0 || !f.Partitions[i].Contains(t) {
		return nil, false
	}
	return &f.Partitions[i], true
}

// indexAt returns the index of the last partition whose Begin is <= t (an
// open Begin counts as −∞), or -1 if there is none.
func (f *File) indexAt(t int64) int {
	i := sort.Search(len(f.Partitions), func(i int) bool {
		b := f.Partitions[i].Begin
		return b != nil && *b > t
	})
	return i - 1
}

// Overlapping returns the partitions that intersect [from, to), in order.
// The pointers point into f.Partitions.
func (f *File) Overlapping(from, to int64) []*Partition {
	if from >= to {
		return nil
	}
	var out []*Partition
	for i := max(f.indexAt(from), 0); i < len(f.Partitions); i++ {
		p := &f.Partitions[i]
		if p.Begin != nil && *p.Begin >= to {
			break
		}
		if p.Overlaps(from, to) {
			out = append(out, p)
		}
	}
	return out
}

// Partition returns the current partition with the given id.
func (f *File) Partition(id uuid.UUID) (*Partition, bool) {
	for i := range f.Partitions {
		if f.Partitions[i].ID == id {
			return &f.Partitions[i], true
		}
	}
	return nil, false
}

// PlacementOf returns the placement id of serverID for the partition or split
// child with the given id, looking in servers, joining and split children.
// It is a linear scan.
func (f *File) PlacementOf(partition uuid.UUID, serverID string) (uuid.UUID, bool) {
	for i := range f.Partitions {
		p := &f.Partitions[i]
		if p.ID == partition {
			if pl, ok := FindServer(p.Servers, serverID); ok {
				return pl, true
			}
			return FindServer(p.Joining, serverID)
		}
		if p.Split == nil {
			continue
		}
		for j := range p.Split.Children {
			if c := &p.Split.Children[j]; c.ID == partition {
				return FindServer(c.Servers, serverID)
			}
		}
	}
	return uuid.Nil, false
}

// FindServer returns the placement id of serverID in ps.
func FindServer(ps []Placement, serverID string) (uuid.UUID, bool) {
	for _, p := range ps {
		if p.ServerID == serverID {
			return p.PlacementID, true
		}
	}
	return uuid.Nil, false
}

// Clone returns a deep copy of f. Nil slices become empty ones, so an encoded
// clone always writes [] rather than null.
func (f *File) Clone() *File {
	c := *f
	c.DroppedBefore = CloneBound(f.DroppedBefore)
	c.Partitions = make([]Partition, len(f.Partitions))
	for i := range f.Partitions {
		c.Partitions[i] = f.Partitions[i].clone()
	}
	return &c
}

func (p Partition) clone() Partition {
	p.Begin, p.End = CloneBound(p.Begin), CloneBound(p.End)
	p.Servers = ClonePlacements(p.Servers)
	p.Joining = ClonePlacements(p.Joining)
	if p.Split != nil {
		s := Split{Points: append(make([]int64, 0, len(p.Split.Points)), p.Split.Points...)}
		s.Children = make([]Child, len(p.Split.Children))
		for i, c := range p.Split.Children {
			c.Begin, c.End = CloneBound(c.Begin), CloneBound(c.End)
			c.Servers = ClonePlacements(c.Servers)
			s.Children[i] = c
		}
		p.Split = &s
	}
	return p
}

// CloneBound returns a copy of a range bound; nil (open) stays nil.
func CloneBound(b *int64) *int64 {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// ClonePlacements returns a copy of ps; nil becomes empty, so it encodes
// as [].
func ClonePlacements(ps []Placement) []Placement {
	return append(make([]Placement, 0, len(ps)), ps...)
}

// Validate checks the file's invariants and reports every violation found
// (wrapping ErrInvalidFile): a valid table name and txnid, txnseq >= 1 with a
// parent exactly when txnseq > 1, at least one partition, partitions sorted,
// contiguous and covering the whole axis with non-empty ranges, partition and
// child ids non-nil and unique, placement ids non-nil and unique in the file,
// no server twice in a partition's servers ∪ joining (nor in a child), and
// well-formed splits. A partition may have no servers (every replica lost).
func (f *File) Validate() error {
	var p problems
	f.validateHeader(&p)
	if len(f.Partitions) == 0 {
		p.addf("partitions: empty")
	}
	v := validator{p: &p, ids: make(map[uuid.UUID]loc), placements: make(map[uuid.UUID]loc)}
	for i := range f.Partitions {
		v.partition(f, i)
	}
	return p.err(ErrInvalidFile)
}

func (f *File) validateHeader(p *problems) {
	if err := ValidateTableName(f.Table); err != nil {
		p.add(fmt.Errorf("table: %w", err))
	}
	if !ValidTxnID(f.TxnID) {
		p.addf("txnid: %q is not 40 lowercase hex characters", f.TxnID)
	}
	switch {
	case f.TxnSeq == 0:
		p.addf("txnseq: must be at least 1")
	case f.TxnSeq == 1 && f.ParentTxnID != "":
		p.addf("parent_txnid: must be empty at txnseq 1, got %q", f.ParentTxnID)
	case f.TxnSeq > 1 && !ValidTxnID(f.ParentTxnID):
		p.addf("parent_txnid: %q is not 40 lowercase hex characters", f.ParentTxnID)
	case f.TxnSeq > 1 && f.ParentTxnID == f.TxnID:
		p.addf("parent_txnid: equals txnid")
	}
}

// ValidTxnID reports whether s has the form of a txnid: 40 lowercase hex
// characters (160 bits, as metadata.NewTxnID draws them).
func ValidTxnID(s string) bool {
	if len(s) != txnIDHexLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// txnIDHexLen is the length of a txnid in hex digits.
const txnIDHexLen = 40

// loc names a place in a file, formatted only when a problem is reported
// (formatting every place made validation a fifth of Decode's time).
type loc struct {
	part  int    // partition index
	child int    // split child index, or -1
	list  string // "servers" or "joining", or "" for the entry itself
	idx   int    // index in list
}

func (l loc) String() string {
	s := fmt.Sprintf("partitions[%d]", l.part)
	if l.child >= 0 {
		s += fmt.Sprintf(".split.children[%d]", l.child)
	}
	if l.list != "" {
		s += fmt.Sprintf(".%s[%d]", l.list, l.idx)
	}
	return s
}

// validator checks partitions one by one, remembering the ids and
// placement ids seen so far.
type validator struct {
	p          *problems
	ids        map[uuid.UUID]loc
	placements map[uuid.UUID]loc
}

func (v *validator) partition(f *File, i int) {
	p, part := v.p, &f.Partitions[i]
	where := loc{part: i, child: -1}
	n := len(f.Partitions)
	if i == 0 && part.Begin != nil {
		p.addf("%v: begin must be open (null) on the first partition", where)
	}
	if i == n-1 && part.End != nil {
		p.addf("%v: end must be open (null) on the last partition", where)
	}
	if i > 0 && part.Begin == nil {
		p.addf("%v: begin must be set on all but the first partition", where)
	}
	if i < n-1 && part.End == nil {
		p.addf("%v: end must be set on all but the last partition", where)
	}
	if part.Begin != nil && part.End != nil && *part.Begin >= *part.End {
		p.addf("%v: empty range [%d, %d)", where, *part.Begin, *part.End)
	}
	if i > 0 {
		prev := f.Partitions[i-1].End
		if prev != nil && part.Begin != nil && *prev != *part.Begin {
			p.addf("%v: begin %d does not meet the previous end %d", where, *part.Begin, *prev)
		}
	}
	v.uniqueID(part.ID, where)
	seen := make(map[string]bool, len(part.Servers)+len(part.Joining))
	v.placementList(seen, part.Servers, where, "servers")
	v.placementList(seen, part.Joining, where, "joining")
	if part.Split != nil {
		v.split(part, i)
	}
}

func (v *validator) split(part *Partition, i int) {
	p, s := v.p, part.Split
	where := fmt.Sprintf("partitions[%d].split", i)
	if len(s.Points) == 0 {
		p.addf("%s: no split points", where)
	}
	for j, pt := range s.Points {
		if j > 0 && pt <= s.Points[j-1] {
			p.addf("%s.points: not strictly increasing at %d", where, j)
		}
		if !part.Contains(pt) || (part.Begin != nil && pt == *part.Begin) {
			p.addf("%s.points[%d]: %d is not strictly inside the partition", where, j, pt)
		}
	}
	if len(s.Children) != len(s.Points)+1 {
		p.addf("%s.children: want %d children for %d points, got %d", where, len(s.Points)+1, len(s.Points), len(s.Children))
		return
	}
	for j := range s.Children {
		c := &s.Children[j]
		cw := loc{part: i, child: j}
		wantBegin, wantEnd := part.Begin, part.End
		if j > 0 {
			wantBegin = &s.Points[j-1]
		}
		if j < len(s.Points) {
			wantEnd = &s.Points[j]
		}
		if !equalBound(c.Begin, wantBegin) || !equalBound(c.End, wantEnd) {
			p.addf("%v: range does not match the split points", cw)
		}
		v.uniqueID(c.ID, cw)
		if len(c.Servers) == 0 {
			p.addf("%v.servers: empty", cw)
		}
		v.placementList(make(map[string]bool, len(c.Servers)), c.Servers, cw, "servers")
	}
}

func (v *validator) uniqueID(id uuid.UUID, where loc) {
	if id == uuid.Nil {
		v.p.addf("%v: nil id", where)
		return
	}
	if prev, dup := v.ids[id]; dup {
		v.p.addf("%v: id %s already used by %v", where, id, prev)
		return
	}
	v.ids[id] = where
}

// placementList checks one list of placements; servers holds the server
// ids already seen in the same partition or child.
func (v *validator) placementList(servers map[string]bool, ps []Placement, owner loc, list string) {
	for k, pl := range ps {
		w := owner
		w.list, w.idx = list, k
		if pl.ServerID == "" {
			v.p.addf("%v: empty server_id", w)
		} else if servers[pl.ServerID] {
			v.p.addf("%v: server %q listed twice", w, pl.ServerID)
		}
		servers[pl.ServerID] = true
		if pl.PlacementID == uuid.Nil {
			v.p.addf("%v: nil placement_id", w)
		} else if prev, dup := v.placements[pl.PlacementID]; dup {
			v.p.addf("%v: placement_id %s already used by %v", w, pl.PlacementID, prev)
		} else {
			v.placements[pl.PlacementID] = w
		}
	}
}

func equalBound(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
