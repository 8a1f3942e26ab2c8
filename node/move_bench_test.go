package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/replication"
)

// BenchmarkJoin measures a join that moves a whole replica (issue 16's
// figures) on in-process servers sharing this machine:
//
//   - table bench of RF TSDB_BENCH_JOIN_RF (default 1) on s1 (.. sRF) is
//     loaded with TSDB_BENCH_JOIN_MIB MiB of line protocol (default 16;
//     1000 rows of about 90 bytes per request, each request at its own
//     time); every target confirmed (none at RF 1), the replicas' logs
//     are truncated, so a joiner gets a row snapshot (snapshot chunks)
//     from each;
//   - a new server is started, and joined to the partition by hand; the
//     time runs from the join request until its replica is SERVE with
//     every row of s1's (same row count) and the join is finalized.
//
// It reports s (the join), MiB/s (the replica's stored size, from a key
// scan of s1's replica, per second), lp-MiB/s (line-protocol MiB per
// second), rows/s, and the snapshot chunks the joiner's store ingested as
// sstables and merged row by row, the sealed blocks it ingested as they
// came, and, once it serves, the rows it pushed back to the replicas it
// joined (rows-pushed-back) and when they had confirmed its whole log
// (settled-s, from the join request).
// Run it once: go test -run '^$' -bench BenchmarkJoin -benchtime 1x ./node
func BenchmarkJoin(b *testing.B) {
	mib := envInt(b, "TSDB_BENCH_JOIN_MIB", 16)
	rf := envInt(b, "TSDB_BENCH_JOIN_RF", 1)
	e := testEtcd(b)
	benchCfg := func(cfg *Config) {
		cfg.SplitCheckInterval = time.Hour // no split
		cfg.AckTimeout = time.Minute
	}
	holders := make([]*Node, rf)
	for i := range holders {
		holders[i] = startNode(b, e, fmt.Sprintf("s%d", i+1), b.TempDir(), benchCfg)
	}
	s1 := holders[0]
	c := &client{t: b, base: s1.URL()}
	c.must(201, c.do("POST", "/api/v1/tables", fmt.Appendf(nil,
		`{"name":"bench","replication_factor":%d,"partition_size_target":%d}`, rf, int64(1)<<40)), nil)
	start := time.Now()
	lpBytes := loadBench(b, holders, int64(mib)<<20)
	b.Logf("loaded %.1f MiB of line protocol in %v", float64(lpBytes)/(1<<20), time.Since(start).Round(time.Millisecond))

	rc := rpc.NewClient(benchRPC)
	defer rc.Close()
	// Every log truncated (less than DefaultTruncateMin entries left to
	// delete): the joiner's cursor will be below the truncation point.
	for _, h := range holders {
		waitLong(b, 10*time.Minute, h.cfg.ID+" truncating its log", func() bool {
			st, ok := benchReplica(rc, h.Addr(), "bench", wire.ReplicasRequest{})
			return ok && st.LogStart > 0 && st.LogLength < replication.DefaultTruncateMin
		})
	}
	src, ok := benchReplica(rc, s1.Addr(), "bench", wire.ReplicasRequest{Counts: true, SizeScan: 1 << 50})
	if !ok {
		b.Fatal("no replica state of s1")
	}
	waitLong(b, 10*time.Minute, "the replicas converging", func() bool {
		for _, h := range holders {
			if st, ok := benchReplica(rc, h.Addr(), "bench", wire.ReplicasRequest{Counts: true}); !ok || st.Checksum != src.Checksum {
				return false
			}
		}
		return true
	})
	b.Logf("each replica: %d rows, %.1f MiB stored", src.Rows, float64(src.Bytes)/(1<<20))

	id := fmt.Sprintf("s%d", rf+1)
	joiner := startNode(b, e, id, b.TempDir(), benchCfg)
	_, f, err := s1.backendMetadata("bench", "")
	if err != nil {
		b.Fatal(err)
	}
	pid := f.Partitions[0].ID
	b.ResetTimer()
	begun := time.Now()
	c.must(200, c.do("POST", "/api/v1/tables/bench/partitions/"+pid.String()+"/join", []byte(`{"server":"`+id+`"}`)), nil)
	waitLong(b, time.Hour, id+" finalizing its join", func() bool {
		_, f, err := s1.backendMetadata("bench", "")
		return err == nil && len(f.Partitions[0].Joining) == 0 &&
			slices.ContainsFunc(f.Partitions[0].Servers, func(pl metadata.Placement) bool { return pl.ServerID == id })
	})
	finalized := time.Since(begun)
	waitLong(b, time.Hour, id+" serving every row", func() bool {
		st, ok := benchReplica(rc, joiner.Addr(), "bench", wire.ReplicasRequest{Counts: true})
		return ok && st.Status == string(metadata.StatusServe) && st.Rows == src.Rows
	})
	elapsed := time.Since(begun)
	b.StopTimer()
	// What the joiner sends back once it serves: the replicas it joined
	// hold its rows, so nothing but their confirmations (it waits until
	// they confirmed its whole log).
	benchReplicaOf := func(n *Node) *partition.Replica {
		for _, r := range n.store.Replicas() {
			if r.Info().Table == "bench" {
				return r
			}
		}
		return nil
	}
	waitLong(b, time.Hour, id+"'s targets confirming its log", func() bool {
		r := benchReplicaOf(joiner)
		for _, h := range holders {
			if hr := benchReplicaOf(h); r == nil || hr == nil || r.Confirmed(hr.Info().Placement) < r.HighSeq() {
				return false
			}
		}
		return true
	})
	settled := time.Since(begun)
	back := movedRows(&client{t: b, base: joiner.URL()})

	ingested, merged := joiner.store.ChunkStats()
	b.ReportMetric(elapsed.Seconds(), "s")
	b.ReportMetric(float64(src.Bytes)/(1<<20)/elapsed.Seconds(), "MiB/s")
	b.ReportMetric(float64(lpBytes)/(1<<20)/elapsed.Seconds(), "lp-MiB/s")
	b.ReportMetric(float64(src.Rows)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(ingested), "chunks-ingested")
	b.ReportMetric(float64(merged), "chunks-merged")
	b.ReportMetric(float64(joiner.store.SnapshotBlocksIngested()), "blocks-ingested")
	b.ReportMetric(back, "rows-pushed-back")
	b.ReportMetric(settled.Seconds(), "settled-s")
	b.Logf("join of %d rows (%.1f MiB stored, %.1f MiB of line protocol) from %d replica(s): finalized after %v, every row counted on %s after %v; %d chunks ingested, %d merged; %v rows pushed back, its log confirmed by every holder after %v",
		src.Rows, float64(src.Bytes)/(1<<20), float64(lpBytes)/(1<<20), rf, finalized.Round(time.Millisecond), id, elapsed.Round(time.Millisecond), ingested, merged, back, settled.Round(time.Millisecond))
}

