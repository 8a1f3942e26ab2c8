package partition

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// LogEntry is one live row change of the sequence index.
type LogEntry struct {
	// Seq is the sequence of the change that wrote the row's current value.
	Seq uint64
	// Row is the row as stored, with every field's version.
	Row model.Row
	// Origin is the placement that pushed the row's current value (see
	// Replica.ApplyFrom), uuid.Nil if the value was written here or merged
	// from several writes: that placement holds the value already.
	Origin uuid.UUID
}

// ReadLog returns, in ascending sequence order, the live rows whose
// sequence is above after and at most the synced watermark, at most
// maxRows of them (maxRows <= 0: no limit). A row overwritten since after
// appears once, at its newest sequence.
//
// ReadLog reads a snapshot taken under the apply lock and, before reading
// it, waits until everything in the snapshot is synced (normally one group
// commit, well under a millisecond). Reading only the synced part of a
// snapshot would be wrong: a row synced at sequence s and overwritten by an
// unsynced change t would be missing from the answer (its s entry is gone,
// t is above the watermark), and if the process then crashed before t's
// sync, s would come back while the reader had already moved past it.
func (r *Replica) ReadLog(after uint64, maxRows int) ([]LogEntry, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.store.gate.Exit()
	snap, high, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	if high <= after {
		return nil, nil
	}
	if err := r.synced.wait(high); err != nil {
		return nil, fmt.Errorf("partition: replica %s: sync: %w", r.info.Placement, err)
	}
	return r.readLog(snap, after, high, maxRows)
}

// snapshot takes a DB snapshot and the high sequence it contains. Under
// applyMu every assigned sequence is visible, so the snapshot holds exactly
// the changes up to high.
func (r *Replica) snapshot() (*pebble.Snapshot, uint64, error) {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.dropped.Load() {
		return nil, 0, fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	return r.store.db.NewSnapshot(), r.high.Load(), nil
}

func (r *Replica) readLog(snap *pebble.Snapshot, after, high uint64, maxRows int) ([]LogEntry, error) {
	lower := r.ks.appendSeqKey(nil, after+1)
	seqIt, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: r.ks.seqHi})
	if err != nil {
		return nil, fmt.Errorf("partition: replica %s: read log: %w", r.info.Placement, err)
	}
	defer seqIt.Close()
	rowIt, err := snap.NewIter(&pebble.IterOptions{LowerBound: r.ks.rowLo, UpperBound: r.ks.rowHi})
	if err != nil {
		return nil, fmt.Errorf("partition: replica %s: read log: %w", r.info.Placement, err)
	}
	defer rowIt.Close()

	var (
		out    []LogEntry
		raw    rawRow
		key    []byte
		names  = interner{}
		series = interner{}
		slab   fieldSlab
	)
	for ok := seqIt.First(); ok && (maxRows <= 0 || len(out) < maxRows); ok = seqIt.Next() {
		seq, err := seqFromKey(seqIt.Key())
		if err != nil {
			return nil, err
		}
		if seq > high {
			break
		}
		v, err := seqIt.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("partition: replica %s: read log: %w", r.info.Placement, err)
		}
		t, s, origin, err := seqValueParts(v)
		if err != nil {
			return nil, err
		}
		name := series.get(s)
		key = r.ks.appendRowKey(key[:0], name, t)
		if err := r.readRow(rowIt, key, &raw); err != nil {
			return nil, err
		}
		if raw.seq != seq {
			return nil, fmt.Errorf("%w: sequence %d points at a row stored with sequence %d", ErrCorrupt, seq, raw.seq)
		}
		out = append(out, LogEntry{Seq: seq, Row: toModelRow(name, t, &raw, names, nil, &slab), Origin: origin})
	}
	if err := seqIt.Error(); err != nil {
		return nil, fmt.Errorf("partition: replica %s: read log: %w", r.info.Placement, err)
	}
	return out, nil
}

// readRow decodes the row stored at key into raw.
func (r *Replica) readRow(it *pebble.Iterator, key []byte, raw *rawRow) error {
	if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
		if err := it.Error(); err != nil {
			return fmt.Errorf("partition: replica %s: read row: %w", r.info.Placement, err)
		}
		return fmt.Errorf("%w: sequence index points at missing row %x", ErrCorrupt, key)
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return fmt.Errorf("partition: replica %s: read row: %w", r.info.Placement, err)
	}
	return decodeRaw(v, raw)
}
