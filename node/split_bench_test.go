package node

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkSplit measures one split of a large partition (issue 5's
// figures) on 3 in-process servers sharing this machine:
//
//   - the table (RF from TSDB_BENCH_SPLIT_RF, default 3; catch-up pushes
//     in flight per server from TSDB_BENCH_CATCHUP, default the server's)
//     is loaded with
//     TSDB_BENCH_SPLIT_MIB MiB of line protocol (default 64; 1000 rows of
//     about 90 bytes per request, each request at its own time);
//   - a paced writer then inserts 100 rows every 20 ms (5,000 rows/s)
//     through s2 into the same partition, 10 s before the split and for the
//     whole split, recording each insert's latency;
//   - the split is started by hand on s1 (at the byte-median point) and
//     timed until SPLIT_FINALIZE (the children hold the data) and until
//     every parent replica is dropped.
//
// It reports split-s (SPLIT_BEGIN to SPLIT_FINALIZE), drop-s (to the last
// parent dropped), MiB/s (line-protocol MiB of the partition per second of
// split-s), and the insert latency p50/p99 before and during the split.
// Run it once: go test -run '^$' -bench BenchmarkSplit -benchtime 1x ./node
func BenchmarkSplit(b *testing.B) {
	mib := envInt(b, "TSDB_BENCH_SPLIT_MIB", 64)
	rf := envInt(b, "TSDB_BENCH_SPLIT_RF", 3)
	catchUp := envInt(b, "TSDB_BENCH_CATCHUP", 0) // 0: the server's default
	e := testEtcd(b)
	nodes := make([]*Node, 3)
	for i := range nodes {
		nodes[i] = startNode(b, e, fmt.Sprintf("s%d", i+1), b.TempDir(), func(cfg *Config) {
			cfg.SplitCheckInterval = time.Hour // only the manual split
			cfg.AckTimeout = time.Minute
			cfg.CatchUpConcurrency = catchUp
		})
	}
	c := &client{t: b, base: nodes[0].URL()}
	c.must(201, c.do("POST", "/api/v1/tables", fmt.Appendf(nil,
		`{"name":"bench","replication_factor":%d,"partition_size_target":%d}`, rf, int64(1)<<40)), nil)

	start := time.Now()
	lpBytes := loadBench(b, nodes, int64(mib)<<20)
	b.Logf("loaded %.1f MiB of line protocol in %v", float64(lpBytes)/(1<<20), time.Since(start).Round(time.Millisecond))
	waitLong(b, 30*time.Minute, "replication to finish", func() bool {
		for _, n := range nodes {
			for _, st := range n.ReplicaStatuses() {
				if rt := n.replica.Pusher(st.Placement); rt == nil || !rt.Drained() {
					return false
				}
			}
		}
		return true
	})

	logMoved(b, nodes)

	w := &pacedWriter{url: nodes[1].URL() + "/write?db=bench&precision=ns"}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	time.Sleep(10 * time.Second)
	before := w.take()

	b.ResetTimer()
	_, f, err := nodes[0].router.Table(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	parent := f.Partitions[0].ID
	begun := time.Now()
	if _, err := nodes[0].SplitPartition(context.Background(), "bench", parent, nil); err != nil {
		b.Fatal(err)
	}
	waitLong(b, time.Hour, "SPLIT_FINALIZE", func() bool {
		_, f, ok := nodes[0].router.Cached("bench")
		return ok && len(f.Partitions) == 2
	})
	finalized := time.Since(begun)
	during := w.take()
	waitLong(b, time.Hour, "the parents to drop", func() bool {
		for _, n := range nodes {
			for _, st := range n.ReplicaStatuses() {
				if st.PartitionID == parent {
					return false
				}
			}
		}
		return true
	})
	dropped := time.Since(begun)
	b.StopTimer()
	cancel()
	wg.Wait()

	b.ReportMetric(finalized.Seconds(), "split-s")
	b.ReportMetric(dropped.Seconds(), "drop-s")
	b.ReportMetric(float64(lpBytes)/(1<<20)/finalized.Seconds(), "MiB/s")
	b.ReportMetric(ms(quantile(before, 0.50)), "p50-before-ms")
	b.ReportMetric(ms(quantile(before, 0.99)), "p99-before-ms")
	b.ReportMetric(ms(quantile(during, 0.50)), "p50-during-ms")
	b.ReportMetric(ms(quantile(during, 0.99)), "p99-during-ms")
	b.Logf("%d inserts before the split, %d during; %d failed %q", len(before), len(during), w.failed.Load(), w.errs)
	logMoved(b, nodes)
}

// logMoved logs each server's moved-data counters (tsdb_moved_bytes_total
// by kind): what the servers sent one another since they started.
func logMoved(b *testing.B, nodes []*Node) {
	for _, n := range nodes {
		c := &client{t: b, base: n.URL()}
		r := c.do("GET", "/metrics", nil)
		var moved []string
		for line := range strings.Lines(string(r.body)) {
			if strings.HasPrefix(line, "tsdb_moved_bytes_total{") || strings.HasPrefix(line, "tsdb_snapshots_total{") {
				moved = append(moved, strings.TrimSpace(line))
			}
		}
		b.Logf("%s moved: %s", n.cfg.ID, strings.Join(moved, " "))
	}
}

// envInt reads a positive integer from the environment, or def.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// loadBench inserts lpBody requests through the servers, 6 at a time,
// until total bytes of line protocol are in, and returns the bytes sent.
func loadBench(b *testing.B, nodes []*Node, total int64) int64 {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.URL()
	}
	return loadURLs(b, urls, total)
}

// pacedWriter inserts 100 rows every 20 ms and records the latencies.
type pacedWriter struct {
	url    string
	failed atomic.Int64
	mu     sync.Mutex
	lat    []time.Duration
	errs   []string // the first few failures
}

func (w *pacedWriter) run(ctx context.Context) {
	hc := &fasthttp.Client{ReadTimeout: 2 * time.Minute, WriteTimeout: time.Minute}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var body []byte
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		body = body[:0]
		for j := range 100 {
			// Inside the loaded range, at times no load request used.
			body = fmt.Appendf(body, "paced,w=%d v=%d %d\n", j, i, t0+int64(i)*int64(time.Millisecond)+1)
		}
		req.Reset()
		req.SetRequestURI(w.url)
		req.Header.SetMethod("POST")
		req.SetBodyRaw(body)
		start := time.Now()
		err := hc.Do(req, resp)
		d := time.Since(start)
		if err != nil || resp.StatusCode() != 204 {
			w.failed.Add(1)
			w.mu.Lock()
			if len(w.errs) < 3 {
				w.errs = append(w.errs, fmt.Sprintf("after %v: %v %d %.300s", d.Round(time.Millisecond), err, resp.StatusCode(), resp.Body()))
			}
			w.mu.Unlock()
			continue
		}
		w.mu.Lock()
		w.lat = append(w.lat, d)
		w.mu.Unlock()
	}
}

// take returns the latencies recorded since the last take.
func (w *pacedWriter) take() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.lat
	w.lat = nil
	return out
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
