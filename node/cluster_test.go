package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// TestClusterChangeCommits: on 3 and on 5 servers, a change requested
// through a server commits: TableConfig names the new txn with txnseq + 1,
// every metadata server holds the file, and every server's watch brings it
// to the new txn.
func TestClusterChangeCommits(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d-servers", n), func(t *testing.T) {
			c := startCluster(t, n)
			before := c.createTable("s1", "cpu", n)
			if len(before.MetadataServers) != n || before.ReplicationFactor != n {
				t.Fatalf("metadata servers %v, rf %d: want %d of each", before.MetadataServers, before.ReplicationFactor, n)
			}
			// Requested through the last server, which the coordinator
			// choice may or may not pick.
			id := fmt.Sprintf("s%d", n)
			f, err := c.nodes[id].RequestChange(context.Background(), "cpu", toggle)
			if err != nil {
				t.Fatalf("change: %v", err)
			}
			after := c.config("cpu")
			if after.MetadataTxnID != f.TxnID || after.MetadataTxnSeq != before.MetadataTxnSeq+1 || f.ParentTxnID != before.MetadataTxnID {
				t.Fatalf("TableConfig %s/%d, file %s parent %s; before %s/%d", after.MetadataTxnID, after.MetadataTxnSeq,
					f.TxnID, f.ParentTxnID, before.MetadataTxnID, before.MetadataTxnSeq)
			}
			for _, s := range after.MetadataServers {
				waitFor(t, s+" holding the new file", func() bool { return c.holds(s, "cpu", f.TxnID) })
			}
			for s := range c.nodes {
				waitFor(t, s+" syncing txnseq 2", func() bool {
					seqs := c.seen.get(s, "cpu")
					return len(seqs) > 0 && seqs[len(seqs)-1] == after.MetadataTxnSeq
				})
			}
		})
	}
}

// TestClusterConcurrentConflictingChanges: 20 changes on the same base sent
// at once to every metadata server: exactly one commits, every other is a
// conflict, and once the sweep has run no orphan file remains anywhere.
func TestClusterConcurrentConflictingChanges(t *testing.T) {
	c := startCluster(t, 3)
	base := c.createTable("s1", "cpu", 3)
	_, f, err := c.nodes["s1"].backendMetadata("cpu", "")
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	var ok, conflicts atomic.Int32
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req := wire.ChangeMetadataRequest{Table: "cpu", BaseTxnID: base.MetadataTxnID, NewTxnID: metadata.NewTxnID(),
				Op: offlineOp(f, true)}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := c.change(ctx, fmt.Sprintf("s%d", i%3+1), req)
			var se *rpc.StatusError
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &se) && se.Status == 409 && se.Code == api.CodeConflict:
				conflicts.Add(1)
			default:
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("neither a commit nor a conflict: %v", err)
	}
	if ok.Load() != 1 || conflicts.Load() != n-1 {
		t.Fatalf("%d commits and %d conflicts, want 1 and %d", ok.Load(), conflicts.Load(), n-1)
	}
	after := c.config("cpu")
	if after.MetadataTxnSeq != base.MetadataTxnSeq+1 {
		t.Fatalf("txnseq %d, want %d", after.MetadataTxnSeq, base.MetadataTxnSeq+1)
	}
	// The losers' files are orphans; the sweep (grace 0 here) removes them
	// and keeps exactly the committed chain.
	for id, nd := range c.nodes {
		if _, err := nd.files.Sweep(time.Now().Add(time.Minute), 0, 10, func(string) (string, bool) { return after.MetadataTxnID, true }); err != nil {
			t.Fatal(err)
		}
		got, err := nd.files.List("cpu")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		want := []string{base.MetadataTxnID, after.MetadataTxnID}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s holds %v after the sweep, want exactly the chain %v", id, got, want)
		}
	}
}

