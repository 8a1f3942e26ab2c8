package model

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestPartitionContainsOverlaps(t *testing.T) {
	open := Partition{}
	closed := Partition{Begin: i64(10), End: i64(20)}
	left := Partition{End: i64(0)}
	right := Partition{Begin: i64(0)}
	for _, tc := range []struct {
		p    Partition
		t    int64
		want bool
	}{
		{open, math.MinInt64, true}, {open, math.MaxInt64, true},
		{closed, 9, false}, {closed, 10, true}, {closed, 19, true}, {closed, 20, false},
		{left, -1, true}, {left, 0, false}, {left, math.MinInt64, true},
		{right, 0, true}, {right, -1, false}, {right, math.MaxInt64, true},
	} {
		if got := tc.p.Contains(tc.t); got != tc.want {
			t.Errorf("%s Contains(%d) = %v", rng(tc.p), tc.t, got)
		}
	}
	for _, tc := range []struct {
		p        Partition
		from, to int64
		want     bool
	}{
		{closed, 0, 10, false}, {closed, 0, 11, true}, {closed, 19, 30, true}, {closed, 20, 30, false},
		{closed, 12, 15, true}, {closed, 0, 100, true}, {closed, 15, 15, false}, {closed, 16, 12, false},
		{open, math.MinInt64, math.MinInt64 + 1, true}, {open, 5, 5, false},
		{left, -5, 5, true}, {left, 0, 5, false}, {right, -5, 0, false}, {right, -5, 1, true},
	} {
		if got := tc.p.Overlaps(tc.from, tc.to); got != tc.want {
			t.Errorf("%s Overlaps(%d, %d) = %v", rng(tc.p), tc.from, tc.to, got)
		}
	}
}

func rng(p Partition) string {
	s := func(b *int64, inf string) string {
		if b == nil {
			return inf
		}
		return strconv.FormatInt(*b, 10)
	}
	return "[" + s(p.Begin, "-inf") + "," + s(p.End, "+inf") + ")"
}

func TestFileFind(t *testing.T) {
	f := fourPartitions()
	for _, tc := range []struct {
		t    int64
		want int
	}{
		{math.MinInt64, 0}, {-1, 0}, {0, 1}, {99, 1}, {100, 2}, {199, 2}, {200, 3}, {math.MaxInt64, 3},
	} {
		p, ok := f.Find(tc.t)
		if !ok || p != &f.Partitions[tc.want] {
			t.Errorf("Find(%d) = %v, %v; want partition %d", tc.t, p, ok, tc.want)
		}
	}
	one := &File{Partitions: []Partition{{ID: testID("x")}}}
	if p, ok := one.Find(42); !ok || p.ID != testID("x") {
		t.Errorf("single open partition: %v %v", p, ok)
	}
	gap := &File{Partitions: []Partition{{End: i64(0)}, {Begin: i64(10)}}}
	if _, ok := gap.Find(5); ok {
		t.Error("Find in a gap of an invalid file succeeded")
	}
	if _, ok := (&File{}).Find(0); ok {
		t.Error("Find in an empty file succeeded")
	}
}

func TestFileOverlapping(t *testing.T) {
	f := fourPartitions()
	for _, tc := range []struct {
		from, to int64
		want     []int
	}{
		{50, 150, []int{1, 2}},
		{100, 200, []int{2}},
		{99, 101, []int{1, 2}},
		{-10, 0, []int{0}},
		{0, 0, nil},
		{10, 5, nil},
		{math.MinInt64, math.MaxInt64, []int{0, 1, 2, 3}},
		{200, 201, []int{3}},
		{199, 200, []int{2}},
		{-1, 1000, []int{0, 1, 2, 3}},
	} {
		got := f.Overlapping(tc.from, tc.to)
		if !samePartitions(f, got, tc.want) {
			t.Errorf("Overlapping(%d, %d) = %v, want %v", tc.from, tc.to, indexes(f, got), tc.want)
		}
	}
}

// TestFileOverlappingMatchesScan checks the binary search against a linear
// scan on random intervals.
func TestFileOverlappingMatchesScan(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	f := fourPartitions()
	for range 2000 {
		from, to := r.Int64N(400)-100, r.Int64N(400)-100
		var want []int
		for i := range f.Partitions {
			if f.Partitions[i].Overlaps(from, to) {
				want = append(want, i)
			}
		}
		if got := f.Overlapping(from, to); !samePartitions(f, got, want) {
			t.Fatalf("Overlapping(%d, %d) = %v, want %v", from, to, indexes(f, got), want)
		}
		p, ok := f.Find(from)
		if !ok || !p.Contains(from) {
			t.Fatalf("Find(%d) = %v %v", from, p, ok)
		}
	}
}

func indexes(f *File, ps []*Partition) []int {
	var out []int
	for _, p := range ps {
		for i := range f.Partitions {
			if p == &f.Partitions[i] {
				out = append(out, i)
			}
		}
	}
	return out
}

func samePartitions(f *File, got []*Partition, want []int) bool {
	return reflect.DeepEqual(indexes(f, got), want) && len(got) == len(want)
}

