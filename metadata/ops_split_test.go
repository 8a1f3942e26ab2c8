package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// This file holds the SPLIT_* tests and the helpers every op test shares:
// the fixtures, the valid/invalid case runners and the no-shrink check.

// nextTxn is the txnid every op test applies under.
var nextTxn = testTxn('c')

// opCase is one op applied to a base under txn (nextTxn when empty). A
// valid case sets want (the exact expected file); an invalid one sets err (a
// substring of the message).
type opCase struct {
	name string
	base *File
	txn  string
	op   Op
	want *File
	err  string
}

func (tc opCase) txnID() string {
	if tc.txn == "" {
		return nextTxn
	}
	return tc.txn
}

// wantNext returns the file an op applied to base under nextTxn must
// produce: a copy of base with the successor header, changed by edit.
func wantNext(base *File, edit func(f *File)) *File {
	f := base.Clone()
	f.TxnID, f.TxnSeq, f.ParentTxnID = nextTxn, base.TxnSeq+1, base.TxnID
	edit(f)
	return f
}

// runValid applies each case and checks the exact result, that the base is
// unchanged and that no surviving range shrank.
func runValid(t *testing.T, cases []opCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := mustEncode(t, tc.base)
			got, err := Apply(tc.base, nextTxn, tc.op)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %s\nwant %s", jsonOf(got), jsonOf(tc.want))
			}
			if !bytes.Equal(mustEncode(t, got), mustEncode(t, tc.want)) {
				t.Fatal("equal files encode differently")
			}
			if !bytes.Equal(before, mustEncode(t, tc.base)) {
				t.Fatal("Apply modified the base")
			}
			checkNoShrink(t, tc.base, got)
		})
	}
}

// runInvalid applies each case and checks that it fails with ErrInvalidOp,
// a message naming the problem, and an unchanged base.
func runInvalid(t *testing.T, cases []opCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := jsonOf(tc.base) // a base may be invalid on purpose, so not Encode
			f, err := Apply(tc.base, tc.txnID(), tc.op)
			wantErr(t, err, ErrInvalidOp, tc.err)
			if f != nil {
				t.Fatal("a failed op returned a file")
			}
			if before != jsonOf(tc.base) {
				t.Fatal("Apply modified the base")
			}
		})
	}
}

