package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// loader inserts batches of unique rows round-robin through servers until
// stopped, remembering which batches were acknowledged.
type loader struct {
	// pause is the wait between batches (0: none).
	pause time.Duration
	mu    sync.Mutex
	acked []int
	tried int
}

const loaderRows = 50

func loaderBatch(i int) []byte {
	var b strings.Builder
	for j := range loaderRows {
		fmt.Fprintf(&b, "m,b=%d v=%d %d\n", i, j, int64(i)*1_000_000+int64(j))
	}
	return []byte(b.String())
}

func (l *loader) run(ctx context.Context, urls func() []string) {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
	// An open keep-alive connection would hold up an in-process server's
	// Stop (its HTTP shutdown waits for it) once the load is over.
	defer hc.CloseIdleConnections()
	for i := 0; ctx.Err() == nil; i++ {
		us := urls()
		u := us[i%len(us)]
		resp, err := hc.Post(u+"/write?db=crash", "text/plain", strings.NewReader(string(loaderBatch(i))))
		l.mu.Lock()
		l.tried++
		if err == nil && resp.StatusCode == 204 {
			l.acked = append(l.acked, i)
		}
		l.mu.Unlock()
		if err == nil {
			resp.Body.Close()
		} else {
			time.Sleep(10 * time.Millisecond)
		}
		if l.pause > 0 {
			time.Sleep(l.pause)
		}
	}
}

// checkAckedOnce queries table "crash" through p (with headers) and fails
// the test unless every row of the acknowledged batches is answered, and
// no row twice.
func checkAckedOnce(t *testing.T, p *proc, acked []int, headers ...string) {
	t.Helper()
	r := p.client().do("GET", "/api/v1/tables/crash/query?limit=1000000", nil, headers...)
	var resp api.RawQueryResponse
	if r.status != 200 || json.Unmarshal(r.body, &resp) != nil {
		t.Fatalf("query via %s: %d %s", p.id, r.status, r.body)
	}
	seen := make(map[string]bool, len(resp.Rows))
	for _, row := range resp.Rows {
		k := fmt.Sprintf("%s@%d", row.Series, row.Time)
		if seen[k] {
			t.Fatalf("%s answers row %s twice", p.id, k)
		}
		seen[k] = true
	}
	for _, i := range acked {
		for j := range loaderRows {
			if k := fmt.Sprintf("m,b=%d@%d", i, int64(i)*1_000_000+int64(j)); !seen[k] {
				t.Fatalf("%s lacks acknowledged row %s (batch %d of %d acknowledged)", p.id, k, i, len(acked))
			}
		}
	}
}

func (l *loader) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// TestKill9DuringInsertLoad: three real `tsdb server` processes, RF 3, a
// steady insert load through all of them; one is killed with SIGKILL and
// restarted. Every acknowledged row ends up on every replica, exactly once.
func TestKill9DuringInsertLoad(t *testing.T) {
	e := testEtcd(t)
	procs := make([]*proc, 3)
	for i := range procs {
		procs[i] = startProc(t, fmt.Sprintf("s%d", i+1), t.TempDir(), e.Endpoint())
	}
	c := procs[0].client()
	c.must(201, c.do("POST", "/api/v1/tables", []byte(`{"name":"crash","replication_factor":3}`)), nil)

	var mu sync.Mutex
	urls := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return []string{procs[0].url(), procs[1].url(), procs[2].url()}
	}
	l := &loader{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { l.run(ctx, urls) })
	defer func() { cancel(); wg.Wait() }()

	waitFor(t, "20 acknowledged batches", func() bool { return l.ackedCount() >= 20 })
	procs[1].kill9()
	n := l.ackedCount()
	waitFor(t, "20 more batches with s2 dead", func() bool { return l.ackedCount() >= n+20 })
	procs[1].start() // same id, data dir and address
	n = l.ackedCount()
	waitFor(t, "20 more batches after the restart", func() bool { return l.ackedCount() >= n+20 })
	cancel()
	wg.Wait()

	l.mu.Lock()
	acked := append([]int(nil), l.acked...)
	l.mu.Unlock()
	rc := rpc.NewClient(rpc.Config{})
	defer rc.Close()
	// Converged: the three replicas hold the same rows and versions.
	waitFor(t, "the replicas converging", func() bool {
		sum := ""
		for _, p := range procs {
			var resp wire.ReplicasResponse
			if err := rc.Call(context.Background(), p.addr, wire.PathReplicas, wire.ReplicasRequest{Table: "crash", Counts: true}, &resp); err != nil ||
				len(resp.Replicas) != 1 || resp.Replicas[0].Rows < int64(len(acked)*loaderRows) {
				return false
			}
			if sum != "" && resp.Replicas[0].Checksum != sum {
				return false
			}
			sum = resp.Replicas[0].Checksum
		}
		return true
	})
	// Every acknowledged row is there, once, through every server (each
	// reads its own replica first).
	for _, p := range procs {
		checkAckedOnce(t, p, acked)
	}
	t.Logf("%d batches acknowledged of %d tried; all present on every replica", len(acked), l.tried)
}

