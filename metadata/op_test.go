package metadata

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/google/uuid"
)

func createOp() CreateOp {
	return CreateOp{Table: "cpu", PartitionID: testID("first"), Servers: []Placement{pl("s2", "a"), pl("s1", "b"), pl("s3", "c")}}
}

func TestApplyCreate(t *testing.T) {
	op := createOp()
	txn := testTxn('1')
	f, err := Apply(nil, txn, Op{Type: OpCreate, Create: &op})
	if err != nil {
		t.Fatal(err)
	}
	want := &File{Table: "cpu", TxnID: txn, TxnSeq: 1, ParentTxnID: "", Partitions: []Partition{{
		ID:      testID("first"),
		Servers: []Placement{pl("s2", "a"), pl("s1", "b"), pl("s3", "c")}, // the op's order
		Joining: []Placement{},
	}}}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got %+v\nwant %+v", f, want)
	}
	if p, ok := f.Find(0); !ok || p.Begin != nil || p.End != nil {
		t.Fatal("the first partition does not cover the whole axis")
	}
	op.Servers[0].ServerID = "mutated"
	if f.Partitions[0].Servers[0].ServerID != "s2" {
		t.Fatal("the file shares the op's server slice")
	}
}

// TestApplyCreatePresplit: a CREATE with points makes a table born
// pre-split, its partitions adjacent in range order, each with its own
// servers.
func TestApplyCreatePresplit(t *testing.T) {
	op := createPresplitOp()
	f, err := Apply(nil, testTxn('1'), Op{Type: OpCreate, Create: &op})
	if err != nil {
		t.Fatal(err)
	}
	want := []Partition{
		{ID: testID("first"), End: i64(100), Servers: []Placement{pl("s2", "a"), pl("s1", "b"), pl("s3", "c")}, Joining: []Placement{}},
		{ID: testID("second"), Begin: i64(100), End: i64(200), Servers: []Placement{pl("s1", "d"), pl("s3", "e"), pl("s2", "f")}, Joining: []Placement{}},
		{ID: testID("third"), Begin: i64(200), Servers: []Placement{pl("s3", "g"), pl("s2", "h"), pl("s1", "i")}, Joining: []Placement{}},
	}
	if !reflect.DeepEqual(f.Partitions, want) {
		t.Fatalf("got %+v\nwant %+v", f.Partitions, want)
	}
	for _, ts := range []int64{-1 << 62, 99, 100, 199, 200, 1 << 62} {
		p, ok := f.Find(ts)
		if !ok || !p.Contains(ts) {
			t.Fatalf("time %d: no partition covers it", ts)
		}
	}
	*f.Partitions[0].End = 5
	if *f.Partitions[1].Begin != 100 {
		t.Fatal("a partition's end and the next one's begin share memory")
	}
}

func createPresplitOp() CreateOp {
	op := createOp()
	op.Points = []int64{100, 200}
	op.Rest = []SplitChild{
		{ID: testID("second"), Servers: []Placement{pl("s1", "d"), pl("s3", "e"), pl("s2", "f")}},
		{ID: testID("third"), Servers: []Placement{pl("s3", "g"), pl("s2", "h"), pl("s1", "i")}},
	}
	return op
}

func TestApplyCreateInvalid(t *testing.T) {
	runInvalid(t, createInvalidCases())
}

// createInvalidCases also holds the failures every op shares (txnid, base,
// op bodies, op type).
func createInvalidCases() []opCase {
	base := fourPartitions()
	create := func(edit func(o *CreateOp)) Op { o := createOp(); edit(&o); return Op{Type: OpCreate, Create: &o} }
	nop := func(*CreateOp) {}
	presplit := func(edit func(o *CreateOp)) Op {
		o := createPresplitOp()
		edit(&o)
		return Op{Type: OpCreate, Create: &o}
	}
	return []opCase{
		{name: "non-nil base", base: base, op: create(nop), err: `table "cpu" already has a metadata file (txnid ` + base.TxnID + ")"},
		{name: "no body", op: Op{Type: OpCreate}, err: "want exactly one op body, got 0"},
		{name: "two bodies", op: Op{Type: OpCreate, Create: create(nop).Create, SetOffline: &SetOfflineOp{PartitionID: testID("x")}},
			err: "want exactly one op body, got 2"},
		{name: "wrong body", op: Op{Type: OpCreate, SetOffline: &SetOfflineOp{}}, err: "CREATE: the op body does not match the op type"},
		{name: "empty servers", op: create(func(o *CreateOp) { o.Servers = nil }), err: "CREATE: no servers"},
		{name: "duplicate server", op: create(func(o *CreateOp) { o.Servers[2].ServerID = "s2" }), err: `servers[2]: duplicate server "s2"`},
		{name: "duplicate placement", op: create(func(o *CreateOp) { o.Servers[1].PlacementID = o.Servers[0].PlacementID }),
			err: "servers[1]: duplicate placement_id " + testID("a").String()},
		{name: "nil placement", op: create(func(o *CreateOp) { o.Servers[1].PlacementID = uuid.Nil }), err: "servers[1]: nil placement_id"},
		{name: "empty server id", op: create(func(o *CreateOp) { o.Servers[0].ServerID = "" }), err: "servers[0]: empty server_id"},
		{name: "nil partition id", op: create(func(o *CreateOp) { o.PartitionID = uuid.Nil }), err: "CREATE: nil partition_id"},
		{name: "bad table name", op: create(func(o *CreateOp) { o.Table = "Bad-Name" }), err: "invalid table name"},
		{name: "points without partitions", op: presplit(func(o *CreateOp) { o.Rest = o.Rest[:1] }), err: "CREATE: 2 points need as many partitions after the first, got 1"},
		{name: "points not increasing", op: presplit(func(o *CreateOp) { o.Points[1] = 100 }), err: "CREATE: points[1] = 100 is not above points[0] = 100"},
		{name: "partition id twice", op: presplit(func(o *CreateOp) { o.Rest[1].ID = testID("first") }), err: "CREATE: rest[1]: partition id " + testID("first").String() + " used twice"},
		{name: "nil partition id after the first", op: presplit(func(o *CreateOp) { o.Rest[0].ID = uuid.Nil }), err: "CREATE: rest[0]: nil id"},
		{name: "placement twice across partitions", op: presplit(func(o *CreateOp) { o.Rest[1].Servers[0].PlacementID = testID("a") }),
			err: "CREATE: rest[1]: placement_id " + testID("a").String() + " used twice"},
		{name: "no servers after the first", op: presplit(func(o *CreateOp) { o.Rest[0].Servers = nil }), err: "CREATE: rest[0]: no servers"},
		{name: "empty table name", op: create(func(o *CreateOp) { o.Table = "" }), err: "invalid table name"},
		{name: "short txnid", txn: "abc", op: create(nop), err: `new txnid "abc" is not 40 lowercase hex characters`},
		{name: "uppercase txnid", txn: testTxn('A'), op: create(nop), err: "new txnid"},
		{name: "unknown type", base: base, op: Op{Type: "EXPLODE", SetOffline: &SetOfflineOp{}}, err: "EXPLODE: op type not supported"},
		{name: "body of another type", base: base, op: Op{Type: OpSplitBegin, SetOffline: &SetOfflineOp{}},
			err: "SPLIT_BEGIN: the op body does not match the op type"},
		{name: "no base for a change", op: Op{Type: OpSetOffline, SetOffline: &SetOfflineOp{PartitionID: testID("p2")}},
			err: "SET_OFFLINE: no base file"},
		{name: "new txnid equals the base", base: base, txn: base.TxnID, op: Op{Type: OpSetOffline, SetOffline: &SetOfflineOp{PartitionID: testID("p2"), Offline: true}},
			err: "new txnid equals the base txnid"},
	}
}