func mustEncode(t *testing.T, f *File) []byte {
	t.Helper()
	b, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// idRanges maps every partition and split-child id of f to its range.
func idRanges(f *File) map[uuid.UUID][2]*int64 {
	out := make(map[uuid.UUID][2]*int64)
	for _, p := range f.Partitions {
		out[p.ID] = [2]*int64{p.Begin, p.End}
		if p.Split != nil {
			for _, c := range p.Split.Children {
				out[c.ID] = [2]*int64{c.Begin, c.End}
			}
		}
	}
	return out
}

// checkNoShrink fails if an id (partition or split child) present in both
// files has, in next, a range that does not contain its range in base
// (rule 9: no op shrinks a range in place).
func checkNoShrink(t *testing.T, base, next *File) {
	t.Helper()
	if problems := shrunk(base, next); len(problems) > 0 {
		t.Fatalf("ranges shrank: %v", problems)
	}
}

// shrunk lists the ids whose range in next does not contain their range in
// base.
func shrunk(base, next *File) []string {
	var out []string
	after := idRanges(next)
	for id, r := range idRanges(base) {
		n, ok := after[id]
		if !ok {
			continue
		}
		if compareBegin(n[0], r[0]) > 0 || compareEnd(n[1], r[1]) < 0 {
			out = append(out, fmt.Sprintf("%s: %s became %s", id, fmtRange(r[0], r[1]), fmtRange(n[0], n[1])))
		}
	}
	return out
}

// splitting returns fourPartitions with p1 [0, 100) splitting at 50 into
// c1 {s1, s2, s3} and c2 {s2, s3, s4}.
func splitting() *File {
	f := fourPartitions()
	f.Partitions[1].Split = &Split{Points: []int64{50}, Children: []Child{
		{ID: testID("c1"), Begin: i64(0), End: i64(50), Servers: []Placement{pl("s1", "c1s1"), pl("s2", "c1s2"), pl("s3", "c1s3")}},
		{ID: testID("c2"), Begin: i64(50), End: i64(100), Servers: []Placement{pl("s2", "c2s2"), pl("s3", "c2s3"), pl("s4", "c2s4")}},
	}}
	return f
}

// withJoining returns fourPartitions with s3 joining p2.
func withJoining() *File {
	f := fourPartitions()
	f.Partitions[2].Joining = []Placement{pl("s3", "p2s3")}
	return f
}

func splitBegin(o SplitBeginOp) Op { return Op{Type: OpSplitBegin, SplitBegin: &o} }

func splitFinalize(id string, confirmed map[string][]string) Op {
	c := make(map[uuid.UUID][]string, len(confirmed))
	for k, v := range confirmed {
		c[testID(k)] = v
	}
	return Op{Type: OpSplitFinalize, SplitFinalize: &SplitFinalizeOp{PartitionID: testID(id), Confirmed: c}}
}

func splitAbort(id string) Op {
	return Op{Type: OpSplitAbort, SplitAbort: &SplitAbortOp{PartitionID: testID(id)}}
}

// sizeSplit is a valid SPLIT_BEGIN of p1 [0, 100) at 50.
func sizeSplit() SplitBeginOp {
	return SplitBeginOp{PartitionID: testID("p1"), Points: []int64{50}, Children: []SplitChild{
		{ID: testID("n1"), Servers: []Placement{pl("s1", "n1s1"), pl("s3", "n1s3")}},
		{ID: testID("n2"), Servers: []Placement{pl("s2", "n2s2"), pl("s4", "n2s4")}},
	}}
}

func splitValidCases() []opCase {
	four := fourPartitions()
	off := fourPartitions()
	off.Partitions[1].Offline = true
	sp := splitting()
	spOff := splitting()
	spOff.Partitions[1].Offline = true
	return []opCase{
		{name: "SPLIT_BEGIN size split", base: four, op: splitBegin(sizeSplit()), want: wantNext(four, func(f *File) {
			f.Partitions[1].Split = &Split{Points: []int64{50}, Children: []Child{
				{ID: testID("n1"), Begin: i64(0), End: i64(50), Servers: []Placement{pl("s1", "n1s1"), pl("s3", "n1s3")}},
				{ID: testID("n2"), Begin: i64(50), End: i64(100), Servers: []Placement{pl("s2", "n2s2"), pl("s4", "n2s4")}},
			}}
		})},
		{name: "SPLIT_BEGIN pre-split of the open tail into 3", base: four, op: splitBegin(SplitBeginOp{
			PartitionID: testID("p3"), Points: []int64{300, 400}, Presplit: true, Children: []SplitChild{
				{ID: testID("t1"), Servers: []Placement{pl("s1", "t1s1")}},
				{ID: testID("t2"), Servers: []Placement{pl("s2", "t2s2")}},
				{ID: testID("t3"), Servers: []Placement{pl("s3", "t3s3"), pl("s1", "t3s1")}},
			}}), want: wantNext(four, func(f *File) {
			f.Partitions[3].Split = &Split{Points: []int64{300, 400}, Children: []Child{
				{ID: testID("t1"), Begin: i64(200), End: i64(300), Servers: []Placement{pl("s1", "t1s1")}},
				{ID: testID("t2"), Begin: i64(300), End: i64(400), Servers: []Placement{pl("s2", "t2s2")}},
				{ID: testID("t3"), Begin: i64(400), End: nil, Servers: []Placement{pl("s3", "t3s3"), pl("s1", "t3s1")}},
			}}
		})},
		{name: "SPLIT_BEGIN pre-split with a single point", base: four, op: splitBegin(SplitBeginOp{
			PartitionID: testID("p0"), Points: []int64{-1}, Presplit: true, Children: []SplitChild{
				{ID: testID("h1"), Servers: []Placement{pl("s1", "h1s1")}},
				{ID: testID("h2"), Servers: []Placement{pl("s1", "h2s1")}},
			}}), want: wantNext(four, func(f *File) {
			f.Partitions[0].Split = &Split{Points: []int64{-1}, Children: []Child{
				{ID: testID("h1"), Begin: nil, End: i64(-1), Servers: []Placement{pl("s1", "h1s1")}},
				{ID: testID("h2"), Begin: i64(-1), End: i64(0), Servers: []Placement{pl("s1", "h2s1")}},
			}}
		})},
		{name: "SPLIT_BEGIN of an offline partition", base: off, op: splitBegin(sizeSplit()), want: wantNext(off, func(f *File) {
			f.Partitions[1].Split = &Split{Points: []int64{50}, Children: []Child{
				{ID: testID("n1"), Begin: i64(0), End: i64(50), Servers: []Placement{pl("s1", "n1s1"), pl("s3", "n1s3")}},
				{ID: testID("n2"), Begin: i64(50), End: i64(100), Servers: []Placement{pl("s2", "n2s2"), pl("s4", "n2s4")}},
			}}
		})},
		{name: "SPLIT_FINALIZE all confirmed", base: sp, op: splitFinalize("p1", map[string][]string{
			"c1": {"s1", "s2", "s3"}, "c2": {"s2", "s3", "s4"},
		}), want: wantNext(sp, func(f *File) {
			f.Partitions = []Partition{f.Partitions[0],
				{ID: testID("c1"), Begin: i64(0), End: i64(50), Servers: []Placement{pl("s1", "c1s1"), pl("s2", "c1s2"), pl("s3", "c1s3")}, Joining: []Placement{}},
				{ID: testID("c2"), Begin: i64(50), End: i64(100), Servers: []Placement{pl("s2", "c2s2"), pl("s3", "c2s3"), pl("s4", "c2s4")}, Joining: []Placement{}},
				f.Partitions[2], f.Partitions[3]}
		})},
		{name: "SPLIT_FINALIZE majorities: the others join, in listed order", base: sp, op: splitFinalize("p1", map[string][]string{
			"c1": {"s3", "s1"}, "c2": {"s4", "s2"},
		}), want: wantNext(sp, func(f *File) {
			f.Partitions = []Partition{f.Partitions[0],
				{ID: testID("c1"), Begin: i64(0), End: i64(50), Servers: []Placement{pl("s1", "c1s1"), pl("s3", "c1s3")}, Joining: []Placement{pl("s2", "c1s2")}},
				{ID: testID("c2"), Begin: i64(50), End: i64(100), Servers: []Placement{pl("s2", "c2s2"), pl("s4", "c2s4")}, Joining: []Placement{pl("s3", "c2s3")}},
				f.Partitions[2], f.Partitions[3]}
		})},
		{name: "SPLIT_FINALIZE children inherit offline", base: spOff, op: splitFinalize("p1", map[string][]string{
			"c1": {"s1", "s2", "s3"}, "c2": {"s2", "s3", "s4"},
		}), want: wantNext(spOff, func(f *File) {
			f.Partitions = []Partition{f.Partitions[0],
				{ID: testID("c1"), Begin: i64(0), End: i64(50), Servers: []Placement{pl("s1", "c1s1"), pl("s2", "c1s2"), pl("s3", "c1s3")}, Joining: []Placement{}, Offline: true},
				{ID: testID("c2"), Begin: i64(50), End: i64(100), Servers: []Placement{pl("s2", "c2s2"), pl("s3", "c2s3"), pl("s4", "c2s4")}, Joining: []Placement{}, Offline: true},
				f.Partitions[2], f.Partitions[3]}
		})},
		{name: "SPLIT_FINALIZE of a pre-split tail into 3", base: tailSplitting(), op: splitFinalize("p3", map[string][]string{
			"t1": {"s1"}, "t2": {"s2"}, "t3": {"s1", "s3"},
		}), want: wantNext(tailSplitting(), func(f *File) {
			f.Partitions = []Partition{f.Partitions[0], f.Partitions[1], f.Partitions[2],
				{ID: testID("t1"), Begin: i64(200), End: i64(300), Servers: []Placement{pl("s1", "t1s1")}, Joining: []Placement{}},
				{ID: testID("t2"), Begin: i64(300), End: i64(400), Servers: []Placement{pl("s2", "t2s2")}, Joining: []Placement{}},
				{ID: testID("t3"), Begin: i64(400), End: nil, Servers: []Placement{pl("s3", "t3s3"), pl("s1", "t3s1")}, Joining: []Placement{}}}
		})},
		{name: "SPLIT_ABORT", base: sp, op: splitAbort("p1"), want: wantNext(sp, func(f *File) {
			f.Partitions[1].Split = nil
		})},
	}
}

// tailSplitting returns fourPartitions with the tail p3 [200, +inf)
// pre-splitting at 300 and 400 into t1 {s1}, t2 {s2}, t3 {s3, s1}.
func tailSplitting() *File {
	f := fourPartitions()
	f.Partitions[3].Split = &Split{Points: []int64{300, 400}, Children: []Child{
		{ID: testID("t1"), Begin: i64(200), End: i64(300), Servers: []Placement{pl("s1", "t1s1")}},
		{ID: testID("t2"), Begin: i64(300), End: i64(400), Servers: []Placement{pl("s2", "t2s2")}},
		{ID: testID("t3"), Begin: i64(400), End: nil, Servers: []Placement{pl("s3", "t3s3"), pl("s1", "t3s1")}},
	}}
	return f
}

func TestApplySplitValid(t *testing.T) {
	runValid(t, splitValidCases())
}

func TestApplySplitBeginCopiesTheOp(t *testing.T) {
	op := sizeSplit()
	f, err := Apply(fourPartitions(), nextTxn, splitBegin(op))
	if err != nil {
		t.Fatal(err)
	}
	op.Points[0] = 77
	op.Children[0].Servers[0].ServerID = "mutated"
	s := f.Partitions[1].Split
	if s.Points[0] != 50 || *s.Children[0].End != 50 || *s.Children[1].Begin != 50 || s.Children[0].Servers[0].ServerID != "s1" {
		t.Fatalf("the file shares memory with the op: %s", jsonOf(s))
	}
}

func TestApplySplitBeginInvalid(t *testing.T) {
	runInvalid(t, splitBeginInvalidCases())
}

func splitBeginInvalidCases() []opCase {
	four, sp := fourPartitions(), splitting()
	noServers := fourPartitions()
	noServers.Partitions[1].Servers = nil
	with := func(edit func(o *SplitBeginOp)) Op { o := sizeSplit(); edit(&o); return splitBegin(o) }
	return []opCase{
		{name: "unknown partition", base: four, op: with(func(o *SplitBeginOp) { o.PartitionID = testID("zz") }),
			err: "partition " + testID("zz").String() + " is not a current partition"},
		{name: "split child id", base: sp, op: with(func(o *SplitBeginOp) { o.PartitionID = testID("c1") }),
			err: "is a split child of " + testID("p1").String()},
		{name: "already splitting", base: sp, op: with(func(o *SplitBeginOp) {}),
			err: "partition " + testID("p1").String() + " is already splitting at [50]"},
		{name: "joining not empty", base: withJoining(), op: with(func(o *SplitBeginOp) {
			o.PartitionID = testID("p2")
			o.Points = []int64{150}
		}), err: `has joining servers ["s3"]`},
		{name: "no servers", base: noServers, op: with(func(o *SplitBeginOp) {}), err: "has no servers"},
		{name: "no points", base: four, op: with(func(o *SplitBeginOp) { o.Points = nil }), err: "no split points"},
		{name: "size split with two points", base: four, op: with(func(o *SplitBeginOp) {
			o.Points = []int64{30, 60}
			o.Children = append(o.Children, SplitChild{ID: testID("n3"), Servers: []Placement{pl("s1", "n3s1")}})
		}), err: "a size split (presplit=false) takes exactly one point, got 2"},
		{name: "points not increasing", base: four, op: with(func(o *SplitBeginOp) {
			o.Presplit, o.Points = true, []int64{60, 60}
			o.Children = append(o.Children, SplitChild{ID: testID("n3"), Servers: []Placement{pl("s1", "n3s1")}})
		}), err: "points[1] = 60 is not above points[0] = 60"},
		{name: "points decreasing", base: four, op: with(func(o *SplitBeginOp) {
			o.Presplit, o.Points = true, []int64{60, 30}
			o.Children = append(o.Children, SplitChild{ID: testID("n3"), Servers: []Placement{pl("s1", "n3s1")}})
		}), err: "points[1] = 30 is not above points[0] = 60"},
		{name: "point on the begin edge", base: four, op: with(func(o *SplitBeginOp) { o.Points = []int64{0} }),
			err: "points[0] = 0 is not strictly inside partition " + testID("p1").String() + " [0, 100)"},
		{name: "point on the end edge", base: four, op: with(func(o *SplitBeginOp) { o.Points = []int64{100} }),
			err: "points[0] = 100 is not strictly inside"},
		{name: "point outside", base: four, op: with(func(o *SplitBeginOp) { o.Points = []int64{-5} }),
			err: "points[0] = -5 is not strictly inside"},
		{name: "point on the end edge of an open-begin partition", base: four, op: with(func(o *SplitBeginOp) {
			o.PartitionID = testID("p0")
			o.Points = []int64{0}
		}), err: "points[0] = 0 is not strictly inside partition " + testID("p0").String() + " [-inf, 0)"},
		{name: "too few children", base: four, op: with(func(o *SplitBeginOp) { o.Children = o.Children[:1] }),
			err: "want 2 children for 1 points, got 1"},
		{name: "too many children", base: four, op: with(func(o *SplitBeginOp) {
			o.Children = append(o.Children, SplitChild{ID: testID("n3"), Servers: []Placement{pl("s1", "n3s1")}})
		}), err: "want 2 children for 1 points, got 3"},
		{name: "nil child id", base: four, op: with(func(o *SplitBeginOp) { o.Children[1].ID = uuid.Nil }),
			err: "children[1]: nil id"},
		{name: "child id of a current partition", base: four, op: with(func(o *SplitBeginOp) { o.Children[0].ID = testID("p2") }),
			err: "children[0]: id " + testID("p2").String() + " is already used"},
		{name: "child id of the parent", base: four, op: with(func(o *SplitBeginOp) { o.Children[0].ID = testID("p1") }),
			err: "children[0]: id " + testID("p1").String() + " is already used"},
		{name: "child id of another split's child", base: sp, op: with(func(o *SplitBeginOp) {
			o.PartitionID, o.Points = testID("p2"), []int64{150}
			o.Children[1].ID = testID("c2")
		}), err: "children[1]: id " + testID("c2").String() + " is already used"},
		{name: "child ids repeated in the op", base: four, op: with(func(o *SplitBeginOp) { o.Children[1].ID = o.Children[0].ID }),
			err: "children[1]: id " + testID("n1").String() + " is already used in the file or by another child"},
		{name: "child without servers", base: four, op: with(func(o *SplitBeginOp) { o.Children[1].Servers = nil }),
			err: "children[1]: no servers"},
		{name: "server twice in a child", base: four, op: with(func(o *SplitBeginOp) { o.Children[0].Servers[1].ServerID = "s1" }),
			err: `children[0]: servers[1]: duplicate server "s1"`},
		{name: "empty server id in a child", base: four, op: with(func(o *SplitBeginOp) { o.Children[0].Servers[0].ServerID = "" }),
			err: "children[0]: servers[0]: empty server_id"},
		{name: "nil child placement", base: four, op: with(func(o *SplitBeginOp) { o.Children[1].Servers[0].PlacementID = uuid.Nil }),
			err: "children[1]: servers[0]: nil placement_id"},
		{name: "child placement used by a partition", base: four, op: with(func(o *SplitBeginOp) {
			o.Children[1].Servers[0].PlacementID = testID("p3s2")
		}), err: "children[1]: servers[0]: placement_id " + testID("p3s2").String() + ` of server "s2" is already used`},
		{name: "child placement is a parent placement", base: four, op: with(func(o *SplitBeginOp) {
			o.Children[0].Servers[0] = pl("s1", "p1s1")
		}), err: "children[0]: servers[0]: placement_id " + testID("p1s1").String()},
		{name: "child placement used by another split's child", base: sp, op: with(func(o *SplitBeginOp) {
			o.PartitionID, o.Points = testID("p2"), []int64{150}
			o.Children[0].Servers[1] = pl("s3", "c1s3")
		}), err: "children[0]: servers[1]: placement_id " + testID("c1s3").String()},
		{name: "child placement repeated across children", base: four, op: with(func(o *SplitBeginOp) {
			o.Children[1].Servers[1] = pl("s4", "n1s1")
		}), err: "children[1]: servers[1]: placement_id " + testID("n1s1").String() + ` of server "s4" is already used in the file or by another child`},
	}
}

func TestApplySplitFinalizeInvalid(t *testing.T) {
	runInvalid(t, splitFinalizeInvalidCases())
}

func splitFinalizeInvalidCases() []opCase {
	four, sp := fourPartitions(), splitting()
	all := map[string][]string{"c1": {"s1", "s2", "s3"}, "c2": {"s2", "s3", "s4"}}
	two := splitting()
	two.Partitions[1].Split.Children[0].Servers = two.Partitions[1].Split.Children[0].Servers[:2]
	return []opCase{
		{name: "unknown partition", base: sp, op: splitFinalize("zz", all), err: "is not a current partition"},
		{name: "split child id", base: sp, op: splitFinalize("c1", all), err: "is a split child of " + testID("p1").String()},
		{name: "not splitting", base: four, op: splitFinalize("p1", all), err: "partition " + testID("p1").String() + " is not splitting"},
		{name: "unknown child in confirmed", base: sp, op: splitFinalize("p1", map[string][]string{
			"c1": {"s1", "s2"}, "c2": {"s2", "s3"}, "c9": {"s1"},
		}), err: "confirmed: " + testID("c9").String() + ": not a child of partition " + testID("p1").String()},
		{name: "confirmed server not listed for the child", base: sp, op: splitFinalize("p1", map[string][]string{
			"c1": {"s1", "s2", "s4"}, "c2": {"s2", "s3"},
		}), err: `confirmed[` + testID("c1").String() + `]: server "s4" is not a server of child`},
		{name: "confirmed server twice", base: sp, op: splitFinalize("p1", map[string][]string{
			"c1": {"s1", "s1"}, "c2": {"s2", "s3"},
		}), err: `confirmed[` + testID("c1").String() + `]: server "s1" listed twice`},
		{name: "child without a majority", base: sp, op: splitFinalize("p1", map[string][]string{
			"c1": {"s1", "s2"}, "c2": {"s2"},
		}), err: "child " + testID("c2").String() + ": 1 of its 3 servers confirmed, a majority (2) must"},
		{name: "child missing from confirmed", base: sp, op: splitFinalize("p1", map[string][]string{
			"c1": {"s1", "s2"},
		}), err: "child " + testID("c2").String() + ": 0 of its 3 servers confirmed"},
		{name: "half is not a majority", base: two, op: splitFinalize("p1", map[string][]string{
			"c1": {"s1"}, "c2": {"s2", "s3"},
		}), err: "child " + testID("c1").String() + ": 1 of its 2 servers confirmed, a majority (2) must"},
	}
}

func TestApplySplitAbortInvalid(t *testing.T) {
	runInvalid(t, splitAbortInvalidCases())
}

func splitAbortInvalidCases() []opCase {
	return []opCase{
		{name: "unknown partition", base: splitting(), op: splitAbort("zz"), err: "partition " + testID("zz").String() + " is not a current partition"},
		{name: "split child id", base: splitting(), op: splitAbort("c2"), err: "is a split child of " + testID("p1").String()},
		{name: "not splitting", base: splitting(), op: splitAbort("p2"), err: "partition " + testID("p2").String() + " is not splitting"},
		{name: "aborted already", base: fourPartitions(), op: splitAbort("p1"), err: "partition " + testID("p1").String() + " is not splitting"},
	}
}

// TestApplySplitFinalizeConfirmedMessageDeterministic checks that several
// unknown child ids are named in one sorted list, whatever the map order.
func TestApplySplitFinalizeConfirmedMessageDeterministic(t *testing.T) {
	op := splitFinalize("p1", map[string][]string{"x1": {"s1"}, "x2": {"s1"}, "x3": {"s1"}, "c1": {"s1", "s2"}})
	_, first := Apply(splitting(), nextTxn, op)
	for range 20 {
		if _, err := Apply(splitting(), nextTxn, op); err == nil || err.Error() != first.Error() {
			t.Fatalf("messages differ: %v / %v", first, err)
		}
	}
}

// allValidCases lists the valid cases of every op, for the tests that run
// across ops.
func allValidCases() []opCase {
	var all []opCase
	all = append(all, splitValidCases()...)
	all = append(all, joinValidCases()...)
	all = append(all, dropValidCases()...)
	return all
}

// TestOpsDeterministic: for every op, the same base, op and txnid give
// identical bytes, also when the base is a copy and the op went through its
// JSON wire form.
func TestOpsDeterministic(t *testing.T) {
	seen := make(map[OpType]bool)
	for _, tc := range allValidCases() {
		seen[tc.op.Type] = true
		t.Run(tc.name, func(t *testing.T) {
			a, err := Apply(tc.base, nextTxn, tc.op)
			if err != nil {
				t.Fatal(err)
			}
			wire, err := json.Marshal(tc.op)
			if err != nil {
				t.Fatal(err)
			}
			var decoded Op
			if err := json.Unmarshal(wire, &decoded); err != nil {
				t.Fatal(err)
			}
			b, err := Apply(tc.base.Clone(), nextTxn, decoded)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mustEncode(t, a), mustEncode(t, b)) {
				t.Fatalf("same op gave different bytes:\n%s\n%s", jsonOf(a), jsonOf(b))
			}
			other, err := Apply(tc.base, testTxn('d'), tc.op)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(mustEncode(t, a), mustEncode(t, other)) {
				t.Fatal("a different txnid gave the same bytes")
			}
		})
	}
	for _, typ := range []OpType{OpSplitBegin, OpSplitFinalize, OpSplitAbort, OpJoinServer, OpJoinFinalize,
		OpRemoveServer, OpForceJoin, OpDropPartitions} {
		if !seen[typ] {
			t.Errorf("no valid case of %s", typ)
		}
	}
}

