package partition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// ApplyResult reports what an Apply stored.
type ApplyResult struct {
	// Changed is the number of rows written (each got a new sequence):
	// the rows whose stored value changed, and every row written without
	// a read (a merge operand, which may tie or lose).
	Changed int
	// LastSeq is the replica's high sequence right after this Apply's batch:
	// every row of the call is stored at a sequence <= LastSeq (its own new
	// one if it changed the row, an earlier write's if it tied or lost), and
	// LastSeq is synced when Apply returns.
	LastSeq uint64
}

// applyEntry is one distinct row key of an Apply call. It is kept small
// because sorting moves it.
type applyEntry struct {
	koff, klen int32 // the row key in applyScratch.keys
	row        int32 // index of the first input row with this key
}

// applyScratch holds the reusable buffers of one Apply call.
type applyScratch struct {
	keys    []byte
	entries []applyEntry
	// fields[i] are the incoming fields of input row i, sorted by name
	// without duplicates; for the first row of a duplicated key, merged
	// over all its duplicates.
	fields [][]model.Field
	raw    rawRow
	merged []encField
	enc    valueEncoder
	// vals holds the encoded values of the written rows, back to back;
	// valEnds[i] is where written row i's ends (its log entry carries it).
	vals    []byte
	valEnds []int32
	seqKey  []byte
	seqVal  []byte
	rec     recordWriter // addSeqIndex's record
	// memSeries is insertMem's scratch: each written row's series in the
	// memory head (nil: new).
	memSeries []*memSeries
	// written are the input rows written, in key order (their sequences
	// are prev+1, prev+2, ...).
	written []int32
	// whole[i] reports that written row i's new value is its incoming
	// fields alone (nothing kept from the stored row), so origin holds it.
	whole []bool
	// origin is ApplyFrom's origin placement, originSeq its bound, own
	// Push.Own (nil: no row of a push is its sender's own).
	origin    uuid.UUID
	originSeq uint64
	own       []bool
	// ix collects the tag index entries of the batch (index.go).
	ix indexBuilder
	// pre holds, for the entries whose rows may be written as they came
	// (preEncode), their encoding fields and their encoded values but
	// for the sequence, built before applyMu is taken: entry i's are
	// preFields[preF[i]:preF[i+1]] and pre[preV[i]:preV[i+1]] (empty: not
	// pre-encoded).
	pre       []byte
	preV      []int32
	preFields []encField
	preF      []int32
	// tailOnly reports that the batch writes the entry of its last change
	// only and raises the truncation point to the sequence before it
	// (addSeqIndex, nobody reads the log); applyLocked then records it.
	tailOnly bool
}

var applyScratchPool = sync.Pool{New: func() any { return new(applyScratch) }}

// maxPooledKeys bounds the key arena kept in the pool.
const maxPooledKeys = 4 << 20

func (sc *applyScratch) release() {
	sc.rec.reset() // holds none of this batch's values in the pool
	if cap(sc.keys) > maxPooledKeys {
		sc.keys = nil
	}
	if cap(sc.vals) > maxPooledKeys {
		sc.vals = nil
	}
	if cap(sc.seqVal) > maxPooledKeys {
		sc.seqVal = nil
	}
	if cap(sc.pre) > maxPooledKeys {
		sc.pre = nil
	}
	sc.pre, sc.preV, sc.preF = sc.pre[:0], sc.preV[:0], sc.preF[:0]
	clear(sc.preFields) // drop references to the caller's strings
	sc.preFields = sc.preFields[:0]
	sc.vals = sc.vals[:0]
	sc.valEnds = sc.valEnds[:0]
	sc.entries = sc.entries[:0]
	sc.written = sc.written[:0]
	sc.whole = sc.whole[:0]
	sc.origin, sc.originSeq, sc.own = uuid.Nil, 0, nil
	sc.ix.reset()
	clear(sc.fields) // drop references to the caller's fields
	sc.fields = sc.fields[:0]
	clear(sc.merged)
	sc.merged = sc.merged[:0]
	clear(sc.raw.fields) // they alias pebble's memory
	sc.raw.fields = sc.raw.fields[:0]
	applyScratchPool.Put(sc)
}

func (sc *applyScratch) key(e *applyEntry) []byte {
	return sc.keys[e.koff : e.koff+e.klen : e.koff+e.klen]
}

