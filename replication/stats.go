package replication

import (
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
)

// MoveKind says what a push moved, for the moved-data metrics (issue 16):
// the kind is decided where the batch is made, from the target's kind and
// whether the batch was read from a row snapshot (PushRequest.Snapshot).
type MoveKind string

// The kinds of MoveKind.
const (
	// MovePush: a replica target's rows read from the log (replication of
	// new rows, or catching up a target that was down).
	MovePush MoveKind = "push"
	// MoveSnapshot: rows read from a row snapshot (a target below the
	// log's truncation point), whatever the target's kind.
	MoveSnapshot MoveKind = "snapshot"
	// MoveSplit: a split target's rows read from the log (its backfill
	// from the mark's log snapshot, then its tail stream).
	MoveSplit MoveKind = "split"
	// MoveJoin: a joining target's rows read from the log.
	MoveJoin MoveKind = "join"
)

// MoveKinds lists every MoveKind, in the order the admin shows them.
var MoveKinds = []MoveKind{MovePush, MoveSnapshot, MoveSplit, MoveJoin}

// KindOf classifies a push to a target of kind target: snapshot for a
// batch read from a row snapshot, else by the target's kind (push for a
// replica target, and for a kind this version does not know).
func KindOf(target metadata.TargetKind, req wire.PushRequest) MoveKind {
	switch {
	case req.Snapshot:
		return MoveSnapshot
	case target == metadata.TargetSplit:
		return MoveSplit
	case target == metadata.TargetJoining:
		return MoveJoin
	default:
		return MovePush
	}
}

// PushBytes is what a push moves, in bytes, for the metrics: its encoded
// rows, before the transport's compression.
func PushBytes(req wire.PushRequest) int { return len(req.Rows) }

// The results of a row snapshot, as Config.OnSnapshotEnd and Stats give
// them.
const (
	// SnapshotDone: its last batch was confirmed.
	SnapshotDone = "done"
	// SnapshotFailed: reading it failed; the next step starts a new one.
	SnapshotFailed = "failed"
	// SnapshotDropped: abandoned before its end (the target's goroutine
	// stopped, the target's cursor got past it another way, the target's
	// range changed).
	SnapshotDropped = "dropped"
)

// snapshotResult maps dropRowSnap's reason to a result.
func snapshotResult(why string) string {
	switch why {
	case "done":
		return SnapshotDone
	case "failed":
		return SnapshotFailed
	default:
		return SnapshotDropped
	}
}

// Moved counts rows and bytes (PushBytes) delivered.
type Moved struct {
	Rows, Bytes uint64
}

// Stats is what a Pusher moved since it was created: rows and bytes of
// the pushes its targets confirmed, by kind, and its row snapshots.
type Stats struct {
	// Moved has an entry per kind that moved anything.
	Moved map[MoveKind]Moved
	// SnapshotsActive is the row snapshots in progress (one target has
	// at most one).
	SnapshotsActive int
	// SnapshotsDone, SnapshotsFailed and SnapshotsDropped count the row
	// snapshots that ended, by result.
	SnapshotsDone, SnapshotsFailed, SnapshotsDropped uint64
	// SharedConfirms counts the times a target that shares this
	// replica's rows (SharingLog) was confirmed without a push.
	SharedConfirms uint64
	// AliasConfirms counts the times a target was confirmed up to this
	// Pusher's cursor for a replica on its server that shares its rows
	// and covers its range (wire.PushResponse.Shares), without a push.
	AliasConfirms uint64
	// InheritedConfirms counts the targets whose cursor moved to 1
	// without a row snapshot: the replicas this one inherited its rows
	// from delivered them (Config.Inherited).
	InheritedConfirms uint64
}

// pusherStats are a Pusher's counters behind Stats (atomics: the target
// goroutines update them, Stats reads them at any time).
type pusherStats struct {
	rows, bytes           [4]atomic.Uint64 // indexed like MoveKinds
	active                atomic.Int64
	done, failed, dropped atomic.Uint64
	sharedConfirms        atomic.Uint64
	aliasConfirms         atomic.Uint64
	inheritedConfirms     atomic.Uint64
}

func moveIndex(k MoveKind) int {
	switch k {
	case MoveSnapshot:
		return 1
	case MoveSplit:
		return 2
	case MoveJoin:
		return 3
	default:
		return 0
	}
}

// countMoved records a delivered push of kind k.
func (s *pusherStats) countMoved(k MoveKind, req wire.PushRequest) {
	i := moveIndex(k)
	s.rows[i].Add(uint64(req.Count))
	s.bytes[i].Add(uint64(PushBytes(req)))
}

// Stats returns what p moved since it was created.
func (p *Pusher) Stats() Stats {
	s := &p.stats
	out := Stats{
		Moved:           map[MoveKind]Moved{},
		SnapshotsActive: int(s.active.Load()),
		SnapshotsDone:   s.done.Load(), SnapshotsFailed: s.failed.Load(), SnapshotsDropped: s.dropped.Load(),
		SharedConfirms:    s.sharedConfirms.Load(),
		AliasConfirms:     s.aliasConfirms.Load(),
		InheritedConfirms: s.inheritedConfirms.Load(),
	}
	for _, k := range MoveKinds {
		i := moveIndex(k)
		if m := (Moved{Rows: s.rows[i].Load(), Bytes: s.bytes[i].Load()}); m != (Moved{}) {
			out.Moved[k] = m
		}
	}
	return out
}

// snapshotStarted counts a row snapshot started towards a target.
func (p *Pusher) snapshotStarted() { p.stats.active.Add(1) }

// snapshotEnded counts a row snapshot that ended with result (after rows
// delivered in elapsed) and calls Config.OnSnapshotEnd.
func (p *Pusher) snapshotEnded(target uuid.UUID, rows int, elapsed time.Duration, result string) {
	p.stats.active.Add(-1)
	switch result {
	case SnapshotDone:
		p.stats.done.Add(1)
	case SnapshotFailed:
		p.stats.failed.Add(1)
	default:
		p.stats.dropped.Add(1)
	}
	if p.cfg.OnSnapshotEnd != nil {
		p.cfg.OnSnapshotEnd(target, rows, elapsed, result)
	}
}
