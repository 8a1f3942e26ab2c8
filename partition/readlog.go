package partition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// LogEntry is one row change of the replication log (the sequence index).
type LogEntry struct {
	// Seq is the sequence of the change.
	Seq uint64
	// Row is the value the change wrote, with every field's version: the
	// row as stored then for a looked-up write, the change's own fields
	// for one written without a read (its merge operand). A legacy entry
	// (written without its value) reads the row as it is now instead.
	Row model.Row
	// Origin is the placement that pushed the value (see
	// Replica.ApplyFrom), uuid.Nil if the value was written here or merged
	// from several writes: that placement holds the value already.
	Origin uuid.UUID
	// OriginSeq, when not 0 (and Origin is set), is a sequence of
	// Origin's log at or above the one holding the pushed value there
	// (ApplyFrom's originSeq, remembered in memory only).
	OriginSeq uint64
	// Bare says the value was not decoded: Row holds its Time only (see
	// ReadLogFor and ReadLogBare).
	Bare bool
}

// ReadLog returns, in ascending sequence order, the log entries whose
// sequence is above after and at most the synced watermark, at most
// maxRows of them (maxRows <= 0: no limit). A row changed several times
// since after appears once per change, each entry with the value that
// change wrote (merged by the receiver, field by field). A read from below the log's
// truncation point (after < LogStart, see TruncateLog) fails with
// ErrLogTruncated: the entries it needs are gone.
//
// ReadLog reads a snapshot taken under the apply lock and, before reading
// it, waits until everything in the snapshot is synced (normally one group
// commit, well under a millisecond). Reading only the synced part of a
// snapshot would be wrong: a row synced at sequence s and overwritten by an
// unsynced change t would be missing from the answer (its s entry is gone,
// t is above the watermark), and if the process then crashed before t's
// sync, s would come back while the reader had already moved past it.
func (r *Replica) ReadLog(after uint64, maxRows int) ([]LogEntry, error) {
	return r.ReadLogFor(after, maxRows, uuid.Nil)
}

// ReadLogFor is ReadLog for a push to the replica placement target
// (uuid.Nil: ReadLog): an entry whose Origin is target comes back with
// its Seq, Origin and Row.Time only, its value not decoded. The target
// pushed that value here and holds it, so the pusher sends it nowhere
// there (DESIGN.md section 5: rows are not pushed back to where they came
// from); at RF 3 that is a third of the entries a replica's two pushes
// read.
func (r *Replica) ReadLogFor(after uint64, maxRows int, target uuid.UUID) ([]LogEntry, error) {
	return r.readLogLive(after, maxRows, logRead{skip: target})
}

// ReadLogBare is ReadLogFor that also leaves undecoded (Bare) the values
// relayed from a third replica with a known sequence there: an entry
// with an Origin other than target and a non-zero OriginSeq comes back
// with its Seq, Origin, OriginSeq and Row.Time only. A push to target
// claims those rows held instead of carrying them
// (wire.PushRequest.Held), and reads them again with ReadLogFor only if
// target does not hold them.
func (r *Replica) ReadLogBare(after uint64, maxRows int, target uuid.UUID) ([]LogEntry, error) {
	return r.readLogLive(after, maxRows, logRead{skip: target, bareRelays: true})
}

// ReadRelayed returns, decoded and in ascending sequence order, the
// entries above after and at most through whose value origin pushed here
// and whose OriginSeq is 0 or above above: the rows a push left out as
// held (ReadLogBare) that its receiver does not hold, whose levels of
// origin's log reach above. Every other entry of the range is left out.
func (r *Replica) ReadRelayed(after, through uint64, origin uuid.UUID, above uint64) ([]LogEntry, error) {
	if origin == uuid.Nil || through <= after {
		return nil, nil
	}
	return r.readLogLive(after, 0, logRead{only: origin, onlyAbove: above, through: through})
}

// logRead says which entries readLog decodes and returns.
type logRead struct {
	// skip, when not uuid.Nil, leaves the entries of that origin Bare
	// (ReadLogFor).
	skip uuid.UUID
	// bareRelays leaves Bare the relayed entries with a known origin
	// sequence (ReadLogBare).
	bareRelays bool
	// only, when not uuid.Nil, returns the entries of that origin only,
	// and of those only the ones whose origin sequence is 0 or above
	// onlyAbove (ReadRelayed).
	only      uuid.UUID
	onlyAbove uint64
	// through, when not 0, bounds the read's sequences (ReadRelayed).
	through uint64
}

// readLogLive reads the live log for ReadLogFor, ReadLogBare and
// ReadRelayed.
func (r *Replica) readLogLive(after uint64, maxRows int, lr logRead) ([]LogEntry, error) {
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
	return r.readLog(snap, after, high, maxRows, lr)
}

