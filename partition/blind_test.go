package partition

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// TestDecodeFoldsOperands: a stored value of several row values back to
// back (merge operands, concatenated by pebble oldest first) decodes as
// rule 2 merges them: per field the highest version, the older operand's
// on a tie, and the highest sequence.
func TestDecodeFoldsOperands(t *testing.T) {
	v := encodeOperand(3, fl("a", 1, 5), fl("c", 1, 1))
	v = append(v, encodeOperand(7, fl("a", 2, 4), fl("b", 2, 2))...)                                    // a loses, b is new
	v = append(v, encodeOperand(5, fl("a", 3, 5), fl("c", 3, 2), fl("d", 3, 1))...)                     // a ties (older kept), c wins
	v = append(v, encodeOperand(6, model.Field{Name: "d", Value: model.Deleted(), Version: ver(9)})...) // a tombstone wins
	var raw rawRow
	if err := decodeRaw(v, &raw); err != nil {
		t.Fatal(err)
	}
	got := toModelRow("s", 1, &raw, interner{}, nil, false, &fieldSlab{})
	want := row("s", 1, fl("a", 1, 5), fl("b", 2, 2), fl("c", 3, 2), model.Field{Name: "d", Value: model.Deleted(), Version: ver(9)})
	if err := sameRow(got, want); err != nil {
		t.Fatal(err)
	}
	if raw.seq != 7 {
		t.Fatalf("folded sequence %d, want 7 (the highest)", raw.seq)
	}
	// The same value decodes the same way again with the scratch reused.
	if err := decodeRaw(v, &raw); err != nil || raw.seq != 7 || len(raw.fields) != 4 {
		t.Fatalf("second decode: %v, seq %d, %d fields", err, raw.seq, len(raw.fields))
	}

	// An operand whose fields are out of order, or bytes that are not a
	// value after a good one, are corrupt.
	bad := encodeOperand(1, fl("a", 1, 1))
	fb, fa := fl("b", 1, 1), fl("a", 1, 1)
	unsorted := []encField{encFromModel(&fb), encFromModel(&fa)}
	var enc valueEncoder
	bad = enc.appendValue(bad, 2, unsorted)
	if err := decodeRaw(bad, &raw); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("operand out of order: %v, want ErrCorrupt", err)
	}
	if err := decodeRaw(append(encodeOperand(1, fl("a", 1, 1)), 0xff), &raw); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing garbage: %v, want ErrCorrupt", err)
	}
}

// TestBlindWritesGetSequences: a late row whose series and field kinds
// are indexed is written without a read: it gets a sequence even when it
// ties or loses, its log entry carries only its own fields, and reads
// merge it as the read would have.
func TestBlindWritesGetSequences(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	mustApply(t, r, row("cpu", 10, fl("a", 1, 5), fl("b", 1, 5)), row("cpu", 20, fl("a", 1, 1)))
	high := r.HighSeq()
	res := mustApply(t, r, row("cpu", 10, fl("a", 2, 4))) // loses, late: blind
	if res.Changed != 1 || r.HighSeq() != high+1 {
		t.Fatalf("blind losing write: %+v, high %d → %d; want one sequence", res, high, r.HighSeq())
	}
	mustApply(t, r, row("cpu", 10, fl("b", 3, 6))) // wins
	if err := sameRows(scanAll(t, r), []model.Row{row("cpu", 10, fl("a", 1, 5), fl("b", 3, 6)), row("cpu", 20, fl("a", 1, 1))}); err != nil {
		t.Fatal(err)
	}
	log, err := r.ReadLog(high, 0)
	if err != nil || len(log) != 2 {
		t.Fatalf("log after %d: %+v, %v; want the two blind writes", high, log, err)
	}
	if err := sameRow(log[0].Row, row("cpu", 10, fl("a", 2, 4))); err != nil {
		t.Fatalf("blind entry carries %v", err)
	}
	// A new field kind is looked up (the index learns it from the merged
	// row), and the operands fold the same after a flush and a reopen.
	mustApply(t, r, row("cpu", 10, model.Field{Name: "a", Value: model.Int(7), Version: ver(2)}))
	want := []model.Row{row("cpu", 10, fl("a", 1, 5), fl("b", 3, 6)), row("cpu", 20, fl("a", 1, 1))}
	if err := s.DB().Flush(); err != nil {
		t.Fatal(err)
	}
	if err := sameRows(scanAll(t, r), want); err != nil {
		t.Fatalf("after flush: %v", err)
	}
	if rep, err := r.CheckIndex(false); err != nil || !rep.OK() {
		t.Fatalf("index %+v, %v", rep, err)
	}
}