// TestKill9Splitter: three real `tsdb server` processes, RF 3, a steady
// insert load. A split is started through the server that leads its
// finalization (the first listed server of the partition), which is then
// killed with SIGKILL. The split is taken over by another parent replica
// and finalizes, no acknowledged row is lost or doubled, and the killed
// server, restarted, rejoins.
func TestKill9Splitter(t *testing.T) {
	e := testEtcd(t)
	procs := map[string]*proc{}
	for _, id := range []string{"s1", "s2", "s3"} {
		procs[id] = startProc(t, id, t.TempDir(), e.Endpoint())
	}
	c := procs["s1"].client()
	c.must(201, c.do("POST", "/api/v1/tables", []byte(`{"name":"crash","replication_factor":3}`)), nil)
	urls := func() []string { return []string{procs["s1"].url(), procs["s2"].url(), procs["s3"].url()} }
	l := &loader{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { l.run(ctx, urls) })
	defer func() { cancel(); wg.Wait() }()
	waitLong(t, time.Minute, "200 acknowledged batches", func() bool { return l.ackedCount() >= 200 })

	var md metadataAnswer
	c.must(200, c.do("GET", "/api/v1/tables/crash/metadata", nil), &md)
	parent := md.Metadata.Partitions[0]
	leader := procs[parent.Servers[0].ServerID]
	var other *proc
	for id, p := range procs {
		if id != leader.id {
			other = p
		}
	}
	var started api.SplitResponse
	leader.client().must(200, leader.client().do("POST", "/api/v1/tables/crash/partitions/"+parent.ID.String()+"/split", nil), &started)
	leader.kill9()
	other.client().must(200, other.client().do("GET", "/api/v1/tables/crash/metadata", nil), &md)
	if p, ok := md.Metadata.Partition(parent.ID); ok && p.Split != nil {
		t.Logf("%s killed mid-split (SPLIT_BEGIN at txnseq %d, not finalized)", leader.id, started.TxnSeq)
	} else {
		t.Logf("%s killed after the split had finalized already", leader.id)
	}
	waitLong(t, 2*time.Minute, "the split to be finalized by a surviving parent replica", func() bool {
		var md metadataAnswer
		r := other.client().do("GET", "/api/v1/tables/crash/metadata", nil)
		if r.status != 200 || json.Unmarshal(r.body, &md) != nil {
			return false
		}
		f := md.Metadata
		return len(f.Partitions) == 2 && f.Partitions[0].ID == started.Children[0] && f.Partitions[1].ID == started.Children[1]
	})
	n := l.ackedCount()
	waitLong(t, time.Minute, "20 more batches after the split", func() bool { return l.ackedCount() >= n+20 })
	leader.start() // same id, data dir and address
	n = l.ackedCount()
	waitLong(t, time.Minute, "20 more batches after the restart", func() bool { return l.ackedCount() >= n+20 })
	cancel()
	wg.Wait()

	l.mu.Lock()
	acked := append([]int(nil), l.acked...)
	l.mu.Unlock()
	for _, p := range procs {
		checkAckedOnce(t, p, acked, api.HeaderConsistency, api.ConsistencyQuorum)
	}
	t.Logf("%d batches acknowledged of %d tried; all present once through every server", len(acked), l.tried)
}

