package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// retentionRows writes n rows of prefix at times base, base+1s, ...
func retentionRows(prefix string, base time.Time, n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "m,s=%s-%d v=%d %d\n", prefix, i%5, i, base.Add(time.Duration(i)*time.Second).UnixNano())
	}
	return []byte(b.String())
}

// rawRows is the number of rows a raw query through cl answers.
func rawRows(t *testing.T, cl *client, table string) int {
	t.Helper()
	r := cl.do("GET", "/api/v1/tables/"+table+"/query?limit=1000000", nil)
	if r.status != 200 {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
	var resp api.RawQueryResponse
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatal(err)
	}
	return len(resp.Rows)
}

// TestRetentionDropKill9: three real `tsdb server` processes, RF 3, a
// table holding 40 rows of 3 h ago and 40 of 10 minutes ago, whose
// retention is then set to 1 h (an insert of rows older than the retention
// is refused, so they are written first). The expired rows disappear from
// queries at once (the front end clips). The table is split at 2 h ago; the master then drops the
// expired partition, and one server is killed with SIGKILL as soon as
// the drop is committed, then restarted. Afterwards every server holds
// only the remaining partition, with exactly the 40 rows inside the
// retention: none lost, and none of the expired rows pushed into it (the
// old DROP_PARTITIONS made the dropped replicas UNLOAD with the first
// remaining partition as target; that breaks the 40 here: 80 rows).
func TestRetentionDropKill9(t *testing.T) {
	e := testEtcd(t)
	procs := map[string]*proc{}
	for _, id := range []string{"s1", "s2", "s3"} {
		procs[id] = startProc(t, id, t.TempDir(), e.Endpoint())
	}
	c := procs["s1"].client()
	c.must(201, c.do("POST", "/api/v1/tables", []byte(`{"name":"ret","replication_factor":3}`)), nil)
	now := time.Now()
	r := c.do("POST", "/write?db=ret&precision=ns", append(retentionRows("old", now.Add(-3*time.Hour), 40), retentionRows("new", now.Add(-10*time.Minute), 40)...))
	if r.status != 204 {
		t.Fatalf("insert: %d %s", r.status, r.body)
	}
	c.must(200, c.do("PATCH", "/api/v1/tables/ret", []byte(`{"retention":"1h"}`)), nil)
	// From now on an insert of an expired row is refused whole.
	r = c.do("POST", "/write?db=ret&precision=ns", append(retentionRows("late", now.Add(-3*time.Hour), 1), retentionRows("late", now, 1)...))
	if r.status != 400 || !strings.Contains(string(r.body), "older than table") {
		t.Fatalf("insert of an expired row: %d %s, want 400 naming the retention", r.status, r.body)
	}
	// Each server clips its queries once it has seen the new retention
	// (its watch); from then on it answers only the 40 rows inside it.
	for id, p := range procs {
		waitFor(t, "query via "+id+" answering the 40 rows inside the retention", func() bool {
			return rawRows(t, p.client(), "ret") == 40
		})
	}
	rc := rpc.NewClient(rpc.Config{})
	defer rc.Close()
	replicas := func(p *proc) []wire.ReplicaStatus {
		var resp wire.ReplicasResponse
		if err := rc.Call(context.Background(), p.addr, wire.PathReplicas, wire.ReplicasRequest{Table: "ret", Counts: true}, &resp); err != nil {
			return nil
		}
		return resp.Replicas
	}
	// The expired rows are still on disk: the master had nothing to drop.
	for id, p := range procs {
		waitFor(t, id+" holding all 80 rows", func() bool {
			rs := replicas(p)
			return len(rs) == 1 && rs[0].Rows == 80
		})
	}
	var tr api.TableResponse
	c.must(200, c.do("GET", "/api/v1/tables/ret", nil), &tr)
	at := now.Add(-2 * time.Hour).UnixNano()
	c.must(200, c.do("POST", fmt.Sprintf("/api/v1/tables/ret/partitions/%s/split", tr.Partitions[0].ID),
		[]byte(fmt.Sprintf(`{"at":"%d"}`, at))), nil)
	// Kill s2 as soon as the drop is committed: it may not have dropped
	// its replica yet, or be dropping it.
	var dropped *metadata.File
	waitLong(t, 60*time.Second, "the retention drop", func() bool {
		var m api.MetadataResponse
		r := c.do("GET", "/api/v1/tables/ret/metadata", nil)
		if r.status != 200 || json.Unmarshal(r.body, &m) != nil {
			return false
		}
		if m.Metadata.DroppedBefore != nil {
			dropped = m.Metadata
			return true
		}
		return false
	})
	procs["s2"].kill9()
	if len(dropped.Partitions) != 1 || *dropped.DroppedBefore != at {
		t.Fatalf("after the drop: %d partitions, horizon %d, want 1 partition and horizon %d", len(dropped.Partitions), *dropped.DroppedBefore, at)
	}
	procs["s2"].start()
	remaining := dropped.Partitions[0].ID
	for id, p := range procs {
		waitLong(t, 60*time.Second, id+" holding only the remaining partition, with the 40 rows inside the retention", func() bool {
			rs := replicas(p)
			return len(rs) == 1 && rs[0].PartitionID == remaining && rs[0].Rows == 40
		})
		if got := rawRows(t, p.client(), "ret"); got != 40 {
			t.Fatalf("query via %s after the drop: %d rows, want 40", id, got)
		}
	}
}

