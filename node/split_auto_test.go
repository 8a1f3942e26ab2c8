package node

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
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

// splitsSettled reports whether no partition of table is splitting and no
// SERVE replica on any server is above limit bytes.
func (c *testCluster) splitsSettled(table string, limit uint64) bool {
	ok, _ := c.splitsSettledWhy(table, limit)
	return ok
}

// splitsSettledWhy is splitsSettled with, when not settled, what it found
// first: for the failure message of a wait that times out.
func (c *testCluster) splitsSettledWhy(table string, limit uint64) (bool, string) {
	for id, n := range c.nodes {
		_, f, ok := n.router.Cached(table)
		if !ok {
			return false, id + ": no METADATA cached"
		}
		for _, p := range f.Partitions {
			if p.Split != nil {
				return false, fmt.Sprintf("%s: partition %s is splitting (%+v)", id, p.ID, *p.Split)
			}
		}
		for _, st := range n.ReplicaStatuses() {
			if st.Table != table {
				continue
			}
			if st.Discovery.Status != metadata.StatusServe {
				// A child still loading, a parent still draining.
				return false, fmt.Sprintf("%s: replica %s is %v (%+v)", id, st.Placement, st.Discovery.Status, st)
			}
			rep, ok := n.store.Replica(st.Placement)
			if !ok {
				return false, fmt.Sprintf("%s: replica %s not in the store", id, st.Placement)
			}
			if over, size, err := rep.SizeOver(limit); err != nil || over {
				return false, fmt.Sprintf("%s: replica %s is over the target: %d bytes, %v", id, st.Placement, size, err)
			}
		}
	}
	return true, ""
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
	noises := make([]*rand.Rand, writers)
	for w := range noises {
		noises[w] = rand.New(rand.NewPCG(uint64(w), 106))
	}
	var (
		sent    [writers * series]atomic.Int64 // rows sent per series, before the request
		acked   atomic.Int64                   // rows acknowledged
		stop    atomic.Bool
		wg      sync.WaitGroup
		failure atomic.Value // first error of a goroutine
		retries atomic.Int64 // batches sent again after a 503
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
					fmt.Fprintf(&body, "m,s=w%d-%d v=%d,text=%q %d\n", w, s, i, noise(noises[w], text), ts)
					sent[w*series+s].Add(1)
				}
				// A 503 is an answer a client retries (the split may hold
				// an insert past its deadline on a loaded machine); the
				// retry writes the same rows at the same times, so it
				// cannot add rows. What is checked is that no
				// acknowledged row goes missing or is answered twice.
				r := c.writeRetrying(t, ids[(w+b)%len(ids)], "/write?db=load&precision=ns", []byte(body.String()), &retries)
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
	t.Logf("%d rows acknowledged, %d checker queries during the inserts, %d batches retried after a 503", want, checks.Load(), retries.Load())

	// Settled: no split in progress, no replica over the target, and
	// every split begun also finalized (a split may begin just as the
	// others settle, and is then waited for).
	splitCounts := func() (started, finalized float64) {
		for _, n := range c.nodes {
			started += testutil.ToFloat64(n.rmetrics.SplitsStarted)
			finalized += testutil.ToFloat64(n.rmetrics.SplitsFinalized)
		}
		return started, finalized
	}
	//
	// The partitions and the counters are read together, again until no
	// split began in between: a split may still begin after the load
	// (a replica's size can cross the target again then, as pebble's
	// size estimate may count a sealed bucket's deleted head rows until
	// they are compacted), and the counts must describe one state.
	var (
		f                  *metadata.File
		started, finalized float64
		why                string // what the last check found unsettled
	)
	t.Cleanup(func() {
		if t.Failed() && why != "" {
			t.Logf("the last check of the splits found: %s", why)
		}
	})
	waitLong(t, 3*time.Minute, "the splits to settle", func() bool {
		s0, f0 := splitCounts()
		if s0 != f0 {
			_, w := c.splitsSettledWhy("load", splitTarget)
			why = fmt.Sprintf("%v splits begun, %v finalized; partitions: %s", s0, f0, w)
			return false
		}
		if ok, w := c.splitsSettledWhy("load", splitTarget); !ok {
			why = w
			return false
		}
		_, file, err := c.nodes["s1"].router.Table(context.Background(), "load")
		if err != nil {
			return false
		}
		if s1, f1 := splitCounts(); s1 != s0 || f1 != f0 {
			return false
		}
		f, started, finalized = file, s0, f0
		return true
	})
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

// writeRetrying posts body to server id and sends it again after a 503
// (an unavailable partition or an outcome unknown), with a pause, until a
// deadline of two minutes; it returns the last answer and counts the
// retries. Only idempotent bodies (rows with explicit times) may be
// retried this way.
func (c *testCluster) writeRetrying(t *testing.T, id, path string, body []byte, retries *atomic.Int64) response {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := c.client(id).do("POST", path, body)
		if r.status != 503 || time.Now().After(deadline) {
			return r
		}
		retries.Add(1)
		t.Logf("retrying a batch after %d %s", r.status, r.body)
		time.Sleep(200 * time.Millisecond)
	}
}

