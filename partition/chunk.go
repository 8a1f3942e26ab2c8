package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/block"
)

// Snapshot chunks (issue 16, "range snapshots"; docs/storage-format.md,
// "Snapshot chunk"): a row snapshot moves as chunks of stored rows and
// sealed blocks, read sequentially from a pebble snapshot and ingested by
// the receiver as sstables it builds, instead of as rows it merges one by
// one.
//
//	chunk := 'K' 0x02 entry*
//	entry := 'r' len(key):uvarint key len(value):uvarint value   (a row)
//	       | 'b' len(bkey):uvarint bkey len(block):uvarint block (a sealed block)
//	key   := bucket(4, BE) | series | 0x00 | time(8, BE, ordered)
//	bkey  := bucket(4, BE) | series | 0x00
//	value := the stored row value (docs/storage-format.md, "Row value")
//	block := the sealed block as stored (docs/storage-format.md, "The block encoding")
//
// A key is a row key without its replica's prefix|'r', a bkey a block key
// without its space's prefix|'b'; entries are in the key order of the rows
// they hold (a block's rows are those of its times). A row value's leading
// sequence is the sender's: the receiver replaces it with its own. A block
// is shipped as it is when it is wholly in the range and no head row of its
// series and bucket lies after its first (issue 17, item 4); version 1
// (rows only, no kind byte) is still read.

// chunkTag and chunkVersion open every chunk written; chunkRowsOnly is
// the version before blocks.
const (
	chunkTag      byte = 'K'
	chunkVersion  byte = 0x02
	chunkRowsOnly byte = 0x01
)

// The kinds of a version 2 chunk's entries.
const (
	chunkKindRow   byte = 'r'
	chunkKindBlock byte = 'b'
)

// IsChunk reports whether b is a snapshot chunk (as opposed to the rows
// encoding of package replication, which opens with 'R').
func IsChunk(b []byte) bool { return len(b) >= 2 && b[0] == chunkTag }

// Chunk is one read of ReadChunk.
type Chunk struct {
	// Data is the encoded chunk (nil when Rows is 0).
	Data []byte
	// Rows is the number of rows in it, those of its blocks included.
	Rows int
	// Blocks is the number of sealed blocks in it, shipped as they are.
	Blocks int
	// Last is the last row in it (nil when Rows is 0): the next read goes
	// on after it.
	Last *RowPos
	// Done reports that the snapshot holds no row after Last in the range.
	Done bool
}

// ReadChunk appends to dst the rows the snapshot holds in the time range
// rr after the row at after (nil: from the first), in key order, as a
// snapshot chunk of about maxBytes (at least one row; maxBytes <= 0: no
// limit). Like ReadRows it first waits until Seq is synced (rule 1) and
// reads only the storage buckets the range touches; a chunk read to its
// end gives a target every row in the range live at Seq.
func (s *LogSnapshot) ReadChunk(dst []byte, after *RowPos, rr RowRange, maxBytes int) (Chunk, error) {
	r := s.r
	release, err := s.use()
	if err != nil {
		return Chunk{}, err
	}
	defer release()
	if err := r.synced.wait(s.high); err != nil {
		return Chunk{}, fmt.Errorf("partition: replica %s: sync: %w", r.info.Placement, err)
	}
	rr = rr.within(&r.info)
	lower, upper, afterKey, empty := r.rowBounds(after, rr)
	if empty {
		return Chunk{Done: true}, nil
	}
	it, err := newRowIter(s.snap, s.mem, &r.ks, lower, upper)
	if err != nil {
		return Chunk{}, fmt.Errorf("partition: replica %s: read chunk: %w", r.info.Placement, err)
	}
	defer it.Close()
	c := Chunk{Data: append(dst[:0], chunkTag, chunkVersion)}
	var lastKey, seek []byte
	ok := it.First()
	for ok && (maxBytes <= 0 || c.Rows == 0 || len(c.Data) < maxBytes) {
		key := it.Key()
		if afterKey != nil && bytes.Equal(key, afterKey) {
			ok = it.Next()
			continue
		}
		_, _, t, err := rowKeyParts(key)
		if err != nil {
			return Chunk{}, err
		}
		if !rr.contains(t) { // an edge bucket's row outside the range
			seek = rr.skipKey(seek[:0], key, t)
			ok = it.SeekGE(seek)
			continue
		}
		if bkey, block, br, whole := it.wholeBlock(); whole && rr.contains(br.MaxTime()) {
			// Every row of a sealed block, none overlaid: the block as
			// it is stored (its times not decoded).
			c.Data = appendChunkEntry(c.Data, chunkKindBlock, bkey[prefixLen+1:], block)
			c.Rows += br.Len()
			c.Blocks++
			lastKey = it.blockRowKey(lastKey[:0], br.Len()-1)
			ok = it.SkipBlock()
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return Chunk{}, fmt.Errorf("partition: replica %s: read chunk: %w", r.info.Placement, err)
		}
		c.Data = appendChunkEntry(c.Data, chunkKindRow, key[prefixLen+1:], v)
		c.Rows++
		lastKey = append(lastKey[:0], key...)
		ok = it.Next()
	}
	if err := it.Error(); err != nil {
		return Chunk{}, fmt.Errorf("partition: replica %s: read chunk: %w", r.info.Placement, err)
	}
	c.Done = !ok
	if c.Rows == 0 {
		return Chunk{Done: c.Done}, nil
	}
	_, sb, t, _ := rowKeyParts(lastKey)
	c.Last = &RowPos{Series: string(sb), Time: t}
	return c, nil
}