// BenchmarkReReplication measures how long a cluster takes to get a
// partition back to its replication factor after a kill -9 (issue 16's
// figures): four real `tsdb server` processes with --dead-after 1s, table
// bench of RF 3 loaded with TSDB_BENCH_REREP_MIB MiB of line protocol
// (default 16) through all four. One of the partition's servers that is
// not the master is killed with SIGKILL; the time runs until the
// partition is back at three live servers, none joining, and the
// replacement holds every row.
//
// It reports s (kill to RF restored), detect-s (kill to the replacement's
// JOIN_SERVER seen: the dead server's lease TTL of 10 s plus --dead-after
// plus the master's reaction), copy-s (JOIN_SERVER to every row on the
// replacement, the replacement finalized), and MiB/s (a survivor's
// replica size, from a key scan, per second of copy-s), snapshots (the
// row snapshots the survivors' logs say they sent the replacement),
// rows-pushed-back (what the replacement, once it serves, pushed to the
// survivors: its /metrics once both confirmed its whole log) and
// settled-s (kill to that confirmation). The
// processes' stores are out of reach: chunks ingested or merged are in
// BenchmarkJoin only.
// Run it once: go test -run '^$' -bench BenchmarkReReplication -benchtime 1x ./node
func BenchmarkReReplication(b *testing.B) {
	mib := envInt(b, "TSDB_BENCH_REREP_MIB", 16)
	e := testEtcd(b)
	ids := []string{"s1", "s2", "s3", "s4"}
	procs := map[string]*proc{}
	var urls []string
	for _, id := range ids {
		procs[id] = startProc(b, id, b.TempDir(), e.Endpoint(), "--dead-after", "1s")
		urls = append(urls, procs[id].url())
	}
	c := procs["s1"].client()
	c.must(201, c.do("POST", "/api/v1/tables", fmt.Appendf(nil,
		`{"name":"bench","replication_factor":3,"partition_size_target":%d}`, int64(1)<<40)), nil)
	start := time.Now()
	lpBytes := loadURLs(b, urls, int64(mib)<<20)
	b.Logf("loaded %.1f MiB of line protocol in %v", float64(lpBytes)/(1<<20), time.Since(start).Round(time.Millisecond))

	var md metadataAnswer
	c.must(200, c.do("GET", "/api/v1/tables/bench/metadata", nil), &md)
	part := md.Metadata.Partitions[0]
	rc := rpc.NewClient(benchRPC)
	defer rc.Close()
	var src wire.ReplicaStatus
	waitLong(b, 10*time.Minute, "the three replicas converging", func() bool {
		sum := ""
		for _, pl := range part.Servers {
			st, ok := benchReplica(rc, procs[pl.ServerID].addr, "bench", wire.ReplicasRequest{Counts: true})
			if !ok || sum != "" && st.Checksum != sum {
				return false
			}
			sum, src = st.Checksum, st
		}
		return true
	})
	master := waitForMaster(b, c)
	i := slices.IndexFunc(part.Servers, func(pl metadata.Placement) bool { return pl.ServerID != master })
	victim := procs[part.Servers[i].ServerID]
	var survivor *proc
	for _, pl := range part.Servers {
		if pl.ServerID != victim.id {
			survivor = procs[pl.ServerID]
			break
		}
	}
	if sized, ok := benchReplica(rc, survivor.addr, "bench", wire.ReplicasRequest{SizeScan: 1 << 50}); ok {
		src.Bytes = sized.Bytes
	}
	b.Logf("each replica: %d rows, %.1f MiB stored; killing %s (master %s)", src.Rows, float64(src.Bytes)/(1<<20), victim.id, master)

	b.ResetTimer()
	killed := time.Now()
	victim.kill9()
	var joinSeen time.Time
	var replacement string
	waitLong(b, time.Hour, "the partition back at three live servers", func() bool {
		var md metadataAnswer
		r := survivor.client().do("GET", "/api/v1/tables/bench/metadata", nil)
		if r.status != 200 || json.Unmarshal(r.body, &md) != nil {
			return false
		}
		p := md.Metadata.Partitions[0]
		if joinSeen.IsZero() && len(p.Joining) > 0 {
			joinSeen, replacement = time.Now(), p.Joining[0].ServerID
		}
		return len(p.Servers) == 3 && len(p.Joining) == 0 &&
			!slices.ContainsFunc(p.Servers, func(pl metadata.Placement) bool { return pl.ServerID == victim.id })
	})
	if joinSeen.IsZero() {
		b.Fatal("the replacement's join was never seen joining")
	}
	waitLong(b, time.Hour, replacement+" holding every row", func() bool {
		st, ok := benchReplica(rc, procs[replacement].addr, "bench", wire.ReplicasRequest{Counts: true})
		return ok && st.Status == string(metadata.StatusServe) && st.Rows == src.Rows
	})
	restored := time.Since(killed)
	b.StopTimer()
	// What the replacement sends back once it serves: its log confirmed by
	// both survivors (Lag 0), then its moved rows.
	waitLong(b, time.Hour, replacement+"'s log confirmed by the survivors", func() bool {
		st, ok := benchReplica(rc, procs[replacement].addr, "bench", wire.ReplicasRequest{NoBytes: true})
		if !ok || len(st.Targets) < 2 {
			return false
		}
		for _, tg := range st.Targets {
			if tg.Lag > 0 {
				return false
			}
		}
		return true
	})
	settled := time.Since(killed)
	back := movedRows(&client{t: b, base: procs[replacement].url()})

	detect, copied := joinSeen.Sub(killed), restored-joinSeen.Sub(killed)
	// The row snapshots the survivors sent (their logs': the processes'
	// metrics are out of reach too, and no snapshot ran before the kill).
	snaps := 0
	for _, p := range procs {
		if p != victim {
			log, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
			snaps += bytes.Count(log, []byte(`msg="row snapshot done"`))
		}
	}
	b.ReportMetric(restored.Seconds(), "s")
	b.ReportMetric(detect.Seconds(), "detect-s")
	b.ReportMetric(copied.Seconds(), "copy-s")
	b.ReportMetric(float64(src.Bytes)/(1<<20)/copied.Seconds(), "MiB/s")
	b.ReportMetric(float64(snaps), "snapshots")
	b.ReportMetric(back, "rows-pushed-back")
	b.ReportMetric(settled.Seconds(), "settled-s")
	b.Logf("killed %s; %s joining after %v, RF 3 restored with every row on it after %v (%.1f MiB stored, %.1f MiB of line protocol; %d row snapshots done); %v rows pushed back, its log confirmed by both survivors %v after the kill",
		victim.id, replacement, detect.Round(time.Millisecond), restored.Round(time.Millisecond), float64(src.Bytes)/(1<<20), float64(lpBytes)/(1<<20), snaps, back, settled.Round(time.Millisecond))
}

