package metadata

import (
	"testing"

	"github.com/google/uuid"
)

func joinServer(id string, p Placement) Op {
	return Op{Type: OpJoinServer, JoinServer: &JoinServerOp{PartitionID: testID(id), Placement: p}}
}

func joinFinalize(id, server string) Op {
	return Op{Type: OpJoinFinalize, JoinFinalize: &JoinFinalizeOp{PartitionID: testID(id), ServerID: server}}
}

func removeServer(id, server string, dead bool, rf int) Op {
	return Op{Type: OpRemoveServer, RemoveServer: &RemoveServerOp{PartitionID: testID(id), ServerID: server, Dead: dead, ReplicationFactor: rf}}
}

func forceJoin(id string, p Placement) Op {
	return Op{Type: OpForceJoin, ForceJoin: &ForceJoinOp{PartitionID: testID(id), Placement: p}}
}

// twoJoining returns fourPartitions with s3 and s4 joining p2.
func twoJoining() *File {
	f := fourPartitions()
	f.Partitions[2].Joining = []Placement{pl("s3", "p2s3"), pl("s4", "p2s4")}
	return f
}

// lost returns fourPartitions where p2 lost every server; joining says who
// is still joining it.
func lost(joining ...Placement) *File {
	f := fourPartitions()
	f.Partitions[2].Servers = []Placement{}
	f.Partitions[2].Joining = joining
	return f
}

func joinValidCases() []opCase {
	four, j, two, sp := fourPartitions(), withJoining(), twoJoining(), splitting()
	lastWithJoiner := fourPartitions()
	lastWithJoiner.Partitions[2].Servers = []Placement{pl("s1", "p2s1")}
	lastWithJoiner.Partitions[2].Joining = []Placement{pl("s3", "p2s3"), pl("s4", "p2s4")}
	lostNone, lostJoining := lost(), lost(pl("s3", "p2s3"))
	return []opCase{
		{name: "JOIN_SERVER", base: four, op: joinServer("p2", pl("s3", "new")), want: wantNext(four, func(f *File) {
			f.Partitions[2].Joining = []Placement{pl("s3", "new")}
		})},
		{name: "JOIN_SERVER appends to joining", base: j, op: joinServer("p2", pl("s0", "new")), want: wantNext(j, func(f *File) {
			f.Partitions[2].Joining = []Placement{pl("s3", "p2s3"), pl("s0", "new")}
		})},
		{name: "JOIN_FINALIZE", base: two, op: joinFinalize("p2", "s4"), want: wantNext(two, func(f *File) {
			f.Partitions[2].Servers = []Placement{pl("s1", "p2s1"), pl("s2", "p2s2"), pl("s4", "p2s4")}
			f.Partitions[2].Joining = []Placement{pl("s3", "p2s3")}
		})},
		{name: "REMOVE_SERVER from servers", base: j, op: removeServer("p2", "s1", false, 2), want: wantNext(j, func(f *File) {
			f.Partitions[2].Servers = []Placement{pl("s2", "p2s2")}
		})},
		{name: "REMOVE_SERVER from joining", base: two, op: removeServer("p2", "s3", false, 3), want: wantNext(two, func(f *File) {
			f.Partitions[2].Joining = []Placement{pl("s4", "p2s4")}
		})},
		{name: "REMOVE_SERVER dead below the replication factor", base: four, op: removeServer("p2", "s2", true, 3), want: wantNext(four, func(f *File) {
			f.Partitions[2].Servers = []Placement{pl("s1", "p2s1")}
		})},
		{name: "REMOVE_SERVER dead takes the last server", base: lastWithJoiner, op: removeServer("p2", "s1", true, 3), want: wantNext(lastWithJoiner, func(f *File) {
			f.Partitions[2].Servers = []Placement{}
		})},
		{name: "REMOVE_SERVER the last server while others join", base: lastWithJoiner, op: removeServer("p2", "s1", false, 2), want: wantNext(lastWithJoiner, func(f *File) {
			f.Partitions[2].Servers = []Placement{}
		})},
		{name: "REMOVE_SERVER from a splitting partition", base: sp, op: removeServer("p1", "s2", true, 2), want: wantNext(sp, func(f *File) {
			f.Partitions[1].Servers = []Placement{pl("s1", "p1s1")}
		})},
		{name: "FORCE_JOIN", base: lostNone, op: forceJoin("p2", pl("s5", "new")), want: wantNext(lostNone, func(f *File) {
			f.Partitions[2].Servers = []Placement{pl("s5", "new")}
		})},
		{name: "FORCE_JOIN while others join", base: lostJoining, op: forceJoin("p2", pl("s5", "new")), want: wantNext(lostJoining, func(f *File) {
			f.Partitions[2].Servers = []Placement{pl("s5", "new")}
		})},
	}
}

func TestApplyJoinValid(t *testing.T) {
	runValid(t, joinValidCases())
}

func TestApplyJoinServerInvalid(t *testing.T) {
	runInvalid(t, joinServerInvalidCases())
}

