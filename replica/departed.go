package replica

import (
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/replication"
)

// A replica dropped from a shared data space (an UNLOAD split parent once
// every target confirmed everything) leaves a record for the members of
// that space created after it: which targets it delivered its whole log
// to. A split child asks for it when its pusher first sees a sibling
// target (Server.inherited): if the parent was dropped before the child
// started serving, as it usually is under load, the record answers what
// the live parent would have (replication.InheritHeld), instead of a row
// snapshot of the child's whole range to every sibling. The answer is
// final: a dropped replica's log never grows.
//
// The record also names the members the dropped replica covered (live at
// its drop, so its rows in their ranges stayed): a push to one of them is
// answered with the dropped replica among the sharers (alias
// confirmation), as it was while it lived. Under load a split's UNLOAD
// parent on the child's server is often dropped before another parent
// replica's first push to that child; without its name in the answer,
// that push would become a row snapshot of the child's range.
//
// Records live in memory; a restart forgets them and the pushes fall
// back to row snapshots.

// departedTTL is how long a departed record is kept: a child's pusher asks
// within seconds of the drop (it starts when the child serves, around
// the split's finalize), so a record older than this is only memory.
const departedTTL = 10 * time.Minute

// maxDeparted bounds the records kept, whatever their age.
const maxDeparted = 4096

// departedSharer is one dropped replica's record.
type departedSharer struct {
	info  partition.ReplicaInfo // its placement, range and CreatedAt
	space uuid.UUID             // the data space it shared
	// deliveries are its pusher's final Deliveries: for each target,
	// whether it confirmed the whole log.
	deliveries map[uuid.UUID]bool
	// covered are the live members of its space whose ranges its range
	// covered, read just before the drop: its rows in their ranges stay.
	covered []uuid.UUID
	at      time.Time // when it was dropped
}

// departedSharers are the records of a server. Its mutex is a leaf: the
// drop's predicate notes a record under the replica's apply lock.
type departedSharers struct {
	mu sync.Mutex
	m  map[uuid.UUID]departedSharer
}

// note records that the replica of info, in data space space and about
// to be dropped (the drop's predicate holds), delivered its log as
// deliveries say and covered the members covered. A replica that shared
// no rows leaves a record no other replica's data space matches.
func (d *departedSharers) note(info partition.ReplicaInfo, space uuid.UUID, deliveries map[uuid.UUID]bool, covered []uuid.UUID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = make(map[uuid.UUID]departedSharer)
	}
	for id, r := range d.m {
		if now.Sub(r.at) > departedTTL {
			delete(d.m, id)
		}
	}
	for id := range d.m {
		if len(d.m) < maxDeparted {
			break
		}
		delete(d.m, id)
	}
	d.m[info.Placement] = departedSharer{
		info: info, space: space, deliveries: deliveries, covered: covered, at: now,
	}
}

// inherited folds the records of replicas that shared the data space
// space of the replica of info, covered its range and were created before
// it into out (the answer of
// the live sharers): a record whose replica served target without
// delivering everything makes it InheritNone (that replica will never
// deliver the rest: the target needs the row snapshot); one that
// delivered everything makes it InheritHeld unless a live sharer is
// still delivering (InheritPending).
func (d *departedSharers) inherited(info partition.ReplicaInfo, space, target uuid.UUID, out replication.Inheritance) replication.Inheritance {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.m {
		if r.space != space || !r.info.CreatedAt.Before(info.CreatedAt) || !r.info.Covers(info) {
			continue
		}
		all, served := r.deliveries[target]
		switch {
		case !served:
		case !all:
			return replication.InheritNone
		case out == replication.InheritNone:
			out = replication.InheritHeld
		}
	}
	return out
}

// aliases returns the dropped replicas whose records name member as
// covered: each held, in member's range, every row it confirmed to a
// sender, and those rows stayed at its drop.
func (d *departedSharers) aliases(member uuid.UUID) []uuid.UUID {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []uuid.UUID
	for id, r := range d.m {
		if slices.Contains(r.covered, member) {
			out = append(out, id)
		}
	}
	return out
}
