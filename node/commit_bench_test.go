package node

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// countingStore counts the etcd calls made through a metadata.Store.
type countingStore struct {
	metadata.Store
	gets, lists, creates, updates atomic.Int64
}

func (s *countingStore) GetTable(ctx context.Context, name string) (metadata.TableConfig, int64, error) {
	s.gets.Add(1)
	return s.Store.GetTable(ctx, name)
}

func (s *countingStore) ListTables(ctx context.Context) ([]metadata.TableConfig, error) {
	s.lists.Add(1)
	return s.Store.ListTables(ctx)
}

func (s *countingStore) CreateTable(ctx context.Context, cfg metadata.TableConfig) error {
	s.creates.Add(1)
	return s.Store.CreateTable(ctx, cfg)
}

func (s *countingStore) UpdateTable(ctx context.Context, cfg metadata.TableConfig, rev int64) error {
	s.updates.Add(1)
	return s.Store.UpdateTable(ctx, cfg, rev)
}

func (s *countingStore) total() int64 {
	return s.gets.Load() + s.lists.Load() + s.creates.Load() + s.updates.Load()
}

// BenchmarkMetadataCommit measures the commit latency of a METADATA change
// with 3 and 5 metadata servers, each a real server on loopback with a real
// embedded etcd: RequestChange on s1 (read the current txn, coordinate on
// s1: store locally and on the peers over the internal API, wait for a
// majority, CAS). It reports p50/p99 and the etcd round trips per commit of
// the coordinator and of the whole cluster (the requester's read and every
// server's refresh on the watch notification included).
func BenchmarkMetadataCommit(b *testing.B) {
	for _, n := range []int{3, 5} {
		b.Run(fmt.Sprintf("%d-metadata-servers", n), func(b *testing.B) {
			benchCommit(b, n)
		})
	}
}

func benchCommit(b *testing.B, n int) {
	e := testEtcd(b)
	nodes := make([]*Node, n)
	counters := make([]*countingStore, n)
	for i := range n {
		nodes[i] = startNode(b, e, fmt.Sprintf("s%d", i+1), b.TempDir())
	}
	cl := &client{t: b, base: nodes[0].URL()}
	cl.must(201, cl.do("POST", "/api/v1/tables", fmt.Appendf(nil, `{"name":"cpu","replication_factor":%d}`, n)), nil)
	for i, nd := range nodes {
		counters[i] = &countingStore{Store: nd.meta}
		nd.committer.Store = counters[i]
		nd.meta = counters[i]
	}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	coord0 := counters[0].gets.Load() + counters[0].updates.Load()
	var all0 int64
	for _, c := range counters {
		all0 += c.total()
	}
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := nodes[0].RequestChange(ctx, "cpu", toggle); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	// Let every server's watch catch up before counting its refreshes.
	final := nodes[0].syncedSeq("cpu")
	for _, nd := range nodes {
		waitFor(b, nd.cfg.ID+" syncing", func() bool { return nd.syncedSeq("cpu") >= final })
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	var all int64
	for _, c := range counters {
		all += c.total()
	}
	b.ReportMetric(float64(all-all0)/float64(b.N), "etcd-calls/commit(cluster)")
	// The requester's own read and refresh, and the coordinator's Get and
	// CAS, are all on s1 here.
	b.ReportMetric(float64(counters[0].gets.Load()+counters[0].updates.Load()-coord0)/float64(b.N), "etcd-calls/commit(s1)")
}