// TestBlindWritesMatchLookedUp is the differential test of writes without
// a read: random batches (colliding keys, ties of equal versions with
// other values, tombstones, every kind) applied to one replica that
// writes blind and one that reads first read the same after every batch,
// across flushes, compactions and reopens; and the blind replica's log,
// replayed into a third, gives the same rows again.
func TestBlindWritesMatchLookedUp(t *testing.T) {
	rng := newSeededRand(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	stores, info, reps := twinReplicas(t, dirA, dirB)
	sa, sb, a, b := stores[0], stores[1], reps[0], reps[1]
	lookingUp(b)
	times := testTimes(rng, 25)
	for round := 0; round < 40; round++ {
		rows := randRows(rng, 1+rng.Intn(80), testSeries, times)
		mustApply(t, a, rows...)
		mustApply(t, b, rows...)
		if what := rng.Intn(8); what <= churnReopen {
			stores := churn(t, what, []*Store{sa, sb}, []string{dirA, dirB})
			sa, sb = stores[0], stores[1]
			a, _ = sa.Replica(info.Placement)
			b, _ = sb.Replica(info.Placement)
			lookingUp(b)
		}
		if err := sameRows(scanAll(t, a), scanAll(t, b)); err != nil {
			t.Fatalf("round %d: blind and looked-up replicas differ: %v", round, err)
		}
	}
	if a.HighSeq() <= b.HighSeq() {
		t.Fatalf("blind replica at sequence %d, looked-up at %d: no write went without a read", a.HighSeq(), b.HighSeq())
	}
	// An overwrite by another kind leaves the old kind's field key
	// (docs/storage-format.md, "Tag index"): the check reports it as
	// extra in both replicas alike. Blind writes add no entry of their
	// own, and none may be missing.
	repA, errA := a.CheckIndex(false)
	repB, errB := b.CheckIndex(false)
	if errA != nil || errB != nil || repA.Missing != 0 || repA.Extra != repB.Extra ||
		!slices.Equal(repA.Examples, repB.Examples) {
		t.Fatalf("blind replica's index: %+v, %v; looked-up replica's: %+v, %v", repA, errA, repB, errB)
	}
	log, err := a.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := createTestReplica(t, openTestStore(t, ""))
	for _, e := range log {
		if _, err := c.ApplyFrom([]model.Row{e.Row}, uuid.New(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := sameRows(scanAll(t, c), scanAll(t, a)); err != nil {
		t.Fatalf("the blind replica's log replayed: %v", err)
	}
	t.Logf("blind replica wrote %d sequences, looked-up %d", a.HighSeq(), b.HighSeq())
}

// TestApplyPushOwnRows: a late pushed row flagged as its sender's own
// change is written without a read (a tie gets a sequence) and its entry
// names the sender; a relayed row and an own row relayed here lately are
// looked up, and a tie is not stored. Own flags
// of another length than the rows are refused before anything is written.
func TestApplyPushOwnRows(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	mustApply(t, r, row("cpu", 10, fl("a", 1, 5)), row("cpu", 20, fl("a", 1, 5)), row("cpu", 30, fl("a", 1, 5)))
	sender := uuid.New()
	high := r.HighSeq()
	tie := []model.Row{row("cpu", 10, fl("a", 1, 5)), row("cpu", 10, fl("a", 1, 5))}
	res, err := r.ApplyPush(tie[:1], Push{Origin: sender, Own: []bool{false}})
	if err != nil || res.Changed != 0 || r.HighSeq() != high {
		t.Fatalf("relayed tie: %+v, %v; want nothing stored", res, err)
	}
	ownTie := []model.Row{row("cpu", 20, fl("a", 1, 5))} // a key never relayed here
	res, err = r.ApplyPush(ownTie, Push{Origin: sender, Own: []bool{true}})
	if err != nil || res.Changed != 1 || r.HighSeq() != high+1 {
		t.Fatalf("own tie: %+v, %v; want it written with a sequence", res, err)
	}
	log, err := r.ReadLog(high, 0)
	if err != nil || len(log) != 1 || log[0].Origin != sender {
		t.Fatalf("own row's entry %+v, %v; want it to name the sender", log, err)
	}
	if _, err := r.ApplyPush(tie, Push{Origin: sender, Own: []bool{true}}); !errors.Is(err, ErrInvalidRow) || r.HighSeq() != high+1 {
		t.Fatalf("own flags of another length: %v; want ErrInvalidRow and nothing written", err)
	}
	// A row relayed here lately (a relay that overtook its origin's own
	// push) is looked up when the origin's push brings it: a tie, not
	// stored, so not relayed once more.
	relayed := row("cpu", 15, fl("a", 4, 5))
	if _, err := r.ApplyPush([]model.Row{relayed}, Push{Origin: uuid.New()}); err != nil {
		t.Fatal(err)
	}
	high = r.HighSeq()
	res, err = r.ApplyPush([]model.Row{relayed}, Push{Origin: sender, Own: []bool{true}})
	if err != nil || res.Changed != 0 || r.HighSeq() != high {
		t.Fatalf("own push of a row relayed lately: %+v, %v; want it looked up, a tie", res, err)
	}
}

// TestFormatOneUpgrades: a store of format 1 (written by a build before
// writes without a read) opens, keeps its rows, is marked with this
// build's format (storeFormat), and takes blind writes that read back
// merged after a reopen.
func TestFormatOneUpgrades(t *testing.T) {
	dir := t.TempDir()
	s := openPlainStore(t, dir)
	r := lookingUp(createTestReplica(t, s))
	p := r.Info().Placement
	mustApply(t, r, row("cpu", 10, fl("a", 1, 5)), row("cpu", 20, fl("a", 1, 5)))
	setMarker(t, s, "1")

	s, log := openLogged(t, dir)
	if got, want := formatMarker(t, s), strconv.Itoa(storeFormat); got != want {
		t.Fatalf("marker after opening a format 1 store = %q, want %q", got, want)
	}
	if !strings.Contains(log.String(), "from_format=1") {
		t.Fatalf("upgrade not logged:\n%s", log)
	}
	r, _ = s.Replica(p)
	high := r.HighSeq()
	// A late tie and a late win: both written blind, each with a sequence.
	mustApply(t, r, row("cpu", 10, fl("a", 1, 5)))
	mustApply(t, r, row("cpu", 10, fl("a", 2, 6)))
	if r.HighSeq() != high+2 {
		t.Fatalf("high %d → %d, want two blind writes", high, r.HighSeq())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openPlainStore(t, dir)
	r, _ = s.Replica(p)
	if err := sameRows(scanAll(t, r), []model.Row{row("cpu", 10, fl("a", 2, 6)), row("cpu", 20, fl("a", 1, 5))}); err != nil {
		t.Fatal(err)
	}
}

// TestRepeatedBlindWritesFold: a row written blind again and again (a
// point overwritten in place, a retried batch) does not keep its operands:
// the store's merger folds them in flushes and compactions, so the rows
// take about the room of one value each, and read as the last writes.
func TestRepeatedBlindWritesFold(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	const keys, rewrites = 300, 30
	var rows []model.Row
	for k := 0; k < keys; k++ {
		rows = append(rows, row(fmt.Sprintf("cpu,host=h%d", k%10), int64(k), fl("a", float64(k), 1), fl("b", 1, 1)))
	}
	mustApply(t, r, append(rows, row("cpu,host=h0", 1e12, fl("a", 1, 1)))...) // the newest: the rest is late
	size := func() uint64 {
		t.Helper()
		if err := s.DB().Flush(); err != nil {
			t.Fatal(err)
		}
		if err := s.DB().Compact(t.Context(), r.ks.rowLo, r.ks.rowHi, true); err != nil {
			t.Fatal(err)
		}
		n, err := s.DB().EstimateDiskUsage(r.ks.rowLo, r.ks.rowHi)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	once := size()
	high := r.HighSeq()
	for w := int64(2); w < 2+rewrites; w++ {
		for i := range rows {
			rows[i].Fields = []model.Field{fl("a", float64(w), w)}
		}
		mustApply(t, r, rows...)
	}
	if r.HighSeq() != high+keys*rewrites {
		t.Fatalf("high %d → %d, want every rewrite written blind", high, r.HighSeq())
	}
	after := size()
	if after > 2*once {
		t.Fatalf("rows take %d bytes after %d blind rewrites each, %d before: the operands were kept", after, rewrites, once)
	}
	got := scanAll(t, r)
	for _, g := range got[:keys] {
		if len(g.Fields) != 2 || g.Fields[0].Value.F != float64(rewrites+1) || g.Fields[1].Name != "b" {
			t.Fatalf("row %s@%d = %+v, want a=%d and b kept", g.Series, g.Time, g.Fields, rewrites+1)
		}
	}
	t.Logf("rows: %d bytes written once, %d after %d blind rewrites", once, after, rewrites)
}

// TestRowFolder: the merger folds operands added newer or older into the
// value decodeRaw reads from their concatenation (oldest first), and
// hands back bytes it cannot decode as they are, without an error (a
// compaction never fails on them; their readers report them).
func TestRowFolder(t *testing.T) {
	a, b, c := encodeOperand(1, fl("x", 1, 5), fl("y", 1, 1)), encodeOperand(2, fl("x", 2, 5)), encodeOperand(3, fl("y", 3, 2))
	m, err := rowMerger.Merge(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	_ = m.MergeOlder(a)
	_ = m.MergeNewer(c)
	got, _, err := m.Finish(true)
	if err != nil {
		t.Fatal(err)
	}
	if rest, err := new(rawRow).decodeOne(got); err != nil || len(rest) != 0 {
		t.Fatalf("folded value: %v, %d bytes after the first value", err, len(rest))
	}
	var folded, concatenated rawRow
	if err := decodeRaw(got, &folded); err != nil {
		t.Fatal(err)
	}
	if err := decodeRaw(append(append(append([]byte(nil), a...), b...), c...), &concatenated); err != nil {
		t.Fatal(err)
	}
	slab := &fieldSlab{}
	if err := sameRow(toModelRow("s", 1, &folded, interner{}, nil, false, slab), toModelRow("s", 1, &concatenated, interner{}, nil, false, slab)); err != nil || folded.seq != 3 {
		t.Fatalf("folded %v, seq %d; want the concatenation's fold (x=1 kept on the tie, y=3), seq 3", err, folded.seq)
	}
	m, _ = rowMerger.Merge(nil, a)
	_ = m.MergeNewer([]byte{0xff, 0xff})
	got, _, err = m.Finish(false)
	if err != nil || len(got) != len(a)+2 {
		t.Fatalf("undecodable operands: %d bytes, %v; want them concatenated, no error", len(got), err)
	}
}

// encodeOperand encodes a row value of fields (sorted by name) with
// sequence seq: one merge operand.
func encodeOperand(seq uint64, fields ...model.Field) []byte {
	fs := make([]encField, len(fields))
	for i := range fields {
		fs[i] = encFromModel(&fields[i])
	}
	var enc valueEncoder
	return enc.appendValue(nil, seq, fs)
}