// noise returns n random letters, digits, '-' and '_': a string field
// that keeps about 6 bits a byte under any codec. The split tests size
// their data by its bytes, and a sealed block compresses a column of equal
// strings to almost nothing, so a repeated pad would make how many splits
// happen depend on whether the sealer ran first.
func noise(r *rand.Rand, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// insertSpread inserts rows rows of about 200 bytes each, at times one
// second apart from base, through server id, in batches under the size
// that asks for an immediate size check.
func (c *testCluster) insertSpread(id, table string, base int64, rows int) {
	c.t.Helper()
	r := rand.New(rand.NewPCG(uint64(base), uint64(rows)))
	for done := 0; done < rows; {
		var body strings.Builder
		for i := 0; i < 500 && done < rows; i, done = i+1, done+1 {
			fmt.Fprintf(&body, "m,s=s%d v=%d,text=%q %d\n", done%10, done, noise(r, 160), base+int64(done)*1e9)
		}
		c.insertLP(id, table, []byte(body.String()))
	}
}

// TestSplitRaceOneWins: two replicas of a partition above its target start
// the same split at the same moment (both plan SPLIT_BEGIN on the same
// METADATA before either sends it). The CAS lets one commit; the other
// re-reads, sees the split and follows it. One split happens and every
// row is in a child exactly once.
func TestSplitRaceOneWins(t *testing.T) {
	var planned sync.WaitGroup
	planned.Add(2)
	var once [2]sync.Once
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.SplitCheckInterval = time.Hour // the test runs the checks itself
		i := map[string]int{"s1": 0, "s2": 1}[cfg.ID]
		if cfg.ID == "s3" {
			return
		}
		cfg.knobs.BeforeSplitBegin = func() {
			once[i].Do(func() { // the first plan of each: meet the other
				planned.Done()
				planned.Wait()
			})
		}
	})
	c.createSplitTable("s1", "race", 3)
	const rows = 2000 // about 400 KB
	c.insertSpread("s1", "race", 0, rows)
	for _, id := range []string{"s1", "s2"} {
		waitFor(t, id+" holding every row", func() bool {
			for _, st := range c.nodes[id].ReplicaStatuses() {
				rep, _ := c.nodes[id].store.Replica(st.Placement)
				if sum, err := rep.Checksum(); err == nil && sum.Rows == rows {
					return true
				}
			}
			return false
		})
	}
	var wg sync.WaitGroup
	for _, id := range []string{"s1", "s2"} {
		wg.Go(func() {
			if err := c.nodes[id].replica.SplitTick(context.Background()); err != nil {
				t.Errorf("%s: split check: %v", id, err)
			}
		})
	}
	wg.Wait()
	var started, followed float64
	for _, n := range c.nodes {
		started += testutil.ToFloat64(n.rmetrics.SplitsStarted)
		followed += testutil.ToFloat64(n.rmetrics.SplitsFollowed)
	}
	if started != 1 || followed != 1 {
		t.Fatalf("%v splits started and %v followed, want one of each", started, followed)
	}
	waitLong(t, time.Minute, "the split to finalize and the parents to drop", func() bool {
		_, f, ok := c.nodes["s3"].router.Cached("race")
		return ok && len(f.Partitions) == 2 && c.splitsSettled("race", math.MaxUint64)
	})
	c.checkRowsEverywhere("race", rows)
}

// TestSplitOneTimestampDoesNotLoop: a partition above its target whose
// rows all share one time cannot split: each replica finds that once,
// counts it in tsdb_splits_impossible_total and leaves it alone, with no
// METADATA change, however many checks run.
func TestSplitOneTimestampDoesNotLoop(t *testing.T) {
	c := splitCluster(t, 3)
	c.createSplitTable("s1", "flat", 3)
	rnd := rand.New(rand.NewPCG(2000, 160))
	var body strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&body, "m,s=s%d v=%d,text=%q 1700000000000000000\n", i, i, noise(rnd, 160))
	}
	c.insertLP("s1", "flat", []byte(body.String()))
	for id, n := range c.nodes {
		waitFor(t, id+" finding the partition unsplittable", func() bool {
			return testutil.ToFloat64(n.rmetrics.SplitsImpossible) >= 1
		})
	}
	seq := c.config("flat").MetadataTxnSeq
	// Many more checks; the answer must not change.
	for _, n := range c.nodes {
		for range 20 {
			if err := n.replica.SplitTick(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	for id, n := range c.nodes {
		if got := testutil.ToFloat64(n.rmetrics.SplitsImpossible); got != 1 {
			t.Errorf("%s counted the unsplittable partition %v times, want once", id, got)
		}
		if got := testutil.ToFloat64(n.rmetrics.SplitsStarted); got != 0 {
			t.Errorf("%s started %v splits", id, got)
		}
	}
	if got := c.config("flat").MetadataTxnSeq; got != seq || seq != 1 {
		t.Fatalf("txnseq %d then %d, want 1 throughout (no split, no other change)", seq, got)
	}
	r := c.client("s2").do("POST", "/api/v1/tables/flat/partitions/"+c.firstPartition("flat").String()+"/split", nil)
	if r.status != 409 || !strings.Contains(string(r.body), api.CodeCannotSplit) {
		t.Fatalf("manual split of the one-time partition: %d %s, want 409 %s", r.status, r.body, api.CodeCannotSplit)
	}
}

// firstPartition is the id of table's first partition in server s1's view.
func (c *testCluster) firstPartition(table string) uuid.UUID {
	c.t.Helper()
	_, f, err := c.nodes["s1"].router.Table(context.Background(), table)
	if err != nil {
		c.t.Fatal(err)
	}
	return f.Partitions[0].ID
}
