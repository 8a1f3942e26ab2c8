package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/operator"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// missingAcked queries table "crash" through server id (consistency one:
// the server reads its own replica first) and returns the first row of the
// acknowledged batches it does not answer ("" if none), or the failure.
func (c *testCluster) missingAcked(id string, acked []int) (string, error) {
	r := c.client(id).do("GET", "/api/v1/tables/crash/query?limit=1000000", nil, api.HeaderConsistency, api.ConsistencyOne)
	var resp api.RawQueryResponse
	if r.status != 200 || json.Unmarshal(r.body, &resp) != nil {
		return "", fmt.Errorf("query via %s: %d %s", id, r.status, r.body)
	}
	seen := make(map[string]bool, len(resp.Rows))
	for _, row := range resp.Rows {
		seen[fmt.Sprintf("%s@%d", row.Series, row.Time)] = true
	}
	for _, i := range acked {
		for j := range loaderRows {
			if k := fmt.Sprintf("m,b=%d@%d", i, int64(i)*1_000_000+int64(j)); !seen[k] {
				return k, nil
			}
		}
	}
	return "", nil
}

// TestWipedDiskRejoins (rule 4, DESIGN.md section 5): three servers, a
// table of RF 3 under insert load; one server is stopped, its data
// directory wiped, and restarted with the same id. The METADATA still
// lists it, but its placement's data is gone: it must not serve it (reads
// pinned to it never miss a row acknowledged before the wipe) nor count
// it; the master removes it and joins it again under a new placement, and
// every acknowledged row ends on three replicas.
func TestWipedDiskRejoins(t *testing.T) {
	c := startCluster(t, 3)
	// Before the servers stop (a defer runs before the cleanups): no idle
	// keep-alive connection of the test's clients holds up their HTTP
	// shutdown.
	defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	c.createTable("s1", "crash", 3)

	// The loader's front ends (c.nodes is not safe to read concurrently
	// with the restart).
	var mu sync.Mutex
	front := []string{c.nodes["s1"].URL(), c.nodes["s2"].URL(), c.nodes["s3"].URL()}
	urls := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(front)
	}
	l := &loader{pause: 5 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { l.run(ctx, urls) })
	defer func() { cancel(); wg.Wait() }()
	waitFor(t, "20 acknowledged batches", func() bool { return l.ackedCount() >= 20 })

	placementOf := func(f *metadata.File, server string) (uuid.UUID, bool) {
		for _, pl := range slices.Concat(f.Partitions[0].Servers, f.Partitions[0].Joining) {
			if pl.ServerID == server {
				return pl.PlacementID, true
			}
		}
		return uuid.Nil, false
	}
	var md metadataAnswer
	c.client("s1").must(200, c.client("s1").do("GET", "/api/v1/tables/crash/metadata", nil), &md)
	old, ok := placementOf(md.Metadata, "s3")
	if !ok {
		t.Fatalf("setup: s3 is not listed: %+v", md.Metadata.Partitions[0])
	}

	mu.Lock()
	front = front[:2]
	mu.Unlock()
	c.stop("s3")
	l.mu.Lock()
	before := slices.Clone(l.acked)
	l.mu.Unlock()
	if err := os.RemoveAll(c.dirs["s3"]); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.dirs["s3"], 0o755); err != nil {
		t.Fatal(err)
	}
	s3 := c.start("s3") // same id and (now empty) data dir
	mu.Lock()
	front = append(front, s3.URL())
	mu.Unlock()

	// Until the partition is back at three servers with s3 under a new
	// placement, reads pinned to s3 answer every row acknowledged before
	// the wipe (from another replica, or from s3's new replica once it
	// finalized its join).
	repaired := func() bool {
		r := c.client("s1").do("GET", "/api/v1/tables/crash/metadata", nil)
		var md metadataAnswer
		if r.status != 200 || json.Unmarshal(r.body, &md) != nil {
			return false
		}
		p := md.Metadata.Partitions[0]
		pl, ok := placementOf(md.Metadata, "s3")
		return len(p.Servers) == 3 && len(p.Joining) == 0 && ok && pl != old
	}
	checks := 0
	waitLong(t, time.Minute, "s3 re-joined under a new placement", func() bool {
		k, err := c.missingAcked("s3", before)
		if err != nil {
			t.Logf("read via s3: %v", err) // a refusal is not a hole
		} else if k != "" {
			t.Fatalf("a read via s3 (consistency one) lacks row %s, acknowledged before the wipe (%d batches)", k, len(before))
		} else {
			checks++
		}
		return repaired()
	})
	n := l.ackedCount()
	waitFor(t, "20 more batches after the re-join", func() bool { return l.ackedCount() >= n+20 })
	cancel()
	wg.Wait()

	l.mu.Lock()
	acked := slices.Clone(l.acked)
	l.mu.Unlock()
	waitFor(t, "the three replicas converging", func() bool {
		return c.convergedAtLeast("crash", int64(len(acked)*loaderRows), "s1", "s2", "s3")
	})
	for _, id := range []string{"s1", "s2", "s3"} {
		if k, err := c.missingAcked(id, acked); err != nil || k != "" {
			t.Fatalf("after the re-join, a read via %s lacks acknowledged row %q: %v", id, k, err)
		}
	}
	if lost := c.nodes["s3"].store.LostReplicas(); len(lost) != 1 || lost[0].Placement != old {
		t.Fatalf("s3's lost placements: %+v, want only %s", lost, old)
	}
	// A restart on an intact data directory loses nothing.
	c.stop("s2")
	s2 := c.start("s2")
	if lost := s2.store.LostReplicas(); len(lost) != 0 || s2.store.Fresh() {
		t.Fatalf("s2 restarted on its data: lost %+v, fresh %v", lost, s2.store.Fresh())
	}
	if k, err := c.missingAcked("s2", acked); err != nil || k != "" {
		t.Fatalf("after its restart, a read via s2 lacks acknowledged row %q: %v", k, err)
	}
	t.Logf("%d batches acknowledged of %d tried (%d before the wipe); %d complete reads via s3 during the repair",
		len(acked), l.tried, len(before), checks)
}

