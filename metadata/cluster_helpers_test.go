package metadata_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/metadata"
)

// cluster is a set of servers on one real etcd: each has its own FileStore
// and Committer, and they reach each other through one fakePeers (the
// servers listed in a table's metadata_servers act as its metadata
// servers; the others are plain front ends).
type cluster struct {
	cli   *clientv3.Client
	store metadata.Store
	peers *fakePeers
	c     map[string]*metadata.Committer
}

func newCluster(t testing.TB, servers ...string) *cluster {
	t.Helper()
	cli := startEtcd(t)
	store := metadata.NewEtcdStore(cli, "")
	peers := newFakePeers(t, servers...)
	cl := &cluster{cli: cli, store: store, peers: peers, c: map[string]*metadata.Committer{}}
	for _, s := range servers {
		cl.c[s] = &metadata.Committer{
			Store: store, Files: peers.files[s], Peers: peers, Self: s,
			// Wait for every peer that answers: a peer that is down
			// answers at once, so which servers hold a file is exact.
			StragglerWait:  10 * time.Second,
			ResolveTimeout: 5 * time.Second,
			FetchTimeout:   5 * time.Second,
		}
	}
	return cl
}

// create creates table name on coordinator by with the given metadata
// servers.
func (cl *cluster) create(t testing.TB, by, name string, metadataServers ...string) (metadata.TableConfig, *metadata.File) {
	t.Helper()
	cfg, op := createArgs(name, 1, metadataServers...)
	got, f, err := cl.c[by].Create(testCtx(t), cfg, op)
	if err != nil {
		t.Fatal(err)
	}
	return got, f
}

// toggle commits, on coordinator by, a SET_OFFLINE that flips the first
// partition of f (the current file) and returns the new file.
func (cl *cluster) toggle(t testing.TB, by string, f *metadata.File) *metadata.File {
	t.Helper()
	next, err := cl.c[by].Change(testCtx(t), f.Table, f.TxnID, metadata.NewTxnID(), offline(f, !f.Partitions[0].Offline))
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// config reads the table's TableConfig and revision from etcd.
func (cl *cluster) config(t testing.TB, table string) (metadata.TableConfig, int64) {
	t.Helper()
	cfg, rev, err := cl.store.GetTable(testCtx(t), table)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, rev
}

// holds reports whether server stores (table, txnID) locally.
func (cl *cluster) holds(server, table, txnID string) bool {
	_, err := cl.peers.files[server].Get(table, txnID)
	return err == nil
}
