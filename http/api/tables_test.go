package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestTablesAnswersJSON pins the bytes of the tables' answers (the table
// config and the partition map, with every field set and with nil and empty
// slices): they are the public API's contract, whichever package declares
// the types.
func TestTablesAnswersJSON(t *testing.T) {
	id := func(b byte) uuid.UUID { return uuid.UUID{b, 1, 2, 3} }
	i64 := func(v int64) *int64 { return &v }
	pl := func(s string, b byte) Placement { return Placement{ServerID: s, PlacementID: id(b)} }
	cfg := TableConfig{
		Name: "cpu", MetadataTxnID: "ab12", MetadataTxnSeq: 7, MetadataChecksum: "ck",
		MetadataServers: []string{"s1", "s2"}, ReplicationFactor: 3, PartitionSizeTarget: 1 << 20,
		Retention: Duration(48 * time.Hour),
		Smear:     SmearConfig{Enabled: true, MaxDelay: Duration(time.Minute), KeyrangeThreshold: 5},
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
	}
	parts := []Partition{
		{ID: id(1), End: i64(10), Servers: []Placement{pl("s1", 2), pl("s2", 3)}, Joining: []Placement{},
			Split: &Split{Points: []int64{5}, Children: []Child{
				{ID: id(4), End: i64(5), Servers: []Placement{pl("s1", 5)}}, {ID: id(6), Begin: i64(5), End: i64(10)}}}},
		{ID: id(7), Begin: i64(10), Joining: []Placement{pl("s3", 8)}, Offline: true},
		{ID: id(9)},
	}
	file := &File{Table: "cpu", TxnID: "ab12", TxnSeq: 7, ParentTxnID: "cd34", Partitions: parts}
	const (
		cfgJSON   = `{"name":"cpu","metadata_txnid":"ab12","metadata_txnseq":7,"metadata_checksum":"ck","metadata_servers":["s1","s2"],"replication_factor":3,"partition_size_target":1048576,"retention":"48h0m0s","smear":{"enabled":true,"max_delay":"1m0s","keyrange_threshold":"5ns"},"created_at":"2026-01-02T03:04:05.000000006Z"}`
		partsJSON = `[{"id":"01010203-0000-0000-0000-000000000000","begin":null,"end":10,"servers":[{"server_id":"s1","placement_id":"02010203-0000-0000-0000-000000000000"},{"server_id":"s2","placement_id":"03010203-0000-0000-0000-000000000000"}],"joining":[],"split":{"points":[5],"children":[{"id":"04010203-0000-0000-0000-000000000000","begin":null,"end":5,"servers":[{"server_id":"s1","placement_id":"05010203-0000-0000-0000-000000000000"}]},{"id":"06010203-0000-0000-0000-000000000000","begin":5,"end":10,"servers":null}]}},{"id":"07010203-0000-0000-0000-000000000000","begin":10,"end":null,"servers":null,"joining":[{"server_id":"s3","placement_id":"08010203-0000-0000-0000-000000000000"}],"offline":true},{"id":"09010203-0000-0000-0000-000000000000","begin":null,"end":null,"servers":null,"joining":null}]`
	)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"tables", TablesResponse{Tables: []TableConfig{cfg, {Name: "b"}}}, `{"tables":[` + cfgJSON + `,{"name":"b","metadata_txnid":"","metadata_txnseq":0,"metadata_checksum":"","metadata_servers":null,"replication_factor":0,"partition_size_target":0,"retention":"0s","smear":{"enabled":false,"max_delay":"0s","keyrange_threshold":"0s"},"created_at":"0001-01-01T00:00:00Z"}]}`},
		{"no tables", TablesResponse{Tables: []TableConfig{}}, `{"tables":[]}`},
		{"table", TableResponse{Config: cfg, Partitions: parts}, `{"config":` + cfgJSON + `,"partitions":` + partsJSON + `}`},
		{"table without partitions", TableResponse{Config: cfg}, `{"config":` + cfgJSON + `,"partitions":null}`},
		{"metadata", MetadataResponse{Config: cfg, Metadata: file}, `{"config":` + cfgJSON + `,"metadata":{"table":"cpu","txnid":"ab12","txnseq":7,"parent_txnid":"cd34","partitions":` + partsJSON + `}}`},
		{"no metadata", MetadataResponse{Config: cfg}, `{"config":` + cfgJSON + `,"metadata":null}`},
		{"empty metadata", MetadataResponse{Metadata: &File{}}, `{"config":{"name":"","metadata_txnid":"","metadata_txnseq":0,"metadata_checksum":"","metadata_servers":null,"replication_factor":0,"partition_size_target":0,"retention":"0s","smear":{"enabled":false,"max_delay":"0s","keyrange_threshold":"0s"},"created_at":"0001-01-01T00:00:00Z"},"metadata":{"table":"","txnid":"","txnseq":0,"parent_txnid":"","partitions":null}}`},
		{"replicas", TableReplicasResponse{Config: cfg, Partitions: []PartitionReplicas{{Partition: parts[1]}}}, `{"config":` + cfgJSON + `,"partitions":[{"id":"07010203-0000-0000-0000-000000000000","begin":10,"end":null,"servers":null,"joining":[{"server_id":"s3","placement_id":"08010203-0000-0000-0000-000000000000"}],"offline":true,"replicas":null}]}`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: encodes as\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// TestDurationJSON: a Duration reads a Go duration string or integer
// nanoseconds and writes a string; the messages of a bad one are part of
// the answer to a bad POST /api/v1/tables.
func TestDurationJSON(t *testing.T) {
	var req CreateTableRequest
	if err := json.Unmarshal([]byte(`{"name":"t","retention":"1h","smear":{"max_delay":60000000000,"keyrange_threshold":null}}`), &req); err != nil {
		t.Fatal(err)
	}
	if *req.Retention != Duration(time.Hour) || *req.Smear.MaxDelay != Duration(time.Minute) || req.Smear.KeyrangeThreshold != nil {
		t.Fatalf("decoded %+v %+v", req, req.Smear)
	}
	if b, err := json.Marshal(req); err != nil || string(b) != `{"name":"t","retention":"1h0m0s","smear":{"max_delay":"1m0s"}}` {
		t.Fatalf("encoded %s, %v", b, err)
	}
	for in, want := range map[string]string{
		`"abc"`:   `invalid duration "abc": time: invalid duration "abc"`,
		`true`:    `invalid duration true: want a string like "120s" or integer nanoseconds`,
		`1.5`:     `invalid duration 1.5: want a string like "120s" or integer nanoseconds`,
		`{"a":1}`: `invalid duration {"a":1}: want a string like "120s" or integer nanoseconds`,
	} {
		err := json.Unmarshal([]byte(`{"retention":`+in+`}`), &req)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("retention %s: got %v, want %q", in, err, want)
		}
	}
}
