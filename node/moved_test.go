package node

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/replication"
)

// TestMovedDataMetrics: a server whose log was truncated (RF 1, no target)
// sends a joiner a row snapshot, counted as kind snapshot with one
// snapshot done and its duration; rows inserted after the join are
// counted as kind push; the replica state (and so tsdb admin partitions)
// shows the truncation point, the log length, the snapshot and the moved
// rows by kind.
func TestMovedDataMetrics(t *testing.T) {
	c := startCluster(t, 2)
	c.createTable("s1", "cpu", 1)
	_, f, _ := c.nodes["s1"].backendMetadata("cpu", "")
	p := f.Partitions[0]
	holder, joiner := p.Servers[0].ServerID, "s1"
	if holder == "s1" {
		joiner = "s2"
	}
	// More rows than the fewest a truncation deletes: with no target,
	// the holder's Pusher truncates its whole log.
	const rows = replication.DefaultTruncateMin + 1000
	c.insertLP(holder, "cpu", lpBatch("pre", 0, rows, 100))
	waitFor(t, holder+" truncating its log", func() bool {
		st := c.replicaStates(holder, "cpu")
		return len(st) == 1 && st[0].LogStart >= replication.DefaultTruncateMin
	})
	m := c.nodes[holder].rmetrics
	if got := testutil.ToFloat64(m.MovedRows.WithLabelValues("snapshot")); got != 0 {
		t.Fatalf("%v snapshot rows before any target", got)
	}

	cl := c.client(holder)
	cl.must(200, cl.do("POST", "/api/v1/tables/cpu/partitions/"+p.ID.String()+"/join", []byte(`{"server":"`+joiner+`"}`)), nil)
	waitFor(t, joiner+" finalizing its join", func() bool {
		_, f, err := c.nodes[holder].backendMetadata("cpu", "")
		return err == nil && len(f.Partitions[0].Joining) == 0 &&
			slices.ContainsFunc(f.Partitions[0].Servers, func(pl metadata.Placement) bool { return pl.ServerID == joiner })
	})
	waitFor(t, "both replicas converging", func() bool { return c.converged("cpu", rows, holder, joiner) })

	// The joiner got every row through a row snapshot: its mark was taken
	// after the truncation. The counters move on the sender's goroutine
	// once its last push returned: wait for them.
	waitFor(t, "the snapshot counted", func() bool {
		return testutil.ToFloat64(m.MovedRows.WithLabelValues("snapshot")) >= rows &&
			testutil.ToFloat64(m.Snapshots.WithLabelValues(replication.SnapshotDone)) >= 1
	})
	if got := testutil.ToFloat64(m.MovedRows.WithLabelValues("snapshot")); got < rows {
		t.Fatalf("%v snapshot rows moved, want at least %d", got, rows)
	}
	// Bytes counted (sealed blocks move as they are: about 2 bytes per
	// row of this regular data, against 60 or more as rows).
	if got := testutil.ToFloat64(m.MovedBytes.WithLabelValues("snapshot")); got <= 0 {
		t.Fatalf("%v snapshot bytes moved for %d rows", got, rows)
	}
	if got := testutil.ToFloat64(m.Snapshots.WithLabelValues(replication.SnapshotDone)); got < 1 {
		t.Fatalf("%v snapshots done, want at least 1", got)
	}
	waitFor(t, "the snapshot's duration observed", func() bool {
		var h dto.Metric
		return m.SnapshotSeconds.Write(&h) == nil && h.GetHistogram().GetSampleCount() >= 1
	})
	if got := testutil.ToFloat64(m.MovedRows.WithLabelValues("join")); got != 0 {
		t.Fatalf("%v join rows moved from the log, want none (the log was truncated)", got)
	}

	// Rows inserted once the joiner serves are pushed from the log.
	push0 := testutil.ToFloat64(m.MovedRows.WithLabelValues("push"))
	c.insertLP(holder, "cpu", lpBatch("post", 1_000_000, 10, 10))
	waitFor(t, "the new rows on both", func() bool { return c.converged("cpu", rows+10, holder, joiner) })
	// Counted by the sender once its push returned, after the joiner
	// stored the rows: wait for it.
	waitFor(t, "the new rows counted as pushed", func() bool {
		return testutil.ToFloat64(m.MovedRows.WithLabelValues("push"))-push0 >= 10
	})

	// The replica state as the admin API answers it (GET …?replicas=1).
	var resp api.TableReplicasResponse
	cl.must(200, cl.do("GET", "/api/v1/tables/cpu?replicas=1", nil), &resp)
	var st *api.ReplicaStatus
	for i, r := range resp.Partitions[0].Replicas {
		if r.Server == holder {
			st = &resp.Partitions[0].Replicas[i]
		}
	}
	if st == nil {
		t.Fatalf("no state of %s in %+v", holder, resp)
	}
	b, _ := json.Marshal(st)
	t.Logf("replica state of %s: %s", holder, b)
	if st.LogStart < replication.DefaultTruncateMin || st.LogLength != st.HighSeq-st.LogStart ||
		st.Snapshots.Done < 1 || st.Snapshots.Active != 0 ||
		st.Moved[api.MovedSnapshot].Rows < rows || st.Moved[api.MovedPush].Rows < 10 {
		t.Fatalf("replica state of %s: %s", holder, b)
	}
}