// TestOpsNeverShrink applies every valid case and checks rule 9's "no op
// shrinks a range in place" on the result (runValid checks it too; this
// test names the rule).
func TestOpsNeverShrink(t *testing.T) {
	for _, tc := range allValidCases() {
		t.Run(tc.name, func(t *testing.T) {
			next, err := Apply(tc.base, nextTxn, tc.op)
			if err != nil {
				t.Fatal(err)
			}
			checkNoShrink(t, tc.base, next)
		})
	}
	t.Run("the check catches a shrink", func(t *testing.T) {
		base := splitting()
		next := base.Clone()
		next.Partitions[1].End = i64(90)
		next.Partitions[2].Begin = i64(90)
		next.Partitions[1].Split.Children[1].End = i64(90)
		if got := shrunk(base, next); len(got) != 2 {
			t.Fatalf("shrunk found %v, want p1 and c2", got)
		}
		if got := shrunk(base, wantNext(base, func(f *File) { f.Partitions[1].Begin = nil; f.Partitions = f.Partitions[1:] })); len(got) != 0 {
			t.Fatalf("a range that grew counted as shrunk: %v", got)
		}
	})
}

func TestOpBodiesJSONNames(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		want string
	}{
		{splitBegin(sizeSplit()), `"split_begin":{"partition_id":`},
		{splitFinalize("p1", nil), `"split_finalize":{"partition_id":`},
		{splitAbort("p1"), `"split_abort":{"partition_id":`},
		{Op{Type: OpJoinServer, JoinServer: &JoinServerOp{}}, `"join_server":{"partition_id":`},
		{Op{Type: OpJoinFinalize, JoinFinalize: &JoinFinalizeOp{}}, `"join_finalize":{"partition_id":`},
		{Op{Type: OpRemoveServer, RemoveServer: &RemoveServerOp{}}, `"remove_server":{"partition_id":`},
		{Op{Type: OpForceJoin, ForceJoin: &ForceJoinOp{}}, `"force_join":{"partition_id":`},
		{Op{Type: OpDropPartitions, DropPartitions: &DropPartitionsOp{}}, `"drop_partitions":{"partition_ids":`},
	} {
		t.Run(string(tc.op.Type), func(t *testing.T) {
			got := jsonOf(tc.op)
			if !bytes.Contains([]byte(got), []byte(tc.want)) || !bytes.HasPrefix([]byte(got), []byte(`{"type":"`+string(tc.op.Type)+`"`)) {
				t.Fatalf("%s does not contain %s", got, tc.want)
			}
		})
	}
}