func TestApplyDeterministic(t *testing.T) {
	run := func(base *File, txn string, op Op) []byte {
		t.Helper()
		f, err := Apply(base, txn, op)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	o1, o2 := createOp(), createOp()
	a := run(nil, testTxn('1'), Op{Type: OpCreate, Create: &o1})
	b := run(nil, testTxn('1'), Op{Type: OpCreate, Create: &o2})
	if !bytes.Equal(a, b) {
		t.Fatal("CREATE: same op and txnid gave different bytes")
	}
	if c := run(nil, testTxn('2'), Op{Type: OpCreate, Create: &o1}); bytes.Equal(a, c) {
		t.Fatal("CREATE: a different txnid gave the same bytes")
	}
	base := fourPartitions()
	before, _ := Encode(base)
	op := Op{Type: OpSetOffline, SetOffline: &SetOfflineOp{PartitionID: testID("p2"), Offline: true}}
	x, y := run(base, testTxn('c'), op), run(base.Clone(), testTxn('c'), op)
	if !bytes.Equal(x, y) {
		t.Fatal("SET_OFFLINE: same base, op and txnid gave different bytes")
	}
	if after, _ := Encode(base); !bytes.Equal(before, after) {
		t.Fatal("Apply modified the base")
	}
}

func TestApplySetOffline(t *testing.T) {
	base := fourPartitions()
	op := Op{Type: OpSetOffline, SetOffline: &SetOfflineOp{PartitionID: testID("p2"), Offline: true}}
	f, err := Apply(base, testTxn('c'), op)
	if err != nil {
		t.Fatal(err)
	}
	if f.TxnSeq != 3 || f.ParentTxnID != base.TxnID || f.TxnID != testTxn('c') || !f.Partitions[2].Offline || f.Partitions[1].Offline {
		t.Fatalf("got %+v", f)
	}
	back, err := Apply(f, testTxn('d'), Op{Type: OpSetOffline, SetOffline: &SetOfflineOp{PartitionID: testID("p2")}})
	if err != nil || back.Partitions[2].Offline || back.TxnSeq != 4 {
		t.Fatalf("back online: %+v %v", back, err)
	}
	runInvalid(t, setOfflineInvalidCases())
}

func setOfflineInvalidCases() []opCase {
	off := fourPartitions()
	off.Partitions[2].Offline = true
	// A base that breaks an invariant no op checks (two partitions share
	// an id): the result fails validation and is refused.
	broken := fourPartitions()
	broken.Partitions[3].ID = broken.Partitions[0].ID
	setOffline := func(id string, on bool) Op {
		return Op{Type: OpSetOffline, SetOffline: &SetOfflineOp{PartitionID: testID(id), Offline: on}}
	}
	return []opCase{
		{name: "unknown partition", base: fourPartitions(), op: setOffline("zz", true), err: "partition " + testID("zz").String() + " is not a current partition"},
		{name: "split child id", base: splitting(), op: setOffline("c1", true), err: "partition " + testID("c1").String() + " is not a current partition"},
		{name: "no change", base: off, op: setOffline("p2", true), err: "partition " + testID("p2").String() + " already has offline=true"},
		{name: "already online", base: fourPartitions(), op: setOffline("p2", false), err: "already has offline=false"},
		{name: "result fails validation", base: broken, op: setOffline("p2", true), err: "SET_OFFLINE produced an invalid file"},
	}
}
