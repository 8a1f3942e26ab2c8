package metadata

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// OpType names a METADATA operation (DESIGN.md section 4).
type OpType string

// The operations, each one case of Apply with its own body field in Op.
const (
	OpCreate         OpType = "CREATE"
	OpSplitBegin     OpType = "SPLIT_BEGIN"
	OpSplitFinalize  OpType = "SPLIT_FINALIZE"
	OpSplitAbort     OpType = "SPLIT_ABORT"
	OpJoinServer     OpType = "JOIN_SERVER"
	OpJoinFinalize   OpType = "JOIN_FINALIZE"
	OpRemoveServer   OpType = "REMOVE_SERVER"
	OpForceJoin      OpType = "FORCE_JOIN"
	OpSetOffline     OpType = "SET_OFFLINE"
	OpDropPartitions OpType = "DROP_PARTITIONS"
)

// Op is one METADATA operation. Exactly one body, the one matching Type, is
// set. Every choice the op makes (ids, placements, servers, split points) is
// carried in the body, so Apply is deterministic.
type Op struct {
	// Type selects the operation.
	Type OpType `json:"type"`
	// Create is the body of CREATE.
	Create *CreateOp `json:"create,omitempty"`
	// SetOffline is the body of SET_OFFLINE.
	SetOffline *SetOfflineOp `json:"set_offline,omitempty"`
	// SplitBegin is the body of SPLIT_BEGIN.
	SplitBegin *SplitBeginOp `json:"split_begin,omitempty"`
	// SplitFinalize is the body of SPLIT_FINALIZE.
	SplitFinalize *SplitFinalizeOp `json:"split_finalize,omitempty"`
	// SplitAbort is the body of SPLIT_ABORT.
	SplitAbort *SplitAbortOp `json:"split_abort,omitempty"`
	// JoinServer is the body of JOIN_SERVER.
	JoinServer *JoinServerOp `json:"join_server,omitempty"`
	// JoinFinalize is the body of JOIN_FINALIZE.
	JoinFinalize *JoinFinalizeOp `json:"join_finalize,omitempty"`
	// RemoveServer is the body of REMOVE_SERVER.
	RemoveServer *RemoveServerOp `json:"remove_server,omitempty"`
	// ForceJoin is the body of FORCE_JOIN.
	ForceJoin *ForceJoinOp `json:"force_join,omitempty"`
	// DropPartitions is the body of DROP_PARTITIONS.
	DropPartitions *DropPartitionsOp `json:"drop_partitions,omitempty"`
}

// CreateOp creates a table's first file: one partition covering the whole
// time axis, held by Servers, or, with Points, a table born pre-split
// (docs/master.md, "A new table is born pre-split"): the first partition
// ends at Points[0] and Rest[i] covers [Points[i], Points[i+1]), the last
// one open. No data exists yet, so nothing is split or copied.
type CreateOp struct {
	// Table is the new table's name.
	Table string `json:"table"`
	// PartitionID is the id of the first partition.
	PartitionID uuid.UUID `json:"partition_id"`
	// Servers are the first partition's servers with fresh placement ids, in
	// the order they will be listed.
	Servers []Placement `json:"servers"`
	// Points are the boundaries of a table born pre-split, strictly
	// increasing; empty for one partition.
	Points []int64 `json:"points,omitempty"`
	// Rest are the partitions after the first, one per point, with fresh
	// partition ids and placements.
	Rest []SplitChild `json:"rest,omitempty"`
}

// SetOfflineOp marks a current partition offline, or back online.
type SetOfflineOp struct {
	// PartitionID is the partition to change.
	PartitionID uuid.UUID `json:"partition_id"`
	// Offline is the new state.
	Offline bool `json:"offline"`
}

// bodies counts the op bodies that are set.
func (op Op) bodies() int {
	n := 0
	for _, set := range []bool{
		op.Create != nil, op.SetOffline != nil,
		op.SplitBegin != nil, op.SplitFinalize != nil, op.SplitAbort != nil,
		op.JoinServer != nil, op.JoinFinalize != nil, op.RemoveServer != nil,
		op.ForceJoin != nil, op.DropPartitions != nil,
	} {
		if set {
			n++
		}
	}
	return n
}

