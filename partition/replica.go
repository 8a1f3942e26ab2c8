package partition

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"
)

// Replica is one partition replica stored in the Store's DB. Its methods
// are safe for concurrent use.
type Replica struct {
	store *Store
	info  ReplicaInfo // immutable
	ks    keyspace    // immutable

	// applyMu is the apply lock: the lock of the replica's data space
	// (space.go), shared with the other replicas whose rows are the same.
	// It serializes the read-merge-write of Apply, DropReplica and the
	// snapshot taken by ReadLog: sequences are assigned and batches made
	// visible in sequence order under it. Set at creation, under the
	// store's lock.
	applyMu *dataSpace
	// high is the last assigned sequence. Written under applyMu only after
	// the batch holding it is visible; read without a lock.
	high atomic.Uint64
	// dropped is set under applyMu and cursors.mu by DropReplica.
	dropped atomic.Bool
	// unloading is set and cleared under applyMu by Unload and Resume;
	// Apply checks it under applyMu.
	unloading atomic.Bool
	// synced tracks the synced watermark.
	synced *syncTracker
	// hints are the relay hints of this replica's log (relayhints.go).
	hints relayHints
	// sizeMemo is the last size scan that found the replica under its
	// split limit (sizememo.go); sizeScans counts the scans, for tests.
	sizeMemo  sizeMemo
	sizeScans atomic.Int64
	// inflight counts the Applies in flight: past their checks under
	// applyMu and not returned yet (a batch made visible but not synced,
	// or a tie waiting for an earlier sync). A drop marks the replica
	// dropped and then waits until n is 0 before deleting anything, and an
	// Apply reads dropped as it leaves, under the same mutex: an Apply that
	// overlaps a drop fails with ErrDropped, never returns nil for rows the
	// drop deletes (rule 3).
	inflight struct {
		sync.Mutex
		cond sync.Cond // signalled when n drops to 0
		n    int
	}

	// cursors are the replication cursors: target placement → highest
	// sequence the target confirmed. Holding the mutex across the pebble
	// write keeps the stored cursors in step with the map and orders every
	// cursor write before or after a drop (so none survives it).
	cursors struct {
		sync.Mutex
		m map[uuid.UUID]uint64
	}

	// trunc is the log's truncation point (TruncateLog): the entries at or
	// below it are deleted. Written under applyMu.
	trunc atomic.Uint64
	// logCompacted is the truncation point up to which the log's key
	// range was last compacted (compactLogs).
	logCompacted atomic.Uint64

	// noLogValues is set by SetLogValues(false): nobody reads the log, and
	// Apply writes the entry of its batch's last change only (logTail). A
	// hint only, read without a lock.
	noLogValues atomic.Bool
	// logTail and logDirty describe the log an Apply writes while nobody
	// reads it, under applyMu: logTail is the sequence of the one entry the
	// last such Apply wrote (0: none), logDirty whether other entries at or
	// below the truncation point may be stored (written with their values,
	// by a chunk ingest, or before Open), which the next such Apply
	// deletes. Truncation deletes entries too, so both only err on the
	// side of deleting a range with nothing in it.
	logTail  uint64
	logDirty bool

	// hookApplyLocked, when set (tests only, before any Apply), runs in
	// Apply under applyMu after the dropped and unloading checks.
	hookApplyLocked func()
	// hookDropLocked, when set (tests only), runs in a drop under the
	// store's lock and applyMu, once the replica is marked dropped.
	hookDropLocked func()
	// hookSealOutside, when set (tests only, before any seal), runs in a
	// seal's pass outside the apply lock after it read and encoded its
	// batch, before it takes the lock to commit it.
	hookSealOutside func()
	// lookUpAlways, when set (tests only, before any Apply), makes Apply
	// read every row before writing it, as before blind writes: the tests
	// of what the read decides (a tie or a loss gets no sequence, the log
	// holds one entry per live row) keep it on.
	lookUpAlways bool
}

// ReplicaStats is a cheap summary of a replica for statistics reports.
type ReplicaStats struct {
	// HighSeq is the last assigned sequence.
	HighSeq uint64
	// SyncedSeq is the synced watermark.
	SyncedSeq uint64
	// Bytes is the estimated disk usage (0 if it could not be estimated).
	Bytes uint64
}

// newReplica returns the replica of info in data space sp (nil: a space
// of its own that no store knows, for a drop of an unknown placement).
func newReplica(s *Store, info ReplicaInfo, sp *dataSpace) *Replica {
	if sp == nil {
		sp = newDataSpace(info.Placement)
	}
	r := &Replica{store: s, info: info, ks: newKeyspace(info.Placement, sp.id), applyMu: sp}
	r.cursors.m = make(map[uuid.UUID]uint64)
	r.inflight.cond.L = &r.inflight.Mutex
	return r
}

