package partition

import (
	"fmt"
	"maps"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"
)

// Replication cursors (DESIGN.md section 5): for each target placement
// this replica pushes to, the highest sequence of this replica the target
// confirmed holding. A cursor is stored under prefix|'c'|target, so the
// DeleteRange of a drop removes it with the data.
//
// Cursor writes are not synced. Losing one in a crash only makes the
// lifecycle loop push again rows the target already holds, which the merge
// rule makes harmless (ties change nothing), and a cursor can never come
// back higher than it was. What must never happen is a cursor above data
// the replica might lose: SetConfirmed refuses a sequence above the synced
// watermark, and everything at or below it is durable, so after a crash
// every stored cursor still points at or below the replica's high sequence
// and no sequence it covers is reused (rule 1).

// loadCursors reads the replica's cursors at Open.
func (r *Replica) loadCursors() error {
	it, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.curLo, UpperBound: r.ks.curHi})
	if err != nil {
		return fmt.Errorf("partition: replica %s: read cursors: %w", r.info.Placement, err)
	}
	defer it.Close()
	r.cursors.Lock()
	defer r.cursors.Unlock()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("partition: replica %s: read cursors: %w", r.info.Placement, err)
		}
		target, seq, err := cursorParts(it.Key(), v)
		if err != nil {
			return fmt.Errorf("replica %s: %w", r.info.Placement, err)
		}
		r.cursors.m[target] = seq
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("partition: replica %s: read cursors: %w", r.info.Placement, err)
	}
	return nil
}

// Confirmed returns the highest sequence target has confirmed (0 if none,
// and 0 once the replica is dropped).
func (r *Replica) Confirmed(target uuid.UUID) uint64 {
	r.cursors.Lock()
	defer r.cursors.Unlock()
	return r.cursors.m[target]
}

// Cursors returns a copy of every target's cursor (an empty map when there
// is none).
func (r *Replica) Cursors() map[uuid.UUID]uint64 {
	r.cursors.Lock()
	defer r.cursors.Unlock()
	return maps.Clone(r.cursors.m)
}

// SetConfirmed records that target holds everything up to seq. It never
// lowers a cursor: a seq at or below the current one is a no-op. It fails
// with ErrCursorAhead when seq is above the synced watermark (a target can
// only hold pushed, hence synced, changes), with ErrDropped after a drop
// and with ErrClosed after Close.
//
// The write is not synced: a cursor lost in a crash comes back lower, which
// only causes a re-push that last-writer-wins makes harmless. It never
// takes the apply lock, so it does not wait for Applies.
func (r *Replica) SetConfirmed(target uuid.UUID, seq uint64) error {
	if err := r.enter(); err != nil {
		return err
	}
	defer r.store.gate.Exit()
	r.cursors.Lock()
	defer r.cursors.Unlock()
	if r.dropped.Load() {
		return fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	if seq <= r.cursors.m[target] {
		return nil
	}
	if synced := r.SyncedSeq(); seq > synced {
		return fmt.Errorf("replica %s: target %s confirms %d, synced watermark %d: %w",
			r.info.Placement, target, seq, synced, ErrCursorAhead)
	}
	key := r.ks.appendCursorKey(make([]byte, 0, cursorKeyLen), target)
	if err := r.store.db.Set(key, appendCursorValue(make([]byte, 0, cursorValLen), seq), pebble.NoSync); err != nil {
		return fmt.Errorf("partition: replica %s: write cursor of %s: %w", r.info.Placement, target, err)
	}
	r.cursors.m[target] = seq
	return nil
}