// Apply applies op to base and returns the new file named newTxnID. It is
// pure: base is not modified, and the same (base, newTxnID, op) always
// yields a file with identical encoding. base is nil only for CREATE. The
// result has TxnSeq base.TxnSeq+1 (1 for CREATE) and ParentTxnID base.TxnID
// ("" for CREATE), and is validated. Every failure wraps ErrInvalidOp and
// says why.
func Apply(base *File, newTxnID string, op Op) (*File, error) {
	if err := checkApply(base, newTxnID, op); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidOp, op.Type, err)
	}
	var next *File
	var err error
	switch op.Type {
	case OpCreate:
		next, err = applyCreate(base, newTxnID, op.Create)
	case OpSetOffline:
		next, err = applySetOffline(derive(base, newTxnID), op.SetOffline)
	case OpSplitBegin:
		next, err = applySplitBegin(derive(base, newTxnID), op.SplitBegin)
	case OpSplitFinalize:
		next, err = applySplitFinalize(derive(base, newTxnID), op.SplitFinalize)
	case OpSplitAbort:
		next, err = applySplitAbort(derive(base, newTxnID), op.SplitAbort)
	case OpJoinServer:
		next, err = applyJoinServer(derive(base, newTxnID), op.JoinServer)
	case OpJoinFinalize:
		next, err = applyJoinFinalize(derive(base, newTxnID), op.JoinFinalize)
	case OpRemoveServer:
		next, err = applyRemoveServer(derive(base, newTxnID), op.RemoveServer)
	case OpForceJoin:
		next, err = applyForceJoin(derive(base, newTxnID), op.ForceJoin)
	case OpDropPartitions:
		next, err = applyDropPartitions(derive(base, newTxnID), op.DropPartitions)
	default:
		err = fmt.Errorf("op type not supported")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidOp, op.Type, err)
	}
	if err := next.Validate(); err != nil {
		// An op whose preconditions passed must not produce a broken map;
		// refusing it keeps the broken file out of every store.
		return nil, fmt.Errorf("%w: %s produced an invalid file: %w", ErrInvalidOp, op.Type, err)
	}
	return next, nil
}

// checkApply checks what every op shares: the new txnid, the base, and that
// exactly the body matching the type is set.
func checkApply(base *File, newTxnID string, op Op) error {
	if !ValidTxnID(newTxnID) {
		return fmt.Errorf("new txnid %q is not 40 lowercase hex characters", newTxnID)
	}
	if op.Type != OpCreate && base == nil {
		return fmt.Errorf("no base file")
	}
	if base != nil && base.TxnID == newTxnID {
		return fmt.Errorf("new txnid equals the base txnid")
	}
	if op.bodies() != 1 {
		return fmt.Errorf("want exactly one op body, got %d", op.bodies())
	}
	if !op.bodyMatchesType() {
		return fmt.Errorf("the op body does not match the op type")
	}
	return nil
}

// bodyMatchesType reports whether the body of op.Type is the one set. An
// unknown type passes here and is refused by Apply.
func (op Op) bodyMatchesType() bool {
	switch op.Type {
	case OpCreate:
		return op.Create != nil
	case OpSetOffline:
		return op.SetOffline != nil
	case OpSplitBegin:
		return op.SplitBegin != nil
	case OpSplitFinalize:
		return op.SplitFinalize != nil
	case OpSplitAbort:
		return op.SplitAbort != nil
	case OpJoinServer:
		return op.JoinServer != nil
	case OpJoinFinalize:
		return op.JoinFinalize != nil
	case OpRemoveServer:
		return op.RemoveServer != nil
	case OpForceJoin:
		return op.ForceJoin != nil
	case OpDropPartitions:
		return op.DropPartitions != nil
	}
	return true
}

// derive returns a deep copy of base as the next transaction newTxnID.
func derive(base *File, newTxnID string) *File {
	next := base.Clone()
	next.TxnID = newTxnID
	next.TxnSeq = base.TxnSeq + 1
	next.ParentTxnID = base.TxnID
	return next
}

