package metadata

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

func TestTableConfigJSONFieldNames(t *testing.T) {
	c := NewTableConfig("cpu")
	b, err := encodeConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if got, want := keys(m), "created_at,metadata_checksum,metadata_servers,metadata_txnid,metadata_txnseq,name,partition_size_target,replication_factor,retention,smear"; got != want {
		t.Fatalf("fields %s, want %s", got, want)
	}
	if string(m["metadata_servers"]) != "[]" || string(m["retention"]) != `"0s"` {
		t.Fatalf("metadata_servers %s retention %s", m["metadata_servers"], m["retention"])
	}
	var smear map[string]json.RawMessage
	if err := json.Unmarshal(m["smear"], &smear); err != nil {
		t.Fatal(err)
	}
	if got := keys(smear); got != "enabled,keyrange_threshold,max_delay" {
		t.Fatalf("smear fields %s", got)
	}
	back, err := DecodeTableConfig(b)
	if err != nil || back.Smear != c.Smear || back.ReplicationFactor != c.ReplicationFactor {
		t.Fatalf("decode: %+v, %v", back, err)
	}
}

func keys(m map[string]json.RawMessage) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}
