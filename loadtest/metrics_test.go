package loadtest

import (
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	text := `# HELP tsdb_store_write_bytes_total Bytes written.
# TYPE tsdb_store_write_bytes_total counter
tsdb_store_write_bytes_total{store="partition"} 1000
tsdb_store_write_bytes_total{store="smear",note="a \"}\" b"} 2.5e3 1700000000000
tsdb_store_write_bytes_total_extra 7
tsdb_store_write_bytes 9
tsdb_smear_queue_rows 42
tsdb_smear_queue_rows{broken 5
go_goroutines 12
garbage
`
	got, err := ParseMetrics(strings.NewReader(text), MetricStoreWriteBytes, MetricSmearQueueRows, "absent_metric")
	if err != nil {
		t.Fatal(err)
	}
	if got[MetricStoreWriteBytes] != 3500 || got[MetricSmearQueueRows] != 42 || len(got) != 2 {
		t.Errorf("got %v, want write 3500, queue 42, nothing else", got)
	}
	if _, ok := got["absent_metric"]; ok {
		t.Error("an absent metric is present")
	}
}