// sortKey is the part of a row key that differs between rows of one
// replica: everything after prefix|'r'.
func (sc *applyScratch) sortKey(e *applyEntry) []byte {
	return sc.keys[e.koff+prefixLen+1 : e.koff+e.klen]
}

// Apply merges rows into the replica (field-wise last-writer-wins by
// version) and returns once every change is durable (WAL synced).
// Concurrent Applies share WAL fsyncs.
//
// Apply writes each row without reading the stored one, as a merge
// operand that reads and compactions merge field by field (rowMerger),
// and gives it a sequence whether it changes the row or not; it reads
// only for a row that would add to the tag index (a new series, or a
// field of a kind not indexed yet), and a row newer than every stored one
// is written whole without either. ApplyPush says when a pushed row is
// written so. A looked-up row whose fields all tie or lose is not written
// and gets no sequence; even then Apply returns only after every earlier
// change is synced, so a tie with an unsynced write is never acknowledged
// early (DESIGN.md section 12, rule 1).
//
// A row with an empty series, a NUL byte in its series, no fields, an
// empty field name, a zero version or an unknown kind rejects the whole
// call with ErrInvalidRow before anything is written. Fields need not be
// sorted; a row naming a field twice is normalized as model.Row.Normalize
// does. Apply does not modify rows.
//
// Apply fails with ErrDropped on a dropped replica, and also when a drop
// begins before it returns (the drop waits for it, then deletes its rows:
// they are never reported stored), with ErrUnloading after Unload (until
// Resume) and with ErrClosed after Close.
func (r *Replica) Apply(rows []model.Row) (ApplyResult, error) {
	return r.ApplyPush(rows, Push{})
}

// Push describes where the rows of ApplyPush come from.
type Push struct {
	// Origin is the placement of the replica that pushed the rows;
	// uuid.Nil: they are written here (Apply).
	Origin uuid.UUID
	// OriginSeq is ApplyFrom's originSeq.
	OriginSeq uint64
	// Own, when not nil, holds one flag per row: the row is its sender's
	// own change (its log entry there names no origin: written or merged
	// there, not stored as another replica pushed it). Such a row is
	// written without a read, like Apply's, unless its key was relayed to
	// this store lately (recentRelays: it is then most likely held), and
	// its log entry here names Origin, so this replica's pushes list it
	// as relayed. A row not
	// flagged is a relay: it is looked up, and not stored when it ties
	// or loses, which is what ends the relaying of a change
	// (docs/safety.md, rule 2): every change is written blind at most
	// once after the replica that made it, and read everywhere after.
	Own []bool
}

// ApplyFrom is Apply for rows pushed from the replica placement origin
// (uuid.Nil: written here). A row whose new value is exactly the pushed
// fields (nothing of the stored row kept) records origin in its sequence
// index entry (LogEntry.Origin): origin already holds that value, so the
// pushes of this replica need not send it back there ("rows are not pushed
// back to where they came from", DESIGN.md section 5).
//
// originSeq, when not 0, is a sequence of origin's log at or above the
// ones that hold the pushed rows there (the push's LastSeq). The replica
// remembers it, in memory, for the rows that record origin, and ReadLog
// reports it as LogEntry.OriginSeq: a receiver of this replica's relay of
// such a row that has applied origin's log up to originSeq holds the row
// already (replication.Applied).
func (r *Replica) ApplyFrom(rows []model.Row, origin uuid.UUID, originSeq uint64) (ApplyResult, error) {
	return r.ApplyPush(rows, Push{Origin: origin, OriginSeq: originSeq})
}

// ApplyPush is ApplyFrom with the push's description p. A p.Own of
// another length than rows is ErrInvalidRow.
func (r *Replica) ApplyPush(rows []model.Row, p Push) (ApplyResult, error) {
	if p.Own != nil && len(p.Own) != len(rows) {
		return ApplyResult{}, fmt.Errorf("%w: %d own flags for %d rows", ErrInvalidRow, len(p.Own), len(rows))
	}
	if err := validateRows(rows); err != nil {
		return ApplyResult{}, err
	}
	if err := r.checkInRange(rows); err != nil {
		return ApplyResult{}, err
	}
	if err := r.enter(); err != nil {
		return ApplyResult{}, err
	}
	defer r.store.gate.Exit()
	sc := applyScratchPool.Get().(*applyScratch)
	defer sc.release()
	sc.prepare(&r.ks, rows)
	sc.origin, sc.originSeq, sc.own = p.Origin, p.OriginSeq, p.Own
	sc.preEncode()

	res, batch, err := r.applyLocked(sc, rows)
	if err != nil {
		return ApplyResult{}, err
	}
	res, err = r.finishApply(res, batch)
	if endErr := r.endApply(); err == nil {
		err = endErr
	}
	if err != nil {
		return ApplyResult{}, err
	}
	return res, nil
}