// LogSnapshot is a frozen view of a replica's log: ReadLog as it would
// have answered when the snapshot was taken, whatever was written since.
// It holds every change up to Seq, the high sequence then, and a row
// overwritten since is read at its sequence then, with its value then.
//
// A mark (a split's backfill, a join's catch-up: DESIGN.md sections 5 and
// 6, rule 7) must be read from one: it keeps the entries at or below the
// mark that a truncation deletes meanwhile, and in a log written before
// log records (when an overwrite deleted the entry it superseded) a row
// held at the mark and overwritten after it has left the log at or below
// the mark for a sequence above it, so a push of the live log up to the
// mark would miss it.
//
// A LogSnapshot pins the pebble state it reads (compactions keep it) until
// Close; the Store closes the ones still open when it closes. Its methods
// are safe for concurrent use.
type LogSnapshot struct {
	r    *Replica
	high uint64
	// mu is held shared by ReadLog and exclusively by Close.
	mu   sync.RWMutex
	snap *pebble.Snapshot // nil once closed
	// mem is the memory head's rows, taken just before snap.
	mem *memView
}

// SnapshotLog freezes the replica's log (see LogSnapshot). It takes the
// apply lock briefly.
func (r *Replica) SnapshotLog() (*LogSnapshot, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.store.gate.Exit()
	snap, mem, high, err := r.snapshotWithRows()
	if err != nil {
		return nil, err
	}
	ls := &LogSnapshot{r: r, high: high, snap: snap, mem: mem}
	s := r.store
	s.snaps.Lock()
	s.snaps.m[ls] = struct{}{}
	s.snaps.Unlock()
	return ls, nil
}

// Seq returns the replica's high sequence when the snapshot was taken:
// the snapshot holds every change up to it and none above.
func (s *LogSnapshot) Seq() uint64 { return s.high }

// ReadLog is Replica.ReadLog on the snapshot: the changes held when it
// was taken whose sequence is above after (all at or below Seq), in ascending
// sequence order, at most maxRows of them (maxRows <= 0: no limit). It
// first waits until Seq is synced, so it returns only synced rows (rule
// 1). It fails with ErrLogTruncated for after below the truncation point
// the snapshot holds (ReadRows then gives its rows), ErrSnapshotClosed
// after Close, ErrDropped once the replica is dropped and ErrClosed after
// the Store's Close.
func (s *LogSnapshot) ReadLog(after uint64, maxRows int) ([]LogEntry, error) {
	r := s.r
	release, err := s.use()
	if err != nil {
		return nil, err
	}
	defer release()
	if s.high <= after {
		return nil, nil
	}
	if err := r.synced.wait(s.high); err != nil {
		return nil, fmt.Errorf("partition: replica %s: sync: %w", r.info.Placement, err)
	}
	return r.readLog(s.snap, after, s.high, maxRows, logRead{})
}

// use enters the store's gate and holds the snapshot open for a read; the
// caller calls release when the read is done. It fails once the replica
// is dropped or the store closed, and with ErrSnapshotClosed after Close.
func (s *LogSnapshot) use() (release func(), err error) {
	r := s.r
	if err := r.enter(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	if s.snap == nil {
		s.mu.RUnlock()
		r.store.gate.Exit()
		return nil, fmt.Errorf("replica %s: %w", r.info.Placement, ErrSnapshotClosed)
	}
	return func() { s.mu.RUnlock(); r.store.gate.Exit() }, nil
}

// Close releases the snapshot, once a ReadLog in progress returned.
// Idempotent.
func (s *LogSnapshot) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap == nil {
		return
	}
	_ = s.snap.Close()
	s.snap = nil
	st := s.r.store
	st.snaps.Lock()
	delete(st.snaps.m, s)
	st.snaps.Unlock()
}

