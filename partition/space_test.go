package partition

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// spaceRows writes n series × len(times) rows through r and returns them.
func spaceRows(t *testing.T, r *Replica, n int, times []int64, wall int64) []model.Row {
	t.Helper()
	var rows []model.Row
	for i := 0; i < n; i++ {
		for _, ts := range times {
			rows = append(rows, row(fmt.Sprintf("cpu,host=h%02d", i), ts, fl("v", float64(ts)+float64(i), wall)))
		}
	}
	mustApply(t, r, rows...)
	return rows
}

// rowsIn returns the rows of rows whose time lies in [begin, end) (nil:
// unbounded), sorted as a scan returns them.
func rowsIn(rows []model.Row, begin, end *int64) []model.Row {
	var out []model.Row
	for _, r := range rows {
		if (begin == nil || r.Time >= *begin) && (end == nil || r.Time < *end) {
			out = append(out, r)
		}
	}
	sortRows(out)
	return out
}

// storedRowKeys counts the rows stored under the data space of r with a
// time in [begin, end), in the head and sealed, read from pebble directly.
func storedRowKeys(t *testing.T, s *Store, space uuid.UUID, begin, end int64) int {
	t.Helper()
	ks := newKeyspace(space, space)
	var mem *memView // and in memory
	s.mu.Lock()
	if sp := s.mu.spaces[space]; sp != nil && sp.mem != nil {
		mem = sp.mem.view(ks.rowLo, nil, nil)
	}
	s.mu.Unlock()
	it, err := newRowIter(s.db, mem, &ks, nil, nil) // in the head and sealed
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		_, _, ts, err := rowKeyParts(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		if ts >= begin && ts < end {
			n++
		}
	}
	return n
}

// TestLocalSplitSharesRowsAndDropKeepsThem is issue 16's "a drop of a
// parent after a local split leaves the children's rows": children
// created beside their parent read its rows at once (nothing is copied:
// their logs stay empty), the parent's drop leaves them, a child's drop
// deletes only the rows of its own range (a storage bucket cut in the
// middle included), and the last member's drop deletes the whole space.
//
// Run twice: with the rows in the head, and sealed into blocks before the
// split (a drop then deletes the blocks of the buckets it covers whole and
// rewrites those of the bucket cut in the middle without its rows).
func TestLocalSplitSharesRowsAndDropKeepsThem(t *testing.T) {
	t.Run("head", func(t *testing.T) { testLocalSplitSharesRows(t, false) })
	t.Run("sealed", func(t *testing.T) { testLocalSplitSharesRows(t, true) })
}