// finishApply is step 4, outside applyMu: throttle, wait for the WAL sync
// of batch (nil when nothing changed) and of every earlier change.
func (r *Replica) finishApply(res ApplyResult, batch *pebble.Batch) (ApplyResult, error) {
	if batch != nil && r.store.throttle != nil {
		// Paid for once written, outside applyMu, and only for what
		// changed: a replayed push that changes nothing costs nothing.
		r.store.throttle(batch.Len())
	}
	if batch != nil {
		// Outside applyMu: concurrent Applies wait for the same fsync.
		err := batch.SyncWait()
		r.synced.done(res.LastSeq-uint64(res.Changed)+1, err)
		_ = batch.Close()
		if err != nil {
			return ApplyResult{}, fmt.Errorf("partition: replica %s: sync: %w", r.info.Placement, err)
		}
	}
	if err := r.synced.wait(res.LastSeq); err != nil {
		return ApplyResult{}, fmt.Errorf("partition: replica %s: sync: %w", r.info.Placement, err)
	}
	return res, nil
}

// maxBatchKeyBytes bounds the row keys of one Apply call (offsets into
// the key arena are int32).
const maxBatchKeyBytes = math.MaxInt32

// validateRows checks what Apply needs to store rows safely.
func validateRows(rows []model.Row) error {
	keyBytes := 0
	for i := range rows {
		row := &rows[i]
		if keyBytes += rowKeyOverhead + len(row.Series); keyBytes > maxBatchKeyBytes {
			return fmt.Errorf("%w: batch of %d rows too large", ErrInvalidRow, len(rows))
		}
		if row.Series == "" {
			return fmt.Errorf("%w: row %d: empty series", ErrInvalidRow, i)
		}
		if strings.IndexByte(row.Series, 0) >= 0 {
			return fmt.Errorf("%w: row %d: series contains a NUL byte", ErrInvalidRow, i)
		}
		if len(row.Fields) == 0 {
			return fmt.Errorf("%w: row %d (%s): no fields", ErrInvalidRow, i, row.Series)
		}
		for j := range row.Fields {
			f := &row.Fields[j]
			switch {
			case f.Name == "":
				return fmt.Errorf("%w: row %d (%s): empty field name", ErrInvalidRow, i, row.Series)
			case f.Version.IsZero():
				return fmt.Errorf("%w: row %d (%s): field %q has a zero version", ErrInvalidRow, i, row.Series, f.Name)
			case f.Value.Kind < model.KindFloat || f.Value.Kind > model.KindDeleted:
				return fmt.Errorf("%w: row %d (%s): field %q has %s", ErrInvalidRow, i, row.Series, f.Name, f.Value.Kind)
			}
		}
	}
	return nil
}

// checkInRange refuses rows outside the replica's range: its rows share a
// data space with other replicas' (space.go), and a drop deletes only the
// rows of the dropped replica's range, so a row stored outside it would
// be another replica's, or nobody's.
func (r *Replica) checkInRange(rows []model.Row) error {
	b, e := r.info.Begin, r.info.End
	if b == nil && e == nil {
		return nil
	}
	for i := range rows {
		t := rows[i].Time
		if b != nil && t < *b || e != nil && t >= *e {
			return fmt.Errorf("%w: row %d (%s): time %d is outside the replica's range [%s, %s)",
				ErrInvalidRow, i, rows[i].Series, t, boundString(b), boundString(e))
		}
	}
	return nil
}

// boundString formats a range bound (nil: unbounded).
func boundString(b *int64) string {
	if b == nil {
		return "inf"
	}
	return strconv.FormatInt(*b, 10)
}