// TestWipedDiskSoleReplica: a table of RF 1 whose only server is restarted
// on a wiped data directory. Reads of the partition answer 503, never an
// empty answer, and the master, seeing every server of the partition lost,
// leaves it listed for an operator (removing it would not bring the rows
// back).
func TestWipedDiskSoleReplica(t *testing.T) {
	c := startCluster(t, 2)
	// The table's one metadata server is s1, which created it: the wiped
	// server must be s2, or the METADATA would be gone with it (the
	// metadata servers' own files are another matter, rule 5).
	var md metadataAnswer
	table := ""
	for i := 0; table == ""; i++ {
		if i == 20 {
			t.Fatal("setup: 20 tables of RF 1 all placed on s1")
		}
		name := fmt.Sprintf("sole%d", i)
		c.createTable("s1", name, 1)
		c.client("s1").must(200, c.client("s1").do("GET", "/api/v1/tables/"+name+"/metadata", nil), &md)
		if md.Metadata.Partitions[0].Servers[0].ServerID == "s2" {
			table = name
		}
	}
	owner, other := md.Metadata.Partitions[0].Servers[0], "s1"
	c.insertLP(other, table, loaderBatch(0))
	c.stop(owner.ServerID)
	if err := os.RemoveAll(c.dirs[owner.ServerID]); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.dirs[owner.ServerID], 0o755); err != nil {
		t.Fatal(err)
	}
	c.start(owner.ServerID)
	for _, id := range []string{owner.ServerID, other} {
		if r := c.client(id).do("GET", "/api/v1/tables/"+table+"/query?limit=1000", nil); r.status != 503 {
			t.Fatalf("query via %s after the wipe: %d %s, want 503", id, r.status, r.body)
		}
	}
	cli, err := c.etcd.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	waitFor(t, "the lost mark", func() bool {
		marks, err := operator.Lost(context.Background(), cli, "/tsdb/")
		return err == nil && marks[owner.PlacementID].Server == owner.ServerID
	})
	var health api.HealthResponse
	c.client(other).must(200, c.client(other).do("GET", "/api/v1/cluster/health", nil), &health)
	if !slices.ContainsFunc(health.Problems, func(p api.Problem) bool {
		return p.Kind == api.ProblemUnderReplicated && p.Table == table && strings.Contains(p.Message, "lost their data")
	}) {
		t.Fatalf("tsdb admin stale does not report the lost copy: %+v", health.Problems)
	}
	time.Sleep(3 * time.Second) // three master ticks
	c.client(other).must(200, c.client(other).do("GET", "/api/v1/tables/"+table+"/metadata", nil), &md)
	if p := md.Metadata.Partitions[0]; len(p.Servers) != 1 || p.Servers[0] != owner || len(p.Joining) != 0 {
		t.Fatalf("the master changed a partition whose every server lost its data: %+v", p)
	}
}