func testLocalSplitSharesRows(t *testing.T, sealed bool) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	parent := createSharingReplica(t, s, nil, nil)
	base := int64(1) << 40
	// The split point lies inside a storage bucket, with rows of the same
	// series on both sides of it in that bucket.
	mid := base + 5<<bucketShift + 1000
	var times []int64
	for i := int64(0); i < 12; i++ {
		times = append(times, base+i<<bucketShift/2, mid-1, mid, mid+1)
	}
	times = dedup(times)
	all := spaceRows(t, parent, 5, times, 1)
	if sealed {
		st, err := parent.Seal(t.Context(), math.MaxInt64)
		if err != nil || st.Rows != len(all) {
			t.Fatalf("seal: %+v, %v; want %d rows", st, err, len(all))
		}
		if n := countHeadRows(t, parent); n != 0 {
			t.Fatalf("%d head rows left after sealing everything", n)
		}
	}

	left := createSharingReplica(t, s, nil, &mid)
	right := createSharingReplica(t, s, &mid, nil)
	for _, c := range []*Replica{left, right} {
		if c.DataSpace() != parent.DataSpace() || c.Info().DataSpace != parent.Info().Placement {
			t.Fatalf("child space %s (info %s), parent's %s", c.DataSpace(), c.Info().DataSpace, parent.DataSpace())
		}
		if !parent.SharesData(c.Info().Placement) || !c.SharesData(parent.Info().Placement) {
			t.Fatal("SharesData is false between a parent and its local child")
		}
		if l, err := c.SnapshotLog(); err != nil {
			t.Fatal(err)
		} else if entries, err := l.ReadLog(c.LogStart(), 0); err != nil || len(entries) != 0 || c.LogStart() != 1 {
			t.Fatalf("a sharing child's log: %d entries from %d, %v; want none from 1 (nothing copied; a target from 0 takes a snapshot)",
				len(entries), c.LogStart(), err)
		} else {
			l.Close()
		}
		if rows := snapshotRows(t, c); len(rows) != len(rowsIn(all, c.info.Begin, c.info.End)) {
			t.Fatalf("a row snapshot of a sharing child holds %d rows; want its range's %d", len(rows), len(rowsIn(all, c.info.Begin, c.info.End)))
		}
	}
	check := func(when string) {
		t.Helper()
		if err := sameRows(scanAll(t, left), rowsIn(all, nil, &mid)); err != nil {
			t.Fatalf("%s: left child: %v", when, err)
		}
		if err := sameRows(scanAll(t, right), rowsIn(all, &mid, nil)); err != nil {
			t.Fatalf("%s: right child: %v", when, err)
		}
	}
	check("after the split")

	if err := s.DropReplica(parent.Info().Placement); err != nil {
		t.Fatal(err)
	}
	check("after the parent's drop")
	if got, want := storedRowKeys(t, s, parent.DataSpace(), minTime, maxTime), len(all); got != want {
		t.Fatalf("%d row keys after the parent's drop; want %d", got, want)
	}
	// The children's rows and placements outlive a restart.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	var ok bool
	if left, ok = s.Replica(left.Info().Placement); !ok {
		t.Fatal("left child missing after reopen")
	}
	if right, ok = s.Replica(right.Info().Placement); !ok {
		t.Fatal("right child missing after reopen")
	}
	check("after a reopen")
	if !left.applyMu.shared.Load() {
		t.Fatal("the space is not marked shared after a reopen")
	}

	if err := s.DropReplica(left.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if err := sameRows(scanAll(t, right), rowsIn(all, &mid, nil)); err != nil {
		t.Fatalf("right child after the left's drop: %v", err)
	}
	space := right.DataSpace()
	if n := storedRowKeys(t, s, space, minTime, mid); n != 0 {
		t.Fatalf("%d row keys of the dropped left child's range remain", n)
	}
	if got, want := storedRowKeys(t, s, space, mid, maxTime), len(rowsIn(all, &mid, nil)); got != want {
		t.Fatalf("%d row keys in the right child's range; want %d", got, want)
	}
	if err := s.DropReplica(right.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if ks := newKeyspace(space, space); countKeys(t, s.db, ks.space, ks.spaceEnd) != 0 {
		t.Fatal("keys remain in the space after its last member's drop")
	}
}

// snapshotRows reads every row a row snapshot of r gives a target.
func snapshotRows(t *testing.T, r *Replica) []model.Row {
	t.Helper()
	ls, err := r.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	rows, err := ls.ReadRows(nil, RowRange{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func dedup(ts []int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// TestReaddedPlacementKeepsRowsWhenOldIsDropped is the failure scenario
// of docs/safety.md rule 4 (research/design-review.md item 4) with data
// spaces: a server still holding placement p1 of a partition (UNLOAD, not
// dropped yet) is added again as p2; p2's rows land in the same space as
// p1's, and p1's drop must leave them, since p2 covers its range.
func TestReaddedPlacementKeepsRowsWhenOldIsDropped(t *testing.T) {
	s := openTestStore(t, "")
	begin, end := int64(0), int64(100<<bucketShift)
	p1 := createSharingReplica(t, s, &begin, &end)
	spaceRows(t, p1, 3, []int64{1, 2, 3 << bucketShift}, 1)
	p1.Unload()
	p2 := createSharingReplica(t, s, &begin, &end)
	if p2.DataSpace() != p1.DataSpace() {
		t.Fatal("the re-added placement did not join the space of the old one")
	}
	// p2 receives rows (pushes), newer versions of some and new ones.
	pushed := spaceRows(t, p2, 3, []int64{2, 3 << bucketShift, 7 << bucketShift}, 2)
	want := scanAll(t, p2)
	if len(want) < len(pushed) {
		t.Fatalf("p2 holds %d rows, fewer than the %d pushed", len(want), len(pushed))
	}
	if err := s.DropReplica(p1.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if err := sameRows(scanAll(t, p2), want); err != nil {
		t.Fatalf("p2 after p1's drop: %v", err)
	}
	// p1's log is gone with it; p2's is whole.
	if _, err := p2.ReadLog(p2.LogStart(), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateReplica(p1.Info()); !errors.Is(err, ErrDropped) {
		t.Fatalf("re-creating the dropped p1: %v; want ErrDropped", err)
	}
}

// TestSharedOverwriteKeepsOtherLogs: when a member overwrites a row
// another member wrote, the other's log entry stays (it is the other's to
// push and truncate), and each log reads whole: with its entries carrying
// values, and while nobody reads it (its newest change's entry only).
func TestSharedOverwriteKeepsOtherLogs(t *testing.T) {
	for _, values := range []bool{true, false} {
		t.Run(fmt.Sprintf("logvalues=%v", values), func(t *testing.T) {
			s := openPlainStore(t, "")
			parent := createSharingReplica(t, s, nil, nil)
			parent.SetLogValues(values)
			mustApply(t, parent, row("cpu", 10, fl("a", 1, 1)))
			mustApply(t, parent, row("cpu", 5, fl("a", 0, 1)), row("cpu", 20, fl("a", 2, 1)))
			child := createSharingReplica(t, s, nil, nil)
			// The child's overwrite merges with the parent's fields.
			mustApply(t, child, row("cpu", 10, fl("b", 3, 2)))
			// parentLog checks the parent's log: its n entries, or while
			// nobody reads it (values off) the entry of its newest change
			// just above its truncation point.
			parentLog := func(when string, n int) []LogEntry {
				t.Helper()
				from := uint64(0)
				if !values {
					from, n = parent.LogStart(), 1
				}
				plog, err := parent.ReadLog(from, 0)
				if err != nil || len(plog) != n || plog[n-1].Seq != parent.HighSeq() {
					t.Fatalf("parent's log %s: %+v, %v; want %d entries up to %d", when, plog, err, n, parent.HighSeq())
				}
				return plog
			}
			parentLog("before the child's write", 3)
			// The child's log starts truncated at 1 (its shared rows are
			// no entries of it): its first write is sequence 2.
			clog, err := child.ReadLog(1, 0)
			if err != nil || len(clog) != 1 || clog[0].Seq != 2 || len(clog[0].Row.Fields) != 2 {
				t.Fatalf("child's log %+v, %v; want one entry with both fields", clog, err)
			}
			// The parent's overwrite of the row the child wrote last finds
			// the child's sequence 2 stored with it: the parent's entry 2
			// (another row, cpu@5) must stay, or cpu@5 is never pushed.
			mustApply(t, parent, row("cpu", 10, fl("a", 4, 3)))
			if clog, err := child.ReadLog(1, 0); err != nil || len(clog) != 1 {
				t.Fatalf("child's log after the parent's overwrite: %d entries, %v", len(clog), err)
			}
			if plog := parentLog("after its overwrite", 4); values && (plog[1].Seq != 2 || plog[1].Row.Time != 5) {
				t.Fatalf("parent's log after its overwrite: %+v; want cpu@5 at 2", plog)
			}
		})
	}
}

// TestApplyRefusesRowsOutsideRange: a replica stores only rows of its
// range (another member of its space may own the rest), by Apply and by
// snapshot chunk.
func TestApplyRefusesRowsOutsideRange(t *testing.T) {
	s := openTestStore(t, "")
	begin, end := int64(100), int64(200)
	r := createSharingReplica(t, s, &begin, &end)
	for _, ts := range []int64{99, 200, minTime, maxTime} {
		if _, err := r.Apply([]model.Row{row("cpu", 150, fl("v", 1, 1)), row("cpu", ts, fl("v", 1, 1))}); !errors.Is(err, ErrInvalidRow) {
			t.Fatalf("Apply of a row at %d: %v; want ErrInvalidRow", ts, err)
		}
	}
	if r.HighSeq() != 0 {
		t.Fatal("a refused Apply stored rows")
	}
	wide := createTestReplica(t, s)
	mustApply(t, wide, row("cpu", 150, fl("v", 1, 1)), row("cpu", 250, fl("v", 1, 1)))
	c := wholeChunk(t, wide)
	if _, err := r.IngestChunk(c.Data, c.Rows, Push{}); !errors.Is(err, ErrInvalidRow) {
		t.Fatalf("IngestChunk with a row outside the range: %v; want ErrInvalidRow", err)
	}
	if r.HighSeq() != 0 {
		t.Fatal("a refused chunk stored rows")
	}
}

// TestSpaceChoice: a replica shares only with live replicas of the same
// table incarnation whose ranges overlap, all in one space, which holds a
// row at or after its begin; otherwise (or with NoShare) it starts its
// own.
func TestSpaceChoice(t *testing.T) {
	s := openTestStore(t, "")
	a0, a1, b1 := int64(0), int64(10), int64(20)
	a := createSharingReplica(t, s, &a0, &a1)
	b := createSharingReplica(t, s, &a1, &b1)
	if a.DataSpace() == b.DataSpace() {
		t.Fatal("disjoint replicas share a space")
	}
	if empty := createSharingReplica(t, s, &a0, &a1); empty.DataSpace() == a.DataSpace() {
		t.Fatal("a replica shared a space that holds no row")
	} else if err := s.DropReplica(empty.Info().Placement); err != nil { // two spaces would overlap [a0, a1)
		t.Fatal(err)
	}
	mustApply(t, a, row("cpu", 5, fl("v", 1, 1)))
	mustApply(t, b, row("cpu", 15, fl("v", 1, 1)))
	sameA := createSharingReplica(t, s, &a0, &a1)
	if sameA.DataSpace() != a.DataSpace() {
		t.Fatal("a replica of the same range did not share")
	}
	for _, begin := range []int64{a0, 5} {
		if c := createSharingReplica(t, s, &begin, &a1); c.DataSpace() != a.DataSpace() {
			t.Fatalf("a child from %d, at or before the space's newest row, did not share", begin)
		}
	}
	ahead := int64(6)
	if c := createSharingReplica(t, s, &ahead, &a1); c.DataSpace() != c.Info().Placement {
		t.Fatal("a child past the space's newest row (a pre-split child of a tail) shared it")
	}
	c0, c1 := int64(5), int64(15)
	if c := createSharingReplica(t, s, &c0, &c1); c.DataSpace() != c.Info().Placement {
		t.Fatal("a replica overlapping two spaces joined one")
	}
	other := testInfo(uuid.New())
	other.Table = "other"
	other.TableCreatedAt = sharingTable
	if r, err := s.CreateReplica(other); err != nil || r.DataSpace() != other.Placement {
		t.Fatalf("a replica of another table: %v, space %s", err, r.DataSpace())
	}
	again := testInfo(uuid.New())
	again.Begin, again.End, again.TableCreatedAt = &a0, &a1, sharingTable.Add(1)
	if r, err := s.CreateReplica(again); err != nil || r.DataSpace() != again.Placement {
		t.Fatalf("a replica of a re-created table: %v, space %s", err, r.DataSpace())
	}
	legacy := testInfo(uuid.New()) // no table creation time
	if r, err := s.CreateReplica(legacy); err != nil || r.DataSpace() != legacy.Placement {
		t.Fatalf("a replica without a table creation time: %v", err)
	}

	ns, err := Open(Options{MemoryHead: memHeadTests, Dir: t.TempDir(), NoShare: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	p := createSharingReplica(t, ns, nil, nil)
	if c := createSharingReplica(t, ns, nil, &a1); c.DataSpace() == p.DataSpace() {
		t.Fatal("NoShare: a child shared its parent's space")
	}
}

// TestDropOfUnknownRootKeepsMembersRows: dropping again the placement a
// space is named after (its first member, dropped already) deletes its
// own keys only, never the rows of the members still live.
func TestDropOfUnknownRootKeepsMembersRows(t *testing.T) {
	s := openTestStore(t, "")
	root := createSharingReplica(t, s, nil, nil)
	all := spaceRows(t, root, 2, []int64{1, 2, 3}, 1)
	member := createSharingReplica(t, s, nil, nil)
	if err := s.DropReplica(root.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if err := s.DropReplica(root.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if err := sameRows(scanAll(t, member), rowsIn(all, nil, nil)); err != nil {
		t.Fatal(err)
	}
	// The index is the space's: the member finds the series.
	keys, err := member.SeriesKeys(model.Query{}, 0)
	if err != nil || len(keys) != 2 {
		t.Fatalf("SeriesKeys %v, %v; want 2", keys, err)
	}
	if !bytes.Equal(member.ks.space, root.ks.prefix) {
		t.Fatal("the member's rows are not under the root's prefix")
	}
}

// TestCoveringSharers: a replica names the live members of its space whose
// ranges cover its own (what a push's answer tells the sender,
// replication's alias confirmation), never a narrower one, itself, a
// replica of another space or a dropped one.
func TestCoveringSharers(t *testing.T) {
	s := openTestStore(t, "")
	mid := int64(10)
	parent := createSharingReplica(t, s, nil, nil)
	if got := parent.CoveringSharers(); got != nil {
		t.Fatalf("a replica alone in its space names %v", got)
	}
	child := createSharingReplica(t, s, nil, &mid)
	createSharingReplica(t, s, &mid, nil) // the other child
	alone := createTestReplica(t, s)
	if got := child.CoveringSharers(); !slices.Equal(got, []uuid.UUID{parent.Info().Placement}) {
		t.Fatalf("the child names %v; want its parent %s", got, parent.Info().Placement)
	}
	if got := parent.CoveringSharers(); got != nil {
		t.Fatalf("the parent names %v; its children cover only part of its range", got)
	}
	if got := alone.CoveringSharers(); got != nil {
		t.Fatalf("a replica of its own space names %v", got)
	}
	if err := s.DropReplica(parent.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if got := child.CoveringSharers(); got != nil {
		t.Fatalf("the child names %v after its parent's drop", got)
	}
}

// TestDropCutsSealedBucketTwice: a parent dropped beside a child whose
// range lies inside one storage bucket leaves two uncovered spans in that
// bucket; with the rows sealed, both are cut out of the one block (the
// second rewrite of a block must not restore the first's rows).
func TestDropCutsSealedBucketTwice(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		s := openTestStore(t, "")
		parent := createSharingReplica(t, s, nil, nil)
		base := int64(7) << bucketShift
		mustApply(t, parent, row("cpu", base+10, fl("a", 1, 1)), row("cpu", base+50, fl("a", 2, 1)), row("cpu", base+90, fl("a", 3, 1)))
		if sealed {
			if st, err := parent.Seal(t.Context(), maxTime); err != nil || st.Rows != 3 {
				t.Fatalf("seal: %+v, %v", st, err)
			}
		}
		lo, hi := base+40, base+60
		child := createSharingReplica(t, s, &lo, &hi)
		if err := s.DropReplica(parent.Info().Placement); err != nil {
			t.Fatal(err)
		}
		if n := storedRowKeys(t, s, child.DataSpace(), minTime, maxTime); n != 1 {
			t.Fatalf("sealed=%v: %d rows left in the space; want the child's 1", sealed, n)
		}
		if err := sameRows(scanAll(t, child), []model.Row{row("cpu", base+50, fl("a", 2, 1))}); err != nil {
			t.Fatalf("sealed=%v: %v", sealed, err)
		}
	}
}

// TestLogReadsDuringADropOfASharer: a member's log is read while another
// member of its data space holds the space's apply lock (a split parent's
// drop, which writes its rows in memory to pebble under it). Its pushers
// used to queue behind that lock, and with every partition at "now" in
// one space, all replication of a server waited for each drop
// (docs/performance.md, "Log reads without the apply lock"). The dropped
// replica's own log answers ErrDropped at once.
func TestLogReadsDuringADropOfASharer(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	base := int64(1) << 40
	mid := base + 1000
	parent := createSharingReplica(t, s, nil, nil)
	spaceRows(t, parent, 3, []int64{base, mid + 1}, 1)
	child := createSharingReplica(t, s, &mid, nil)
	if child.DataSpace() != parent.DataSpace() {
		t.Fatal("the child does not share its parent's data space")
	}
	spaceRows(t, child, 2, []int64{mid + 2, mid + 3}, 2)
	want, err := child.ReadLog(child.LogStart(), 0)
	if err != nil || len(want) != 4 {
		t.Fatalf("the child's log before the drop: %d entries, %v; want 4", len(want), err)
	}

	finish := holdDrop(s, parent)
	type read struct {
		child, parent []LogEntry
		childErr, err error
	}
	got := make(chan read, 1)
	go func() {
		var r read
		r.child, r.childErr = child.ReadLog(child.LogStart(), 0)
		r.parent, r.err = parent.ReadLog(0, 0)
		got <- r
	}()
	select {
	case r := <-got:
		if r.childErr != nil || len(r.child) != len(want) {
			t.Errorf("the child's log during the drop: %d entries, %v; want %d", len(r.child), r.childErr, len(want))
		}
		if !errors.Is(r.err, ErrDropped) {
			t.Errorf("the dropped parent's log during its drop: %d entries, %v; want ErrDropped", len(r.parent), r.err)
		}
	case <-time.After(30 * time.Second):
		_ = finish()
		<-got // the reads end with the drop: no t.Errorf after the test
		t.Fatal("a log read of a sharer waited for the drop")
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	if after, err := child.ReadLog(child.LogStart(), 0); err != nil || len(after) != len(want) {
		t.Errorf("the child's log after the drop: %d entries, %v; want %d", len(after), err, len(want))
	}
}

// TestLogReadHoldsItsHigh: a log read without the apply lock pairs a high
// sequence with a snapshot that holds every change up to it, while Applies
// run: every read of a log nobody truncates returns exactly the entries 1
// to its high. It fails when an Apply stores its high sequence before its
// batch is visible (a read then misses changes it claims, and a push would
// confirm rows its target never got).
func TestLogReadHoldsItsHigh(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	r := createTestReplica(t, s)
	const writers, batches = 4, 40
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			for b := 0; b < batches; b++ {
				ts := int64(b*writers + w)
				if _, err := r.Apply([]model.Row{row(fmt.Sprintf("w%d", w), ts, fl("v", 1, 1)), row(fmt.Sprintf("x%d", w), ts, fl("v", 2, 1))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	reads := 0
	for done := false; !done; {
		select {
		case <-finished:
			done = true // one more read, of everything
		default:
		}
		snap, high, err := r.snapshot()
		if err != nil {
			t.Fatal(err)
		}
		entries, err := r.readLog(snap, 0, high, 0, logRead{})
		_ = snap.Close()
		if err != nil {
			t.Fatal(err)
		}
		if uint64(len(entries)) != high || (high > 0 && entries[len(entries)-1].Seq != high) {
			t.Fatalf("a read at high %d returned %d entries", high, len(entries))
		}
		reads++
	}
	if high := r.HighSeq(); high != writers*batches*2 {
		t.Errorf("high sequence %d after the writes, want %d", high, writers*batches*2)
	}
	t.Logf("%d reads", reads)
}
