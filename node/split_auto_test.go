package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// splitTarget is the partition size target of the split tests.
const splitTarget = 256 << 10

// splitCluster starts n servers that check partition sizes every 100 ms.
func splitCluster(t *testing.T, n int, mut ...func(*Config)) *testCluster {
	return startCluster(t, n, append([]func(*Config){func(cfg *Config) {
		cfg.SplitCheckInterval = 100 * time.Millisecond
	}}, mut...)...)
}

// createSplitTable creates a table with the split tests' small target.
func (c *testCluster) createSplitTable(id, name string, rf int) {
	c.t.Helper()
	cl := c.client(id)
	cl.must(201, cl.do("POST", "/api/v1/tables", []byte(fmt.Sprintf(
		`{"name":%q,"replication_factor":%d,"partition_size_target":%d}`, name, rf, splitTarget))), nil)
}

// waitLong polls cond until it holds or d passes.
func waitLong(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// splitsSettled reports whether no partition of table is splitting and no
// SERVE replica on any server is above limit bytes.
func (c *testCluster) splitsSettled(table string, limit uint64) bool {
	for _, n := range c.nodes {
		_, f, ok := n.router.Cached(table)
		if !ok {
			return false
		}
		for _, p := range f.Partitions {
			if p.Split != nil {
				return false
			}
		}
		for _, st := range n.ReplicaStatuses() {
			if st.Table != table {
				continue
			}
			if st.Discovery.Status != metadata.StatusServe {
				return false // a child still loading, a parent still draining
			}
			rep, ok := n.store.Replica(st.Placement)
			if !ok {
				return false
			}
			if over, _, err := rep.SizeOver(limit); err != nil || over {
				return false
			}
		}
	}
	return true
}

// seriesCounts runs "count of v per series over the whole range" through
// server id, reading quorum, and returns the counts by series.
func (c *testCluster) seriesCounts(id, table string) (map[string]int64, error) {
	r := c.client(id).do("GET", "/api/v1/tables/"+table+"/query?agg=count&fields=v", nil, api.HeaderConsistency, api.ConsistencyQuorum)
	if r.status != 200 {
		return nil, fmt.Errorf("count query via %s: %d %s", id, r.status, r.body)
	}
	var resp struct {
		Series []struct {
			Series  string `json:"series"`
			Buckets []struct {
				Values map[string]float64 `json:"values"`
			} `json:"buckets"`
		} `json:"series"`
	}
	if err := json.Unmarshal(r.body, &resp); err != nil {
		return nil, fmt.Errorf("count query via %s: %w", id, err)
	}
	out := map[string]int64{}
	for _, s := range resp.Series {
		for _, b := range s.Buckets {
			out[s.Series] += int64(b.Values["v"])
		}
	}
	return out, nil
}

// TestSplitUnderLoad covers issue 5's first two tests with one workload on
// three servers (RF 2, target 256 KiB, size checks every 100 ms): writers
// insert about 4 MiB at a spread of timestamps through every server while
// a checker keeps counting rows per series with quorum reads. No count
// ever falls below what was acknowledged before the query started, and
// none exceeds what was sent (a row counted twice would). Once the writers
// stop, the splits settle into many partitions, each replica under about
// twice the target, and every acknowledged row is answered exactly once.
func TestSplitUnderLoad(t *testing.T) {
	c := splitCluster(t, 3)
	c.createSplitTable("s1", "load", 2)

	const (
		writers   = 3
		series    = 8
		batches   = 45 // per writer
		batchRows = 150
		text      = 160 // bytes of the string field
	)
	pad := strings.Repeat("x", text)
	var (
		sent    [writers * series]atomic.Int64 // rows sent per series, before the request
		acked   atomic.Int64                   // rows acknowledged
		stop    atomic.Bool
		wg      sync.WaitGroup
		failure atomic.Value // first error of a goroutine
	)
	fail := func(err error) { failure.CompareAndSwap(nil, err); stop.Store(true) }
	ids := []string{"s1", "s2", "s3"}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < batches && !stop.Load(); b++ {
				var body strings.Builder
				for i := range batchRows {
					s := i % series
					// Times spread over the batches: each writer's rows
					// interleave with the others', a second apart.
					ts := (int64(b*batchRows+i)*writers + int64(w)) * 1e9
					fmt.Fprintf(&body, "m,s=w%d-%d v=%d,text=%q %d\n", w, s, i, pad, ts)
					sent[w*series+s].Add(1)
				}
				r := c.client(ids[(w+b)%len(ids)]).do("POST", "/write?db=load&precision=ns", []byte(body.String()))
				if r.status != 204 {
					fail(fmt.Errorf("writer %d batch %d: %d %s", w, b, r.status, r.body))
					return
				}
				acked.Add(batchRows)
			}
		}()
	}
	var checks atomic.Int64
	checkerDone := make(chan struct{})
	go func() {
		defer close(checkerDone)
		for q := 0; !stop.Load(); q++ {
			before := acked.Load()
			counts, err := c.seriesCounts(ids[q%len(ids)], "load")
			if err != nil {
				fail(err)
				return
			}
			var total int64
			for k, n := range counts {
				var w, s int
				if _, err := fmt.Sscanf(k, "m,s=w%d-%d", &w, &s); err != nil {
					fail(fmt.Errorf("unexpected series %q", k))
					return
				}
				if max := sent[w*series+s].Load(); n > max {
					fail(fmt.Errorf("query %d: series %s counted %d rows, only %d were sent: a row answered twice", q, k, n, max))
					return
				}
				total += n
			}
			if total < before {
				fail(fmt.Errorf("query %d: %d rows answered, %d were acknowledged before it started", q, total, before))
				return
			}
			checks.Add(1)
		}
	}()
	wg.Wait()
	stop.Store(true)
	<-checkerDone
	if err, _ := failure.Load().(error); err != nil {
		t.Fatal(err)
	}
	want := acked.Load()
	t.Logf("%d rows acknowledged, %d checker queries during the inserts", want, checks.Load())

	waitLong(t, 3*time.Minute, "the splits to settle", func() bool { return c.splitsSettled("load", splitTarget) })
	_, f, err := c.nodes["s1"].router.Table(context.Background(), "load")
	if err != nil {
		t.Fatal(err)
	}
	if min := 4 << 20 / (2 * splitTarget); len(f.Partitions) < min {
		t.Fatalf("%d partitions after about 4 MiB at a target of %d bytes, want at least %d", len(f.Partitions), splitTarget, min)
	}
	for id, n := range c.nodes {
		for _, st := range n.ReplicaStatuses() {
			rep, _ := n.store.Replica(st.Placement)
			if over, size, err := rep.SizeOver(2 * splitTarget); err != nil || over {
				t.Errorf("%s: replica of partition %s holds %d bytes, over twice the target (%v)", id, st.PartitionID, size, err)
			}
		}
	}
	var started, finalized float64
	for _, n := range c.nodes {
		started += testutil.ToFloat64(n.smetrics.started)
		finalized += testutil.ToFloat64(n.smetrics.finalized)
	}
	if int(started) != len(f.Partitions)-1 || int(finalized) != len(f.Partitions)-1 {
		t.Errorf("%v splits started and %v finalized for %d partitions, want %d of each", started, finalized, len(f.Partitions), len(f.Partitions)-1)
	}
	t.Logf("%d partitions, %v splits", len(f.Partitions), started)

	for _, id := range ids {
		counts, err := c.seriesCounts(id, "load")
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		for k, n := range counts {
			var w, s int
			fmt.Sscanf(k, "m,s=w%d-%d", &w, &s)
			if n != sent[w*series+s].Load() {
				t.Errorf("via %s: series %s has %d rows, want %d", id, k, n, sent[w*series+s].Load())
			}
			total += n
		}
		if total != want {
			t.Fatalf("via %s: %d rows counted, want %d", id, total, want)
		}
		var raw api.RawQueryResponse
		c.client(id).must(200, c.client(id).do("GET", "/api/v1/tables/load/query?fields=v&limit=1000000", nil), &raw)
		seen := make(map[string]bool, len(raw.Rows))
		for _, r := range raw.Rows {
			k := fmt.Sprint(r.Series, "@", r.Time)
			if seen[k] {
				t.Fatalf("via %s: row %s answered twice", id, k)
			}
			seen[k] = true
		}
		if int64(len(raw.Rows)) != want || raw.Truncated {
			t.Fatalf("via %s: %d raw rows (truncated %v), want %d", id, len(raw.Rows), raw.Truncated, want)
		}
	}
}