// TestClusterMetadataServerDown: with one of 3 metadata servers down a
// change commits on the other two; the server catches up before it serves
// again (its restart fetches the txn it missed).
func TestClusterMetadataServerDown(t *testing.T) {
	c := startCluster(t, 3)
	c.createTable("s1", "cpu", 3)
	c.stop("s3")
	f, err := c.nodes["s1"].RequestChange(context.Background(), "cpu", toggle)
	if err != nil {
		t.Fatalf("change with 2 of 3 metadata servers: %v", err)
	}
	if c.holds("s3", "cpu", f.TxnID) {
		t.Fatal("s3 was down but holds the new file")
	}
	n3 := c.start("s3")
	// Start returns only once the server holds the current txn.
	if !c.holds("s3", "cpu", f.TxnID) {
		t.Fatal("s3 serves again without the txn committed while it was down")
	}
	var resp wire.FetchMetadataResponse
	if err := c.rpc.Call(context.Background(), n3.Addr(), wire.PathMetadataFetch, wire.FetchMetadataRequest{Table: "cpu"}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.TxnID != f.TxnID {
		t.Fatalf("s3 answers txn %s, want %s", resp.TxnID, f.TxnID)
	}
}

// TestClusterMajorityDown: with 2 of 3 metadata servers down a change fails
// cleanly and TableConfig is unchanged.
func TestClusterMajorityDown(t *testing.T) {
	c := startCluster(t, 3)
	before := c.createTable("s1", "cpu", 3)
	_, rev0, _ := c.meta.GetTable(context.Background(), "cpu")
	c.stop("s2")
	c.stop("s3")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.nodes["s1"].RequestChange(ctx, "cpu", toggle)
	if !errors.Is(err, metadata.ErrNoQuorum) {
		t.Fatalf("change with 1 of 3 metadata servers: %v, want ErrNoQuorum", err)
	}
	after, rev, err := c.meta.GetTable(context.Background(), "cpu")
	if err != nil || after.MetadataTxnID != before.MetadataTxnID || rev != rev0 {
		t.Fatalf("TableConfig changed: %+v rev %d (was %d), err %v", after, rev, rev0, err)
	}
	// The table still answers reads from its current METADATA.
	cl := c.client("s1")
	cl.must(200, cl.do("GET", "/api/v1/tables/cpu", nil), nil)
}

// TestClusterCoordinatorDiesBeforeCAS: the coordinator stores the new file
// on a majority and dies before its CAS. Nothing is committed, the table
// keeps working through the other servers, and the sweep removes the
// orphan.
func TestClusterCoordinatorDiesBeforeCAS(t *testing.T) {
	var armed atomic.Bool
	var orphan atomic.Value
	crash := errors.New("injected crash before CAS")
	c := startCluster(t, 3, func(cfg *Config) {
		if cfg.ID == "s1" {
			cfg.knobs.beforeCAS = func(table, txnID string) error {
				if armed.Load() {
					orphan.Store(txnID)
					return crash
				}
				return nil
			}
		}
	})
	before := c.createTable("s1", "cpu", 3)
	_, f, err := c.nodes["s1"].backendMetadata("cpu", "")
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	req := wire.ChangeMetadataRequest{Table: "cpu", BaseTxnID: before.MetadataTxnID, NewTxnID: metadata.NewTxnID(), Op: offlineOp(f, true)}
	if _, err := c.change(context.Background(), "s1", req); err == nil {
		t.Fatal("the change committed through a coordinator that crashed before its CAS")
	}
	c.stop("s1") // the coordinator is gone
	if got := c.config("cpu"); got.MetadataTxnID != before.MetadataTxnID {
		t.Fatalf("TableConfig moved to %s", got.MetadataTxnID)
	}
	id := orphan.Load().(string)
	stored := 0
	for _, s := range []string{"s2", "s3"} {
		if c.holds(s, "cpu", id) {
			stored++
		}
	}
	if stored == 0 {
		t.Fatal("the crashed change's file reached no peer: the fault was not injected between store and CAS")
	}
	// The table keeps working: the same request retried through s2 commits
	// (ops are deterministic, so s2 builds the same bytes), and so does a
	// new change after it.
	if _, err := c.change(context.Background(), "s2", req); err != nil {
		t.Fatalf("retry through s2: %v", err)
	}
	if _, err := c.nodes["s3"].RequestChange(context.Background(), "cpu", toggle); err != nil {
		t.Fatalf("change through s3 after the crash: %v", err)
	}
	if got := c.config("cpu"); got.MetadataTxnSeq != before.MetadataTxnSeq+2 {
		t.Fatalf("txnseq %d, want %d", got.MetadataTxnSeq, before.MetadataTxnSeq+2)
	}
	// A change that died and was never retried leaves an orphan: the sweep
	// removes it.
	armed.Store(true)
	n1 := c.start("s1")
	_, f, _ = n1.backendMetadata("cpu", "")
	cur := c.config("cpu")
	req = wire.ChangeMetadataRequest{Table: "cpu", BaseTxnID: cur.MetadataTxnID, NewTxnID: metadata.NewTxnID(), Op: offlineOp(f, !f.Partitions[0].Offline)}
	if _, err := c.change(context.Background(), "s1", req); err == nil {
		t.Fatal("committed despite the injected crash")
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		nd := c.nodes[s]
		if _, err := nd.files.Sweep(time.Now().Add(time.Minute), 0, 10, func(string) (string, bool) { return cur.MetadataTxnID, true }); err != nil {
			t.Fatal(err)
		}
		if c.holds(s, "cpu", req.NewTxnID) {
			t.Errorf("%s still holds the orphan %s after the sweep", s, req.NewTxnID)
		}
	}
}

// TestClusterMetadataServerJoinAndLeave: a fourth server joins the metadata
// servers while changes are being committed and ends up with the current
// txn; then a server leaves, and changes go on committing.
func TestClusterMetadataServerJoinAndLeave(t *testing.T) {
	c := startCluster(t, 4)
	cfg := c.createTable("s1", "cpu", 3)
	var joiner string
	for _, s := range []string{"s2", "s3", "s4"} {
		if !slices.Contains(cfg.MetadataServers, s) {
			joiner = s
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var commits atomic.Int32
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := c.nodes["s1"].RequestChange(ctx, "cpu", toggle); err == nil {
				commits.Add(1)
			}
		}
	})
	waitFor(t, "a first concurrent commit", func() bool { return commits.Load() > 0 })
	var jr wire.JoinMetadataResponse
	err := c.rpc.Call(context.Background(), c.nodes[joiner].Addr(), wire.PathMetadataJoin, wire.JoinMetadataRequest{Table: "cpu"}, &jr)
	if err != nil {
		cancel()
		wg.Wait()
		t.Fatalf("join %s: %v", joiner, err)
	}
	n := commits.Load()
	waitFor(t, "commits after the join", func() bool { return commits.Load() > n+2 })
	cancel()
	wg.Wait()
	cur := c.config("cpu")
	if !slices.Contains(cur.MetadataServers, joiner) || len(cur.MetadataServers) != 4 {
		t.Fatalf("metadata servers %v after %s joined", cur.MetadataServers, joiner)
	}
	waitFor(t, joiner+" holding the current txn", func() bool { return c.holds(joiner, "cpu", cur.MetadataTxnID) })

	// s2 leaves: a majority of the other three must hold the current txn
	// first, and they do.
	left, err := c.nodes["s1"].committer.RemoveMetadataServer(context.Background(), "cpu", "s2")
	if err != nil {
		t.Fatalf("leave: %v", err)
	}
	if slices.Contains(left.MetadataServers, "s2") || len(left.MetadataServers) != 3 {
		t.Fatalf("metadata servers %v after s2 left", left.MetadataServers)
	}
	held := 0
	for _, s := range left.MetadataServers {
		if c.holds(s, "cpu", left.MetadataTxnID) {
			held++
		}
	}
	if held < 2 {
		t.Fatalf("only %d of %v hold the current txn after the leave", held, left.MetadataServers)
	}
	f, err := c.nodes["s2"].RequestChange(context.Background(), "cpu", toggle)
	if err != nil {
		t.Fatalf("change after the leave, requested by the server that left: %v", err)
	}
	for _, s := range left.MetadataServers {
		waitFor(t, s+" holding the change after the leave", func() bool { return c.holds(s, "cpu", f.TxnID) })
	}
}