// ApplyInFlight returns the number of Applies in flight on the replica:
// past their checks under the apply lock and not returned yet. Read under
// the apply lock (in a DropReplicaIf condition), 0 means that no Apply can
// still return success for rows a drop would delete.
func (r *Replica) ApplyInFlight() int {
	r.inflight.Lock()
	defer r.inflight.Unlock()
	return r.inflight.n
}

// beginApply counts an Apply in flight; the caller holds applyMu and has
// checked that the replica is not dropped.
func (r *Replica) beginApply() {
	r.inflight.Lock()
	r.inflight.n++
	r.inflight.Unlock()
}

// endApply ends an Apply begun with beginApply. It returns ErrDropped when
// a drop began meanwhile: the drop deletes the Apply's rows once every
// Apply in flight has ended, so they must not be acknowledged.
func (r *Replica) endApply() error {
	r.inflight.Lock()
	defer r.inflight.Unlock()
	r.inflight.n--
	if r.inflight.n == 0 {
		r.inflight.cond.Broadcast()
	}
	if r.dropped.Load() {
		return fmt.Errorf("replica %s: dropped while the write was in flight: %w", r.info.Placement, ErrDropped)
	}
	return nil
}

// markDropped sets dropped and waits until no Apply is in flight; it
// returns the previous value of dropped. The caller holds applyMu, so no
// Apply begins meanwhile, and every Apply that ends from now on fails with
// ErrDropped.
func (r *Replica) markDropped() bool {
	r.inflight.Lock()
	defer r.inflight.Unlock()
	was := r.dropped.Swap(true)
	for r.inflight.n > 0 {
		r.inflight.cond.Wait()
	}
	return was
}

// initSeq sets the high sequence and the watermark at creation or load
// (everything in the DB at Open is durable), and the bound of stored times.
func (r *Replica) initSeq(high uint64, maxTime int64) {
	r.high.Store(high)
	r.synced = newSyncTracker(high)
	// The bound is the data space's, under its lock: a replica created
	// into a shared space (a local split child) must not write it while
	// another member applies (a race the detector caught in
	// node.TestSplitUnderLoad).
	r.applyMu.Lock()
	r.applyMu.raiseMaxTime(maxTime)
	r.logDirty = true // the log may hold entries from before
	r.applyMu.Unlock()
}

// storedTimeBound returns an upper bound of the stored row times: the end
// of the last storage bucket holding a row (in the head or sealed), or math.MinInt64 when there is
// no row. Reading the exact maximum would mean scanning that bucket.
func (r *Replica) storedTimeBound() (int64, error) {
	it, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.rowLo, UpperBound: r.ks.rowHi})
	if err != nil {
		return 0, fmt.Errorf("partition: replica %s: read rows: %w", r.info.Placement, err)
	}
	defer it.Close()
	b, ok := uint32(0), it.Last()
	if ok {
		if b, _, _, err = rowKeyParts(it.Key()); err != nil {
			return 0, err
		}
	} else if err := it.Error(); err != nil {
		return 0, err
	}
	// The sealed rows: blocks sort by bucket first.
	blk, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.blkLo, UpperBound: r.ks.blkHi})
	if err != nil {
		return 0, fmt.Errorf("partition: replica %s: read blocks: %w", r.info.Placement, err)
	}
	defer blk.Close()
	if blk.Last() {
		bb, _, err := blockKeyParts(blk.Key())
		if err != nil {
			return 0, err
		}
		if !ok || bb > b {
			b, ok = bb, true
		}
	} else if err := blk.Error(); err != nil {
		return 0, err
	}
	if !ok {
		return math.MinInt64, nil
	}
	if b == maxBucket {
		return math.MaxInt64, nil
	}
	return bucketStart(b+1) - 1, nil
}

// lastSeq reads the replica's high sequence: the highest key of its
// sequence index, or its truncation point when that is higher (every entry
// truncated). It also loads the truncation point.
func (r *Replica) lastSeq() (uint64, error) {
	trunc, err := readTrunc(r.store.db, &r.ks)
	if err != nil {
		return 0, fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
	}
	r.trunc.Store(trunc)
	it, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.seqLo, UpperBound: r.ks.seqHi})
	if err != nil {
		return 0, fmt.Errorf("partition: replica %s: read sequence index: %w", r.info.Placement, err)
	}
	defer it.Close()
	if !it.Last() {
		return trunc, it.Error()
	}
	last, err := seqFromKey(it.Key())
	return max(last, trunc), err
}