// TestKill9ReReplicates: five real `tsdb server` processes, a table of RF
// 3 under insert load; the master and one of the partition's servers are
// killed with SIGKILL (one kill if the master is a partition server).
// Another server becomes master; once the dead servers' membership keys
// have been gone for --dead-after, it joins replacements and, after
// JOIN_FINALIZE, removes the dead: the partition is back at three live
// servers, and every acknowledged row is there once.
func TestKill9ReReplicates(t *testing.T) {
	e := testEtcd(t)
	procs := map[string]*proc{}
	ids := []string{"s1", "s2", "s3", "s4", "s5"}
	for _, id := range ids {
		procs[id] = startProc(t, id, t.TempDir(), e.Endpoint(), "--dead-after", "2s")
	}
	c := procs["s1"].client()
	c.must(201, c.do("POST", "/api/v1/tables", []byte(`{"name":"crash","replication_factor":3}`)), nil)
	dead := map[*proc]bool{}
	urls := func() []string {
		var out []string
		for _, id := range ids {
			if p := procs[id]; !dead[p] {
				out = append(out, p.url())
			}
		}
		return out
	}
	l := &loader{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Go(func() {
		l.run(ctx, func() []string { mu.Lock(); defer mu.Unlock(); return urls() })
	})
	defer func() { cancel(); wg.Wait() }()
	waitLong(t, time.Minute, "100 acknowledged batches", func() bool { return l.ackedCount() >= 100 })

	var md metadataAnswer
	c.must(200, c.do("GET", "/api/v1/tables/crash/metadata", nil), &md)
	master := waitForMaster(t, c)
	// The master dies, and one partition server if the master is not one.
	// At most one of the table's three metadata servers may die with them,
	// or no METADATA change could commit (keeping the metadata servers at
	// N live is a master duty still to come).
	victims := []*proc{procs[master]}
	part := md.Metadata.Partitions[0].Servers
	isMeta := func(id string) bool { return slices.Contains(md.Config.MetadataServers, id) }
	if !slices.ContainsFunc(part, func(pl metadata.Placement) bool { return pl.ServerID == master }) {
		i := slices.IndexFunc(part, func(pl metadata.Placement) bool { return !isMeta(master) || !isMeta(pl.ServerID) })
		if i < 0 {
			t.Fatalf("setup: no partition server to kill with master %s without losing the metadata quorum (%v)", master, md.Config.MetadataServers)
		}
		victims = append(victims, procs[part[i].ServerID])
	}
	mu.Lock()
	for _, v := range victims {
		dead[v] = true
	}
	mu.Unlock()
	killed := time.Now()
	for _, v := range victims {
		v.kill9()
	}
	var other *proc
	for _, id := range ids {
		if !dead[procs[id]] {
			other = procs[id]
			break
		}
	}
	waitLong(t, 2*time.Minute, "the partition back at three live servers without the dead one", func() bool {
		var md metadataAnswer
		r := other.client().do("GET", "/api/v1/tables/crash/metadata", nil)
		if r.status != 200 || json.Unmarshal(r.body, &md) != nil {
			return false
		}
		for _, p := range md.Metadata.Partitions {
			if len(p.Servers) != 3 || len(p.Joining) != 0 || p.Split != nil {
				return false
			}
			for _, pl := range p.Servers {
				if dead[procs[pl.ServerID]] {
					return false
				}
			}
		}
		return true
	})
	repaired := time.Since(killed)
	cancel()
	wg.Wait()
	l.mu.Lock()
	acked := append([]int(nil), l.acked...)
	l.mu.Unlock()
	for _, id := range ids {
		p := procs[id]
		if dead[p] {
			continue
		}
		checkAckedOnce(t, p, acked, api.HeaderConsistency, api.ConsistencyQuorum)
	}
	t.Logf("killed %d server(s), the master %s among them; back at replication factor 3 %v after the kill -9 (lease TTL 10 s + --dead-after 2 s + join), %d rows acknowledged",
		len(victims), master, repaired.Round(100*time.Millisecond), len(acked)*loaderRows)
}

// metadataAnswer is the answer of GET /api/v1/tables/{t}/metadata decoded
// into metadata's own types (api.MetadataResponse has the same JSON), so
// that the tests can use the partition map's methods.
type metadataAnswer struct {
	Config   metadata.TableConfig `json:"config"`
	Metadata *metadata.File       `json:"metadata"`
}
