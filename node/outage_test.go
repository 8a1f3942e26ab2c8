package node

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/embedetcd"
	"github.com/tsdb/tsdb/http/api"
)

// freePort returns a loopback port free at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return p
}

// TestEtcdOutageUnderInsertLoad: with etcd stopped, inserts into existing
// partitions keep being acknowledged and replicated; metadata changes fail
// with a clear 503; once etcd is back the servers re-register, changes
// commit again, and no acknowledged row is lost.
func TestEtcdOutageUnderInsertLoad(t *testing.T) {
	ecfg := embedetcd.Config{Dir: t.TempDir(), Fast: true, ClientPort: freePort(t), PeerPort: freePort(t)}
	e, err := embedetcd.Start(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	var emu sync.Mutex
	t.Cleanup(func() { emu.Lock(); defer emu.Unlock(); e.Close() })
	c := startClusterOn(t, e, 3)
	c.createTable("s1", "crash", 3)
	for _, id := range []string{"s1", "s2", "s3"} {
		waitFor(t, id+" holding its replica", func() bool { return len(c.nodes[id].store.Replicas()) == 1 })
	}

	l := &loader{pause: 5 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	urls := []string{c.nodes["s1"].URL(), c.nodes["s2"].URL(), c.nodes["s3"].URL()}
	wg.Go(func() { l.run(ctx, func() []string { return urls }) })
	defer func() { cancel(); wg.Wait() }()
	waitFor(t, "10 batches with etcd up", func() bool { return l.ackedCount() >= 10 })

	emu.Lock()
	e.Close()
	emu.Unlock()
	n := l.ackedCount()
	waitFor(t, "30 batches acknowledged with etcd down", func() bool { return l.ackedCount() >= n+30 })
	// A metadata change cannot commit: a clear 503, not a hang or a 500.
	cl := c.client("s2")
	r := cl.do("POST", "/api/v1/tables", []byte(`{"name":"during","replication_factor":1}`))
	if r.status != 503 {
		t.Fatalf("create table with etcd down: %d %s, want 503", r.status, r.body)
	}
	_, f, err := c.nodes["s1"].backendMetadata("crash", "")
	if err == nil {
		r = cl.do("POST", "/api/v1/tables/crash/partitions/"+f.Partitions[0].ID.String()+"/leave", []byte(`{"server":"s3"}`))
		if r.status != 503 {
			t.Fatalf("leave with etcd down: %d %s, want 503", r.status, r.body)
		}
	}

	emu.Lock()
	e, err = embedetcd.Start(ecfg)
	emu.Unlock()
	if err != nil {
		t.Fatalf("restart etcd: %v", err)
	}
	var last response
	waitFor(t, "a metadata change committing again", func() bool {
		last = cl.do("POST", "/api/v1/tables", []byte(`{"name":"after","replication_factor":1}`))
		if last.status != 201 {
			t.Logf("create after etcd restart: %d %s", last.status, last.body)
		}
		return last.status == 201
	})
	waitFor(t, "every server registered again", func() bool {
		var cr api.ClusterResponse
		resp := cl.do("GET", "/api/v1/cluster", nil)
		return resp.status == 200 && json.Unmarshal(resp.body, &cr) == nil && len(cr.Servers) == 3
	})
	n = l.ackedCount()
	waitFor(t, "10 batches after etcd is back", func() bool { return l.ackedCount() >= n+10 })
	cancel()
	wg.Wait()
	acked := l.ackedCount()
	// Rows of a request that failed may have been written too: at least
	// every acknowledged row, and the same rows everywhere.
	waitFor(t, "the replicas converging", func() bool {
		return c.convergedAtLeast("crash", int64(acked*loaderRows), "s1", "s2", "s3")
	})
	t.Logf("%d batches acknowledged of %d tried", acked, l.tried)
}