// Info returns the replica's registry entry (a copy).
func (r *Replica) Info() ReplicaInfo { return r.info.clone() }

// SyncedSeq returns the synced watermark: every sequence <= it is durable.
func (r *Replica) SyncedSeq() uint64 { return r.synced.synced.Load() }

// HighSeq returns the last assigned sequence (possibly not yet synced).
func (r *Replica) HighSeq() uint64 { return r.high.Load() }

// DiskUsage estimates the bytes the replica's rows and log take on disk
// (pebble EstimateDiskUsage over the storage buckets of its range and over
// its log; data still in the memtable counts as 0).
func (r *Replica) DiskUsage() (uint64, error) {
	if err := r.enter(); err != nil {
		return 0, err
	}
	defer r.store.gate.Exit()
	rows, err := r.rowDiskUsage()
	if err != nil {
		return 0, fmt.Errorf("partition: replica %s: disk usage: %w", r.info.Placement, err)
	}
	log, err := r.store.db.EstimateDiskUsage(r.ks.seqLo, r.ks.seqHi)
	if err != nil {
		return 0, fmt.Errorf("partition: replica %s: disk usage: %w", r.info.Placement, err)
	}
	return rows + log, nil
}

// Stats returns the replica's sequences and estimated size.
func (r *Replica) Stats() ReplicaStats {
	st := ReplicaStats{HighSeq: r.HighSeq(), SyncedSeq: r.SyncedSeq()}
	if n, err := r.DiskUsage(); err == nil {
		st.Bytes = n
	}
	return st
}

// enter passes the store's gate and checks that the replica is live. On
// success the caller must call r.store.gate.exit.
func (r *Replica) enter() error {
	if err := r.store.gate.Enter(ErrClosed); err != nil {
		return err
	}
	if r.dropped.Load() {
		r.store.gate.Exit()
		return fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	return nil
}

// drop marks the replica dropped and deletes it in one synced batch. The
// caller holds the store's registry lock.
func (r *Replica) drop() error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	return r.dropLocked()
}

// dropIf is drop when cond, called under applyMu, returns true.
func (r *Replica) dropIf(cond func(*Replica) bool) (bool, error) {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.dropped.Load() || !cond(r) {
		return false, nil
	}
	return true, r.dropLocked()
}

// dropLocked is drop under applyMu. It first marks the replica dropped
// and waits for the Applies in flight to end (they fail with ErrDropped).
// It also takes cursors.mu, so a concurrent SetConfirmed writes its cursor
// either before the DeleteRange (which removes it) or not at all.
func (r *Replica) dropLocked() error {
	r.applyMu.changed()
	wasDropped := r.markDropped()
	if r.hookDropLocked != nil {
		r.hookDropLocked()
	}
	r.cursors.Lock()
	defer r.cursors.Unlock()
	covered := r.coveredByOthers()
	size := 0
	if covered && r.applyMu.mem != nil {
		size = r.applyMu.mem.rangeOpsBytes(&r.ks, r.info.Begin, r.info.End)
	}
	b := newOpsBatch(r.store.db, size)
	defer b.Close()
	persisted := 0
	if covered {
		// No row of the range is deleted: its rows in memory stay there,
		// and only their durable form moves from this log, which the
		// batch deletes, to pebble's head, in the same batch.
		var err error
		if persisted, err = r.applyMu.mem.persistRangeOps(&r.ks, b, r.info.Begin, r.info.End); err != nil {
			r.dropped.Store(wasDropped)
			return fmt.Errorf("partition: drop replica %s: %w", r.info.Placement, err)
		}
	} else if err := r.drainMemForDrop(); err != nil {
		r.dropped.Store(wasDropped)
		return err
	}
	if err := r.dropOps(b); err != nil {
		r.dropped.Store(wasDropped)
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		r.dropped.Store(wasDropped)
		return fmt.Errorf("partition: drop replica %s: %w", r.info.Placement, err)
	}
	if persisted > 0 {
		r.applyMu.mem.markPersisted(r.info.Begin, r.info.End)
	}
	r.store.memDrained.Add(int64(persisted))
	clear(r.cursors.m)
	return nil
}

func (r *Replica) dropOps(b *pebble.Batch) error {
	if err := r.dropSpaceOps(b); err != nil {
		return fmt.Errorf("partition: drop replica %s: %w", r.info.Placement, err)
	}
	if err := b.Delete(r.ks.registry, nil); err != nil {
		return fmt.Errorf("partition: drop replica %s: %w", r.info.Placement, err)
	}
	if err := b.Set(r.ks.tomb, nil, nil); err != nil {
		return fmt.Errorf("partition: drop replica %s: %w", r.info.Placement, err)
	}
	return nil
}