// prepare builds the row keys, sorts them and merges duplicates (step 1,
// outside the lock).
func (sc *applyScratch) prepare(ks *keyspace, rows []model.Row) {
	sc.keys = sc.keys[:0]
	sc.entries = sc.entries[:0]
	sorted := true
	for i := range rows {
		off := len(sc.keys)
		sc.keys = ks.appendRowKey(sc.keys, rows[i].Series, rows[i].Time)
		sc.fields = append(sc.fields, normalized(rows[i].Fields))
		e := applyEntry{koff: int32(off), klen: int32(len(sc.keys) - off), row: int32(i)}
		if sorted && len(sc.entries) > 0 && bytes.Compare(sc.sortKey(&sc.entries[len(sc.entries)-1]), sc.sortKey(&e)) >= 0 {
			sorted = false
		}
		sc.entries = append(sc.entries, e)
	}
	if !sorted {
		slices.SortFunc(sc.entries, func(a, b applyEntry) int {
			if c := bytes.Compare(sc.sortKey(&a), sc.sortKey(&b)); c != 0 {
				return c
			}
			return int(a.row - b.row) // input order among duplicates
		})
		sc.mergeDuplicates()
	}
}

// preEncode builds, outside applyMu, the encoding fields and the value
// (but for its leading sequence) of every entry whose row may be written
// as it came (sc.blind): applyLocked writes most such rows so (a row newer
// than every stored one, or a merge operand) and then only prepends the
// sequence. Relayed rows are looked up and merged under the lock, so
// nothing is built for them. Measured in the peer harness: the encoding
// was a fifth of the time four concurrent inserts into one replica spent
// holding applyMu.
func (sc *applyScratch) preEncode() {
	sc.preV = append(sc.preV[:0], 0)
	sc.preF = append(sc.preF[:0], 0)
	for i := range sc.entries {
		e := &sc.entries[i]
		if sc.blind(e.row) {
			start := len(sc.preFields)
			sc.preFields = appendEncFields(sc.preFields, sc.fields[e.row])
			sc.pre = sc.enc.appendValueBody(sc.pre, sc.preFields[start:])
		}
		sc.preV = append(sc.preV, int32(len(sc.pre)))
		sc.preF = append(sc.preF, int32(len(sc.preFields)))
	}
}

// incoming returns the encoding fields of entry i's incoming fields and,
// when preEncode built it, its value body (else nil).
func (sc *applyScratch) incoming(i int, fields []model.Field) ([]encField, []byte) {
	if merged, body := sc.preEncoded(i); merged != nil {
		return merged, body
	}
	return sc.newFields(fields), nil
}

// preEncoded returns entry i's pre-encoded fields and value body, or nil
// when preEncode built none.
func (sc *applyScratch) preEncoded(i int) ([]encField, []byte) {
	if sc.preF[i] == sc.preF[i+1] {
		return nil, nil
	}
	return sc.preFields[sc.preF[i]:sc.preF[i+1]:sc.preF[i+1]], sc.pre[sc.preV[i]:sc.preV[i+1]:sc.preV[i+1]]
}

// mergeDuplicates folds entries with equal keys (adjacent, in input order)
// into the first: a later field replaces an earlier one only with a
// strictly greater version.
func (sc *applyScratch) mergeDuplicates() {
	out := sc.entries[:0]
	for i := range sc.entries {
		e := sc.entries[i]
		if n := len(out); n > 0 && bytes.Equal(sc.key(&out[n-1]), sc.key(&e)) {
			first := out[n-1].row
			sc.fields[first] = mergeIncoming(sc.fields[first], sc.fields[e.row])
			continue
		}
		out = append(out, e)
	}
	sc.entries = out
}

// normalized returns fields sorted by name without duplicates; it copies
// only when fs is not already so.
func normalized(fs []model.Field) []model.Field {
	for i := 1; i < len(fs); i++ {
		if fs[i-1].Name >= fs[i].Name {
			row := model.Row{Fields: slices.Clone(fs)}
			row.Normalize()
			return row.Fields
		}
	}
	return fs
}

// mergeIncoming merges the later write b into the earlier a (both sorted
// and unique) into a new slice.
func mergeIncoming(a, b []model.Field) []model.Field {
	out := make([]model.Field, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].Name < b[j].Name):
			out = append(out, a[i])
			i++
		case i == len(a) || a[i].Name > b[j].Name:
			out = append(out, b[j])
			j++
		default:
			if a[i].Version.Less(b[j].Version) {
				out = append(out, b[j])
			} else {
				out = append(out, a[i])
			}
			i++
			j++
		}
	}
	return out
}