func TestFileValidate(t *testing.T) {
	if err := fourPartitions().Validate(); err != nil {
		t.Fatalf("valid file: %v", err)
	}
	if err := splitFile().Validate(); err != nil {
		t.Fatalf("valid split file: %v", err)
	}
	noServers := fourPartitions()
	noServers.Partitions[0].Servers = nil
	if err := noServers.Validate(); err != nil {
		t.Fatalf("a partition without servers is allowed: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(f *File)
		want   string
	}{
		{"bad table", func(f *File) { f.Table = "Cpu" }, "table:"},
		{"bad txnid", func(f *File) { f.TxnID = "ABC" }, "txnid:"},
		{"txnseq 0", func(f *File) { f.TxnSeq = 0 }, "txnseq: must be at least 1"},
		{"parent at seq 1", func(f *File) { f.TxnSeq = 1 }, "parent_txnid: must be empty"},
		{"no parent at seq 2", func(f *File) { f.ParentTxnID = "" }, "parent_txnid:"},
		{"own parent", func(f *File) { f.ParentTxnID = f.TxnID }, "parent_txnid: equals txnid"},
		{"no partitions", func(f *File) { f.Partitions = nil }, "partitions: empty"},
		{"first begin set", func(f *File) { f.Partitions[0].Begin = i64(-5) }, "begin must be open"},
		{"last end set", func(f *File) { f.Partitions[3].End = i64(500) }, "end must be open"},
		{"interior open begin", func(f *File) { f.Partitions[2].Begin = nil }, "begin must be set"},
		{"interior open end", func(f *File) { f.Partitions[1].End = nil }, "end must be set"},
		{"gap", func(f *File) { f.Partitions[2].Begin = i64(110) }, "does not meet the previous end"},
		{"overlap", func(f *File) { f.Partitions[2].Begin = i64(90) }, "does not meet the previous end"},
		{"unsorted", func(f *File) { f.Partitions[1], f.Partitions[2] = f.Partitions[2], f.Partitions[1] }, "does not meet"},
		{"empty range", func(f *File) { f.Partitions[1].End = i64(0); f.Partitions[2].Begin = i64(0) }, "empty range"},
		{"nil id", func(f *File) { f.Partitions[1].ID = uuid.Nil }, "nil id"},
		{"duplicate id", func(f *File) { f.Partitions[2].ID = f.Partitions[1].ID }, "already used by partitions[1]"},
		{"server twice", func(f *File) { f.Partitions[1].Servers[1].ServerID = "s1" }, `server "s1" listed twice`},
		{"server serving and joining", func(f *File) { f.Partitions[1].Joining = []Placement{pl("s2", "j")} }, `server "s2" listed twice`},
		{"empty server id", func(f *File) { f.Partitions[0].Servers[0].ServerID = "" }, "empty server_id"},
		{"nil placement", func(f *File) { f.Partitions[0].Servers[0].PlacementID = uuid.Nil }, "nil placement_id"},
		{"placement reused", func(f *File) { f.Partitions[2].Servers[0].PlacementID = f.Partitions[0].Servers[1].PlacementID }, "placement_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fourPartitions()
			tc.mutate(f)
			wantErr(t, f.Validate(), ErrInvalidFile, tc.want)
		})
	}
}

func TestFileValidateSplit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(s *Split)
		want   string
	}{
		{"no points", func(s *Split) { s.Points = nil; s.Children = s.Children[:1] }, "no split points"},
		{"point on begin", func(s *Split) { s.Points[0] = 0; s.Children[0].End = i64(0); s.Children[1].Begin = i64(0) }, "not strictly inside"},
		{"point outside", func(s *Split) { s.Points[1] = 150; s.Children[1].End = i64(150); s.Children[2].Begin = i64(150) }, "not strictly inside"},
		{"points not increasing", func(s *Split) { s.Points = []int64{60, 30} }, "not strictly increasing"},
		{"child count", func(s *Split) { s.Children = s.Children[:2] }, "want 3 children for 2 points"},
		{"child range", func(s *Split) { s.Children[2].End = i64(99) }, "children[2]: range does not match"},
		{"child open begin", func(s *Split) { s.Children[0].Begin = nil }, "children[0]: range does not match"},
		{"child id is a partition id", func(s *Split) { s.Children[1].ID = testID("p3") }, "already used by partitions[1].split.children[1]"},
		{"child without servers", func(s *Split) { s.Children[1].Servers = nil }, "children[1].servers: empty"},
		{"child server twice", func(s *Split) { s.Children[0].Servers[1].ServerID = "s1" }, "listed twice"},
		{"child placement reused", func(s *Split) { s.Children[0].Servers[0].PlacementID = testID("p1s1") }, "placement_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := splitFile()
			tc.mutate(f.Partitions[1].Split)
			wantErr(t, f.Validate(), ErrInvalidFile, tc.want)
		})
	}
}

func TestFileValidateListsEveryProblem(t *testing.T) {
	f := fourPartitions()
	f.TxnSeq = 0
	f.Partitions[0].Begin = i64(-1)
	f.Partitions[3].ID = uuid.Nil
	err := f.Validate()
	for _, want := range []string{"txnseq", "begin must be open", "nil id"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}

func TestPlacementOf(t *testing.T) {
	f := splitFile()
	for _, tc := range []struct {
		partition, server string
		want              string // placement name, "" for none
	}{
		{"p1", "s1", "p1s1"},
		{"p1", "s3", "p1s3"}, // joining
		{"c0", "s4", "c0s4"}, // split child
		{"c2", "s5", "c2s5"},
		{"c2", "s1", ""},
		{"p1", "s9", ""},
		{"nope", "s1", ""},
	} {
		got, ok := f.PlacementOf(testID(tc.partition), tc.server)
		if ok != (tc.want != "") || ok && got != testID(tc.want) {
			t.Errorf("PlacementOf(%s, %s) = %v, %v; want %q", tc.partition, tc.server, got, ok, tc.want)
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	f := splitFile()
	c := f.Clone()
	c.Partitions[1].Servers[0].ServerID = "changed"
	*c.Partitions[1].Begin = 7
	c.Partitions[1].Split.Points[0] = 31
	*c.Partitions[1].Split.Children[0].End = 31
	c.Partitions[1].Split.Children[0].Servers[0].ServerID = "changed"
	if !reflect.DeepEqual(f, splitFile()) {
		t.Fatal("changing the clone changed the original")
	}
}
