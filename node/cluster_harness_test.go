package node

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/embedetcd"
	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// testCluster is real servers on loopback sharing one embedded etcd.
type testCluster struct {
	t     *testing.T
	etcd  *embedetcd.Etcd
	nodes map[string]*Node
	dirs  map[string]string
	mut   []func(*Config)
	seen  *syncLog
	meta  metadata.Store
	rpc   *rpc.Client
}

// syncLog records, per server and table, every txnseq a table sync reached.
type syncLog struct {
	mu  sync.Mutex
	log map[string][]uint64 // "server/table" → txnseqs in order
}

func (l *syncLog) add(server, table string, seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := server + "/" + table
	l.log[k] = append(l.log[k], seq)
}

func (l *syncLog) get(server, table string) []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log[server+"/"+table])
}

// startCluster starts n servers s1..sn.
func startCluster(t *testing.T, n int, mut ...func(*Config)) *testCluster {
	t.Helper()
	return startClusterOn(t, testEtcd(t), n, mut...)
}

// startClusterOn starts n servers s1..sn on an etcd the caller started.
func startClusterOn(t *testing.T, e *embedetcd.Etcd, n int, mut ...func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, etcd: e, nodes: map[string]*Node{}, dirs: map[string]string{}, mut: mut,
		seen: &syncLog{log: map[string][]uint64{}}}
	cli, err := c.etcd.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	c.meta = metadata.NewEtcdStore(cli, "/tsdb/")
	c.rpc = rpc.NewClient(rpc.Config{MaxAttempts: 2})
	t.Cleanup(c.rpc.Close)
	for i := 1; i <= n; i++ {
		c.start(fmt.Sprintf("s%d", i))
	}
	return c
}

// start starts (or restarts, with its data dir) server id.
func (c *testCluster) start(id string) *Node {
	c.t.Helper()
	if c.dirs[id] == "" {
		c.dirs[id] = c.t.TempDir()
	}
	mut := append([]func(*Config){func(cfg *Config) {
		cfg.knobs.OnTableSynced = func(table string, seq uint64) { c.seen.add(id, table, seq) }
	}}, c.mut...)
	n := startNode(c.t, c.etcd, id, c.dirs[id], mut...)
	c.nodes[id] = n
	return n
}

// stop stops server id gracefully (its registration is revoked).
func (c *testCluster) stop(id string) {
	c.t.Helper()
	stopNode(c.t, c.nodes[id])
}

func (c *testCluster) client(id string) *client { return &client{t: c.t, base: c.nodes[id].URL()} }

// createTable creates a table through server id with the given RF (0: default).
func (c *testCluster) createTable(id, name string, rf int) metadata.TableConfig {
	c.t.Helper()
	body := fmt.Sprintf(`{"name":%q}`, name)
	if rf > 0 {
		body = fmt.Sprintf(`{"name":%q,"replication_factor":%d}`, name, rf)
	}
	cl := c.client(id)
	cl.must(201, cl.do("POST", "/api/v1/tables", []byte(body)), nil)
	return c.config(name)
}

// config reads a TableConfig from etcd.
func (c *testCluster) config(name string) metadata.TableConfig {
	c.t.Helper()
	cfg, _, err := c.meta.GetTable(context.Background(), name)
	if err != nil {
		c.t.Fatalf("get table %s: %v", name, err)
	}
	return cfg
}

// change sends a raw change request to server id over the internal API.
func (c *testCluster) change(ctx context.Context, id string, req wire.ChangeMetadataRequest) (wire.ChangeMetadataResponse, error) {
	var resp wire.ChangeMetadataResponse
	err := c.rpc.Call(ctx, c.nodes[id].Addr(), wire.PathMetadataChange, req, &resp)
	return resp, err
}

// offlineOp toggles partition p's offline flag: a valid op on any file.
func offlineOp(f *metadata.File, offline bool) metadata.Op {
	return metadata.Op{Type: metadata.OpSetOffline, SetOffline: &metadata.SetOfflineOp{PartitionID: f.Partitions[0].ID, Offline: offline}}
}

// toggle plans a SET_OFFLINE flipping the first partition's flag.
func toggle(_ metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
	return offlineOp(f, !f.Partitions[0].Offline), nil
}

// waitFor polls cond until it holds or 30 s pass.
// waitForMaster waits until the cluster c reaches names a master and
// returns its id.
func waitForMaster(t testing.TB, c *client) string {
	t.Helper()
	master := ""
	waitFor(t, "a master", func() bool {
		var cl api.ClusterResponse
		c.must(200, c.do("GET", "/api/v1/cluster", nil), &cl)
		for _, s := range cl.Servers {
			if s.Master {
				master = s.ID
			}
		}
		return master != ""
	})
	return master
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitLong(t, 30*time.Second, what, cond)
}

// waitLong polls cond until it holds or d passes.
func waitLong(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holds reports whether server id's file store has (table, txnid).
func (c *testCluster) holds(id, table, txnID string) bool {
	_, err := c.nodes[id].files.Get(table, txnID)
	return err == nil
}