func joinServerInvalidCases() []opCase {
	four, j, sp := fourPartitions(), withJoining(), splitting()
	p2 := testID("p2").String()
	return []opCase{
		{name: "unknown partition", base: four, op: joinServer("zz", pl("s3", "new")), err: "partition " + testID("zz").String() + " is not a current partition"},
		{name: "split child id", base: sp, op: joinServer("c1", pl("s4", "new")), err: "is a split child of " + testID("p1").String()},
		{name: "splitting", base: sp, op: joinServer("p1", pl("s3", "new")), err: "partition " + testID("p1").String() + " is splitting; JOIN_SERVER waits"},
		{name: "empty server id", base: four, op: joinServer("p2", pl("", "new")), err: "placement: empty server_id"},
		{name: "nil placement id", base: four, op: joinServer("p2", Placement{ServerID: "s3"}), err: `placement: nil placement_id for server "s3"`},
		{name: "already a server", base: four, op: joinServer("p2", pl("s2", "new")), err: `server "s2" already serves partition ` + p2},
		{name: "already joining", base: j, op: joinServer("p2", pl("s3", "new")), err: `server "s3" is already joining partition ` + p2},
		{name: "placement used by another partition", base: four, op: joinServer("p2", pl("s3", "p0s1")),
			err: "placement_id " + testID("p0s1").String() + ` for server "s3" is already used in the file`},
		{name: "placement used by a joining server", base: j, op: joinServer("p1", pl("s4", "p2s3")),
			err: "placement_id " + testID("p2s3").String()},
		{name: "placement used by a split child", base: sp, op: joinServer("p2", pl("s3", "c1s3")),
			err: "placement_id " + testID("c1s3").String()},
	}
}

func TestApplyJoinFinalizeInvalid(t *testing.T) {
	runInvalid(t, joinFinalizeInvalidCases())
}

func joinFinalizeInvalidCases() []opCase {
	p2 := testID("p2").String()
	return []opCase{
		{name: "unknown partition", base: withJoining(), op: joinFinalize("zz", "s3"), err: "is not a current partition"},
		{name: "split child id", base: splitting(), op: joinFinalize("c1", "s1"), err: "is a split child of " + testID("p1").String()},
		{name: "not joining", base: withJoining(), op: joinFinalize("p2", "s9"), err: `server "s9" is not joining partition ` + p2},
		{name: "already a server", base: withJoining(), op: joinFinalize("p2", "s1"), err: `server "s1" already serves partition ` + p2},
		{name: "nobody joining", base: fourPartitions(), op: joinFinalize("p2", "s3"), err: `server "s3" is not joining`},
	}
}

func TestApplyRemoveServerInvalid(t *testing.T) {
	runInvalid(t, removeServerInvalidCases())
}

func removeServerInvalidCases() []opCase {
	p2 := testID("p2").String()
	single := fourPartitions()
	single.Partitions[2].Servers = single.Partitions[2].Servers[:1]
	return []opCase{
		{name: "unknown partition", base: fourPartitions(), op: removeServer("zz", "s1", false, 1), err: "is not a current partition"},
		{name: "split child id", base: splitting(), op: removeServer("c1", "s1", true, 1), err: "is a split child of " + testID("p1").String()},
		{name: "replication factor 0", base: fourPartitions(), op: removeServer("p2", "s1", false, 0), err: "replication_factor 0 must be at least 1"},
		{name: "negative replication factor even if dead", base: fourPartitions(), op: removeServer("p2", "s1", true, -1), err: "replication_factor -1 must be at least 1"},
		{name: "server not listed", base: fourPartitions(), op: removeServer("p2", "s9", true, 1), err: `server "s9" is not listed for partition ` + p2},
		{name: "below the replication factor", base: fourPartitions(), op: removeServer("p2", "s1", false, 2),
			err: `removing server "s1" would leave 1 in servers ∪ joining of partition ` + p2 + ", below the replication factor 2"},
		{name: "joining counts toward the replication factor", base: withJoining(), op: removeServer("p2", "s3", false, 3),
			err: "would leave 2 in servers ∪ joining of partition " + p2 + ", below the replication factor 3"},
		{name: "last server with nobody joining", base: single, op: removeServer("p2", "s1", false, 1),
			err: `server "s1" is the last server of partition ` + p2 + " and nobody is joining"},
	}
}

func TestApplyForceJoinInvalid(t *testing.T) {
	runInvalid(t, forceJoinInvalidCases())
}

func forceJoinInvalidCases() []opCase {
	p2 := testID("p2").String()
	spLost := splitting()
	spLost.Partitions[1].Servers = []Placement{}
	return []opCase{
		{name: "unknown partition", base: lost(), op: forceJoin("zz", pl("s5", "new")), err: "is not a current partition"},
		{name: "split child id", base: splitting(), op: forceJoin("c1", pl("s5", "new")), err: "is a split child of " + testID("p1").String()},
		{name: "servers not empty", base: fourPartitions(), op: forceJoin("p2", pl("s5", "new")),
			err: "partition " + p2 + ` still has servers ["s1" "s2"]; FORCE_JOIN is only for a partition that lost every replica`},
		{name: "splitting", base: spLost, op: forceJoin("p1", pl("s5", "new")), err: "partition " + testID("p1").String() + " is splitting; abort the split before FORCE_JOIN"},
		{name: "server already joining", base: lost(pl("s3", "p2s3")), op: forceJoin("p2", pl("s3", "new")), err: `server "s3" is already joining partition ` + p2},
		{name: "empty server id", base: lost(), op: forceJoin("p2", pl("", "new")), err: "placement: empty server_id"},
		{name: "nil placement id", base: lost(), op: forceJoin("p2", Placement{ServerID: "s5", PlacementID: uuid.Nil}), err: "nil placement_id"},
		{name: "placement used", base: lost(), op: forceJoin("p2", pl("s5", "p3s1")), err: "placement_id " + testID("p3s1").String() + ` for server "s5" is already used`},
	}
}