// opsSeed fixes the seed of TestOpsRandomSequence; 0 takes one from the
// clock. The seed is logged, and named in every failure.
var opsSeed = flag.Uint64("ops.seed", 0, "seed of TestOpsRandomSequence (0: from the clock)")

// TestOpsRandomSequence applies random valid ops in sequence, from CREATE
// on, and checks after each one that the result validates (so the axis stays
// covered), that no range shrank, that the base is untouched, and that
// discovery gives every replica of the base the status the new file implies.
// Each step also replays the previous step's op on the new file: a stale op
// must fail with ErrInvalidOp or yield a valid file.
func TestOpsRandomSequence(t *testing.T) {
	seed := *opsSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with go test ./metadata/ -run TestOpsRandomSequence -ops.seed=%d)", seed, seed)
	const runs, steps = 16, 200
	counts := make(map[OpType]int)
	for run := range runs {
		g := &opGen{rng: rand.New(rand.NewPCG(seed, uint64(run)))}
		create := CreateOp{Table: "cpu", PartitionID: g.id(), Servers: g.placements(3)}
		f, err := Apply(nil, g.txn(), Op{Type: OpCreate, Create: &create})
		if err != nil {
			t.Fatalf("seed %d run %d: CREATE: %v", seed, run, err)
		}
		var prev Op
		for step := range steps {
			op := g.next(f)
			where := fmt.Sprintf("seed %d run %d step %d %s", seed, run, step, jsonOf(op))
			before := f.Clone()
			next, err := Apply(f, g.txn(), op)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			checkStep(t, where, f, next, before)
			counts[op.Type]++
			if prev.Type != "" {
				if stale, err := Apply(next, g.txn(), prev); err != nil {
					if !errors.Is(err, ErrInvalidOp) {
						t.Fatalf("%s: replaying %s: %v", where, jsonOf(prev), err)
					}
				} else if err := stale.Validate(); err != nil || len(shrunk(next, stale)) > 0 {
					t.Fatalf("%s: replaying %s: %v %v", where, jsonOf(prev), err, shrunk(next, stale))
				}
			}
			prev, f = op, next
		}
	}
	t.Logf("ops applied: %v", counts)
	for _, typ := range []OpType{OpSplitBegin, OpSplitFinalize, OpSplitAbort, OpJoinServer, OpJoinFinalize,
		OpRemoveServer, OpForceJoin, OpSetOffline, OpDropPartitions} {
		if counts[typ] == 0 {
			t.Errorf("seed %d: no %s was generated", seed, typ)
		}
	}
}

