package metadata

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// tgt builds an expected target; placement and partition are testID names.
func tgt(server, placement, partition string, begin, end *int64, kind TargetKind) Target {
	return Target{ServerID: server, PlacementID: testID(placement), PartitionID: testID(partition), Begin: begin, End: end, Kind: kind}
}

// ref builds a ReplicaRef from testID names.
func ref(partition, placement string, begin, end *int64) ReplicaRef {
	return ReplicaRef{PartitionID: testID(partition), PlacementID: testID(placement), Begin: begin, End: end}
}

// mustApply applies op to base under a txnid one above base's, failing the
// test on error.
func mustApply(t *testing.T, base *File, op Op) *File {
	t.Helper()
	f, err := Apply(base, NewTxnID(), op)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// discoveryBase is splitting() with s3 joining p2: p1 [0, 100) splits at 50
// into c1 {s1, s2, s3} and c2 {s2, s3, s4}; p2 [100, 200) has servers s1, s2
// and joining s3.
func discoveryBase() *File {
	f := splitting()
	f.Partitions[2].Joining = []Placement{pl("s3", "p2s3")}
	return f
}

func TestDiscover(t *testing.T) {
	base := discoveryBase()
	finalized := mustApply(t, base, splitFinalize("p1", map[string][]string{"c1": {"s1", "s2"}, "c2": {"s2", "s3", "s4"}}))
	aborted := mustApply(t, base, splitAbort("p1"))
	removed := mustApply(t, base, removeServer("p2", "s1", false, 2))
	dropped := mustApply(t, fourPartitions(), dropPartitions(0, "p0"))
	dropped2 := mustApply(t, fourPartitions(), dropPartitions(100, "p0", "p1"))
	droppedMoved := mustApply(t, mustApply(t, mustApply(t, dropped, joinServer("p1", pl("s3", "p1s3"))), joinFinalize("p1", "s3")), removeServer("p1", "s1", false, 2))
	lostP2 := mustApply(t, mustApply(t, fourPartitions(), removeServer("p2", "s1", true, 2)), removeServer("p2", "s2", true, 2))
	rejoined := mustApply(t, removed, joinServer("p2", pl("s1", "p2s1new")))
	for _, tc := range []struct {
		name string
		f    *File
		self string
		r    ReplicaRef
		want Discovery
	}{
		{"SERVE: replicas and joining", base, "s1", ref("p2", "p2s1", i64(100), i64(200)), Discovery{
			Status: StatusServe, Begin: i64(100), End: i64(200), Targets: []Target{
				tgt("s2", "p2s2", "p2", i64(100), i64(200), TargetReplica),
				tgt("s3", "p2s3", "p2", i64(100), i64(200), TargetJoining),
			}}},
		{"SERVE: the range comes from the file, not the ref; no target below the retention horizon", dropped, "s2", ref("p1", "p1s2", i64(0), i64(100)), Discovery{
			Status: StatusServe, Begin: nil, End: i64(100), Targets: []Target{
				tgt("s1", "p1s1", "p1", i64(0), i64(100), TargetReplica),
			}}},
		{"SERVE: a splitting parent targets every child server, its own server's child too", base, "s1", ref("p1", "p1s1", i64(0), i64(100)), Discovery{
			Status: StatusServe, Begin: i64(0), End: i64(100), Targets: []Target{
				tgt("s1", "c1s1", "c1", i64(0), i64(50), TargetSplit),
				tgt("s2", "c1s2", "c1", i64(0), i64(50), TargetSplit),
				tgt("s2", "p1s2", "p1", i64(0), i64(100), TargetReplica),
				tgt("s2", "c2s2", "c2", i64(50), i64(100), TargetSplit),
				tgt("s3", "c1s3", "c1", i64(0), i64(50), TargetSplit),
				tgt("s3", "c2s3", "c2", i64(50), i64(100), TargetSplit),
				tgt("s4", "c2s4", "c2", i64(50), i64(100), TargetSplit),
			}}},
		{"LOAD: a joining server", base, "s3", ref("p2", "p2s3", i64(100), i64(200)), Discovery{
			Status: StatusLoad, Begin: i64(100), End: i64(200), Targets: []Target{
				tgt("s1", "p2s1", "p2", i64(100), i64(200), TargetReplica),
				tgt("s2", "p2s2", "p2", i64(100), i64(200), TargetReplica),
			}}},
		{"LOAD: a split child before finalize", base, "s3", ref("c1", "c1s3", i64(0), i64(50)), Discovery{
			Status: StatusLoad, Begin: i64(0), End: i64(50), Targets: []Target{
				tgt("s1", "c1s1", "c1", i64(0), i64(50), TargetReplica),
				tgt("s1", "p1s1", "p1", i64(0), i64(100), TargetReplica),
				tgt("s2", "c1s2", "c1", i64(0), i64(50), TargetReplica),
				tgt("s2", "p1s2", "p1", i64(0), i64(100), TargetReplica),
				tgt("s2", "c2s2", "c2", i64(50), i64(100), TargetSplit),
				tgt("s3", "c2s3", "c2", i64(50), i64(100), TargetSplit),
				tgt("s4", "c2s4", "c2", i64(50), i64(100), TargetSplit),
			}}},
		{"LOAD: a child joining after finalize", finalized, "s3", ref("c1", "c1s3", i64(0), i64(50)), Discovery{
			Status: StatusLoad, Begin: i64(0), End: i64(50), Targets: []Target{
				tgt("s1", "c1s1", "c1", i64(0), i64(50), TargetReplica),
				tgt("s2", "c1s2", "c1", i64(0), i64(50), TargetReplica),
			}}},
		{"SERVE: a child after finalize", finalized, "s4", ref("c2", "c2s4", i64(50), i64(100)), Discovery{
			Status: StatusServe, Begin: i64(50), End: i64(100), Targets: []Target{
				tgt("s2", "c2s2", "c2", i64(50), i64(100), TargetReplica),
				tgt("s3", "c2s3", "c2", i64(50), i64(100), TargetReplica),
			}}},
		{"UNLOAD: a finalized split parent targets the children's servers", finalized, "s1", ref("p1", "p1s1", i64(0), i64(100)), Discovery{
			Status: StatusUnload, Begin: i64(0), End: i64(100), Targets: []Target{
				tgt("s1", "c1s1", "c1", i64(0), i64(50), TargetReplica),
				tgt("s2", "c1s2", "c1", i64(0), i64(50), TargetReplica),
				tgt("s2", "c2s2", "c2", i64(50), i64(100), TargetReplica),
				tgt("s3", "c1s3", "c1", i64(0), i64(50), TargetJoining),
				tgt("s3", "c2s3", "c2", i64(50), i64(100), TargetReplica),
				tgt("s4", "c2s4", "c2", i64(50), i64(100), TargetReplica),
			}}},
		{"UNLOAD: a removed server", removed, "s1", ref("p2", "p2s1", i64(100), i64(200)), Discovery{
			Status: StatusUnload, Begin: i64(100), End: i64(200), Targets: []Target{
				tgt("s2", "p2s2", "p2", i64(100), i64(200), TargetReplica),
				tgt("s3", "p2s3", "p2", i64(100), i64(200), TargetJoining),
			}}},
		{"UNLOAD: a removed server that rejoined targets its new placement", rejoined, "s1", ref("p2", "p2s1", i64(100), i64(200)), Discovery{
			Status: StatusUnload, Begin: i64(100), End: i64(200), Targets: []Target{
				tgt("s1", "p2s1new", "p2", i64(100), i64(200), TargetJoining),
				tgt("s2", "p2s2", "p2", i64(100), i64(200), TargetReplica),
				tgt("s3", "p2s3", "p2", i64(100), i64(200), TargetJoining),
			}}},
		{"UNLOAD: a removed server of a splitting parent", mustApply(t, base, removeServer("p1", "s2", true, 2)), "s2",
			ref("p1", "p1s2", i64(0), i64(100)), Discovery{
				Status: StatusUnload, Begin: i64(0), End: i64(100), Targets: []Target{
					tgt("s1", "c1s1", "c1", i64(0), i64(50), TargetSplit),
					tgt("s1", "p1s1", "p1", i64(0), i64(100), TargetReplica),
					tgt("s2", "c1s2", "c1", i64(0), i64(50), TargetSplit),
					tgt("s2", "c2s2", "c2", i64(50), i64(100), TargetSplit),
					tgt("s3", "c1s3", "c1", i64(0), i64(50), TargetSplit),
					tgt("s3", "c2s3", "c2", i64(50), i64(100), TargetSplit),
					tgt("s4", "c2s4", "c2", i64(50), i64(100), TargetSplit),
				}}},
		{"UNLOAD: a child of an aborted split", aborted, "s3", ref("c1", "c1s3", i64(0), i64(50)), Discovery{
			Status: StatusUnload, Begin: i64(0), End: i64(50), Targets: []Target{
				tgt("s1", "p1s1", "p1", i64(0), i64(100), TargetReplica),
				tgt("s2", "p1s2", "p1", i64(0), i64(100), TargetReplica),
			}}},
		// Before issue 18 this answered UNLOAD with the widened first
		// partition's servers as targets (begin open): the expired rows were
		// pushed into p1 instead of deleted.
		{"DROP: a partition dropped by retention, no target", dropped, "s1", ref("p0", "p0s1", nil, i64(0)), Discovery{
			Status: StatusDrop, Begin: nil, End: i64(0), Targets: []Target{}}},
		{"DROP: a gone id ending at the horizon", dropped2, "s9", ref("gone", "gones9", i64(20), i64(100)), Discovery{
			Status: StatusDrop, Begin: i64(20), End: i64(100), Targets: []Target{}}},
		{"UNLOAD: a gone id across the horizon pushes only from the horizon on", dropped2, "s9", ref("gone", "gones9", i64(50), i64(150)), Discovery{
			Status: StatusUnload, Begin: i64(50), End: i64(150), Targets: []Target{
				tgt("s1", "p2s1", "p2", i64(100), i64(200), TargetReplica),
				tgt("s2", "p2s2", "p2", i64(100), i64(200), TargetReplica),
			}}},
		{"UNLOAD: a placement moved off the widened first partition pushes only from the horizon on", droppedMoved, "s1", ref("p1", "p1s1", i64(0), i64(100)), Discovery{
			Status: StatusUnload, Begin: nil, End: i64(100), Targets: []Target{
				tgt("s2", "p1s2", "p1", i64(0), i64(100), TargetReplica),
				tgt("s3", "p1s3", "p1", i64(0), i64(100), TargetReplica),
			}}},
		{"UNLOAD: a gone id spanning two partitions", fourPartitions(), "s9", ref("gone", "gones9", i64(50), i64(150)), Discovery{
			Status: StatusUnload, Begin: i64(50), End: i64(150), Targets: []Target{
				tgt("s1", "p1s1", "p1", i64(0), i64(100), TargetReplica),
				tgt("s1", "p2s1", "p2", i64(100), i64(200), TargetReplica),
				tgt("s2", "p1s2", "p1", i64(0), i64(100), TargetReplica),
				tgt("s2", "p2s2", "p2", i64(100), i64(200), TargetReplica),
			}}},
		{"UNLOAD: a gone id overlapping only the first child of a split", base, "s9", ref("gone", "gones9", i64(10), i64(20)), Discovery{
			Status: StatusUnload, Begin: i64(10), End: i64(20), Targets: []Target{
				tgt("s1", "c1s1", "c1", i64(0), i64(50), TargetSplit),
				tgt("s1", "p1s1", "p1", i64(0), i64(100), TargetReplica),
				tgt("s2", "c1s2", "c1", i64(0), i64(50), TargetSplit),
				tgt("s2", "p1s2", "p1", i64(0), i64(100), TargetReplica),
				tgt("s3", "c1s3", "c1", i64(0), i64(50), TargetSplit),
			}}},
		{"UNLOAD: a current id with a placement not listed", base, "s1", ref("p2", "other", i64(100), i64(200)), Discovery{
			Status: StatusUnload, Begin: i64(100), End: i64(200), Targets: []Target{
				tgt("s1", "p2s1", "p2", i64(100), i64(200), TargetReplica),
				tgt("s2", "p2s2", "p2", i64(100), i64(200), TargetReplica),
				tgt("s3", "p2s3", "p2", i64(100), i64(200), TargetJoining),
			}}},
		{"UNLOAD: a placement listed under another server", base, "s9", ref("p3", "p3s1", i64(200), nil), Discovery{
			Status: StatusUnload, Begin: i64(200), End: nil, Targets: []Target{
				tgt("s2", "p3s2", "p3", i64(200), nil, TargetReplica),
			}}},
		{"UNLOAD: a split child with a placement not listed", base, "s4", ref("c1", "c1s4", i64(0), i64(50)), Discovery{
			Status: StatusUnload, Begin: i64(0), End: i64(50), Targets: []Target{
				tgt("s1", "c1s1", "c1", i64(0), i64(50), TargetSplit),
				tgt("s1", "p1s1", "p1", i64(0), i64(100), TargetReplica),
				tgt("s2", "c1s2", "c1", i64(0), i64(50), TargetSplit),
				tgt("s2", "p1s2", "p1", i64(0), i64(100), TargetReplica),
				tgt("s3", "c1s3", "c1", i64(0), i64(50), TargetSplit),
			}}},
		{"UNLOAD: the ref's stale range widens to the id's current range", removed, "s1", ref("p2", "p2s1", i64(120), i64(130)), Discovery{
			Status: StatusUnload, Begin: i64(100), End: i64(200), Targets: []Target{
				tgt("s2", "p2s2", "p2", i64(100), i64(200), TargetReplica),
				tgt("s3", "p2s3", "p2", i64(100), i64(200), TargetJoining),
			}}},
		{"UNLOAD: nothing overlaps an empty range", base, "s1", ref("gone", "gones1", i64(5), i64(5)), Discovery{
			Status: StatusUnload, Begin: i64(5), End: i64(5), Targets: []Target{}}},
		{"UNLOAD: the overlapping partition lost every replica", lostP2, "s1", ref("gone", "gones1", i64(120), i64(180)), Discovery{
			Status: StatusUnload, Begin: i64(120), End: i64(180), Targets: []Target{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := mustEncode(t, tc.f)
			got := Discover(tc.f, tc.self, tc.r)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %s\nwant %s", jsonOf(got), jsonOf(tc.want))
			}
			if !bytes.Equal(before, mustEncode(t, tc.f)) {
				t.Fatal("Discover modified the file")
			}
			if again := Discover(tc.f.Clone(), tc.self, tc.r); !reflect.DeepEqual(got, again) {
				t.Fatal("Discover is not deterministic")
			}
		})
	}
}

// TestDiscoverSharesNoMemory checks that an answer can be changed without
// changing the file or the ref.
func TestDiscoverSharesNoMemory(t *testing.T) {
	f := discoveryBase()
	r := ref("p1", "p1s1", i64(0), i64(100))
	d := Discover(f, "s1", r)
	*d.Begin, *d.End = -1, -1
	for _, tg := range d.Targets {
		*tg.Begin, *tg.End = -1, -1
	}
	if *f.Partitions[1].Begin != 0 || *f.Partitions[1].End != 100 || *f.Partitions[1].Split.Children[0].End != 50 {
		t.Fatal("the answer shares bounds with the file")
	}
	u := Discover(f, "s9", ref("gone", "g", i64(10), i64(20)))
	*u.Begin = -1
	if *r.Begin != 0 {
		t.Fatal("the answer shares bounds with the ref")
	}
}

// TestDiscoverEveryPlacement runs discovery for every placement of a file
// and checks the status each one gets and that no answer targets the
// replica itself.
func TestDiscoverEveryPlacement(t *testing.T) {
	f := discoveryBase()
	for _, p := range f.Partitions {
		check := func(id uuid.UUID, begin, end *int64, ps []Placement, want DiscoveryStatus) {
			for _, pl := range ps {
				d := Discover(f, pl.ServerID, ReplicaRef{PartitionID: id, PlacementID: pl.PlacementID, Begin: begin, End: end})
				if d.Status != want {
					t.Errorf("%s/%s: got %s, want %s", id, pl.ServerID, d.Status, want)
				}
				for _, tg := range d.Targets {
					if tg.PlacementID == pl.PlacementID {
						t.Errorf("%s/%s: targets itself", id, pl.ServerID)
					}
				}
			}
		}
		check(p.ID, p.Begin, p.End, p.Servers, StatusServe)
		check(p.ID, p.Begin, p.End, p.Joining, StatusLoad)
		if p.Split != nil {
			for _, c := range p.Split.Children {
				check(c.ID, c.Begin, c.End, c.Servers, StatusLoad)
			}
		}
	}
}

func TestDiscoveryJSON(t *testing.T) {
	d := Discover(discoveryBase(), "s1", ref("p2", "p2s1", i64(100), i64(200)))
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"status":"SERVE"`, `"begin":100`, `"end":200`, `"targets":[{"server_id":"s2","placement_id":"`,
		`"partition_id":"` + testID("p2").String() + `"`, `"kind":"replica"`, `"kind":"joining"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	empty, _ := json.Marshal(Discover(discoveryBase(), "s1", ref("gone", "g", i64(5), i64(5))))
	if !strings.Contains(string(empty), `"targets":[]`) {
		t.Errorf("no targets is not written []: %s", empty)
	}
	var back ReplicaRef
	in := ref("p1", "p1s1", nil, i64(100))
	rb, _ := json.Marshal(in)
	if err := json.Unmarshal(rb, &back); err != nil || !reflect.DeepEqual(back, in) || !strings.Contains(string(rb), `"begin":null`) {
		t.Fatalf("ReplicaRef round trip: %s %+v %v", rb, back, err)
	}
}

func TestBoundsOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b [2]*int64
		want bool
	}{
		{[2]*int64{nil, nil}, [2]*int64{nil, nil}, true},
		{[2]*int64{nil, i64(0)}, [2]*int64{i64(0), nil}, false},
		{[2]*int64{nil, i64(1)}, [2]*int64{i64(0), nil}, true},
		{[2]*int64{i64(0), i64(10)}, [2]*int64{i64(10), i64(20)}, false},
		{[2]*int64{i64(0), i64(10)}, [2]*int64{i64(9), i64(20)}, true},
		{[2]*int64{i64(5), i64(5)}, [2]*int64{nil, nil}, false},
		{[2]*int64{i64(7), i64(3)}, [2]*int64{nil, nil}, false},
		{[2]*int64{nil, nil}, [2]*int64{i64(3), i64(4)}, true},
	} {
		if got := boundsOverlap(tc.a[0], tc.a[1], tc.b[0], tc.b[1]); got != tc.want {
			t.Errorf("%s ∩ %s: got %v", fmtRange(tc.a[0], tc.a[1]), fmtRange(tc.b[0], tc.b[1]), got)
		}
		if got := boundsOverlap(tc.b[0], tc.b[1], tc.a[0], tc.a[1]); got != tc.want {
			t.Errorf("%s ∩ %s: got %v (swapped)", fmtRange(tc.b[0], tc.b[1]), fmtRange(tc.a[0], tc.a[1]), got)
		}
	}
}
