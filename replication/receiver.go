package replication

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// Applier is a local replica receiving pushes; *partition.Replica
// implements it.
type Applier interface {
	// ApplyFrom stores rows pushed from the placement origin and records
	// origin with each row whose stored value it alone wrote (see
	// partition.Replica.ApplyFrom), so that this replica's pushes do not
	// send the row back there.
	ApplyFrom(rows []model.Row, origin uuid.UUID) (partition.ApplyResult, error)
}

// ChunkApplier is an Applier that stores a row snapshot's chunks
// (partition.IsChunk) as they are: IngestChunk checks the chunk holds
// count rows, records origin like ApplyFrom, and returns once they are
// synced.
type ChunkApplier interface {
	Applier
	IngestChunk(chunk []byte, count int, origin uuid.UUID) (partition.ApplyResult, error)
}

// Receive decodes req.Rows and applies them to a; when it returns nil the
// rows are synced (Apply's contract), so the caller may confirm the push.
// A row snapshot's chunk (partition.IsChunk) goes to a as it is, which
// must then be a ChunkApplier: it ingests the chunk, synced.
// It returns the number of rows received. An empty push (no rows, as a
// Complete signal) applies nothing. A body that does not decode, or holds
// another number of rows than req.Count, fails with ErrCorrupt before
// anything is applied. Checking that the receiver holds req.ToPlacement as
// LOAD or SERVE (else stale placement) is the caller's job.
func Receive(a Applier, req wire.PushRequest) (int, error) {
	if len(req.Rows) == 0 {
		if req.Count != 0 {
			return 0, fmt.Errorf("%w: push from %s claims %d rows and has none", ErrCorrupt, req.FromServer, req.Count)
		}
		return 0, nil
	}
	if partition.IsChunk(req.Rows) {
		ca, ok := a.(ChunkApplier)
		if !ok {
			return 0, fmt.Errorf("%w: push from %s holds a snapshot chunk this replica cannot ingest", ErrCorrupt, req.FromServer)
		}
		if _, err := ca.IngestChunk(req.Rows, req.Count, req.FromPlacement); err != nil {
			if errors.Is(err, partition.ErrCorrupt) {
				err = fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			return 0, fmt.Errorf("replication: ingest push from %s to %s: %w", req.FromServer, req.ToPlacement, err)
		}
		return req.Count, nil
	}
	rows, err := DecodeRows(req.Rows)
	if err != nil {
		return 0, fmt.Errorf("replication: push from %s to %s: %w", req.FromServer, req.ToPlacement, err)
	}
	if len(rows) != req.Count {
		return 0, fmt.Errorf("%w: push from %s claims %d rows and holds %d", ErrCorrupt, req.FromServer, req.Count, len(rows))
	}
	if len(rows) == 0 {
		return 0, nil
	}
	if _, err := a.ApplyFrom(rows, req.FromPlacement); err != nil {
		return 0, fmt.Errorf("replication: apply push from %s to %s: %w", req.FromServer, req.ToPlacement, err)
	}
	return len(rows), nil
}

// JoinProgress records, per receiving placement, which sending servers
// said Complete: they have pushed everything they held when they first saw
// the join (DESIGN.md section 5). A joining server finalizes once a
// majority of the partition's servers are in Complete. A Complete, once
// recorded, stays until Forget: it remains true when a restarted sender
// later pushes with Complete=false until it reaches its new mark. The
// zero value is ready to use; it is safe for concurrent use.
type JoinProgress struct {
	mu struct {
		sync.Mutex
		// complete holds, per receiving placement, the senders that
		// said Complete.
		complete map[uuid.UUID]map[string]struct{}
	}
}

// Record notes a push from fromServer to placement; complete is the push's
// Complete flag.
func (j *JoinProgress) Record(placement uuid.UUID, fromServer string, complete bool) {
	if !complete {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.mu.complete == nil {
		j.mu.complete = make(map[uuid.UUID]map[string]struct{})
	}
	set := j.mu.complete[placement]
	if set == nil {
		set = make(map[string]struct{})
		j.mu.complete[placement] = set
	}
	set[fromServer] = struct{}{}
}

// Complete returns the servers that said Complete to placement, sorted.
func (j *JoinProgress) Complete(placement uuid.UUID) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	set := j.mu.complete[placement]
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Forget drops what was recorded for placement (it finished joining or was
// dropped).
func (j *JoinProgress) Forget(placement uuid.UUID) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.mu.complete, placement)
}