// appendChunkEntry appends a version 2 chunk entry of kind to dst.
func appendChunkEntry(dst []byte, kind byte, key, value []byte) []byte {
	dst = append(dst, kind)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(len(value)))
	return append(dst, value...)
}

// rowBounds returns the iterator bounds of the rows in rr after the row at
// after (afterKey: its key, nil without one); empty when rr is empty.
func (r *Replica) rowBounds(after *RowPos, rr RowRange) (lower, upper, afterKey []byte, empty bool) {
	if rr.Begin != nil && rr.End != nil && *rr.Begin >= *rr.End {
		return nil, nil, nil, true
	}
	lower, upper = r.ks.rowLo, r.ks.rowHi
	if rr.Begin != nil {
		lower = r.ks.appendBucketSeriesKey(nil, timeBucket(*rr.Begin), "")
	}
	if rr.End != nil && *rr.End != math.MinInt64 {
		if b := timeBucket(*rr.End - 1); b < maxBucket {
			upper = r.ks.appendBucketSeriesKey(nil, b+1, "")
		}
	}
	if after != nil {
		afterKey = r.ks.appendRowKey(nil, after.Series, after.Time)
		if bytes.Compare(afterKey, lower) > 0 {
			lower = afterKey
		}
	}
	return lower, upper, afterKey, false
}

// chunkEntry is one parsed row of a chunk: its full row key (this
// replica's prefix added) and its value, aliasing the chunk (or, for a
// block's row, the value parseChunk encoded).
type chunkEntry struct {
	key, value []byte
	series     []byte // aliases key
	time       int64
	block      int // the index of its block in parsedChunk.blocks; -1: a row entry
	vs, ve     int // a block's row: where its value lies in parsedChunk.vals
}

// chunkBlock is one sealed block of a chunk, its rows being the entries
// first to last (inclusive).
type chunkBlock struct {
	bucket      uint32
	series      []byte // aliases the chunk
	value       []byte // the block as stored, aliasing the chunk
	first, last int
}

// parsedChunk is a chunk checked whole before anything is written.
type parsedChunk struct {
	entries []chunkEntry
	blocks  []chunkBlock
	keys    []byte // the full row keys, back to back
	vals    []byte // the values of the blocks' rows, back to back
	newest  model.Version
	maxTime int64
}