// benchRPC is the internal client config of the movement benchmarks: a
// replica's row count and size scan read every row (about 2 M rows/s), so
// a call about a 1 GiB replica takes longer than the default timeout.
var benchRPC = rpc.Config{Timeout: 10 * time.Minute, MaxAttempts: 1}

// benchReplica returns the state of the one replica of table that the
// server at addr holds.
func benchReplica(rc *rpc.Client, addr, table string, req wire.ReplicasRequest) (wire.ReplicaStatus, bool) {
	req.Table = table
	var resp wire.ReplicasResponse
	if err := rc.Call(context.Background(), addr, wire.PathReplicas, req, &resp); err != nil || len(resp.Replicas) != 1 {
		return wire.ReplicaStatus{}, false
	}
	return resp.Replicas[0], true
}

// loadURLs inserts lpBody requests through the servers at urls, 6 at a
// time, until total bytes of line protocol are in, and returns the bytes
// sent.
func loadURLs(b *testing.B, urls []string, total int64) int64 {
	hc := &fasthttp.Client{MaxConnsPerHost: 12, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	var next, sent atomic.Int64
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			uri := urls[w%len(urls)] + "/write?db=bench"
			for sent.Load() < total {
				body := lpBody(int(next.Add(1) - 1))
				req.Reset()
				req.SetRequestURI(uri)
				req.Header.SetMethod("POST")
				req.SetBodyRaw(body)
				if err := hc.Do(req, resp); err != nil || resp.StatusCode() != 204 {
					b.Errorf("load: %v %d %s", err, resp.StatusCode(), resp.Body())
					return
				}
				sent.Add(int64(len(body)))
			}
		})
	}
	wg.Wait()
	return sent.Load()
}