// checkStep checks one applied op: header, validity, coverage, no shrink,
// base untouched, and discovery for every replica of the base.
func checkStep(t *testing.T, where string, base, next *File, baseCopy *File) {
	t.Helper()
	if next.TxnSeq != base.TxnSeq+1 || next.ParentTxnID != base.TxnID {
		t.Fatalf("%s: header %d/%s after %d/%s", where, next.TxnSeq, next.ParentTxnID, base.TxnSeq, base.TxnID)
	}
	if err := next.Validate(); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	for _, x := range []int64{math.MinInt64, -1 << 40, -1, 0, 1, 1 << 40, math.MaxInt64} {
		if _, ok := next.Find(x); !ok {
			t.Fatalf("%s: %d is not covered", where, x)
		}
	}
	if s := shrunk(base, next); len(s) > 0 {
		t.Fatalf("%s: ranges shrank: %v", where, s)
	}
	if !reflect.DeepEqual(baseCopy, base.Clone()) {
		t.Fatalf("%s: Apply modified the base", where)
	}
	checkDiscoveryStep(t, where, base, next)
}

// replicaOf is where a placement sits in a file.
type replicaOf struct {
	id     uuid.UUID
	server string
	status DiscoveryStatus
}

// replicas maps every placement of f to its id, server and the status
// discovery must give it.
func replicas(f *File) map[uuid.UUID]replicaOf {
	out := make(map[uuid.UUID]replicaOf)
	add := func(id uuid.UUID, ps []Placement, st DiscoveryStatus) {
		for _, pl := range ps {
			out[pl.PlacementID] = replicaOf{id, pl.ServerID, st}
		}
	}
	for _, p := range f.Partitions {
		add(p.ID, p.Servers, StatusServe)
		add(p.ID, p.Joining, StatusLoad)
		if p.Split != nil {
			for _, c := range p.Split.Children {
				add(c.ID, c.Servers, StatusLoad)
			}
		}
	}
	return out
}

