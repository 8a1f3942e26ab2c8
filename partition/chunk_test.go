package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/block"
)

// copyByChunks moves the rows of src held now in rr into dst by snapshot
// chunks of about maxBytes, as a row snapshot push does, and returns the
// number of chunks.
func copyByChunks(t *testing.T, src, dst *Replica, rr RowRange, maxBytes int) int {
	n, _ := copyByChunksBlocks(t, src, dst, rr, maxBytes)
	return n
}

// copyByChunksBlocks is copyByChunks also returning the number of sealed
// blocks the chunks carried.
func copyByChunksBlocks(t *testing.T, src, dst *Replica, rr RowRange, maxBytes int) (chunks, blocks int) {
	t.Helper()
	ls, err := src.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	var pos *RowPos
	for {
		c, err := ls.ReadChunk(nil, pos, rr, maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if c.Rows > 0 {
			chunks++
			blocks += c.Blocks
			if _, err := dst.IngestChunk(c.Data, c.Rows, Push{}); err != nil {
				t.Fatalf("IngestChunk: %v", err)
			}
			pos = c.Last
		}
		if c.Done {
			return chunks, blocks
		}
	}
}

// wholeChunk reads every row src holds now as one chunk.
func wholeChunk(t *testing.T, src *Replica) Chunk {
	t.Helper()
	ls, err := src.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	c, err := ls.ReadChunk(nil, nil, RowRange{}, 0)
	if err != nil || !c.Done {
		t.Fatalf("chunk %+v, %v", c, err)
	}
	return c
}

// TestChunkIngestCopiesTheRange: rows moved by chunks into an empty
// replica are exactly the source's rows in the range, with a log entry at
// a fresh sequence each (the receiver pushes them on), an index that
// matches them, all durable across a reopen, and later writes merge with
// them by version (rule 2).
func TestChunkIngestCopiesTheRange(t *testing.T) {
	t.Run("head", func(t *testing.T) {
		src, _, _, _ := randomReplica(t)
		chunkIngestCopiesTheRange(t, src, false)
	})
	// Sealed: most blocks shipped as they are, those with a row written
	// after the seal as rows.
	t.Run("sealed", func(t *testing.T) {
		src, _, rng, times := randomReplica(t)
		if _, err := src.Seal(t.Context(), maxTime); err != nil {
			t.Fatal(err)
		}
		mustApply(t, src, randRows(rng, 20, testSeries, times)...)
		chunkIngestCopiesTheRange(t, src, true)
	})
}

func chunkIngestCopiesTheRange(t *testing.T, src *Replica, sealed bool) {
	p := func(v int64) *int64 { return &v }
	for _, rr := range []RowRange{{}, {Begin: p(0)}, {Begin: p(-3 << bucketShift), End: p(2<<bucketShift + 5)},
		{Begin: p(-3<<bucketShift + 1<<35), End: p(2<<bucketShift + 1<<34)}} { // edges inside buckets
		dir := t.TempDir()
		ds := openTestStore(t, dir)
		info := testInfo(uuid.New())
		dst, err := ds.CreateReplica(info)
		if err != nil {
			t.Fatal(err)
		}
		mustApply(t, dst, row("a-first", minTime+5, fl("v", 1, 1))) // sorts before every chunk: outside their spans
		before := dst.HighSeq()
		chunks, blocks := copyByChunksBlocks(t, src, dst, rr, 512)
		if got := ds.SnapshotBlocksIngested(); sealed != (blocks > 0) || got != int64(blocks) {
			t.Fatalf("range %v..%v: %d blocks shipped, %d ingested as blocks (sealed: %v)", rr.Begin, rr.End, blocks, got, sealed)
		}
		var want []model.Row
		for _, r := range scanAll(t, src) {
			if rr.contains(r.Time) {
				want = append(want, r)
			}
		}
		if chunks < 2 {
			t.Fatalf("range %v..%v: %d chunks, want several", rr.Begin, rr.End, chunks)
		}
		if ing, merged := ds.ChunkStats(); ing != int64(chunks) || merged != 0 {
			t.Fatalf("chunks ingested %d, merged %d; want %d, 0", ing, merged, chunks)
		}
		check := func(when string, dst *Replica) {
			got := scanAll(t, dst)
			wantAll := append([]model.Row{row("a-first", minTime+5, fl("v", 1, 1))}, want...)
			sortRows(got)
			sortRows(wantAll)
			if err := sameRows(got, wantAll); err != nil {
				t.Fatalf("%s: range %v..%v: %v", when, rr.Begin, rr.End, err)
			}
			if h := dst.HighSeq(); h != before+uint64(len(want)) || dst.SyncedSeq() != h {
				t.Fatalf("%s: high %d synced %d, want %d", when, h, dst.SyncedSeq(), before+uint64(len(want)))
			}
			es, err := dst.ReadLog(before, 0)
			if err != nil || len(es) != len(want) {
				t.Fatalf("%s: log above %d: %d entries, %v; want %d", when, before, len(es), err, len(want))
			}
			for i, e := range es {
				if e.Seq != before+1+uint64(i) {
					t.Fatalf("%s: entry %d has sequence %d", when, i, e.Seq)
				}
			}
			rep, err := dst.CheckIndex(false)
			if err != nil || !rep.OK() {
				t.Fatalf("%s: index check %+v, %v", when, rep, err)
			}
		}
		check("ingested", dst)
		if err := ds.Close(); err != nil {
			t.Fatal(err)
		}
		ds = openTestStore(t, dir)
		dst, ok := ds.Replica(info.Placement)
		if !ok {
			t.Fatal("replica gone after reopen")
		}
		check("reopened", dst)
		if len(want) == 0 {
			continue
		}
		// An older version of an ingested row changes nothing; a newer
		// one replaces it, and its change is logged after the ingested
		// entries, which stay.
		w := want[0]
		old := row(w.Series, w.Time, model.Field{Name: w.Fields[0].Name, Value: model.Float(-1), Version: model.Version{Wall: 0, Node: 0}})
		old.Fields[0].Version = model.Version{Wall: -1 << 62, Node: 1}
		if res := mustApply(t, lookingUp(dst), old); res.Changed != 0 {
			t.Fatalf("an older version changed the ingested row: %+v", res)
		}
		newer := row(w.Series, w.Time, fl(w.Fields[0].Name, 42, 1<<62))
		res := mustApply(t, dst, newer)
		if res.Changed != 1 {
			t.Fatalf("a newer version changed %d rows", res.Changed)
		}
		es, err := dst.ReadLog(before, 0)
		if err != nil || len(es) != len(want)+1 || es[len(es)-1].Row.Series != w.Series {
			t.Fatalf("log after the overwrite: %d entries (want %d, the last of %s), %v", len(es), len(want)+1, w.Series, err)
		}
	}
}

// TestChunkMergesIntoHeldRows: a chunk whose span holds a row of the
// receiver is merged field by field, never ingested over it (rule 2).
func TestChunkMergesIntoHeldRows(t *testing.T) {
	s := openTestStore(t, "")
	src, dst := createTestReplica(t, s), createTestReplica(t, s)
	mustApply(t, src, row("a", 1, fl("v", 1, 10)), row("b", 1, fl("v", 1, 10)), row("c", 1, fl("v", 1, 10)))
	mustApply(t, dst, row("b", 1, fl("v", 2, 20))) // newer than the chunk's
	copyByChunks(t, src, dst, RowRange{}, 0)
	if ing, merged := s.ChunkStats(); ing != 0 || merged != 1 {
		t.Fatalf("chunks ingested %d, merged %d; want 0, 1", ing, merged)
	}
	want := []model.Row{row("a", 1, fl("v", 1, 10)), row("b", 1, fl("v", 2, 20)), row("c", 1, fl("v", 1, 10))}
	if err := sameRows(scanAll(t, dst), want); err != nil {
		t.Fatal(err)
	}
	// The same snapshot again (from another replica of the source, say)
	// changes nothing: no row is newer.
	high := dst.HighSeq()
	copyByChunks(t, src, dst, RowRange{}, 0)
	if _, merged := s.ChunkStats(); merged != 2 || dst.HighSeq() != high {
		t.Fatalf("the same chunk again: merged %d, high %d (was %d)", merged, dst.HighSeq(), high)
	}
	// A newer field of a held row is merged in.
	mustApply(t, src, row("c", 1, fl("w", 5, 30)))
	copyByChunks(t, src, dst, RowRange{}, 0)
	want[2] = row("c", 1, fl("v", 1, 10), fl("w", 5, 30))
	if err := sameRows(scanAll(t, dst), want); err != nil || dst.HighSeq() != high+1 {
		t.Fatalf("a newer field: %v, high %d, want %d", err, dst.HighSeq(), high+1)
	}
}

// TestChunkBadInput: a malformed chunk fails with ErrCorrupt and writes
// nothing, whatever its bytes.
func TestChunkBadInput(t *testing.T) {
	s := openTestStore(t, "")
	src, dst := createTestReplica(t, s), createTestReplica(t, s)
	mustApply(t, src, row("a", 1, fl("v", 1, 10)), row("b", 2, fl("v", 1, 10)))
	c := wholeChunk(t, src)
	if c.Rows != 2 {
		t.Fatalf("chunk of %d rows, want 2", c.Rows)
	}
	entryOf := func(kind byte, key, value []byte) []byte {
		b := binary.AppendUvarint([]byte{kind}, uint64(len(key)))
		b = append(b, key...)
		b = binary.AppendUvarint(b, uint64(len(value)))
		return append(b, value...)
	}
	entry := func(key, value []byte) []byte { return entryOf(chunkKindRow, key, value) }
	// The entries of the good chunk, taken apart.
	d := decoder{b: c.Data[2:]}
	if d.byte() != chunkKindRow {
		t.Fatal("the first entry is not a row")
	}
	k1, v1 := d.bytes(), d.bytes()
	d.byte()
	k2, v2 := d.bytes(), d.bytes()
	head := []byte{chunkTag, chunkVersion}
	// A block key (bucket|series|0x00) and a sealed block of row a.
	bkey := append([]byte(nil), k1[:len(k1)-timeLen]...)
	var enc block.Encoder
	goodBlock, err := enc.Encode(nil, []model.Row{row("a", 1, fl("v", 1, 10))})
	if err != nil {
		t.Fatal(err)
	}
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	badBucket := append([]byte(nil), k1...)
	badBucket[0] ^= 0x40
	nul := join(k1[:4], []byte("a\x00b"), k1[len(k1)-9:])
	for name, tc := range map[string]struct {
		chunk []byte
		rows  int
	}{
		"not a chunk":     {[]byte("R\x01"), 0},
		"unknown version": {[]byte{chunkTag, 9}, 0},
		"truncated":       {c.Data[:len(c.Data)-3], 2},
		"count":           {c.Data, 3},
		"out of order":    {join(head, entry(k2, v2), entry(k1, v1)), 2},
		"duplicate":       {join(head, entry(k1, v1), entry(k1, v1)), 2},
		"wrong bucket":    {join(head, entry(badBucket, v1)), 1},
		"nul in series":   {join(head, entry(nul, v1)), 1},
		"short key":       {join(head, entry(k1[:6], v1)), 1},
		"bad value":       {join(head, entry(k1, v1[:len(v1)-1])), 1},
		"no fields":       {join(head, entry(k1, []byte{1, 0, 0})), 1},
		"unknown kind":    {join(head, entryOf('x', k1, v1)), 1},
		"bad block":       {join(head, entryOf(chunkKindBlock, bkey, goodBlock[:len(goodBlock)-2])), 1},
		"block key":       {join(head, entryOf(chunkKindBlock, bkey[:len(bkey)-1], goodBlock)), 1},
		"block count":     {join(head, entryOf(chunkKindBlock, bkey, goodBlock)), 2},
		"block order":     {join(head, entry(k1, v1), entryOf(chunkKindBlock, bkey, goodBlock)), 2},
		"v1 with kinds":   {join([]byte{chunkTag, chunkRowsOnly}, entry(k1, v1)), 1},
	} {
		_, err := dst.IngestChunk(tc.chunk, tc.rows, Push{})
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	// Every single-byte change either fails cleanly or stores a chunk
	// that parses: never a panic.
	for i := range c.Data {
		b := append([]byte(nil), c.Data...)
		b[i] ^= 0xff
		o := createTestReplica(t, s)
		_, _ = o.IngestChunk(b, 2, Push{})
	}
	if h := dst.HighSeq(); h != 0 || len(scanAll(t, dst)) != 0 {
		t.Fatalf("bad chunks wrote: high %d", h)
	}
}

// TestChunkIngestRefusedWhenUnloadingOrDropped: IngestChunk answers like
// Apply on a replica that is unloading or dropped.
func TestChunkIngestRefusedWhenUnloadingOrDropped(t *testing.T) {
	s := openTestStore(t, "")
	src, dst := createTestReplica(t, s), createTestReplica(t, s)
	mustApply(t, src, row("a", 1, fl("v", 1, 10)))
	c := wholeChunk(t, src)
	dst.Unload()
	if _, err := dst.IngestChunk(c.Data, c.Rows, Push{}); !errors.Is(err, ErrUnloading) {
		t.Fatalf("unloading: %v", err)
	}
	dst.Resume()
	if err := s.DropReplica(dst.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.IngestChunk(c.Data, c.Rows, Push{}); !errors.Is(err, ErrDropped) {
		t.Fatalf("dropped: %v", err)
	}
}

// TestChunkIngestThenApply: right after an ingest (no reopen, so the
// in-memory bounds the Apply's no-lookup path trusts are the ingest's),
// an older version of an ingested row changes nothing and a newer one
// replaces it, superseding its log entry; the ingested entries record the
// sender as their origin.
func TestChunkIngestThenApply(t *testing.T) {
	s := openTestStore(t, "")
	src, dst := lookingUp(createTestReplica(t, s)), lookingUp(createTestReplica(t, s))
	mustApply(t, src, row("a", 10, fl("v", 1, 10)), row("b", 20, fl("v", 1, 10)))
	c := wholeChunk(t, src)
	from := uuid.New()
	if _, err := dst.IngestChunk(c.Data, c.Rows, Push{Origin: from}); err != nil {
		t.Fatal(err)
	}
	es, err := dst.ReadLog(0, 0)
	if err != nil || len(es) != 2 || es[0].Origin != from || es[1].Origin != from {
		t.Fatalf("log after the ingest: %+v, %v; want 2 entries from %s", es, err, from)
	}
	if res := mustApply(t, dst, row("b", 20, fl("v", -1, 5))); res.Changed != 0 {
		t.Fatalf("an older version of an ingested row changed it: %+v", res)
	}
	if res := mustApply(t, dst, row("b", 20, fl("v", 2, 30))); res.Changed != 1 {
		t.Fatalf("a newer version changed %d rows", res.Changed)
	}
	want := []model.Row{row("a", 10, fl("v", 1, 10)), row("b", 20, fl("v", 2, 30))}
	if err := sameRows(scanAll(t, dst), want); err != nil {
		t.Fatal(err)
	}
	if es, err := dst.ReadLog(0, 0); err != nil || len(es) != 3 || es[2].Row.Series != "b" || es[2].Origin != uuid.Nil {
		t.Fatalf("log after the overwrite: %+v, %v", es, err)
	}
}

// TestChunkBlockBesideHeldBlock: a shipped block whose series and bucket
// the receiver holds a block of already (rows outside the chunk's span)
// is stored as rows: ingested as a block it would replace the held one
// and lose its rows.
func TestChunkBlockBesideHeldBlock(t *testing.T) {
	s := openTestStore(t, "")
	src, dst := createTestReplica(t, s), createTestReplica(t, s)
	mustApply(t, src, row("m", 10, fl("v", 1, 10)), row("m", 20, fl("v", 2, 10)), row("m", 30, fl("v", 3, 10)))
	mustApply(t, dst, row("m", 5, fl("v", 0, 10)))
	for _, r := range []*Replica{src, dst} {
		if _, err := r.Seal(t.Context(), maxTime); err != nil {
			t.Fatal(err)
		}
	}
	if _, blocks := copyByChunksBlocks(t, src, dst, RowRange{}, 0); blocks != 1 {
		t.Fatalf("%d blocks shipped, want 1", blocks)
	}
	if n := s.SnapshotBlocksIngested(); n != 0 {
		t.Fatalf("%d blocks ingested as blocks beside a held one", n)
	}
	want := []model.Row{row("m", 5, fl("v", 0, 10)), row("m", 10, fl("v", 1, 10)), row("m", 20, fl("v", 2, 10)), row("m", 30, fl("v", 3, 10))}
	if err := sameRows(scanAll(t, dst), want); err != nil {
		t.Fatal(err)
	}
	// Into a replica without that block, the block is stored as it came.
	other := createTestReplica(t, s)
	copyByChunks(t, src, other, RowRange{}, 0)
	if n := s.SnapshotBlocksIngested(); n != 1 {
		t.Fatalf("%d blocks ingested as blocks, want 1", n)
	}
	if err := sameRows(scanAll(t, other), want[1:]); err != nil {
		t.Fatal(err)
	}
}

// TestChunkVersion1: a chunk of the version before blocks (rows, no kind
// byte) is still read and ingested.
func TestChunkVersion1(t *testing.T) {
	s := openTestStore(t, "")
	src, dst := createTestReplica(t, s), createTestReplica(t, s)
	rows := []model.Row{row("a", 1, fl("v", 1, 10)), row("b", 2, fl("v", 2, 10))}
	mustApply(t, src, rows...)
	c := wholeChunk(t, src)
	v1 := []byte{chunkTag, chunkRowsOnly}
	d := decoder{b: c.Data[2:]}
	for len(d.b) > 0 {
		if kind := d.byte(); kind != chunkKindRow {
			t.Fatalf("entry of kind %q", kind)
		}
		k, v := d.bytes(), d.bytes()
		v1 = binary.AppendUvarint(v1, uint64(len(k)))
		v1 = append(v1, k...)
		v1 = binary.AppendUvarint(v1, uint64(len(v)))
		v1 = append(v1, v...)
	}
	if _, err := dst.IngestChunk(v1, 2, Push{}); err != nil {
		t.Fatal(err)
	}
	if err := sameRows(scanAll(t, dst), rows); err != nil {
		t.Fatal(err)
	}
}

// TestReadChunkOlderBlockVersion: a row snapshot reads the version of a
// sealed block its snapshot keeps after a later seal rewrote the block.
// Once flushed, that older version lies in an sstable's value block,
// whose fetched bytes pebble may reuse at the next fetch; a second fetch
// of the block's value (rowIter.wholeBlock's, before this fix) then
// changed the bytes the block reader was decoding, and the chunk failed
// as a corrupt block at every attempt (node.TestSplitUnderLoad, whose
// split then never finalized). Under -race pebble overwrites such bytes
// with 0xcc at the next fetch half of the time, so the test reads the
// chunk many times.
func TestReadChunkOlderBlockVersion(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	r, err := s.CreateReplica(testInfo(uuid.New()))
	if err != nil {
		t.Fatal(err)
	}
	var rows []model.Row
	for i := range 40 {
		for _, series := range []string{"a", "b", "c"} {
			rows = append(rows, row(series, int64(i+1)*1e9, fl("v", float64(i), int64(i+1))))
		}
	}
	mustApply(t, r, rows...)
	if _, err := r.Seal(t.Context(), maxTime); err != nil {
		t.Fatal(err)
	}
	snap, err := r.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	// A late row in every series' block, sealed again: new versions of
	// the block keys, the snapshot keeping the old ones; then flushed.
	for _, series := range []string{"a", "b", "c"} {
		mustApply(t, r, row(series, 20e9+5e8, fl("v", 99, 100)))
	}
	if _, err := r.Seal(t.Context(), maxTime); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	end := int64(15e9) // inside the blocks: each is read by rows
	for attempt := range 32 {
		c, err := snap.ReadChunk(nil, nil, RowRange{End: &end}, 0)
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		if want := 3 * 14; c.Rows != want || !c.Done {
			t.Fatalf("attempt %d: %d rows (done %v), want %d in one chunk", attempt, c.Rows, c.Done, want)
		}
	}
}