// parseChunk decodes and checks every entry of chunk: keys well formed, in
// strictly ascending order, with the bucket of their time and a series
// Apply would accept; values that decode, with fields sorted by name
// without duplicates, each with a version and a known kind. A block is
// decoded into its rows, which are checked the same way (each row's value
// encoded as a sealed row's, sequence 0). It never panics on malformed
// input; errors match ErrCorrupt.
func parseChunk(rowLo, chunk []byte) (*parsedChunk, error) {
	if !IsChunk(chunk) || chunk[1] != chunkVersion && chunk[1] != chunkRowsOnly {
		return nil, fmt.Errorf("%w: not a snapshot chunk of version %d or %d", ErrCorrupt, chunkRowsOnly, chunkVersion)
	}
	kinds := chunk[1] == chunkVersion
	d := decoder{b: chunk[2:]}
	pc := &parsedChunk{maxTime: math.MinInt64}
	p := chunkParser{pc: pc, rowLo: rowLo}
	for len(d.b) > 0 && d.err == nil {
		kind := chunkKindRow
		if kinds {
			kind = d.byte()
		}
		key := d.bytes()
		value := d.bytes()
		if d.err != nil {
			break
		}
		var err error
		switch kind {
		case chunkKindRow:
			err = p.add(key, value)
		case chunkKindBlock:
			err = p.addBlock(key, value)
		default:
			err = fmt.Errorf("%w: entry %d: unknown kind %d", ErrCorrupt, len(p.keyEnds), kind)
		}
		if err != nil {
			return nil, err
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	// The keys and the blocks' values alias pc.keys and pc.vals only now
	// that they stopped growing.
	for i := range pc.entries {
		e := &pc.entries[i]
		e.key = pc.keys[keyStart(p.keyEnds, i):p.keyEnds[i]]
		_, e.series, _, _ = rowKeyParts(e.key)
		if e.block >= 0 {
			e.value = pc.vals[e.vs:e.ve]
		}
	}
	return pc, nil
}

// chunkParser is parseChunk's state.
type chunkParser struct {
	pc      *parsedChunk
	rowLo   []byte
	keyEnds []int
	raw     rawRow
	reader  block.Reader
	rows    []model.Row
	fields  []encField
	enc     valueEncoder
	key     []byte
}

// add checks the row entry of key (a row key after prefix|'r') and value
// and adds it.
func (p *chunkParser) add(suffix, value []byte) error {
	n := len(p.keyEnds)
	t, err := p.addKey(suffix)
	if err != nil {
		return err
	}
	if err := decodeRaw(value, &p.raw); err != nil {
		return fmt.Errorf("entry %d: %w", n, err)
	}
	if len(p.raw.fields) == 0 {
		return fmt.Errorf("%w: entry %d: no fields", ErrCorrupt, n)
	}
	for i := range p.raw.fields {
		f := &p.raw.fields[i]
		if len(f.name) == 0 || i > 0 && bytes.Compare(p.raw.fields[i-1].name, f.name) >= 0 {
			return fmt.Errorf("%w: entry %d: field names empty, unsorted or repeated", ErrCorrupt, n)
		}
		if !p.noteVersion(p.raw.versions[f.ver]) {
			return fmt.Errorf("%w: entry %d: field %q has a zero version", ErrCorrupt, n, f.name)
		}
	}
	p.pc.entries = append(p.pc.entries, chunkEntry{time: t, block: -1, value: value})
	return nil
}

// addKey checks the row key of the next entry (after prefix|'r') and
// adds it to pc.keys, returning its time.
func (p *chunkParser) addKey(suffix []byte) (int64, error) {
	pc, n := p.pc, len(p.keyEnds)
	start := len(pc.keys)
	pc.keys = append(append(pc.keys, p.rowLo...), suffix...)
	key := pc.keys[start:]
	b, series, t, err := rowKeyParts(key)
	if err != nil {
		return 0, fmt.Errorf("entry %d: %w", n, err)
	}
	switch {
	case b != timeBucket(t):
		return 0, fmt.Errorf("%w: entry %d: bucket %d does not hold time %d", ErrCorrupt, n, b, t)
	case len(series) == 0 || bytes.IndexByte(series, 0) >= 0:
		return 0, fmt.Errorf("%w: entry %d: empty series or a series with a NUL byte", ErrCorrupt, n)
	case n > 0 && bytes.Compare(pc.keys[keyStart(p.keyEnds, n-1):start], key) >= 0:
		return 0, fmt.Errorf("%w: entry %d: keys out of order", ErrCorrupt, n)
	}
	p.keyEnds = append(p.keyEnds, len(pc.keys))
	pc.maxTime = max(pc.maxTime, t)
	return t, nil
}

// noteVersion keeps the newest of the versions met; false for the zero
// version, which no written field has.
func (p *chunkParser) noteVersion(v model.Version) bool {
	if p.pc.newest.Less(v) {
		p.pc.newest = v
	}
	return !v.IsZero()
}

// addBlock decodes the block of bkey (a block key after prefix|'b') and
// adds its rows as entries of the block.
func (p *chunkParser) addBlock(bkey, value []byte) error {
	pc, n := p.pc, len(p.keyEnds)
	if len(bkey) < 4+2 || bkey[len(bkey)-1] != 0 {
		return fmt.Errorf("%w: entry %d: bad block key %x", ErrCorrupt, n, bkey)
	}
	b, series := binary.BigEndian.Uint32(bkey), bkey[4:len(bkey)-1]
	if len(series) == 0 || bytes.IndexByte(series, 0) >= 0 {
		return fmt.Errorf("%w: entry %d: empty series or a series with a NUL byte", ErrCorrupt, n)
	}
	if err := p.reader.Reset(value); err != nil {
		return fmt.Errorf("%w: entry %d: block: %w", ErrCorrupt, n, err)
	}
	rows, err := p.reader.Rows(p.rows[:0], string(series))
	if err != nil {
		return fmt.Errorf("%w: entry %d: block: %w", ErrCorrupt, n, err)
	}
	p.rows = rows
	if len(rows) == 0 {
		return fmt.Errorf("%w: entry %d: a block without rows", ErrCorrupt, n)
	}
	bi := len(pc.blocks)
	pc.blocks = append(pc.blocks, chunkBlock{bucket: b, series: series, value: value, first: n, last: n + len(rows) - 1})
	// Each row checked as add checks a row entry, on the decoded fields,
	// and its value encoded as a sealed row's (sequence 0).
	for i := range rows {
		r, n := &rows[i], len(p.keyEnds)
		p.key = binary.BigEndian.AppendUint32(p.key[:0], b)
		p.key = append(append(p.key, series...), 0)
		p.key = binary.BigEndian.AppendUint64(p.key, orderedTime(r.Time))
		t, err := p.addKey(p.key)
		if err != nil {
			return err
		}
		if len(r.Fields) == 0 {
			return fmt.Errorf("%w: entry %d: no fields", ErrCorrupt, n)
		}
		p.fields = p.fields[:0]
		for j := range r.Fields {
			f := &r.Fields[j]
			if f.Name == "" || j > 0 && r.Fields[j-1].Name >= f.Name {
				return fmt.Errorf("%w: entry %d: field names empty, unsorted or repeated", ErrCorrupt, n)
			}
			if !p.noteVersion(f.Version) {
				return fmt.Errorf("%w: entry %d: field %q has a zero version", ErrCorrupt, n, f.Name)
			}
			p.fields = append(p.fields, encFromModel(f))
		}
		vs := len(pc.vals)
		pc.vals = p.enc.appendValue(pc.vals, 0, p.fields)
		pc.entries = append(pc.entries, chunkEntry{time: t, block: bi, vs: vs, ve: len(pc.vals)})
	}
	return nil
}

// keyStart returns where key i starts given the keys' end offsets.
func keyStart(ends []int, i int) int {
	if i == 0 {
		return 0
	}
	return ends[i-1]
}

// DecodeChunk returns the rows of a snapshot chunk (every field's version
// and tombstones included, as ReadRows returns them), checked as
// IngestChunk checks them: errors match ErrCorrupt.
func DecodeChunk(chunk []byte) ([]model.Row, error) {
	pc, err := parseChunk(newKeyspace(uuid.Nil, uuid.Nil).rowLo, chunk)
	if err != nil {
		return nil, err
	}
	return pc.rows(nil)
}

// rows returns the chunk's rows as model rows (for an Apply): those of
// the entries listed in only, or all of them when only is nil.
func (pc *parsedChunk) rows(only []int) ([]model.Row, error) {
	if only == nil {
		only = make([]int, len(pc.entries))
		for i := range only {
			only[i] = i
		}
	}
	var (
		out    = make([]model.Row, 0, len(only))
		raw    rawRow
		names  = interner{}
		series = interner{}
		slab   fieldSlab
	)
	for _, i := range only {
		e := &pc.entries[i]
		if err := decodeRaw(e.value, &raw); err != nil {
			return nil, err
		}
		out = append(out, toModelRow(series.get(e.series), e.time, &raw, names, nil, false, &slab))
	}
	return out, nil
}

// IngestChunk stores the rows of a snapshot chunk (ReadChunk of another
// replica) and returns what Apply would: the rows changed and the last
// sequence, synced once it returns (rule 1). The chunk is checked whole
// first (errors match ErrCorrupt; nothing is written), then the newest
// version it holds is passed to observe (the hybrid clock's move past
// pushed versions, rule 2), then, under the apply lock:
//
//   - when this replica holds no row between the chunk's first and last
//     key (a joiner, a new split child, a re-replicated or wiped replica:
//     the usual case of a snapshot), the index keys of series and fields
//     new here go in a synced batch, and the log entries (at fresh
//     sequences) and the rows (with those sequences in their values) are
//     written as two sstables and ingested atomically with pebble's
//     Ingest, which syncs them: the rows go through no WAL, no memtable
//     and no merge;
//   - otherwise some row may be newer here, and ingesting would overwrite
//     it (rule 2): the rows are applied like a push, merged field by field.
//
// want is the number of rows the sender said the chunk holds; from.Origin
// is the sender's placement (uuid.Nil: none), recorded like ApplyPush
// records it: an ingested row's value is exactly the sender's, so this
// replica's pushes do not send it back there. from.OriginSeq, when not 0,
// is a sequence of the sender's log at or above every change the chunk's
// rows fold (a snapshot of a log whose rows are all its own:
// wire.PushRequest.SnapshotLogged), remembered for the entries as
// ApplyPush remembers a push's (LogEntry.OriginSeq). from.Own is ignored.
func (r *Replica) IngestChunk(chunk []byte, want int, from Push) (ApplyResult, error) {
	return r.IngestChunkObserved(chunk, want, from, nil)
}

// IngestChunkObserved is IngestChunk passing the newest version of the
// checked chunk to observe (when not nil) before anything is written.
func (r *Replica) IngestChunkObserved(chunk []byte, want int, from Push, observe func(model.Version)) (ApplyResult, error) {
	pc, err := parseChunk(r.ks.rowLo, chunk)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("partition: replica %s: snapshot chunk: %w", r.info.Placement, err)
	}
	if len(pc.entries) != want {
		return ApplyResult{}, fmt.Errorf("%w: snapshot chunk holds %d rows, the sender said %d", ErrCorrupt, len(pc.entries), want)
	}
	if want == 0 {
		return ApplyResult{LastSeq: r.high.Load()}, nil
	}
	rr := RowRange{}.within(&r.info)
	for i := range pc.entries {
		if e := &pc.entries[i]; !rr.contains(e.time) {
			return ApplyResult{}, fmt.Errorf("%w: snapshot chunk row %d (%s): time %d is outside the replica's range [%s, %s)",
				ErrInvalidRow, i, e.series, e.time, boundString(r.info.Begin), boundString(r.info.End))
		}
	}
	if observe != nil {
		observe(pc.newest)
	}
	if err := r.enter(); err != nil {
		return ApplyResult{}, err
	}
	res, ingested, newer, err := r.ingestLocked(pc, from)
	r.store.gate.Exit()
	if err != nil {
		return ApplyResult{}, err
	}
	if !ingested && len(newer) > 0 {
		r.store.chunksMerged.Add(1)
		rows, err := pc.rows(newer)
		if err != nil {
			return ApplyResult{}, err
		}
		return r.ApplyFrom(rows, from.Origin, from.OriginSeq)
	}
	// Ingested, or everything held here already at the same or newer
	// versions (the same snapshot from another replica of the source): a
	// tie. Either way begun as an Apply under the lock, so a drop that
	// began meanwhile fails it (endApply), and it returns once every
	// change up to the last sequence is synced, as Apply does.
	if ingested {
		r.store.chunksIngested.Add(1)
		if r.store.throttle != nil {
			r.store.throttle(len(chunk)) // like Apply: outside applyMu, once written
		}
	} else {
		r.store.chunksMerged.Add(1)
	}
	err = r.synced.wait(res.LastSeq)
	if endErr := r.endApply(); endErr != nil {
		return ApplyResult{}, endErr
	}
	if err != nil {
		return ApplyResult{}, fmt.Errorf("partition: replica %s: sync: %w", r.info.Placement, err)
	}
	return res, nil
}

// ingestLocked is IngestChunk's write under the apply lock; ingested is
// false (and nothing written) when a row lies in the chunk's key span,
// and newer then lists the entries that would change a row held here
// (the others hold nothing newer: they need no merge). An ingest, or a
// tie (nothing newer), is begun here as an Apply (res.LastSeq set) and
// ended by the caller (endApply).
func (r *Replica) ingestLocked(pc *parsedChunk, from Push) (res ApplyResult, ingested bool, newer []int, err error) {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.dropped.Load() {
		return ApplyResult{}, false, nil, fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	if r.unloading.Load() {
		return ApplyResult{}, false, nil, fmt.Errorf("replica %s: %w", r.info.Placement, ErrUnloading)
	}
	if err := r.synced.failed(); err != nil {
		return ApplyResult{}, false, nil, fmt.Errorf("partition: replica %s: earlier sync failed: %w", r.info.Placement, err)
	}
	first, last := pc.entries[0].key, pc.entries[len(pc.entries)-1].key
	empty, err := r.noRowsIn(first, last)
	if err != nil {
		return ApplyResult{}, false, nil, err
	}
	if !empty {
		newer, err := r.newerEntries(pc)
		if err == nil && len(newer) == 0 {
			r.beginApply()
			return ApplyResult{LastSeq: r.high.Load()}, false, nil, nil
		}
		return ApplyResult{}, false, newer, err
	}
	ixState, err := r.indexStateLocked()
	if err != nil {
		return ApplyResult{}, false, nil, err
	}
	// A block is ingested as a block unless this replica holds one of its
	// series and bucket already (rows outside the span): an ingested key
	// would replace it. Its rows then go to the head as row entries do.
	blocks, err := r.noBlocksOf(pc)
	if err != nil {
		return ApplyResult{}, false, nil, err
	}
	prev := r.high.Load()
	files, ix, err := r.writeChunkTables(pc, prev, from, ixState, blocks)
	defer r.store.removeIngestFiles(files)
	if err != nil {
		return ApplyResult{}, false, nil, err
	}
	if len(ix.keys) > 0 {
		// The new index keys go in a synced batch first: an sstable of
		// them would often overlap the memtable (the index keys of rows
		// pushed meanwhile), and an ingest overlapping the memtable
		// rotates it, which, chunk after chunk, stalls every write of
		// the store. A crash before the ingest leaves entries whose rows
		// are not here yet; the snapshot is not confirmed, so it sends
		// them again.
		b := r.store.db.NewBatch()
		err := ix.addToBatch(b)
		if err == nil {
			err = b.Commit(pebble.Sync)
		}
		_ = b.Close()
		if err != nil {
			return ApplyResult{}, false, nil, fmt.Errorf("partition: replica %s: index of a snapshot chunk: %w", r.info.Placement, err)
		}
	}
	began := time.Now()
	if err := r.store.db.Ingest(context.Background(), files); err != nil {
		return ApplyResult{}, false, nil, fmt.Errorf("partition: replica %s: ingest snapshot chunk: %w", r.info.Placement, err)
	}
	if took := time.Since(began); took > slowIngest {
		// pebble holds back every commit of the store while an ingest
		// applies: a slow one stalls the server's writes (docs/status.md).
		r.store.log.Warn("slow ingest of a snapshot chunk", "placement", r.info.Placement,
			"rows", len(pc.entries), "took", took.Round(time.Millisecond))
	}
	if blocks {
		r.store.blocksIngested.Add(int64(len(pc.blocks)))
	}
	// Ingested, hence synced: the sequences are visible and durable at once.
	lastSeq := prev + uint64(len(pc.entries))
	r.beginApply()
	ix.commit(r.applyMu.index)
	r.synced.add(prev+1, lastSeq)
	r.synced.done(prev+1, nil)
	r.hints.add(prev+1, lastSeq, from.Origin, from.OriginSeq)
	r.logDirty = true // its entries, each row's
	r.high.Store(lastSeq)
	r.applyMu.raiseMaxTime(pc.maxTime)
	r.applyMu.changed() // its rows or blocks may land in any bucket
	now, noted := time.Now().UnixNano(), uint32(0)
	for i := range pc.entries {
		if b := timeBucket(pc.entries[i].time); i == 0 || b != noted {
			r.applyMu.noteWrite(b, now)
			noted = b
		}
	}
	return ApplyResult{Changed: len(pc.entries), LastSeq: lastSeq}, true, nil, nil
}

// noRowsIn reports whether the replica holds no row in [first, last],
// in the head or sealed.
func (r *Replica) noRowsIn(first, last []byte) (bool, error) {
	upper := append(append([]byte(nil), last...), 0) // the successor of last
	it, err := newRowIter(r.store.db, r.memView(first, upper), &r.ks, first, upper)
	if err != nil {
		return false, fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
	}
	found := it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return false, fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
	}
	return !found, nil
}

// noBlocksOf reports whether the replica holds no sealed block of the
// series and bucket of any block of pc. The caller holds applyMu.
func (r *Replica) noBlocksOf(pc *parsedChunk) (bool, error) {
	if len(pc.blocks) == 0 {
		return true, nil
	}
	var key []byte
	for i := range pc.blocks {
		b := &pc.blocks[i]
		key = r.ks.appendBlockKey(key[:0], b.bucket, string(b.series))
		_, closer, err := r.store.db.Get(key)
		switch {
		case err == nil:
			_ = closer.Close()
			return false, nil
		case !errors.Is(err, pebble.ErrNotFound):
			return false, fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
		}
	}
	return true, nil
}

// newerEntries returns the entries of pc that would change the row held
// here (or hold a row not held here): one sequential pass over the
// chunk's key span, with no seek per row. An entry every field of which
// is held at the same or a newer version changes nothing (rule 2: the
// merge keeps the newer version of each field). The caller holds applyMu.
func (r *Replica) newerEntries(pc *parsedChunk) ([]int, error) {
	first, last := pc.entries[0].key, pc.entries[len(pc.entries)-1].key
	upper := append(append([]byte(nil), last...), 0)
	it, err := newRowIter(r.store.db, r.memView(first, upper), &r.ks, first, upper)
	if err != nil {
		return nil, fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
	}
	defer it.Close()
	var (
		newer         []int
		incoming, old rawRow
	)
	ok := it.First()
	for i := range pc.entries {
		e := &pc.entries[i]
		for ok && bytes.Compare(it.Key(), e.key) < 0 {
			ok = it.Next()
		}
		if !ok || !bytes.Equal(it.Key(), e.key) {
			newer = append(newer, i)
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
		}
		if sameButSequence(v, e.value) {
			continue // the same fields at the same versions: a tie
		}
		if err := decodeRaw(v, &old); err != nil {
			return nil, fmt.Errorf("partition: replica %s: row %x: %w", r.info.Placement, e.key, err)
		}
		if err := decodeRaw(e.value, &incoming); err != nil {
			return nil, err
		}
		if changes(&incoming, &old) {
			newer = append(newer, i)
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("partition: replica %s: %w", r.info.Placement, err)
	}
	return newer, nil
}

// sameButSequence reports whether two row values are the same bytes after
// their leading sequences: the same fields at the same versions, which a
// merge leaves as they are.
func sameButSequence(a, b []byte) bool {
	_, na := binary.Uvarint(a)
	_, nb := binary.Uvarint(b)
	return na > 0 && nb > 0 && bytes.Equal(a[na:], b[nb:])
}

// changes reports whether merging incoming into stored changes a field:
// a field stored lacks, or holds at an older version. Both rows' fields
// are sorted by name.
func changes(incoming, stored *rawRow) bool {
	j := 0
	for i := range incoming.fields {
		f := &incoming.fields[i]
		for j < len(stored.fields) && bytes.Compare(stored.fields[j].name, f.name) < 0 {
			j++
		}
		if j == len(stored.fields) || !bytes.Equal(stored.fields[j].name, f.name) {
			return true
		}
		if stored.versions[stored.fields[j].ver].Less(incoming.versions[f.ver]) {
			return true
		}
	}
	return false
}

// writeChunkTables writes the sstables of an ingest of pc at sequences
// prev+1...: the log entries, the rows and (with blocks) the blocks as
// they came, each kind in its own file (an sstable's bounds are its
// smallest and largest keys: one file of two kinds would span every key
// between them). None overlaps a key held here (fresh sequences; a span
// the caller found empty; blocks of series and buckets it holds no block
// of), so the ingest does not rotate the memtable. Without blocks, the
// blocks' rows are written as rows. It returns the files written (to
// remove once ingested, whatever happened) and the new index entries, for
// the caller to write and commit.
func (r *Replica) writeChunkTables(pc *parsedChunk, prev uint64, from Push, ixState *indexState, blocks bool) (files []string, ix *indexBuilder, err error) {
	ix = &indexBuilder{}
	ix.reset()
	var (
		raw     rawRow
		enc     valueEncoder
		merged  []encField
		series  string
		vals    = make([]byte, 0, len(pc.keys)*2)
		valEnds = make([]int, 0, len(pc.entries))
	)
	for i := range pc.entries {
		e := &pc.entries[i]
		if err := decodeRaw(e.value, &raw); err != nil {
			return nil, nil, err
		}
		merged = merged[:0]
		for j := range raw.fields {
			merged = append(merged, encFromRaw(&raw, &raw.fields[j]))
		}
		if series != string(e.series) {
			series = string(e.series)
		}
		r.noteIndex(ix, ixState, series, merged)
		vals = enc.appendValue(vals, prev+1+uint64(i), merged)
		valEnds = append(valEnds, len(vals))
	}
	value := func(i int) []byte { return vals[keyStart(valEnds, i):valEnds[i]] }
	// The entries of rows with an origin sequence (a snapshot of a log
	// whose rows are all its own) go without their values too: this
	// replica's pushes claim those rows held, reading no value (a bare
	// entry), and a target that does not hold them gets the row as it is
	// now, read through the legacy entry. A loading joiner's log is read
	// so once it serves; its ingest writes half the bytes.
	noValues := r.noLogValues.Load() || from.OriginSeq > 0
	write := func(n int, kv func(i int) (k, v []byte)) error {
		path, err := r.store.writeTable(n, kv)
		if path != "" {
			files = append(files, path)
		}
		if err != nil {
			return fmt.Errorf("partition: replica %s: write snapshot chunk: %w", r.info.Placement, err)
		}
		return nil
	}
	var seqKey, seqVal []byte
	err = write(len(pc.entries), func(i int) ([]byte, []byte) { // the log entries
		e := &pc.entries[i]
		seqKey = r.ks.appendSeqKey(seqKey[:0], prev+1+uint64(i))
		if noValues {
			seqVal = appendLegacySeqValue(seqVal[:0], string(e.series), e.time, from.Origin)
		} else {
			seqVal = appendSeqValue(seqVal[:0], string(e.series), e.time, from.Origin, value(i))
		}
		return seqKey, seqVal
	})
	// The rows: every entry, or without the blocks' when they go as they
	// came.
	blocks = blocks && len(pc.blocks) > 0
	rows := make([]int, 0, len(pc.entries))
	for i := range pc.entries {
		if !blocks || pc.entries[i].block < 0 {
			rows = append(rows, i)
		}
	}
	if err == nil && len(rows) > 0 {
		err = write(len(rows), func(i int) ([]byte, []byte) { return pc.entries[rows[i]].key, value(rows[i]) })
	}
	if err == nil && blocks {
		var blockKey []byte
		err = write(len(pc.blocks), func(i int) ([]byte, []byte) { // the blocks, as they are
			b := &pc.blocks[i]
			blockKey = r.ks.appendBlockKey(blockKey[:0], b.bucket, string(b.series))
			return blockKey, b.value
		})
	}
	if err != nil {
		return files, nil, err
	}
	return files, ix, nil
}

// slowIngest is the duration past which an ingest is logged.
const slowIngest = 500 * time.Millisecond

// ingestDir is the directory, inside the store's, of the sstables written
// for an ingest; pebble links them into its own files, and the store
// removes them after the ingest and at Open.
const ingestDir = "ingest"

// writeTable writes an sstable of n keys given in ascending order by kv
// (which may reuse its buffers between calls) into the ingest directory,
// synced, and returns its path.
func (s *Store) writeTable(n int, kv func(i int) (k, v []byte)) (string, error) {
	dir := s.fs.PathJoin(s.dir, ingestDir)
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := s.fs.PathJoin(dir, fmt.Sprintf("%d.sst", s.ingestSeq.Add(1)))
	f, err := s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return "", err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), sstable.WriterOptions{TableFormat: s.db.TableFormat()})
	for i := 0; i < n; i++ {
		k, v := kv(i)
		if err := w.Set(k, v); err != nil {
			_ = w.Close()
			return path, err
		}
	}
	return path, w.Close()
}

