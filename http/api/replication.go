package api

import (
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/errcode"
)

// Error codes of replication and forwarding.
const (
	// CodeStalePlacement (409): the receiver does not hold the named
	// placement as LOAD or SERVE (dropped, never created, or UNLOAD). The
	// sender re-runs discovery.
	CodeStalePlacement = errcode.CodeStalePlacement
	// CodeMoved (409): the partition is not served by the receiver under
	// the sender's view (split, moved, UNLOAD); the front end refreshes its
	// METADATA and retries.
	CodeMoved = errcode.CodeMoved
	// CodeOutcomeUnknownRows (503): the rows were written by the
	// coordinator but not confirmed by enough replicas before the
	// deadline; they may still appear.
	CodeOutcomeUnknownRows = errcode.CodeOutcomeUnknownRows
	// CodeCannotSplit (409): the partition's rows are all at one time (or
	// it has none), so no split point leaves rows on both sides.
	CodeCannotSplit = errcode.CodeCannotSplit
)

// Consistency levels of X-TSDB-Consistency.
const (
	ConsistencyOne    = "one"
	ConsistencyQuorum = "quorum"
	ConsistencyAll    = "all"
)

// ServerChangeRequest is the body of POST
// /api/v1/tables/{t}/partitions/{p}/join and …/leave.
type ServerChangeRequest struct {
	Server string `json:"server"`
	// Force (join only) is FORCE_JOIN: straight into servers[], for a
	// partition whose replicas are all gone.
	Force bool `json:"force,omitempty"`
}

// SplitRequest is the body of POST /api/v1/tables/{t}/partitions/{p}/split.
// At, when set, is the split point: RFC 3339 or integer nanoseconds, strictly
// inside the partition's range. Without it the server chooses a point near
// the middle of the partition's data by bytes.
type SplitRequest struct {
	At string `json:"at,omitempty"`
}

// SplitResponse answers a manual split: the transaction holding SPLIT_BEGIN,
// the split point and the children's ids in range order. The split finalizes
// once the children hold the parent's rows.
type SplitResponse struct {
	TxnID    string      `json:"txnid"`
	TxnSeq   uint64      `json:"txnseq"`
	At       int64       `json:"at"`
	Children []uuid.UUID `json:"children"`
}

// PartitionReplicas is one partition with its replicas' states, in the
// answer of GET /api/v1/tables/{t}?replicas=1.
type PartitionReplicas struct {
	Partition
	Replicas []ReplicaStatus `json:"replicas"`
}

// ReplicaStatus is one replica's state for inspection (tsdb admin
// partitions, GET /api/v1/tables/{t}?replicas=1).
type ReplicaStatus struct {
	Server      string    `json:"server"`
	Table       string    `json:"table"`
	PartitionID uuid.UUID `json:"partition_id"`
	Placement   uuid.UUID `json:"placement_id"`
	Begin       *int64    `json:"begin"`
	End         *int64    `json:"end"`
	// Status is the last discovery answer: LOAD, SERVE or UNLOAD.
	Status string `json:"status"`
	TxnSeq uint64 `json:"txnseq"`
	// Rows is the number of live rows (-1 if not counted): stored rows,
	// rows whose fields a delete tombstoned included.
	Rows int64 `json:"rows"`
	// Checksum is a hash of the replica's rows and versions: replicas
	// holding the same data have the same one.
	Checksum  string `json:"checksum,omitempty"`
	Bytes     uint64 `json:"bytes"`
	HighSeq   uint64 `json:"high_seq"`
	SyncedSeq uint64 `json:"synced_seq"`
	// LogStart is the log's truncation point: the log holds the entries
	// above it (0: never truncated). LogLength is HighSeq minus LogStart,
	// in sequences: the entries kept, at most (an entry whose row was
	// overwritten since is gone).
	LogStart  uint64 `json:"log_start"`
	LogLength uint64 `json:"log_length"`
	// Snapshots counts this replica's row snapshots to targets below its
	// truncation point, since the server started the replica.
	Snapshots SnapshotCounts `json:"snapshots,omitzero"`
	// Moved is what this replica's confirmed pushes carried since the
	// server started it, by kind (MovedPush, MovedSnapshot, MovedSplit,
	// MovedJoin); a kind that moved nothing is left out.
	Moved map[string]Moved `json:"moved,omitempty"`
	// Targets is the replication state towards each target.
	Targets []TargetStatus `json:"targets"`
}

// SnapshotCounts are a replica's row snapshots: in progress, and ended by
// result.
type SnapshotCounts struct {
	Active  int    `json:"active"`
	Done    uint64 `json:"done"`
	Failed  uint64 `json:"failed,omitempty"`
	Dropped uint64 `json:"dropped,omitempty"`
}

// Moved is the rows and bytes (encoded rows, before the transport's
// compression) of one kind of push.
type Moved struct {
	Rows  uint64 `json:"rows"`
	Bytes uint64 `json:"bytes"`
}

// TargetStatus is the replication state from one replica to one target.
type TargetStatus struct {
	Server    string    `json:"server"`
	Placement uuid.UUID `json:"placement_id"`
	// PartitionID is the target's partition (a split child's id for kind
	// split).
	PartitionID uuid.UUID `json:"partition_id"`
	// Kind is replica, joining or split.
	Kind string `json:"kind"`
	// Mark, for a joining or split target, is the sender's synced sequence
	// when it first saw the target; MarkReached says Confirmed passed it.
	Mark        uint64 `json:"mark,omitempty"`
	MarkReached bool   `json:"mark_reached,omitempty"`
	Confirmed   uint64 `json:"confirmed"`
	// Lag is the sender's synced sequence minus Confirmed.
	Lag       uint64    `json:"lag"`
	LastError string    `json:"last_error,omitempty"`
	LastPush  time.Time `json:"last_push,omitempty"`
}

// The values of ReplicaStatus.Status (the discovery statuses, DESIGN.md
// section 4) and of TargetStatus.Kind.
const (
	StatusLoad   = "LOAD"
	StatusServe  = "SERVE"
	StatusUnload = "UNLOAD"
	StatusDrop   = "DROP"

	TargetReplica = "replica"
	TargetJoining = "joining"
	TargetSplit   = "split"
)

// The kinds of ReplicaStatus.Moved (and of the label kind of the metrics
// tsdb_moved_rows_total and tsdb_moved_bytes_total): rows a replica target
// got from the log, rows read from a row snapshot (whatever the target's
// kind), rows a split or a joining target got from the log.
const (
	MovedPush     = "push"
	MovedSnapshot = "snapshot"
	MovedSplit    = "split"
	MovedJoin     = "join"
)
