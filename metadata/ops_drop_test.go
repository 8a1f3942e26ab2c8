package metadata

import (
	"testing"

	"github.com/google/uuid"
)

func dropPartitions(before int64, ids ...string) Op {
	o := &DropPartitionsOp{Before: before}
	for _, id := range ids {
		o.PartitionIDs = append(o.PartitionIDs, testID(id))
	}
	return Op{Type: OpDropPartitions, DropPartitions: o}
}

func dropValidCases() []opCase {
	four, sp := fourPartitions(), splitting()
	return []opCase{
		{name: "DROP_PARTITIONS the oldest, end equal to the cutoff", base: four, op: dropPartitions(0, "p0"), want: wantNext(four, func(f *File) {
			f.Partitions = f.Partitions[1:]
			f.DroppedBefore = f.Partitions[0].Begin
			f.Partitions[0].Begin = nil
		})},
		{name: "DROP_PARTITIONS a prefix of two, listed in any order", base: four, op: dropPartitions(150, "p1", "p0"), want: wantNext(four, func(f *File) {
			f.Partitions = f.Partitions[2:]
			f.DroppedBefore = f.Partitions[0].Begin
			f.Partitions[0].Begin = nil
		})},
		{name: "DROP_PARTITIONS all but the last", base: four, op: dropPartitions(1000, "p0", "p1", "p2"), want: wantNext(four, func(f *File) {
			f.Partitions = f.Partitions[3:]
			f.DroppedBefore = f.Partitions[0].Begin
			f.Partitions[0].Begin = nil
		})},
		{name: "DROP_PARTITIONS before a splitting partition grows it and its first child", base: sp, op: dropPartitions(0, "p0"), want: wantNext(sp, func(f *File) {
			f.Partitions = f.Partitions[1:]
			f.DroppedBefore = f.Partitions[0].Begin
			f.Partitions[0].Begin = nil
			f.Partitions[0].Split.Children[0].Begin = nil
		})},
	}
}

func TestApplyDropPartitionsValid(t *testing.T) {
	runValid(t, dropValidCases())
}

func TestApplyDropPartitionsInvalid(t *testing.T) {
	runInvalid(t, dropPartitionsInvalidCases())
}

func dropPartitionsInvalidCases() []opCase {
	four, sp := fourPartitions(), splitting()
	return []opCase{
		{name: "no ids", base: four, op: dropPartitions(1000), err: "no partition ids"},
		{name: "every partition", base: four, op: dropPartitions(1000, "p0", "p1", "p2", "p3"), err: "would drop 4 of 4 partitions; at least one must remain"},
		{name: "the only partition", base: single(), op: dropPartitions(1000, "only"), err: "would drop 1 of 1 partitions"},
		{name: "listed twice", base: four, op: dropPartitions(1000, "p0", "p0"), err: "partition " + testID("p0").String() + " listed twice"},
		{name: "unknown partition", base: four, op: dropPartitions(1000, "p0", "zz"), err: "partition " + testID("zz").String() + " is not a current partition"},
		{name: "split child id", base: sp, op: dropPartitions(1000, "p0", "c1"), err: "is a split child of " + testID("p1").String()},
		{name: "not the oldest", base: four, op: dropPartitions(1000, "p1"),
			err: "partition " + testID("p0").String() + " [-inf, 0) is older than a partition to drop but not listed"},
		{name: "a gap in the prefix", base: four, op: dropPartitions(1000, "p0", "p2"),
			err: "partition " + testID("p1").String() + " [0, 100) is older than a partition to drop but not listed"},
		{name: "ends after the cutoff", base: four, op: dropPartitions(99, "p0", "p1"),
			err: "partition " + testID("p1").String() + " [0, 100) does not end at or before the cutoff 99"},
		{name: "splitting", base: sp, op: dropPartitions(100, "p0", "p1"),
			err: "partition " + testID("p1").String() + " is splitting; it cannot be dropped"},
		{name: "nil id", base: four, op: Op{Type: OpDropPartitions, DropPartitions: &DropPartitionsOp{PartitionIDs: []uuid.UUID{uuid.Nil}, Before: 1000}},
			err: "partition " + uuid.Nil.String() + " is not a current partition"},
	}
}

// single returns a valid file of one partition covering the whole axis.
func single() *File {
	return &File{Table: "cpu", TxnID: testTxn('b'), TxnSeq: 2, ParentTxnID: testTxn('a'), Partitions: []Partition{
		{ID: testID("only"), Servers: []Placement{pl("s1", "onlys1")}},
	}}
}