// removeIngestFiles removes the sstables written for an ingest.
func (s *Store) removeIngestFiles(files []string) {
	for _, f := range files {
		if err := s.fs.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("remove an ingested sstable", "path", f, "err", err)
		}
	}
}

// cleanIngestDir removes what a crash left in the ingest directory: files
// of an ingest that never happened, or links pebble holds copies of.
func (s *Store) cleanIngestDir() error {
	dir := s.fs.PathJoin(s.dir, ingestDir)
	names, err := s.fs.List(dir)
	if err != nil {
		return nil // no directory: nothing left
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") {
			if err := s.fs.Remove(s.fs.PathJoin(dir, n)); err != nil {
				return fmt.Errorf("partition: clean %s: %w", filepath.Join(dir, n), err)
			}
		}
	}
	return nil
}

// ChunkStats returns how many snapshot chunks the store ingested as
// sstables and how many it merged row by row (a row was in their span).
func (s *Store) ChunkStats() (ingested, merged int64) {
	return s.chunksIngested.Load(), s.chunksMerged.Load()
}

// SnapshotBlocksIngested returns how many sealed blocks of snapshot chunks
// the store ingested as they came (not rewritten as rows).
func (s *Store) SnapshotBlocksIngested() int64 { return s.blocksIngested.Load() }