// snapshot takes a DB snapshot and a high sequence whose changes it all
// contains.
//
// It takes no apply lock. An Apply stores its high sequence only once its
// batch is visible, so a snapshot taken after reading high holds every
// change up to high (and perhaps later ones, which the readers leave
// out). A drop marks the replica dropped before it commits the deletion,
// so a snapshot that holds the deletion is seen as dropped by the second
// check. The apply lock is the data space's, shared by every local
// replica of a split's lineage (every partition the pre-split cuts from a
// table's tail: in the smear load test, every partition at "now" on the
// server). Taken here, it made every pusher of every member queue behind
// each Apply, seal and drop of the space; a parent's drop (its rows in
// memory written to pebble, synced, under the lock) held up all
// replication of the server, a lock convoy that stalled forward calls
// past their ack timeout in the smear load test (docs/performance.md,
// "Log reads without the apply lock").
func (r *Replica) snapshot() (*pebble.Snapshot, uint64, error) {
	high := r.high.Load()
	if r.dropped.Load() {
		return nil, 0, fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	snap := r.store.db.NewSnapshot()
	if r.dropped.Load() {
		_ = snap.Close()
		return nil, 0, fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	return snap, high, nil
}

// snapshotWithRows is snapshot with the memory head's rows, taken before
// the DB snapshot (under applyMu, so both hold exactly the changes up to
// high).
func (r *Replica) snapshotWithRows() (*pebble.Snapshot, *memView, uint64, error) {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.dropped.Load() {
		return nil, nil, 0, fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	mem := r.memView(nil, nil)
	return r.store.db.NewSnapshot(), mem, r.high.Load(), nil
}

// readLog decodes the log entries above after, at most high (those of
// origin lr.skip, when not uuid.Nil, as ReadLogFor leaves them, and with
// lr.bareRelays the relayed ones as ReadLogBare leaves them; with lr.only
// only that origin's, as ReadRelayed reads them), with one
// sequential iterator over the sequence index: each entry carries its row's
// value as written, alone or in the record of its batch's changes (the
// record of the first sequence above after may begin at or below it). An
// entry of the legacy form (written before entries carried their rows and
// not yet upgraded, see upgradeLog) is completed by a lookup of its row.
func (r *Replica) readLog(snap *pebble.Snapshot, after, high uint64, maxRows int, lr logRead) ([]LogEntry, error) {
	trunc, err := readTrunc(snap, &r.ks)
	if err != nil {
		return nil, fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
	}
	if after < trunc {
		return nil, fmt.Errorf("replica %s: read from %d, truncated up to %d: %w", r.info.Placement, after, trunc, ErrLogTruncated)
	}
	lower := r.ks.appendSeqKey(nil, after+1)
	upper := r.ks.seqHi
	if high < math.MaxUint64 {
		upper = r.ks.appendSeqKey(nil, high+1)
	}
	seqIt, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("partition: replica %s: read log: %w", r.info.Placement, err)
	}
	defer seqIt.Close()
	var rowIt *rowIter // for legacy entries only
	defer func() {
		if rowIt != nil {
			_ = rowIt.Close()
		}
	}()

	var (
		out    []LogEntry
		raw    rawRow
		key    []byte
		names  = interner{}
		series = interner{}
		slab   fieldSlab
		// rec reads the records' entries; tmplFields are the fields of the
		// last entry of a record decoded below, under rec's gen tmplGen,
		// and inRecord tells add that its entry is a record's.
		rec        recordReader
		tmplGen    uint64
		tmplFields []model.Field
		inRecord   bool
	)
	// At most one entry per sequence: size the answer once, up to a page.
	if n := high - after; maxRows > 0 && uint64(maxRows) < n {
		out = make([]LogEntry, 0, maxRows)
	} else {
		out = make([]LogEntry, 0, min(n, 16384))
	}
	// past: the read got beyond lr.through. (Not a lower high: a record
	// is keyed by its last change, so one holding changes at or below
	// through may lie beyond it.)
	past := false
	full := func() bool { return maxRows > 0 && len(out) >= maxRows || past }
	// add appends the entry e of sequence seq.
	add := func(seq uint64, e seqEntry) error {
		if lr.through != 0 && seq > lr.through {
			past = true
			return nil
		}
		if lr.only != uuid.Nil {
			if e.origin != lr.only {
				return nil
			}
			if h := r.hints.lookup(seq, e.origin); h != 0 && h <= lr.onlyAbove {
				return nil // held there, as a bare read claimed it (legacy entries too)
			}
		}
		if lr.skip != uuid.Nil && e.origin == lr.skip {
			out = append(out, LogEntry{Seq: seq, Row: model.Row{Time: e.t}, Origin: e.origin, Bare: true})
			return nil
		}
		if lr.bareRelays && e.origin != uuid.Nil {
			// A bare entry claims only the change it records, which
			// origin's log held at the hint: a legacy entry too (a
			// snapshot chunk's, written without its value), whose row
			// is not read here. Decoded, below, a legacy entry gets no
			// hint: its row is read as it is now.
			if h := r.hints.lookup(seq, e.origin); h > 0 {
				out = append(out, LogEntry{Seq: seq, Row: model.Row{Time: e.t}, Origin: e.origin, OriginSeq: h, Bare: true})
				return nil
			}
		}
		name := series.get(e.series)
		if fields, ok := compactFields(e, &rec, tmplGen, tmplFields, &slab); ok {
			// The template's names and versions, this entry's payloads:
			// what decoding its rebuilt value would give.
			le := LogEntry{Seq: seq, Row: model.Row{Time: e.t, Series: name, Fields: fields}, Origin: e.origin}
			if le.Origin != uuid.Nil {
				le.OriginSeq = r.hints.lookup(seq, le.Origin)
			}
			out = append(out, le)
			return nil
		}
		if e.rowValue != nil {
			if err := decodeRaw(e.rowValue, &raw); err != nil {
				return fmt.Errorf("partition: replica %s: log entry %d: %w", r.info.Placement, seq, err)
			}
		} else {
			if rowIt == nil {
				var err error
				if rowIt, err = newRowIter(snap, nil, &r.ks, nil, nil); err != nil {
					return fmt.Errorf("partition: replica %s: read log: %w", r.info.Placement, err)
				}
			}
			key = r.ks.appendRowKey(key[:0], name, e.t)
			if err := r.readRow(rowIt, key, &raw); err != nil {
				return err
			}
		}
		if raw.seq < seq && raw.seq != 0 && !r.applyMu.shared.Load() {
			// A legacy entry's row may have been overwritten since: by
			// a later write without a read (a merge operand, which
			// deletes no entry), or in a shared space by another member.
			// Its current value is sent, a superset by the merge rule.
			// A sealed row (sequence 0) is read with the changes
			// sealed into it, a superset too. Only a row older than the
			// entry is wrong.
			return fmt.Errorf("%w: sequence %d holds a row stored with sequence %d", ErrCorrupt, seq, raw.seq)
		}
		le := LogEntry{Seq: seq, Row: toModelRow(name, e.t, &raw, names, nil, false, &slab), Origin: e.origin}
		if inRecord {
			tmplGen, tmplFields = rec.gen, le.Row.Fields
		}
		if le.Origin != uuid.Nil && e.rowValue != nil {
			// Only for the value the entry carries, as written: a legacy
			// entry's row is read as it is now, which in a shared space
			// may hold fields of other members' writes.
			le.OriginSeq = r.hints.lookup(seq, le.Origin)
		}
		out = append(out, le)
		return nil
	}
	for ok := seqIt.First(); ok && !full(); ok = seqIt.Next() {
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
		if !isLogRecord(v) {
			e, err := seqValueParts(v)
			if err != nil {
				return nil, err
			}
			inRecord = false
			if err := add(seq, e); err != nil {
				return nil, err
			}
			continue
		}
		// A record of a batch's changes, the first ones possibly at or
		// below after (a read that goes on from the middle of it).
		first, n, body, err := logRecordParts(v, seq)
		if err != nil {
			return nil, err
		}
		i := 0
		rec.reset()
		inRecord = true
		for ; i < n && !full(); i++ {
			var e seqEntry
			if e, body, err = rec.next(body, first+uint64(i)); err != nil {
				return nil, fmt.Errorf("partition: replica %s: log record %d: %w", r.info.Placement, seq, err)
			}
			if s := first + uint64(i); s > after {
				if err := add(s, e); err != nil {
					return nil, err
				}
			}
		}
		if i == n && len(body) != 0 {
			return nil, fmt.Errorf("%w: log record %d has %d bytes after its %d entries", ErrCorrupt, seq, len(body), n)
		}
	}
	if err := seqIt.Error(); err != nil {
		return nil, fmt.Errorf("partition: replica %s: read log: %w", r.info.Placement, err)
	}
	return out, nil
}

// readRow decodes the row stored at key into raw.
func (r *Replica) readRow(it *rowIter, key []byte, raw *rawRow) error {
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

// compactFields returns the fields of e when it is a compact record entry
// of the template whose fields the last entry decoded from rec's gen tmplGen
// has (tmplFields, in the value's order, tombstones kept): those names and
// versions with e's payloads, in fields taken from slab. False otherwise
// (the entry is then decoded from its rebuilt value).
func compactFields(e seqEntry, rec *recordReader, tmplGen uint64, tmplFields []model.Field, slab *fieldSlab) ([]model.Field, bool) {
	if e.payloads == nil || tmplGen != rec.gen || len(tmplFields) != len(rec.shape.fields) {
		return nil, false
	}
	fields := slab.take(len(tmplFields))
	for j := range rec.shape.fields {
		f := &rec.shape.fields[j]
		if tmplFields[j].Name != string(f.name) || !payloadValid(f, e.payloads) {
			return nil, false // decoded from its rebuilt value, which says what is wrong
		}
		fields = append(fields, model.Field{Name: tmplFields[j].Name, Value: f.payload(e.payloads), Version: tmplFields[j].Version})
	}
	return fields, true
}

// payloadValid reports whether field f's payload in pays is what decoding
// a row value accepts: a bool's byte 0 or 1, an int's varint exactly its
// span.
func payloadValid(f *rowShapeField, pays []byte) bool {
	p := pays[f.poff : f.poff+f.to-f.off]
	switch f.kind {
	case model.KindBool:
		return p[0] <= 1
	case model.KindInt:
		_, n := binary.Varint(p)
		return n == len(p)
	}
	return true
}
