package wire

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// TestSubQueryRequestJSON pins the sub-query's wire form: the same members,
// names and values as before it embedded model.Query (when its query fields
// were its own), decoded back to the same request; Query.MaxBytes is not
// sent, MaxBytes is.
func TestSubQueryRequestJSON(t *testing.T) {
	id := uuid.MustParse("aaaaaaaa-0000-0000-0000-000000000001")
	req := SubQueryRequest{Table: "cpu", PartitionID: id, ToPlacement: id, TxnSeq: 7,
		Query: model.Query{From: 1, To: 2, Series: "s", Prefix: true, Fields: []string{"f"}, Limit: 3, MaxBytes: 99,
			Step: 4, Origin: 5, GroupAll: true, MaxBuckets: 6, Consistency: "quorum"},
		Agg: true, MaxBytes: 8}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// The members of the request as it was declared before (field by
	// field), in its order.
	const before = `{"table":"cpu","partition_id":"aaaaaaaa-0000-0000-0000-000000000001",` +
		`"to_placement":"aaaaaaaa-0000-0000-0000-000000000001","txnseq":7,"from":1,"to":2,"series":"s",` +
		`"prefix":true,"fields":["f"],"limit":3,"agg":true,"step":4,"consistency":"quorum","origin":5,` +
		`"group_all":true,"max_buckets":6,"max_bytes":8}`
	var want map[string]any
	if err := json.Unmarshal([]byte(before), &want); err != nil {
		t.Fatal(err)
	}
	if gb, wb := mustJSON(t, got), mustJSON(t, want); gb != wb {
		t.Fatalf("JSON members = %s\nwant           %s", gb, wb)
	}
	var back SubQueryRequest
	if err := json.Unmarshal([]byte(before), &back); err != nil {
		t.Fatal(err)
	}
	req.Query.MaxBytes = 0 // not sent
	if mustJSON(t, back) != mustJSON(t, req) || back.Query.MaxBytes != 0 || len(back.Fields) != 1 {
		t.Fatalf("decoded = %+v, want %+v", back, req)
	}
	if b, _ := json.Marshal(SubQueryRequest{}); string(b) != `{"table":"","partition_id":"00000000-0000-0000-0000-000000000000",`+
		`"to_placement":"00000000-0000-0000-0000-000000000000","txnseq":0,"from":0,"to":0}` {
		t.Fatalf("zero request JSON = %s", b)
	}
}

// mustJSON encodes v (a map's keys sorted).
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestForwardInsertRequestJSON pins the forwarded insert's wire form: the
// same bytes as before it embedded model.InsertOptions (when Consistency
// and Versioned were its own fields); NoSmear is not sent.
func TestForwardInsertRequestJSON(t *testing.T) {
	id := uuid.MustParse("aaaaaaaa-0000-0000-0000-000000000001")
	req := ForwardInsertRequest{Table: "cpu", PartitionID: id, ToPlacement: id, TxnSeq: 7,
		InsertOptions: model.InsertOptions{Consistency: "all", NoSmear: true, Versioned: true}, Rows: []byte{1, 2}, Count: 1}
	const want = `{"table":"cpu","partition_id":"aaaaaaaa-0000-0000-0000-000000000001",` +
		`"to_placement":"aaaaaaaa-0000-0000-0000-000000000001","txnseq":7,"consistency":"all","versioned":true,` +
		`"rows":"AQI=","count":1}`
	if got := mustJSON(t, req); got != want {
		t.Fatalf("JSON = %s\nwant   %s", got, want)
	}
	var back ForwardInsertRequest
	if err := json.Unmarshal([]byte(want), &back); err != nil {
		t.Fatal(err)
	}
	if back.Consistency != "all" || !back.Versioned || back.NoSmear || back.Count != 1 || len(back.Rows) != 2 {
		t.Fatalf("decoded = %+v", back)
	}
	const unversioned = `{"table":"","partition_id":"00000000-0000-0000-0000-000000000000",` +
		`"to_placement":"00000000-0000-0000-0000-000000000000","txnseq":0,"consistency":"","rows":null,"count":0}`
	if got := mustJSON(t, ForwardInsertRequest{}); got != unversioned {
		t.Fatalf("zero request JSON = %s\nwant                %s", got, unversioned)
	}
}

// TestPayloadSplit: a push and a forwarded insert send their rows beside
// the JSON (rpc.PayloadRequest): the header carries no rows, and the
// rows set back make the same request.
func TestPayloadSplit(t *testing.T) {
	rows := []byte("R\x01rows")
	push := PushRequest{Table: "t", Rows: rows, Count: 1}
	fwd := ForwardInsertRequest{Table: "t", Rows: rows, Count: 1, InsertOptions: model.InsertOptions{Consistency: "one"}}
	for _, tc := range []struct {
		req  interface{ SplitPayload() (any, []byte) }
		back interface{ SetPayload([]byte) }
	}{{push, &PushRequest{}}, {fwd, &ForwardInsertRequest{}}} {
		header, payload := tc.req.SplitPayload()
		js, err := json.Marshal(header)
		if err != nil {
			t.Fatal(err)
		}
		if string(payload) != string(rows) || json.Unmarshal(js, tc.back) != nil {
			t.Fatalf("%T: payload %q, header %s", tc.req, payload, js)
		}
		tc.back.SetPayload(payload)
		var want, got []byte
		want, _ = json.Marshal(tc.req)
		got, _ = json.Marshal(tc.back)
		if string(got) != string(want) {
			t.Fatalf("%T: after the round trip %s, want %s", tc.req, got, want)
		}
	}
	if string(push.Rows) != string(rows) {
		t.Fatal("SplitPayload changed the request it was called on")
	}
}

// TestSizeScanned: a key scan measures the replicas that end in
// (SizeScanAfter, SizeScanBefore], or after SizeScanAfter with an open end
// when SizeScanBefore is not set (a master from before it).
func TestSizeScanned(t *testing.T) {
	at := func(ns int64) *int64 { return &ns }
	window := ReplicasRequest{SizeScan: 1, SizeScanAfter: 10, SizeScanBefore: 20}
	open := ReplicasRequest{SizeScan: 1, SizeScanAfter: 10}
	for _, tc := range []struct {
		req  ReplicasRequest
		end  *int64
		want bool
	}{
		{window, at(10), false}, {window, at(11), true}, {window, at(20), true}, {window, at(21), false}, {window, nil, false},
		{open, at(10), false}, {open, at(11), true}, {open, at(1 << 62), true}, {open, nil, true},
		{ReplicasRequest{SizeScanAfter: 10, SizeScanBefore: 20}, at(15), false}, // no scan asked
	} {
		if got := tc.req.SizeScanned(tc.end); got != tc.want {
			end := "open"
			if tc.end != nil {
				end = fmt.Sprint(*tc.end)
			}
			t.Errorf("%+v.SizeScanned(%s) = %v; want %v", tc.req, end, got, tc.want)
		}
	}
}