// TestTablePatchRetentionAndDrop: PATCH of a table's retention hides the
// rows older than it at once through every server, and refuses any other
// field; DELETE of a table is refused (409) while a partition splits,
// done with ?force=true (every server drops its replicas), answers 404
// after, and the same name can be created again, empty.
func TestTablePatchRetentionAndDrop(t *testing.T) {
	var blocked atomic.Bool // pushes to split children fail: a split stays in flight
	blocked.Store(true)
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.knobs.BlockPush = func(t metadata.Target) bool { return blocked.Load() && t.Kind == metadata.TargetSplit }
	})
	c.createTable("s1", "cpu", 3)
	now := time.Now()
	c.insertLP("s1", "cpu", append(retentionRows("old", now.Add(-3*time.Hour), 30), retentionRows("new", now.Add(-10*time.Minute), 30)...))
	cl := c.client("s1")
	if got := rawRows(t, cl, "cpu"); got != 60 {
		t.Fatalf("%d rows without retention, want 60", got)
	}
	var cfg api.TableConfig
	cl.must(200, cl.do("PATCH", "/api/v1/tables/cpu", []byte(`{"retention":"1h"}`)), &cfg)
	if cfg.Retention.Std() != time.Hour || c.config("cpu").Retention.Std() != time.Hour {
		t.Fatalf("retention %v after PATCH (etcd %v), want 1h", cfg.Retention, c.config("cpu").Retention)
	}
	if got := rawRows(t, cl, "cpu"); got != 30 {
		t.Fatalf("%d rows through the patching server, want the 30 inside the retention", got)
	}
	for _, id := range []string{"s2", "s3"} {
		waitFor(t, id+" clipping to the new retention", func() bool { return rawRows(t, c.client(id), "cpu") == 30 })
	}
	// Aggregates are clipped too; an unstepped bucket keeps the query's start.
	var agg api.AggQueryResponse
	cl.must(200, cl.do("GET", "/api/v1/tables/cpu/query?agg=count&group=none&from=1000", nil), &agg)
	if len(agg.Series) != 1 || len(agg.Series[0].Buckets) != 1 || agg.Series[0].Buckets[0].Time != 1000 ||
		agg.Series[0].Buckets[0].Values["v"] != 30 {
		t.Fatalf("count since 1000 with retention 1h: %+v, want one bucket at 1000 counting 30", agg)
	}
	for body, want := range map[string]string{
		`{"retention":"1h","replication_factor":2}`: "replication_factor",
		`{}`:                  "retention",
		`{"retention":"1x"}`:  "1x",
		`{"retention":"-1h"}`: "retention",
	} {
		r := cl.do("PATCH", "/api/v1/tables/cpu", []byte(body))
		if r.status != 400 || !strings.Contains(string(r.body), want) {
			t.Fatalf("PATCH %s: %d %s, want 400 naming %q", body, r.status, r.body, want)
		}
	}
	if r := cl.do("PATCH", "/api/v1/tables/nope", []byte(`{"retention":"1h"}`)); r.status != 404 {
		t.Fatalf("PATCH of an unknown table: %d %s", r.status, r.body)
	}
	if c.config("cpu").Retention.Std() != time.Hour {
		t.Fatal("a refused PATCH changed the retention")
	}

	// A split in flight refuses DELETE unless forced.
	_, f, _ := c.nodes["s1"].backendMetadata("cpu", "")
	children := []metadata.SplitChild{{ID: uuid.New()}, {ID: uuid.New()}}
	for i := range children {
		for _, s := range []string{"s1", "s2", "s3"} {
			children[i].Servers = append(children[i].Servers, metadata.Placement{ServerID: s, PlacementID: uuid.New()})
		}
	}
	if _, err := c.nodes["s2"].RequestChange(context.Background(), "cpu", func(metadata.TableConfig, *metadata.File) (metadata.Op, error) {
		return metadata.Op{Type: metadata.OpSplitBegin, SplitBegin: &metadata.SplitBeginOp{
			PartitionID: f.Partitions[0].ID, Points: []int64{now.Add(-time.Hour).UnixNano()}, Children: children,
		}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	r := cl.do("DELETE", "/api/v1/tables/cpu", nil)
	if r.status != 409 || !strings.Contains(string(r.body), "splitting") || !strings.Contains(string(r.body), "force=true") {
		t.Fatalf("DELETE during a split: %d %s, want 409 naming the split and force", r.status, r.body)
	}
	c.config("cpu") // still there
	cl.must(204, cl.do("DELETE", "/api/v1/tables/cpu?force=true", nil), nil)
	blocked.Store(false)
	if _, _, err := c.meta.GetTable(context.Background(), "cpu"); err == nil {
		t.Fatal("TableConfig still in etcd after DELETE")
	}
	for id, n := range c.nodes {
		waitFor(t, id+" dropping every replica of the table", func() bool { return len(n.store.Replicas()) == 0 })
	}
	if r := cl.do("GET", "/api/v1/tables/cpu", nil); r.status != 404 {
		t.Fatalf("GET after DELETE: %d %s", r.status, r.body)
	}
	if r := c.client("s2").do("DELETE", "/api/v1/tables/cpu", nil); r.status != 404 {
		t.Fatalf("DELETE retried: %d %s, want 404", r.status, r.body)
	}

	// The name is free at once; the new table is empty.
	c.createTable("s3", "cpu", 3)
	for _, id := range []string{"s1", "s2", "s3"} {
		waitFor(t, id+" answering the new table", func() bool {
			r := c.client(id).do("GET", "/api/v1/tables/cpu/query?limit=1000000", nil)
			return r.status == 200
		})
		if got := rawRows(t, c.client(id), "cpu"); got != 0 {
			t.Fatalf("re-created table via %s: %d rows, want 0", id, got)
		}
	}
	c.insertLP("s2", "cpu", []byte(fmt.Sprintf("m,s=x v=1 %d\n", now.UnixNano())))
	for _, id := range []string{"s1", "s2", "s3"} {
		// A read of consistency one may lag the acknowledgement by the
		// replication delay: the replica it reads need not be among those
		// that acknowledged.
		waitFor(t, "re-created table via "+id+" holding the one row inserted", func() bool {
			return rawRows(t, c.client(id), "cpu") == 1
		})
	}
}

// TestDropTableWhileServerDown: a server stopped while its table is
// dropped drops its replicas when it comes back: by reconciliation when
// the name is gone, and by the generation check when the name was created
// again meanwhile, so none of the dropped table's rows reach the new one
// (discovery alone would make the old replica UNLOAD and push its rows
// into the new table's partition).
func TestDropTableWhileServerDown(t *testing.T) {
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.ReconcileInterval = 200 * time.Millisecond
		// An hour: the wall-clock rule (for replicas created before the
		// table generation was recorded) cannot tell the two tables of
		// the same name apart here, created seconds apart; the recorded
		// generation must.
		cfg.knobs.GenerationMargin = time.Hour
	})
	now := time.Now()
	for _, table := range []string{"gone", "again"} {
		c.createTable("s1", table, 3)
		c.insertLP("s1", table, retentionRows("old", now.Add(-time.Minute), 20))
		waitFor(t, "s3 holding the rows of "+table, func() bool {
			rs := c.replicaStates("s3", table)
			return len(rs) == 1 && rs[0].HighSeq > 0
		})
	}
	c.stop("s3")
	cl := c.client("s1")
	cl.must(204, cl.do("DELETE", "/api/v1/tables/gone", nil), nil)
	cl.must(204, cl.do("DELETE", "/api/v1/tables/again", nil), nil)
	c.createTable("s1", "again", 2) // s1 and s2: the only live servers
	c.insertLP("s2", "again", retentionRows("new", now, 5))
	n3 := c.start("s3")
	waitFor(t, "s3 dropping its replicas of both dropped tables", func() bool {
		for _, rep := range n3.store.Replicas() {
			if rep.Info().CreatedAt.Before(now) {
				return false
			}
		}
		return true
	})
	for _, id := range []string{"s1", "s2"} {
		for _, rs := range c.replicaStates(id, "again") {
			var resp wire.ReplicasResponse
			if err := c.rpc.Call(context.Background(), c.nodes[id].Addr(), wire.PathReplicas, wire.ReplicasRequest{Table: "again", Counts: true}, &resp); err != nil {
				t.Fatal(err)
			}
			for _, r := range resp.Replicas {
				if r.Rows != 5 {
					t.Fatalf("%s's replica %s of the re-created table holds %d rows, want 5 (rows of the dropped table leaked in?)", id, rs.Placement, r.Rows)
				}
			}
		}
	}
	// Give a push from a leftover replica time to land, then check again
	// through every server.
	time.Sleep(time.Second)
	for _, id := range []string{"s1", "s2", "s3"} {
		if got := rawRows(t, c.client(id), "again"); got != 5 {
			t.Fatalf("re-created table via %s: %d rows, want 5", id, got)
		}
	}
}
