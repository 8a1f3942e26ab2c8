package metadata

import (
	"fmt"

	"github.com/google/uuid"
)

// JoinServerOp adds a server to a current partition's joining list (DESIGN.md
// section 5): it receives pushes and serves nothing until JOIN_FINALIZE.
type JoinServerOp struct {
	// PartitionID is the partition to join; it must not be splitting.
	PartitionID uuid.UUID `json:"partition_id"`
	// Placement is the server with a fresh placement id, appended to joining.
	Placement Placement `json:"placement"`
}

// JoinFinalizeOp moves a joining server into servers, keeping its
// placement: the server has received everything from a majority of servers.
type JoinFinalizeOp struct {
	// PartitionID is the partition.
	PartitionID uuid.UUID `json:"partition_id"`
	// ServerID is the joining server; it is appended to servers.
	ServerID string `json:"server_id"`
}

// RemoveServerOp removes a server from a current partition's servers or
// joining list. Unless Dead, it never takes servers ∪ joining below
// ReplicationFactor and never removes the last server while nobody is
// joining (rule 9).
type RemoveServerOp struct {
	// PartitionID is the partition.
	PartitionID uuid.UUID `json:"partition_id"`
	// ServerID is the server to remove.
	ServerID string `json:"server_id"`
	// Dead is set when the server is gone for good, which lifts both
	// limits: its data cannot be saved by keeping it listed.
	Dead bool `json:"dead"`
	// ReplicationFactor is the table's replication factor (at least 1).
	ReplicationFactor int `json:"replication_factor"`
}

// ForceJoinOp puts a server straight into servers of a partition that has
// lost every replica (servers is empty), so the range can take writes again.
type ForceJoinOp struct {
	// PartitionID is the partition; its servers must be empty and it must
	// not be splitting.
	PartitionID uuid.UUID `json:"partition_id"`
	// Placement is the server with a fresh placement id.
	Placement Placement `json:"placement"`
}

func applyJoinServer(next *File, op *JoinServerOp) (*File, error) {
	p, err := currentPartition(next, op.PartitionID)
	if err != nil {
		return nil, err
	}
	if p.Split != nil {
		return nil, fmt.Errorf("partition %s is splitting; JOIN_SERVER waits for SPLIT_FINALIZE or SPLIT_ABORT", p.ID)
	}
	if err := checkFreshPlacement(next, p, op.Placement); err != nil {
		return nil, err
	}
	p.Joining = append(p.Joining, op.Placement)
	return next, nil
}

func applyJoinFinalize(next *File, op *JoinFinalizeOp) (*File, error) {
	p, err := currentPartition(next, op.PartitionID)
	if err != nil {
		return nil, err
	}
	i := placementIndex(p.Joining, op.ServerID)
	if i < 0 {
		if placementIndex(p.Servers, op.ServerID) >= 0 {
			return nil, fmt.Errorf("server %q already serves partition %s", op.ServerID, p.ID)
		}
		return nil, fmt.Errorf("server %q is not joining partition %s", op.ServerID, p.ID)
	}
	p.Servers = append(p.Servers, p.Joining[i])
	p.Joining = removeAt(p.Joining, i)
	return next, nil
}

func applyRemoveServer(next *File, op *RemoveServerOp) (*File, error) {
	p, err := currentPartition(next, op.PartitionID)
	if err != nil {
		return nil, err
	}
	if op.ReplicationFactor < 1 {
		return nil, fmt.Errorf("replication_factor %d must be at least 1", op.ReplicationFactor)
	}
	si, ji := placementIndex(p.Servers, op.ServerID), placementIndex(p.Joining, op.ServerID)
	if si < 0 && ji < 0 {
		return nil, fmt.Errorf("server %q is not listed for partition %s", op.ServerID, p.ID)
	}
	if !op.Dead {
		if si >= 0 && len(p.Servers) == 1 && len(p.Joining) == 0 {
			return nil, fmt.Errorf("server %q is the last server of partition %s and nobody is joining; "+
				"its data would be gone (remove it only as dead)", op.ServerID, p.ID)
		}
		if left := len(p.Servers) + len(p.Joining) - 1; left < op.ReplicationFactor {
			return nil, fmt.Errorf("removing server %q would leave %d in servers ∪ joining of partition %s, "+
				"below the replication factor %d; join a replacement first or remove it as dead",
				op.ServerID, left, p.ID, op.ReplicationFactor)
		}
	}
	if si >= 0 {
		p.Servers = removeAt(p.Servers, si)
	} else {
		p.Joining = removeAt(p.Joining, ji)
	}
	return next, nil
}

func applyForceJoin(next *File, op *ForceJoinOp) (*File, error) {
	p, err := currentPartition(next, op.PartitionID)
	if err != nil {
		return nil, err
	}
	switch {
	case p.Split != nil:
		return nil, fmt.Errorf("partition %s is splitting; abort the split before FORCE_JOIN", p.ID)
	case len(p.Servers) > 0:
		return nil, fmt.Errorf("partition %s still has servers %q; FORCE_JOIN is only for a partition that lost every replica",
			p.ID, serverIDs(p.Servers))
	}
	if err := checkFreshPlacement(next, p, op.Placement); err != nil {
		return nil, err
	}
	p.Servers = append(p.Servers, op.Placement)
	return next, nil
}

// checkFreshPlacement checks a placement an op adds to partition p: a
// server id, a server not yet in p's servers ∪ joining, and a non-nil
// placement id unused anywhere in the file.
func checkFreshPlacement(f *File, p *Partition, pl Placement) error {
	switch {
	case pl.ServerID == "":
		return fmt.Errorf("placement: empty server_id")
	case pl.PlacementID == uuid.Nil:
		return fmt.Errorf("placement: nil placement_id for server %q", pl.ServerID)
	case placementIndex(p.Servers, pl.ServerID) >= 0:
		return fmt.Errorf("server %q already serves partition %s", pl.ServerID, p.ID)
	case placementIndex(p.Joining, pl.ServerID) >= 0:
		return fmt.Errorf("server %q is already joining partition %s", pl.ServerID, p.ID)
	case usedPlacements(f)[pl.PlacementID]:
		return fmt.Errorf("placement_id %s for server %q is already used in the file", pl.PlacementID, pl.ServerID)
	}
	return nil
}

// placementIndex returns the index of serverID in ps, or -1.
func placementIndex(ps []Placement, serverID string) int {
	for i, pl := range ps {
		if pl.ServerID == serverID {
			return i
		}
	}
	return -1
}

// removeAt returns a new slice of ps without element i.
func removeAt(ps []Placement, i int) []Placement {
	out := make([]Placement, 0, len(ps)-1)
	out = append(out, ps[:i]...)
	return append(out, ps[i+1:]...)
}