// applyLocked is steps 2 and 3: under applyMu, merge each row with the
// stored one, assign sequences to the changed rows and make the batch
// visible. It returns the batch to SyncWait on, or nil when nothing
// changed.
func (r *Replica) applyLocked(sc *applyScratch, rows []model.Row) (ApplyResult, *pebble.Batch, error) {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.dropped.Load() {
		return ApplyResult{}, nil, fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	if r.unloading.Load() {
		return ApplyResult{}, nil, fmt.Errorf("replica %s: %w", r.info.Placement, ErrUnloading)
	}
	if err := r.synced.failed(); err != nil {
		return ApplyResult{}, nil, fmt.Errorf("partition: replica %s: earlier sync failed: %w", r.info.Placement, err)
	}
	if r.hookApplyLocked != nil {
		r.hookApplyLocked()
	}
	db := r.store.db
	prev := r.high.Load()
	batch := db.NewBatch()
	changed, err := r.buildBatch(sc, rows, batch, prev)
	if err != nil {
		_ = batch.Close()
		return ApplyResult{}, nil, err
	}
	if changed == 0 {
		// A tie still waits for the sync of the change it ties with.
		_ = batch.Close()
		r.beginApply()
		return ApplyResult{LastSeq: prev}, nil, nil
	}
	last := prev + uint64(changed)
	if err := db.ApplyNoSyncWait(batch, pebble.Sync); err != nil {
		_ = batch.Close()
		return ApplyResult{}, nil, fmt.Errorf("partition: replica %s: apply: %w", r.info.Placement, err)
	}
	r.beginApply()
	if h := r.applyMu.mem; h != nil {
		r.insertMem(h, sc, rows, prev)
	}
	sc.ix.commit(r.applyMu.index)
	r.hints.add(prev+1, last, sc.origin, sc.originSeq)
	r.synced.add(prev+1, last)
	if sc.tailOnly {
		r.trunc.Store(last - 1)
		r.logTail, r.logDirty = last, false
	} else {
		r.logDirty = true
	}
	r.high.Store(last)
	now, noted, newest := time.Now().UnixNano(), uint32(0), int64(math.MinInt64)
	for i := range rows {
		newest = max(newest, rows[i].Time)
		if b := timeBucket(rows[i].Time); i == 0 || b != noted {
			r.applyMu.noteWrite(b, now) // for the sealer's quiet buckets
			noted = b
		}
	}
	r.applyMu.raiseMaxTime(newest)
	return ApplyResult{Changed: changed, LastSeq: last}, batch, nil
}

// buildBatch adds the rows to write to batch with sequences prev+1,
// prev+2, ... and returns their number. A row newer than every stored row
// (the usual case of time-ordered ingest) is new without a lookup; a row
// this replica may write blind (sc.blind) is a merge operand; the others
// are merged with the stored row, looked up with one iterator, created
// when first needed, whose seeks are monotone, and written only when they
// change it.
func (r *Replica) buildBatch(sc *applyScratch, rows []model.Row, batch *pebble.Batch, prev uint64) (int, error) {
	look := rowLookup{mem: r.applyMu.mem}
	defer look.close()
	sc.written = sc.written[:0]
	sc.whole = sc.whole[:0]
	sc.vals = sc.vals[:0]
	sc.valEnds = sc.valEnds[:0]
	sc.ix.reset()
	ixState, err := r.indexStateLocked()
	if err != nil {
		return 0, err
	}
	seq, maxTime := prev, r.applyMu.maxTime.Load()
	for i := range sc.entries {
		e := &sc.entries[i]
		key := sc.key(e)
		row := &rows[e.row]
		fields := sc.fields[e.row]
		var (
			merged []encField
			whole  = true
			blind  bool
			err    error
			// body: merged is the incoming fields, pre-encoded (but
			// for the sequence) outside the lock, or nil.
			body []byte
		)
		own := sc.blind(e.row)
		if !own {
			r.store.relayed.add(key) // a relay: looked up, or new
		}
		switch {
		case row.Time > maxTime:
			merged, body = sc.incoming(i, fields)
		case !r.lookUpAlways && own && ixState.covers(row.Series, fields) && (sc.origin == uuid.Nil || r.pushedBlind(key)):
			merged, body = sc.incoming(i, fields)
			blind = true
		default:
			if look.it == nil {
				if look.it, err = newRowIter(r.store.db, nil, &r.ks, nil, nil); err != nil {
					return 0, fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
				}
			}
			merged, whole, err = sc.mergeStored(&look, key, fields)
			if err != nil {
				return 0, fmt.Errorf("partition: replica %s: row %x: %w", r.info.Placement, key, err)
			}
			if merged == nil {
				continue
			}
		}
		seq++
		start := len(sc.vals)
		if body != nil {
			sc.vals = append(binary.AppendUvarint(sc.vals, seq), body...)
		} else {
			sc.vals = sc.enc.appendValue(sc.vals, seq, merged)
		}
		if len(sc.vals) > math.MaxInt32 {
			return 0, fmt.Errorf("%w: batch of %d rows too large", ErrInvalidRow, len(rows))
		}
		sc.valEnds = append(sc.valEnds, int32(len(sc.vals)))
		switch {
		case r.applyMu.mem != nil:
			// Into the memory head once the batch is visible
			// (applyLocked); the log record below is its durable form.
			if !blind {
				r.noteIndex(&sc.ix, ixState, row.Series, merged)
			}
		case blind:
			// Nothing to note: covers found every index entry present.
			if err := batch.Merge(key, sc.vals[start:], nil); err != nil {
				return 0, fmt.Errorf("partition: batch merge: %w", err)
			}
		default:
			if err := batch.Set(key, sc.vals[start:], nil); err != nil {
				return 0, fmt.Errorf("partition: batch set: %w", err)
			}
			r.noteIndex(&sc.ix, ixState, row.Series, merged)
		}
		sc.written = append(sc.written, e.row)
		sc.whole = append(sc.whole, whole)
	}
	if look.it != nil {
		if err := look.it.Error(); err != nil {
			return 0, fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
		}
	}
	if err := r.addSeqIndex(sc, rows, batch, prev); err != nil {
		return 0, err
	}
	return len(sc.written), sc.ix.addToBatch(batch)
}

// maxRecordChanges and maxRecordBytes bound a log record: a batch's
// changes are cut into records of at most maxRecordChanges changes, a
// record ending early once its value passes maxRecordBytes. A push reads
// at most replication.DefaultBatchRows (2,048) changes at a time, and a
// read that stops inside a record walks it from its start again at the
// next one, so one huge record (a 32 MiB insert is a million rows) would
// cost every page of it.
const (
	maxRecordChanges = 512
	maxRecordBytes   = 256 << 10
)

// addSeqIndex adds the batch's log after all its rows: records of its
// changes (appendLogRecordHeader), each under the sequence key of its last
// one and of at most maxRecordChanges changes, or one entry for a single
// change. Each change carries the row value written above. One key per batch instead of one per
// change halves the keys a replicated batch inserts into pebble's
// memtable, flushes and compacts, and a push reads the batch with one
// step of its iterator. An overwrite deletes no earlier entry (it could
// not delete one change out of a record): every change stays in the log
// until the truncation passes it, as changes written without a read
// always did, and a reader of the log merges them by version.
//
// The log's key range is written after the rows because pebble's
// memtable inserter caches its last skiplist position: ascending keys that
// follow each other insert in about constant time, while alternating
// between the row and log ranges would search the skiplist from the top
// for every key.
//
// While nobody reads the log (SetLogValues(false): no target, no mark),
// the batch writes only the entry of its last change, in the legacy form
// (no value), and raises the truncation point to the sequence before it:
// a reader that comes later, from below it, takes a row snapshot, as after
// any truncation. The entry the previous such batch left is deleted (it is
// now below the point), and so, once, are the entries written otherwise.
// The newest change keeps its entry, as TruncateLog keeps it.
func (r *Replica) addSeqIndex(sc *applyScratch, rows []model.Row, batch *pebble.Batch, prev uint64) error {
	// With a memory head the log records are the rows' durable form:
	// always written whole (truncated once sealed, memhead.go).
	sc.tailOnly = r.noLogValues.Load() && len(sc.written) > 0 && r.applyMu.mem == nil
	if sc.tailOnly {
		return r.addLogTail(sc, rows, batch, prev)
	}
	origin := func(i int) uuid.UUID {
		if sc.whole[i] {
			return sc.origin
		}
		return uuid.Nil
	}
	value := func(i int) []byte {
		start := int32(0)
		if i > 0 {
			start = sc.valEnds[i-1]
		}
		return sc.vals[start:sc.valEnds[i]]
	}
	for first := 0; first < len(sc.written); {
		// The record of changes first..end-1: its size decides its end.
		end, size := first, 0
		for end < len(sc.written) && end-first < maxRecordChanges && size < maxRecordBytes {
			size += len(rows[sc.written[end]].Series) + len(value(end))
			end++
		}
		if end-first == 1 {
			row := &rows[sc.written[first]]
			sc.seqVal = appendSeqValue(sc.seqVal[:0], row.Series, row.Time, origin(first), value(first))
		} else {
			sc.seqVal = appendLogRecordHeader(sc.seqVal[:0], end-first)
			sc.rec.reset()
			for i := first; i < end; i++ {
				row := &rows[sc.written[i]]
				sc.seqVal = sc.rec.appendEntry(sc.seqVal, prev+uint64(i)+1, row.Series, row.Time, origin(i), value(i))
			}
		}
		sc.seqKey = r.ks.appendSeqKey(sc.seqKey[:0], prev+uint64(end))
		if err := batch.Set(sc.seqKey, sc.seqVal, nil); err != nil {
			return fmt.Errorf("partition: batch set: %w", err)
		}
		first = end
	}
	return nil
}

// addLogTail is addSeqIndex while nobody reads the log: the last change's
// entry, the deletes of the entries now below the truncation point, and
// the point, prev+n-1 for the batch's n changes (at least one).
func (r *Replica) addLogTail(sc *applyScratch, rows []model.Row, batch *pebble.Batch, prev uint64) error {
	n := len(sc.written)
	last := prev + uint64(n)
	switch {
	case r.logDirty:
		if err := batch.DeleteRange(r.ks.seqLo, r.ks.appendSeqKey(nil, last), nil); err != nil {
			return fmt.Errorf("partition: batch delete range: %w", err)
		}
	case r.logTail != 0:
		sc.seqKey = r.ks.appendSeqKey(sc.seqKey[:0], r.logTail)
		if err := batch.Delete(sc.seqKey, nil); err != nil {
			return fmt.Errorf("partition: batch delete: %w", err)
		}
	}
	row := &rows[sc.written[n-1]]
	origin := uuid.Nil
	if sc.whole[n-1] {
		origin = sc.origin
	}
	sc.seqKey = r.ks.appendSeqKey(sc.seqKey[:0], last)
	sc.seqVal = appendLegacySeqValue(sc.seqVal[:0], row.Series, row.Time, origin)
	if err := batch.Set(sc.seqKey, sc.seqVal, nil); err != nil {
		return fmt.Errorf("partition: batch set: %w", err)
	}
	if err := batch.Set(r.ks.trunc, binary.BigEndian.AppendUint64(nil, last-1), nil); err != nil {
		return fmt.Errorf("partition: batch set: %w", err)
	}
	return nil
}

// blind reports whether input row i may be written without a read: it is
// written here (Apply), or its pusher's own change (Push.Own).
func (sc *applyScratch) blind(i int32) bool {
	if sc.origin == uuid.Nil {
		return true
	}
	return sc.own != nil && sc.own[i]
}

// pushedBlind reports whether a pushed row of its sender's own, at key,
// is written blind: not relayed here lately (recentRelays). At "now" the
// same row usually arrives twice within milliseconds, from its
// coordinator and as another replica's relay; written blind after the
// relay, the coordinator's copy would get a sequence and be relayed once
// more (measured without the check: RF 3 ingest 8% slower, 4.2 pushes per
// row instead of 4).
func (r *Replica) pushedBlind(key []byte) bool {
	return !r.store.relayed.has(key)
}

// newFields returns the encoding fields of a row that is not stored yet,
// or of a merge operand.
func (sc *applyScratch) newFields(in []model.Field) []encField {
	sc.merged = appendEncFields(sc.merged[:0], in)
	return sc.merged
}

// appendEncFields appends the encoding fields of in to dst.
func appendEncFields(dst []encField, in []model.Field) []encField {
	for i := range in {
		dst = append(dst, encFromModel(&in[i]))
	}
	return dst
}

// rowLookup finds the stored rows of one Apply batch, whose keys it is
// asked for in ascending order, with one iterator (created by the caller
// when first needed) over a view that does not change meanwhile (applyMu
// is held). It seeks only when the key asked for lies beyond where the
// iterator stands: a key below the iterator's (the smallest stored key at
// or above the previous key asked for) is not stored. A batch of new rows
// older than the replica's newest (a split backfill or a joiner's
// catch-up while newer rows already arrived) so needs no seek per row.
type rowLookup struct {
	it *rowIter // the head and the sealed rows in pebble
	// mem is the data space's memory head (nil: none), read directly:
	// the apply lock keeps its writers out. memVal is the value it holds
	// for the key last found, itFound whether it found the key too.
	mem     *memHead
	memVal  []byte
	itFound bool
	buf     []byte
	memBuf  []byte // memVal's bytes (a compact row expanded)
	// positioned: a seek was made; valid: it found a key (else every key
	// asked for from now on is absent).
	positioned, valid bool
}

// find reports whether key is stored, in pebble (the iterator then
// stands on it) or in the memory head. Keys must be asked for in
// ascending order.
func (l *rowLookup) find(key []byte) (bool, error) {
	found, err := l.findPebble(key)
	if err != nil {
		return false, err
	}
	l.itFound, l.memVal = found, nil
	if l.mem != nil {
		_, series, t, err := rowKeyParts(key)
		if err != nil {
			return false, err
		}
		if v := l.mem.getLocked(l.memBuf[:0], series, t); v != nil {
			l.memBuf, l.memVal = v, v
		}
	}
	return found || l.memVal != nil, nil
}

// value returns the value of the key find found: pebble's followed by the
// memory head's (folded by decodeRaw).
func (l *rowLookup) value() ([]byte, error) {
	if !l.itFound {
		return l.memVal, nil
	}
	v, err := l.it.ValueAndErr()
	if err != nil || l.memVal == nil {
		return v, err
	}
	l.buf = append(append(l.buf[:0], v...), l.memVal...)
	return l.buf, nil
}

// findPebble reports whether key is stored in pebble; if so the iterator
// stands on it. Keys must be asked for in ascending order. It never steps the iterator
// with Next: only consecutive SeekGEs let pebble reuse its position
// (TrySeekUsingNext), and a seek after a Next reads the index and a data
// block of every level again (measured: with up to 4 Nexts before each
// seek, the lookups took 21% of the server's CPU in
// BenchmarkReplicatedIngest at RF 1, ingest fell by 15%).
func (l *rowLookup) findPebble(key []byte) (bool, error) {
	if l.positioned {
		if !l.valid {
			return false, l.it.Error()
		}
		switch c := bytes.Compare(l.it.Key(), key); {
		case c > 0:
			return false, nil
		case c == 0:
			return true, nil
		}
	}
	l.positioned = true
	l.valid = l.it.SeekGE(key)
	if !l.valid {
		return false, l.it.Error()
	}
	return bytes.Equal(l.it.Key(), key), nil
}

func (l *rowLookup) close() {
	if l.it != nil {
		_ = l.it.Close()
	}
}

// mergeStored looks key up (keys come in ascending order, so most lookups
// need no seek or a cheap one) and merges the incoming fields into the
// stored row. It returns the fields to write, or nil when nothing changed,
// and whether the fields to write are the incoming ones alone (every
// stored field replaced or equal). The result aliases the iterator's value
// and is valid until the next positioning call.
func (sc *applyScratch) mergeStored(look *rowLookup, key []byte, in []model.Field) (merged []encField, whole bool, err error) {
	sc.merged = sc.merged[:0]
	found, err := look.find(key)
	if err != nil {
		return nil, false, err
	}
	if !found {
		return sc.newFields(in), true, nil
	}
	v, err := look.value()
	if err != nil {
		return nil, false, err
	}
	raw := &sc.raw
	if err := decodeRaw(v, raw); err != nil {
		return nil, false, err
	}
	changed, whole := false, true
	i, j := 0, 0
	for i < len(raw.fields) || j < len(in) {
		var c int
		switch {
		case j == len(in):
			c = -1
		case i == len(raw.fields):
			c = 1
		default:
			c = compareName(raw.fields[i].name, in[j].Name)
		}
		switch {
		case c < 0:
			sc.merged = append(sc.merged, encFromRaw(raw, &raw.fields[i]))
			whole = false
			i++
		case c > 0:
			sc.merged = append(sc.merged, encFromModel(&in[j]))
			changed = true
			j++
		default:
			stored := raw.versions[raw.fields[i].ver]
			if stored.Less(in[j].Version) {
				sc.merged = append(sc.merged, encFromModel(&in[j]))
				changed = true
			} else {
				sc.merged = append(sc.merged, encFromRaw(raw, &raw.fields[i]))
				// A tie is the same write (versions are unique).
				whole = whole && stored == in[j].Version
			}
			i++
			j++
		}
	}
	if !changed {
		return nil, false, nil
	}
	return sc.merged, whole, nil
}

// compareName compares a stored field name with an incoming one without
// allocating (the compiler does not copy for string(b) in comparisons).
func compareName(b []byte, s string) int {
	switch {
	case string(b) == s:
		return 0
	case string(b) < s:
		return -1
	}
	return 1
}