// checkDiscoveryStep runs discovery on next for every replica of base (with
// base's range): the status matches where next lists the placement, no
// answer targets the replica itself, targets are sorted, and an UNLOAD
// answer has targets whenever anything overlapping holds a replica.
func checkDiscoveryStep(t *testing.T, where string, base, next *File) {
	t.Helper()
	ranges, now := idRanges(base), replicas(next)
	for placement, r := range replicas(base) {
		rg := ranges[r.id]
		d := Discover(next, r.server, ReplicaRef{PartitionID: r.id, PlacementID: placement, Begin: rg[0], End: rg[1]})
		want := StatusUnload
		if n, ok := now[placement]; ok && n.id == r.id && n.server == r.server {
			want = n.status
		} else if expired(next.DroppedBefore, rg[1]) {
			want = StatusDrop // retention deleted its whole range
		}
		if d.Status != want {
			t.Fatalf("%s: %s/%s: got %s, want %s", where, r.id, r.server, d.Status, want)
		}
		if !slices.IsSortedFunc(d.Targets, compareTargets) {
			t.Fatalf("%s: targets not sorted: %s", where, jsonOf(d.Targets))
		}
		for _, tg := range d.Targets {
			if tg.PlacementID == placement {
				t.Fatalf("%s: %s/%s targets itself", where, r.id, r.server)
			}
			// No push ever carries a row older than the retention horizon.
			if next.DroppedBefore != nil && compareBegin(tg.Begin, next.DroppedBefore) < 0 {
				t.Fatalf("%s: %s/%s targets %s from %v, below the retention horizon %d", where, r.id, r.server, tg.PlacementID, tg.Begin, *next.DroppedBefore)
			}
		}
		if d.Status == StatusDrop && len(d.Targets) != 0 {
			t.Fatalf("%s: %s/%s is DROP with targets", where, r.id, r.server)
		}
		if d.Status == StatusUnload && len(d.Targets) == 0 && holdsReplicaIn(next, placement, d.Begin, d.End) {
			t.Fatalf("%s: %s/%s is UNLOAD without targets although the range has replicas", where, r.id, r.server)
		}
	}
}