func applyCreate(base *File, newTxnID string, op *CreateOp) (*File, error) {
	if base != nil {
		return nil, fmt.Errorf("table %q already has a metadata file (txnid %s)", base.Table, base.TxnID)
	}
	if err := model.ValidateTableName(op.Table); err != nil {
		return nil, err
	}
	if op.PartitionID == uuid.Nil {
		return nil, fmt.Errorf("nil partition_id")
	}
	if err := checkNewPlacements(op.Servers); err != nil {
		return nil, err
	}
	parts, err := createdPartitions(op)
	if err != nil {
		return nil, err
	}
	return &File{
		Table:       op.Table,
		TxnID:       newTxnID,
		TxnSeq:      1,
		ParentTxnID: "",
		Partitions:  parts,
	}, nil
}

// createdPartitions returns the partitions a CREATE makes, in range order,
// after checking its points and the partitions after the first: as many
// as points, points strictly increasing, partition and placement ids
// fresh and distinct across the file.
func createdPartitions(op *CreateOp) ([]Partition, error) {
	if len(op.Rest) != len(op.Points) {
		return nil, fmt.Errorf("%d points need as many partitions after the first, got %d", len(op.Points), len(op.Rest))
	}
	parts := []Partition{{ID: op.PartitionID, Servers: model.ClonePlacements(op.Servers), Joining: []Placement{}}}
	ids := map[uuid.UUID]bool{op.PartitionID: true}
	placements := map[uuid.UUID]bool{}
	for _, p := range op.Servers {
		placements[p.PlacementID] = true
	}
	for i, c := range op.Rest {
		switch {
		case i > 0 && op.Points[i] <= op.Points[i-1]:
			return nil, fmt.Errorf("points[%d] = %d is not above points[%d] = %d", i, op.Points[i], i-1, op.Points[i-1])
		case c.ID == uuid.Nil:
			return nil, fmt.Errorf("rest[%d]: nil id", i)
		case ids[c.ID]:
			return nil, fmt.Errorf("rest[%d]: partition id %s used twice", i, c.ID)
		}
		if err := checkNewPlacements(c.Servers); err != nil {
			return nil, fmt.Errorf("rest[%d]: %w", i, err)
		}
		for _, p := range c.Servers {
			if placements[p.PlacementID] {
				return nil, fmt.Errorf("rest[%d]: placement_id %s used twice", i, p.PlacementID)
			}
			placements[p.PlacementID] = true
		}
		ids[c.ID] = true
		end, begin := op.Points[i], op.Points[i]
		parts[i].End = &end
		parts = append(parts, Partition{ID: c.ID, Begin: &begin, Servers: model.ClonePlacements(c.Servers), Joining: []Placement{}})
	}
	return parts, nil
}

// checkNewPlacements checks a non-empty list of servers an op assigns: ids
// set, no server twice, placement ids non-nil and distinct.
func checkNewPlacements(ps []Placement) error {
	if len(ps) == 0 {
		return fmt.Errorf("no servers")
	}
	servers := make(map[string]bool, len(ps))
	placements := make(map[uuid.UUID]bool, len(ps))
	for i, p := range ps {
		switch {
		case p.ServerID == "":
			return fmt.Errorf("servers[%d]: empty server_id", i)
		case servers[p.ServerID]:
			return fmt.Errorf("servers[%d]: duplicate server %q", i, p.ServerID)
		case p.PlacementID == uuid.Nil:
			return fmt.Errorf("servers[%d]: nil placement_id", i)
		case placements[p.PlacementID]:
			return fmt.Errorf("servers[%d]: duplicate placement_id %s", i, p.PlacementID)
		}
		servers[p.ServerID] = true
		placements[p.PlacementID] = true
	}
	return nil
}

func applySetOffline(next *File, op *SetOfflineOp) (*File, error) {
	p, ok := next.Partition(op.PartitionID)
	if !ok {
		return nil, fmt.Errorf("partition %s is not a current partition", op.PartitionID)
	}
	if p.Offline == op.Offline {
		return nil, fmt.Errorf("partition %s already has offline=%t", op.PartitionID, op.Offline)
	}
	p.Offline = op.Offline
	return next, nil
}
