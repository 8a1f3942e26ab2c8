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

func TestApplyCreateInvalid(t *testing.T) {
	base := fourPartitions()
	for _, tc := range []struct {
		name  string
		base  *File
		txnID string
		op    func() Op
		want  string
	}{
		{"non-nil base", base, testTxn('1'), func() Op { o := createOp(); return Op{Type: OpCreate, Create: &o} }, "already has a metadata file"},
		{"no body", nil, testTxn('1'), func() Op { return Op{Type: OpCreate} }, "want exactly one op body, got 0"},
		{"two bodies", nil, testTxn('1'), func() Op {
			o := createOp()
			return Op{Type: OpCreate, Create: &o, SetOffline: &SetOfflineOp{PartitionID: testID("x")}}
		}, "want exactly one op body, got 2"},
		{"wrong body", nil, testTxn('1'), func() Op { return Op{Type: OpCreate, SetOffline: &SetOfflineOp{}} }, "does not match the op type"},
		{"empty servers", nil, testTxn('1'), func() Op { o := createOp(); o.Servers = nil; return Op{Type: OpCreate, Create: &o} }, "no servers"},
		{"duplicate server", nil, testTxn('1'), func() Op {
			o := createOp()
			o.Servers[2].ServerID = "s2"
			return Op{Type: OpCreate, Create: &o}
		}, `duplicate server "s2"`},
		{"duplicate placement", nil, testTxn('1'), func() Op {
			o := createOp()
			o.Servers[1].PlacementID = o.Servers[0].PlacementID
			return Op{Type: OpCreate, Create: &o}
		}, "duplicate placement_id"},
		{"nil placement", nil, testTxn('1'), func() Op {
			o := createOp()
			o.Servers[1].PlacementID = uuid.Nil
			return Op{Type: OpCreate, Create: &o}
		}, "servers[1]: nil placement_id"},
		{"empty server id", nil, testTxn('1'), func() Op {
			o := createOp()
			o.Servers[0].ServerID = ""
			return Op{Type: OpCreate, Create: &o}
		}, "servers[0]: empty server_id"},
		{"nil partition id", nil, testTxn('1'), func() Op { o := createOp(); o.PartitionID = uuid.Nil; return Op{Type: OpCreate, Create: &o} }, "nil partition_id"},
		{"bad table name", nil, testTxn('1'), func() Op { o := createOp(); o.Table = "Bad-Name"; return Op{Type: OpCreate, Create: &o} }, "invalid table name"},
		{"empty table name", nil, testTxn('1'), func() Op { o := createOp(); o.Table = ""; return Op{Type: OpCreate, Create: &o} }, "invalid table name"},
		{"short txnid", nil, "abc", func() Op { o := createOp(); return Op{Type: OpCreate, Create: &o} }, "new txnid"},
		{"uppercase txnid", nil, testTxn('A'), func() Op { o := createOp(); return Op{Type: OpCreate, Create: &o} }, "new txnid"},
		{"unknown type", base, testTxn('1'), func() Op { return Op{Type: "EXPLODE", SetOffline: &SetOfflineOp{}} }, "op type not supported"},
		{"body of another type", base, testTxn('1'), func() Op { return Op{Type: OpSplitBegin, SetOffline: &SetOfflineOp{}} }, "SPLIT_BEGIN: the op body does not match the op type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := Encode(base)
			_, err := Apply(tc.base, tc.txnID, tc.op())
			wantErr(t, err, ErrInvalidOp, tc.want)
			if after, _ := Encode(base); !bytes.Equal(before, after) {
				t.Fatal("Apply modified the base")
			}
		})
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
	for _, tc := range []struct {
		name string
		base *File
		txn  string
		op   Op
		want string
	}{
		{"nil base", nil, testTxn('c'), op, "no base file"},
		{"same txnid", base, base.TxnID, op, "equals the base txnid"},
		{"unknown partition", base, testTxn('c'), Op{Type: OpSetOffline, SetOffline: &SetOfflineOp{PartitionID: testID("zz"), Offline: true}}, "not a current partition"},
		{"no change", f, testTxn('d'), op, "already has offline=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Apply(tc.base, tc.txn, tc.op)
			wantErr(t, err, ErrInvalidOp, tc.want)
		})
	}
}