// holdsReplicaIn reports whether any partition or split child overlapping
// [begin, end) lists a placement other than skip.
func holdsReplicaIn(f *File, skip uuid.UUID, begin, end *int64) bool {
	other := func(ps []Placement) bool {
		return slices.ContainsFunc(ps, func(pl Placement) bool { return pl.PlacementID != skip })
	}
	for _, p := range f.Partitions {
		if boundsOverlap(p.Begin, p.End, begin, end) && (other(p.Servers) || other(p.Joining)) {
			return true
		}
		if p.Split == nil {
			continue
		}
		for _, c := range p.Split.Children {
			if boundsOverlap(c.Begin, c.End, begin, end) && other(c.Servers) {
				return true
			}
		}
	}
	return false
}

// opGen makes random ops that are valid on the file they are made for.
type opGen struct {
	rng *rand.Rand
	n   int
}

// genServers is the pool of server ids the generator draws from.
var genServers = []string{"s0", "s1", "s2", "s3", "s4", "s5"}

func (g *opGen) id() uuid.UUID {
	g.n++
	return testID(fmt.Sprintf("gen-%d", g.n))
}

func (g *opGen) txn() string {
	g.n++
	return fmt.Sprintf("%040x", g.n)
}

// placements returns n distinct servers with fresh placement ids.
func (g *opGen) placements(n int) []Placement {
	out := make([]Placement, 0, n)
	for _, i := range g.rng.Perm(len(genServers))[:n] {
		out = append(out, Placement{ServerID: genServers[i], PlacementID: g.id()})
	}
	return out
}

// next returns a random op valid on f. Generators that find nothing to do
// on f are skipped; SET_OFFLINE always applies.
func (g *opGen) next(f *File) Op {
	gens := []struct {
		weight int
		gen    func(*File) (Op, bool)
	}{
		{4, g.splitBegin}, {3, g.splitFinalize}, {1, g.splitAbort}, {3, g.joinServer}, {3, g.joinFinalize},
		{3, g.removeServer}, {2, g.forceJoin}, {1, g.dropPartitions}, {1, g.setOffline},
	}
	total := 0
	for _, x := range gens {
		total += x.weight
	}
	for {
		pick := g.rng.IntN(total)
		for _, x := range gens {
			if pick -= x.weight; pick < 0 {
				if op, ok := x.gen(f); ok {
					return op
				}
				break
			}
		}
	}
}

// pickPartition returns a random partition of f for which ok holds.
func (g *opGen) pickPartition(f *File, ok func(p *Partition) bool) (*Partition, bool) {
	var cands []*Partition
	for i := range f.Partitions {
		if ok(&f.Partitions[i]) {
			cands = append(cands, &f.Partitions[i])
		}
	}
	if len(cands) == 0 {
		return nil, false
	}
	return cands[g.rng.IntN(len(cands))], true
}

// freeServer returns a random pool server not in servers ∪ joining of p.
func (g *opGen) freeServer(p *Partition) (string, bool) {
	var free []string
	for _, s := range genServers {
		if placementIndex(p.Servers, s) < 0 && placementIndex(p.Joining, s) < 0 {
			free = append(free, s)
		}
	}
	if len(free) == 0 {
		return "", false
	}
	return free[g.rng.IntN(len(free))], true
}

