package http

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
)

// TestAPITypesEncodeAsBackendTypes: every public type the handlers convert
// to (http/api) marshals to the very bytes of the backend's type it comes
// from (cluster/wire), for values with every field set and for nil and
// empty slices, so the wire form of the answers did not change. (The table
// config and the partition map are model's types in both; http/api's
// tables_test.go pins their encoding.)
func TestAPITypesEncodeAsBackendTypes(t *testing.T) {
	id := func(b byte) uuid.UUID { return uuid.UUID{b, 1, 2, 3} }
	i64 := func(v int64) *int64 { return &v }
	pl := func(s string, b byte) metadata.Placement { return metadata.Placement{ServerID: s, PlacementID: id(b)} }
	parts := []metadata.Partition{
		{ID: id(1), End: i64(10), Servers: []metadata.Placement{pl("s1", 2), pl("s2", 3)}, Joining: []metadata.Placement{},
			Split: &metadata.Split{Points: []int64{5}, Children: []metadata.Child{
				{ID: id(4), End: i64(5), Servers: []metadata.Placement{pl("s1", 5)}}, {ID: id(6), Begin: i64(5), End: i64(10)}}}},
		{ID: id(7), Begin: i64(10), Joining: []metadata.Placement{pl("s3", 8)}, Offline: true},
		{ID: id(9)},
	}
	replicas := []wire.PartitionReplicas{
		{Partition: parts[0], Replicas: []wire.ReplicaStatus{{
			Server: "s1", Table: "cpu", PartitionID: id(1), Placement: id(2), End: i64(10),
			Status: metadata.StatusServe, TxnSeq: 7, Rows: 12, Checksum: "x", Bytes: 100, HighSeq: 9, SyncedSeq: 8,
			Targets: []wire.TargetStatus{{Server: "s2", Placement: id(3), PartitionID: id(1), Kind: metadata.TargetJoining,
				Mark: 4, MarkReached: true, Confirmed: 5, Lag: 3, LastError: "e", LastPush: time.Unix(5, 6).UTC()}},
		}, {Server: "s2", Status: metadata.StatusLoad, Rows: -1}}},
		{Partition: parts[1], Replicas: []wire.ReplicaStatus{}},
	}
	for _, tc := range []struct {
		name      string
		from, api any
	}{
		{"replicas", replicas, apiPartitionReplicas(replicas)},
		{"nil replicas", []wire.PartitionReplicas(nil), apiPartitionReplicas(nil)},
	} {
		want, err := json.Marshal(tc.from)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(tc.api)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the api type encodes as\n%s\nthe backend's as\n%s", tc.name, got, want)
		}
	}
}
