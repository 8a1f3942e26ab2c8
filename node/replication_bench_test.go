package node

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/model"
)

// BenchmarkReplicatedIngest measures HTTP line-protocol inserts on a
// 3-server cluster (in-process, loopback, one shared 2-core machine) for a
// table of replication factor 1 and 3, quorum acknowledgement, 1000 rows a
// request, 6 clients spread over the servers. It reports rows/s; for RF 3
// also the replication lag (time from a consistency=one insert on s1 until
// the row is in the local replicas of s2 and s3, probed every 20 ms during
// the load), the rows pushed per row inserted and the pushed bytes (the
// replication codec, before the transport's zstd) per line-protocol byte
// inserted.
//
// Compare RF 1 and RF 3 over runs of about the same length: the rows are
// older than Config.SealAfter, so every 2 s the sealer seals what came,
// and a run of RF 1 that lasts a second (the default -benchtime 1000x)
// ends before any seal or compaction of its rows, where RF 3's five
// seconds pay for theirs. -benchtime 12000x for rf=1 and 3000x for rf=3
// run about 17 s each (docs/performance.md, "RF 3 against RF 1 over runs
// of the same length").
func BenchmarkReplicatedIngest(b *testing.B) {
	for _, rf := range []int{1, 3} {
		b.Run(fmt.Sprintf("rf=%d", rf), func(b *testing.B) { benchReplicated(b, rf) })
	}
}

func benchReplicated(b *testing.B, rf int) {
	e := testEtcd(b)
	nodes := make([]*Node, 3)
	for i := range nodes {
		nodes[i] = startNode(b, e, fmt.Sprintf("s%d", i+1), b.TempDir())
	}
	c := &client{t: b, base: nodes[0].URL()}
	c.must(201, c.do("POST", "/api/v1/tables", fmt.Appendf(nil, `{"name":"bench","replication_factor":%d}`, rf)), nil)
	bodies := make([][]byte, b.N)
	var lpBytes int64
	for i := range bodies {
		bodies[i] = lpBody(i)
		lpBytes += int64(len(bodies[i]))
	}
	const clients = 6
	hc := &fasthttp.Client{MaxConnsPerHost: clients * 2, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	var next atomic.Int64
	stopProbe := make(chan struct{})
	var lags []time.Duration
	var probeWG sync.WaitGroup
	if rf == 3 {
		probeWG.Go(func() { lags = probeLag(b, nodes, stopProbe) })
	}
	b.ResetTimer()
	cpu0 := processCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			uri := nodes[w%len(nodes)].URL() + "/write?db=bench"
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				req.Reset()
				req.SetRequestURI(uri)
				req.Header.SetMethod("POST")
				req.SetBodyRaw(bodies[i])
				if err := hc.Do(req, resp); err != nil {
					b.Error(err)
					return
				}
				if resp.StatusCode() != 204 {
					b.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	b.StopTimer()
	close(stopProbe)
	probeWG.Wait()
	rows := float64(b.N * benchRowsPerReq)
	b.ReportMetric(rows/elapsed, "rows/s")
	if rf == 1 {
		b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/rows, "cpu-ns/row")
		return
	}
	// Let replication finish, then count what it shipped.
	drainStart := time.Now()
	waitFor(b, "replication to finish", func() bool {
		for _, n := range nodes {
			for _, st := range n.ReplicaStatuses() {
				if rt := n.replica.Pusher(st.Placement); rt == nil || !rt.Drained() {
					return false
				}
			}
		}
		return true
	})
	b.ReportMetric(time.Since(drainStart).Seconds(), "drain-s")
	// The CPU of the load and of its replication, the probes' included
	// (a row every 20 ms): less sensitive than rows/s to what else runs.
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/rows, "cpu-ns/row")
	var pushedRows, pushedBytes, coordRows, relayDropped, relayElided, unheld float64
	for _, n := range nodes {
		pushedRows += testutil.ToFloat64(n.rmetrics.PushRows)
		pushedBytes += testutil.ToFloat64(n.rmetrics.PushBytes)
		coordRows += testutil.ToFloat64(n.rmetrics.CoordinatedRows)
		relayDropped += testutil.ToFloat64(n.rmetrics.RelayRowsDropped)
		relayElided += testutil.ToFloat64(n.rmetrics.RelayRowsElided)
		unheld += testutil.ToFloat64(n.rmetrics.RelayClaimsUnheld)
	}
	b.ReportMetric(pushedRows/coordRows, "pushed-rows/row")
	// Relayed copies the receivers dropped unread (they count in pushed
	// rows too): what the senders shipped for nothing.
	b.ReportMetric(relayDropped/coordRows, "relay-dropped/row")
	b.ReportMetric(pushedBytes/float64(lpBytes), "pushed-bytes/lp-byte")
	// Relayed rows the pushes left out as held (wire.PushRequest.Held),
	// and the claims the receivers could not confirm (their rows then
	// pushed), per insert request.
	b.ReportMetric(relayElided/coordRows, "relay-elided/row")
	b.ReportMetric(unheld/float64(b.N), "unheld-claims/req")
	if len(lags) > 0 {
		slices.Sort(lags)
		b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "lag-p50-ms")
		b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "lag-p99-ms")
	}
}

// probeLag inserts a probe row through s1 with consistency=one every 20 ms
// until stop, and measures how long each takes to be in the local replicas
// of s2 and s3.
func probeLag(b *testing.B, nodes []*Node, stop <-chan struct{}) []time.Duration {
	c := &client{t: b, base: nodes[0].URL()}
	var lags []time.Duration
	for i := 0; ; i++ {
		select {
		case <-stop:
			return lags
		case <-time.After(20 * time.Millisecond):
		}
		ts := t0 - int64(i) - 1 // before the load's rows, in the same partition
		body := "probe v=1 " + strconv.FormatInt(ts, 10)
		r := c.do("POST", "/write?db=bench", []byte(body), "X-TSDB-Consistency", "one")
		if r.status != 204 {
			b.Errorf("probe: %d %s", r.status, r.body)
			return lags
		}
		acked := time.Now()
		for _, n := range nodes[1:] {
			for !hasRow(n, "probe", ts) {
				if time.Since(acked) > time.Minute {
					b.Error("probe row never replicated")
					return lags
				}
				time.Sleep(200 * time.Microsecond)
			}
		}
		lags = append(lags, time.Since(acked))
	}
}

func hasRow(n *Node, series string, ts int64) bool {
	for _, rep := range n.store.Replicas() {
		rows, _, err := rep.Scan(model.Query{From: ts, To: ts + 1, Series: series, Limit: 1})
		if err == nil && len(rows) == 1 {
			return true
		}
	}
	return false
}

// processCPU returns the CPU time (user and system) of the whole process:
// every server of the benchmark and their background work.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