func (g *opGen) splitBegin(f *File) (Op, bool) {
	p, ok := g.pickPartition(f, func(p *Partition) bool { return p.Split == nil && len(p.Joining) == 0 && len(p.Servers) > 0 })
	if !ok {
		return Op{}, false
	}
	lo, hi := int64(-1000), int64(1000)
	switch {
	case p.Begin != nil && p.End != nil:
		lo, hi = *p.Begin+1, *p.End-1
	case p.Begin != nil:
		lo, hi = *p.Begin+1, *p.Begin+1000
	case p.End != nil:
		lo, hi = *p.End-1000, *p.End-1
	}
	presplit, k := g.rng.IntN(3) == 0, 1
	if presplit {
		k = 1 + g.rng.IntN(3)
	}
	if hi-lo+1 < int64(k) {
		return Op{}, false
	}
	set := make(map[int64]bool, k)
	for len(set) < k {
		set[lo+g.rng.Int64N(hi-lo+1)] = true
	}
	points := slices.Sorted(maps.Keys(set))
	children := make([]SplitChild, k+1)
	for i := range children {
		children[i] = SplitChild{ID: g.id(), Servers: g.placements(1 + g.rng.IntN(3))}
	}
	return splitBegin(SplitBeginOp{PartitionID: p.ID, Points: points, Children: children, Presplit: presplit}), true
}

func (g *opGen) splitFinalize(f *File) (Op, bool) {
	p, ok := g.pickPartition(f, func(p *Partition) bool { return p.Split != nil })
	if !ok {
		return Op{}, false
	}
	confirmed := make(map[uuid.UUID][]string, len(p.Split.Children))
	for _, c := range p.Split.Children {
		n := len(c.Servers)
		m := n/2 + 1 + g.rng.IntN(n-n/2)
		var ids []string
		for _, i := range g.rng.Perm(n)[:m] {
			ids = append(ids, c.Servers[i].ServerID)
		}
		confirmed[c.ID] = ids
	}
	return Op{Type: OpSplitFinalize, SplitFinalize: &SplitFinalizeOp{PartitionID: p.ID, Confirmed: confirmed}}, true
}

func (g *opGen) splitAbort(f *File) (Op, bool) {
	p, ok := g.pickPartition(f, func(p *Partition) bool { return p.Split != nil })
	if !ok {
		return Op{}, false
	}
	return Op{Type: OpSplitAbort, SplitAbort: &SplitAbortOp{PartitionID: p.ID}}, true
}

func (g *opGen) joinServer(f *File) (Op, bool) {
	p, ok := g.pickPartition(f, func(p *Partition) bool { return p.Split == nil })
	if !ok {
		return Op{}, false
	}
	s, ok := g.freeServer(p)
	if !ok {
		return Op{}, false
	}
	return Op{Type: OpJoinServer, JoinServer: &JoinServerOp{PartitionID: p.ID, Placement: Placement{ServerID: s, PlacementID: g.id()}}}, true
}

func (g *opGen) joinFinalize(f *File) (Op, bool) {
	p, ok := g.pickPartition(f, func(p *Partition) bool { return len(p.Joining) > 0 })
	if !ok {
		return Op{}, false
	}
	s := p.Joining[g.rng.IntN(len(p.Joining))].ServerID
	return Op{Type: OpJoinFinalize, JoinFinalize: &JoinFinalizeOp{PartitionID: p.ID, ServerID: s}}, true
}

func (g *opGen) removeServer(f *File) (Op, bool) {
	p, ok := g.pickPartition(f, func(p *Partition) bool { return len(p.Servers)+len(p.Joining) > 0 })
	if !ok {
		return Op{}, false
	}
	listed := append(append([]Placement{}, p.Servers...), p.Joining...)
	i := g.rng.IntN(len(listed))
	rf, dead := 1+g.rng.IntN(3), g.rng.IntN(4) == 0
	last := i < len(p.Servers) && len(p.Servers) == 1 && len(p.Joining) == 0
	if last || len(listed)-1 < rf {
		dead = true // the only way this removal is valid
	}
	return Op{Type: OpRemoveServer, RemoveServer: &RemoveServerOp{
		PartitionID: p.ID, ServerID: listed[i].ServerID, Dead: dead, ReplicationFactor: rf}}, true
}

func (g *opGen) forceJoin(f *File) (Op, bool) {
	p, ok := g.pickPartition(f, func(p *Partition) bool { return p.Split == nil && len(p.Servers) == 0 })
	if !ok {
		return Op{}, false
	}
	s, ok := g.freeServer(p)
	if !ok {
		return Op{}, false
	}
	return Op{Type: OpForceJoin, ForceJoin: &ForceJoinOp{PartitionID: p.ID, Placement: Placement{ServerID: s, PlacementID: g.id()}}}, true
}

func (g *opGen) dropPartitions(f *File) (Op, bool) {
	if len(f.Partitions) < 2 {
		return Op{}, false
	}
	k := 1 + g.rng.IntN(min(3, len(f.Partitions)-1))
	o := &DropPartitionsOp{Before: *f.Partitions[k-1].End + g.rng.Int64N(5)}
	for i := range k {
		if f.Partitions[i].Split != nil {
			return Op{}, false
		}
		o.PartitionIDs = append(o.PartitionIDs, f.Partitions[i].ID)
	}
	g.rng.Shuffle(k, func(i, j int) { o.PartitionIDs[i], o.PartitionIDs[j] = o.PartitionIDs[j], o.PartitionIDs[i] })
	return Op{Type: OpDropPartitions, DropPartitions: o}, true
}

func (g *opGen) setOffline(f *File) (Op, bool) {
	p, _ := g.pickPartition(f, func(*Partition) bool { return true })
	return Op{Type: OpSetOffline, SetOffline: &SetOfflineOp{PartitionID: p.ID, Offline: !p.Offline}}, true
}