// TestClusterWatchAndDiscovery: every server's watch processes the
// committed changes in txnseq order, and the discovery answers of the local
// replicas — and of the internal discovery endpoint — match the map.
func TestClusterWatchAndDiscovery(t *testing.T) {
	// Pushes to the joiner fail, so its join cannot finalize (a new txn,
	// SERVE everywhere) while the statuses at the join's txn are checked.
	c := startCluster(t, 4, func(cfg *Config) {
		cfg.knobs.BlockPush = func(tg metadata.Target) bool { return tg.Kind == metadata.TargetJoining }
	})
	c.createTable("s1", "cpu", 3)
	var last *metadata.File
	for range 8 {
		f, err := c.nodes["s2"].RequestChange(context.Background(), "cpu", toggle)
		if err != nil {
			t.Fatal(err)
		}
		last = f
	}
	// A joiner: the server without a replica joins the partition.
	cfg := c.config("cpu")
	_, f, _ := c.nodes["s1"].backendMetadata("cpu", "")
	p := f.Partitions[0]
	var outsider string
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		if !slices.ContainsFunc(p.Servers, func(pl metadata.Placement) bool { return pl.ServerID == s }) {
			outsider = s
		}
	}
	joinPl := metadata.Placement{ServerID: outsider, PlacementID: uuid.New()}
	last, err := c.nodes["s1"].RequestChange(context.Background(), "cpu", func(metadata.TableConfig, *metadata.File) (metadata.Op, error) {
		return metadata.Op{Type: metadata.OpJoinServer, JoinServer: &metadata.JoinServerOp{PartitionID: p.ID, Placement: joinPl}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	final := cfg.MetadataTxnSeq + 1
	for id := range c.nodes {
		waitFor(t, id+" syncing the last txn", func() bool {
			seqs := c.seen.get(id, "cpu")
			return len(seqs) > 0 && seqs[len(seqs)-1] == final
		})
		seqs := c.seen.get(id, "cpu")
		for i := 1; i < len(seqs); i++ {
			if seqs[i] < seqs[i-1] {
				t.Errorf("%s processed txnseqs out of order: %v", id, seqs)
				break
			}
		}
	}
	// Discovery: SERVE on the partition's servers, with the joiner as a
	// joining target; LOAD on the joiner.
	for id, nd := range c.nodes {
		var sts []ReplicaStatus
		waitFor(t, id+"'s discovery at the last txn", func() bool {
			sts = nd.ReplicaStatuses()
			return len(sts) == 1 && sts[0].TxnSeq == final
		})
		st := sts[0]
		want := metadata.Discover(last, id, metadata.ReplicaRef{PartitionID: st.PartitionID, PlacementID: st.Placement, Begin: p.Begin, End: p.End})
		if st.Discovery.Status != want.Status || len(st.Discovery.Targets) != len(want.Targets) {
			t.Errorf("%s: discovery %+v, want %+v", id, st.Discovery, want)
		}
		wantStatus := metadata.StatusServe
		if id == outsider {
			wantStatus = metadata.StatusLoad
		}
		if st.Discovery.Status != wantStatus {
			t.Errorf("%s: status %s, want %s", id, st.Discovery.Status, wantStatus)
		}
		if id != outsider && !slices.ContainsFunc(st.Discovery.Targets, func(tg metadata.Target) bool {
			return tg.ServerID == outsider && tg.Kind == metadata.TargetJoining
		}) {
			t.Errorf("%s: targets %+v lack the joiner %s", id, st.Discovery.Targets, outsider)
		}
		// The internal endpoint answers the same for a server without the file.
		var resp wire.DiscoveryResponse
		ref := metadata.ReplicaRef{PartitionID: st.PartitionID, PlacementID: st.Placement, Begin: p.Begin, End: p.End}
		err := c.rpc.Call(context.Background(), c.nodes[cfg.MetadataServers[0]].Addr(), wire.PathDiscovery,
			wire.DiscoveryRequest{Table: "cpu", Server: id, MinTxnSeq: final, Replicas: []metadata.ReplicaRef{ref}}, &resp)
		if err != nil {
			t.Fatal(err)
		}
		if resp.TxnSeq != final || len(resp.Results) != 1 || resp.Results[0].Status != st.Discovery.Status ||
			len(resp.Results[0].Targets) != len(st.Discovery.Targets) {
			t.Errorf("%s: endpoint answers %+v, local %+v", id, resp, st.Discovery)
		}
	}
	// A replica whose placement left the map is UNLOAD.
	gone := metadata.ReplicaRef{PartitionID: uuid.New(), PlacementID: uuid.New(), Begin: p.Begin, End: p.End}
	if d := metadata.Discover(last, "s1", gone); d.Status != metadata.StatusUnload || len(d.Targets) == 0 {
		t.Errorf("unknown id: %+v, want UNLOAD with targets", d)
	}
}

// TestClusterCreateTable: table creation picks RF live servers (default
// min(3, live)), as many metadata servers, refuses more than there are live
// servers, and refuses an existing name with 409.
func TestClusterCreateTable(t *testing.T) {
	c := startCluster(t, 4)
	cfg := c.createTable("s2", "cpu", 0)
	if cfg.ReplicationFactor != 3 || len(cfg.MetadataServers) != 3 || cfg.MetadataServers[0] != "s2" {
		t.Fatalf("rf %d, metadata servers %v: want 3, coordinator s2 first", cfg.ReplicationFactor, cfg.MetadataServers)
	}
	_, f, err := c.nodes["s2"].backendMetadata("cpu", "")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, pl := range f.Partitions[0].Servers {
		if seen[pl.ServerID] || c.nodes[pl.ServerID] == nil {
			t.Fatalf("servers %+v: a server twice or unknown", f.Partitions[0].Servers)
		}
		seen[pl.ServerID] = true
	}
	if len(seen) != 3 {
		t.Fatalf("partition on %d servers, want 3", len(seen))
	}
	// Every assigned server creates its replica once it sees the table.
	for id := range seen {
		waitFor(t, id+" creating its replica", func() bool { return len(c.nodes[id].store.Replicas()) == 1 })
	}
	cl := c.client("s3")
	r := cl.do("POST", "/api/v1/tables", []byte(`{"name":"big","replication_factor":5}`))
	if r.status != 400 || !strings.Contains(string(r.body), "exceeds the 4 live server") {
		t.Fatalf("rf 5 on 4 servers: %d %s", r.status, r.body)
	}
	r = cl.do("POST", "/api/v1/tables", []byte(`{"name":"cpu"}`))
	if r.status != 409 {
		t.Fatalf("existing table: %d %s, want 409", r.status, r.body)
	}
	// The cluster endpoint lists every live server.
	var cr api.ClusterResponse
	cl.must(200, cl.do("GET", "/api/v1/cluster", nil), &cr)
	if len(cr.Servers) != 4 {
		t.Fatalf("cluster lists %d servers, want 4", len(cr.Servers))
	}
}

// TestClusterSecret: with a cluster secret, internal calls without it get
// 401, and the cluster, whose servers send it, works.
func TestClusterSecret(t *testing.T) {
	c := startCluster(t, 3, func(cfg *Config) { cfg.ClusterSecret = "s3cret" })
	c.createTable("s1", "cpu", 3)
	err := c.rpc.Call(context.Background(), c.nodes["s2"].Addr(), wire.PathMetadataFetch, wire.FetchMetadataRequest{Table: "cpu"}, nil)
	if !errors.Is(err, rpc.ErrUnauthorized) {
		t.Fatalf("fetch without the secret: %v, want 401", err)
	}
	if _, err := c.nodes["s3"].RequestChange(context.Background(), "cpu", toggle); err != nil {
		t.Fatalf("change inside the cluster: %v", err)
	}
}

// backendMetadata is a test shortcut to the current (or a named) METADATA.
func (n *Node) backendMetadata(table, txnID string) (metadata.TableConfig, *metadata.File, error) {
	return n.front.Metadata(context.Background(), table, txnID)
}

// TestClusterReconcileCatchesMissedNotification: a server whose watch misses
// every notification still reaches the committed txn, its replicas created
// and discovered, through the periodic reconciliation (rule 10).
func TestClusterReconcileCatchesMissedNotification(t *testing.T) {
	c := startCluster(t, 3, func(cfg *Config) {
		if cfg.ID == "s3" {
			cfg.knobs.MissEvent = func(metadata.TableEvent) bool { return true }
			cfg.ReconcileInterval = 100 * time.Millisecond
		}
	})
	cfg := c.createTable("s1", "cpu", 3)
	f, err := c.nodes["s2"].RequestChange(context.Background(), "cpu", toggle)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "s3 reaching the change", func() bool { return c.nodes["s3"].syncedSeq("cpu") == f.TxnSeq })
	if !c.holds("s3", "cpu", f.TxnID) && slices.Contains(cfg.MetadataServers, "s3") {
		t.Fatal("s3, a metadata server, did not keep the file it caught up on")
	}
	waitFor(t, "s3's replica discovered", func() bool {
		sts := c.nodes["s3"].ReplicaStatuses()
		return len(sts) == 1 && sts[0].TxnSeq == f.TxnSeq && sts[0].Discovery.Status == metadata.StatusServe
	})
}
