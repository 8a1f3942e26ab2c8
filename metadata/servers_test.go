package metadata_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tsdb/tsdb/metadata"
)

// countingStore counts the calls a Committer makes to its Store.
type countingStore struct {
	metadata.Store
	get, list, create, update atomic.Int64
}

func (s *countingStore) GetTable(ctx context.Context, name string) (metadata.TableConfig, int64, error) {
	s.get.Add(1)
	return s.Store.GetTable(ctx, name)
}

func (s *countingStore) ListTables(ctx context.Context) ([]metadata.TableConfig, error) {
	s.list.Add(1)
	return s.Store.ListTables(ctx)
}

func (s *countingStore) CreateTable(ctx context.Context, cfg metadata.TableConfig) error {
	s.create.Add(1)
	return s.Store.CreateTable(ctx, cfg)
}

func (s *countingStore) UpdateTable(ctx context.Context, cfg metadata.TableConfig, rev int64) error {
	s.update.Add(1)
	return s.Store.UpdateTable(ctx, cfg, rev)
}

// counts returns the calls as {get, list, create, update}.
func (s *countingStore) counts() [4]int64 {
	return [4]int64{s.get.Load(), s.list.Load(), s.create.Load(), s.update.Load()}
}

// conflictStore loses every CAS.
type conflictStore struct{ metadata.Store }

func (conflictStore) UpdateTable(_ context.Context, cfg metadata.TableConfig, rev int64) error {
	return errors.Join(metadata.ErrConflict, errors.New("forced conflict"))
}

func TestJoinMetadataServer(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "m4")
	_, f := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	next := cl.toggle(t, "m1", f)
	ctx := testCtx(t)
	got, err := cl.c["m4"].JoinMetadataServer(ctx, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	stored, rev := cl.config(t, "cpu")
	if !reflect.DeepEqual(got, stored) || !reflect.DeepEqual(got.MetadataServers, []string{"m1", "m2", "m3", "m4"}) ||
		got.MetadataTxnID != next.TxnID {
		t.Fatalf("joined config %+v, etcd %+v", got, stored)
	}
	if !cl.holds("m4", "cpu", next.TxnID) {
		t.Fatal("m4 joined without the current file")
	}
	// Joining again changes nothing.
	again, err := cl.c["m4"].JoinMetadataServer(ctx, "cpu")
	if _, rev2 := cl.config(t, "cpu"); err != nil || rev2 != rev || !reflect.DeepEqual(again, got) {
		t.Fatalf("second join: %+v %v (revision %d → %d)", again, err, rev, rev2)
	}
	// The new metadata server coordinates and stores like the others.
	last := cl.toggle(t, "m4", next)
	for _, s := range []string{"m1", "m2", "m3", "m4"} {
		if !cl.holds(s, "cpu", last.TxnID) {
			t.Fatalf("%s lacks the file m4 committed", s)
		}
	}
}

// TestJoinMetadataServerListedButMissingFile: a listed server that lacks
// the current file fetches it when asked to join.
func TestJoinMetadataServerListedButMissingFile(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3")
	cfg, _ := missedByM3(t, cl)
	got, err := cl.c["m3"].JoinMetadataServer(testCtx(t), "cpu")
	if err != nil || !reflect.DeepEqual(got, cfg) {
		t.Fatalf("join: %+v %v", got, err)
	}
	if !cl.holds("m3", "cpu", cfg.MetadataTxnID) {
		t.Fatal("m3 still lacks the current file")
	}
}

// TestJoinMetadataServerStartsOver: a commit between the join's read and
// its CAS makes the CAS lose; the join starts over, fetches the new file
// and joins on it.
func TestJoinMetadataServerStartsOver(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "m4")
	_, f := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	var committed *metadata.File
	counting := &countingStore{Store: &hookStore{Store: cl.store, before: func() { committed = cl.toggle(t, "m1", f) }}}
	cl.c["m4"].Store = counting
	got, err := cl.c["m4"].JoinMetadataServer(testCtx(t), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if got.MetadataTxnID != committed.TxnID || !slices.Contains(got.MetadataServers, "m4") {
		t.Fatalf("joined on %s, the current txn is %s", got.MetadataTxnID, committed.TxnID)
	}
	if n := counting.update.Load(); n != 2 {
		t.Fatalf("%d CASes, want the lost one and the winning one", n)
	}
	if !cl.holds("m4", "cpu", committed.TxnID) {
		t.Fatal("m4 lacks the file it joined on")
	}
}

// TestJoinMetadataServerConcurrent: two servers joining at once both end
// up listed; the one that loses the CAS starts over.
func TestJoinMetadataServerConcurrent(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "m4", "m5")
	cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []string{"m4", "m5"} {
		wg.Go(func() { _, errs[i] = cl.c[s].JoinMetadataServer(testCtx(t), "cpu") })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	got, _ := cl.config(t, "cpu")
	servers := slices.Sorted(slices.Values(got.MetadataServers))
	if !reflect.DeepEqual(servers, []string{"m1", "m2", "m3", "m4", "m5"}) {
		t.Fatalf("metadata servers %v", got.MetadataServers)
	}
}

// TestJoinMetadataServerAmbiguousCAS: the CAS lands but its reply is lost;
// re-reading shows the join happened.
func TestJoinMetadataServerAmbiguousCAS(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "m4")
	cfg, _ := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	ls := &lossyStore{Store: cl.store}
	ls.set(1, 0, nil)
	counting := &countingStore{Store: ls}
	cl.c["m4"].Store = counting
	got, err := cl.c["m4"].JoinMetadataServer(testCtx(t), "cpu")
	if err != nil || !reflect.DeepEqual(got.MetadataServers, []string{"m1", "m2", "m3", "m4"}) || got.MetadataTxnID != cfg.MetadataTxnID {
		t.Fatalf("join: %+v %v", got, err)
	}
	if n := counting.update.Load(); n != 1 {
		t.Fatalf("%d CASes; the lost reply must be resolved by re-reading", n)
	}
}

func TestJoinMetadataServerGivesUp(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "m4")
	cfg, _ := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	m4 := cl.c["m4"]
	m4.ListChangeAttempts = 3
	m4.Store = conflictStore{Store: cl.store}
	_, err := m4.JoinMetadataServer(testCtx(t), "cpu")
	if !errors.Is(err, metadata.ErrConflict) || !strings.Contains(err.Error(), "gave up after 3 rounds") {
		t.Fatalf("always losing: %v", err)
	}
	// Nobody can supply the file: no join.
	m4.Store = cl.store
	cl.peers.setDown(errPeerDown, "m1", "m2", "m3")
	if err := os.Remove(filepath.Join(cl.peers.dirs["m4"], "cpu", cfg.MetadataTxnID)); err != nil {
		t.Fatal(err)
	}
	_, err = m4.JoinMetadataServer(testCtx(t), "cpu")
	if !errors.Is(err, metadata.ErrFileNotFound) {
		t.Fatalf("no source: %v", err)
	}
	if got, _ := cl.config(t, "cpu"); !reflect.DeepEqual(got, cfg) {
		t.Fatalf("TableConfig changed: %+v", got)
	}
	// An unknown table fails at once.
	if _, err := m4.JoinMetadataServer(testCtx(t), "nope"); !errors.Is(err, metadata.ErrTableNotFound) {
		t.Fatalf("unknown table: %v", err)
	}
}

// TestChangeRacingJoinConflicts: a Change whose read preceded a join loses
// its CAS (the ModRevision moved), and the join's list survives.
func TestChangeRacingJoinConflicts(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "m4")
	cfg, f := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	ctx := testCtx(t)
	cl.c["m1"].BeforeCAS = func(table, _ string) error {
		_, err := cl.c["m4"].JoinMetadataServer(ctx, table)
		return err
	}
	_, err := cl.c["m1"].Change(ctx, "cpu", cfg.MetadataTxnID, metadata.NewTxnID(), offline(f, true))
	if !errors.Is(err, metadata.ErrConflict) {
		t.Fatalf("change racing a join: %v", err)
	}
	got, _ := cl.config(t, "cpu")
	if got.MetadataTxnID != cfg.MetadataTxnID || !reflect.DeepEqual(got.MetadataServers, []string{"m1", "m2", "m3", "m4"}) {
		t.Fatalf("TableConfig %+v", got)
	}
}

func TestRemoveMetadataServer(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3")
	cfg, _ := missedByM3(t, cl)
	ctx := testCtx(t)
	// Runs on m2; the remaining [m2 m3] need both, so m3 gets the file.
	got, err := cl.c["m2"].RemoveMetadataServer(ctx, "cpu", "m1")
	if err != nil {
		t.Fatal(err)
	}
	stored, rev := cl.config(t, "cpu")
	if !reflect.DeepEqual(got, stored) || !reflect.DeepEqual(got.MetadataServers, []string{"m2", "m3"}) || got.MetadataTxnID != cfg.MetadataTxnID {
		t.Fatalf("after removal %+v, etcd %+v", got, stored)
	}
	if !cl.holds("m3", "cpu", cfg.MetadataTxnID) {
		t.Fatal("m1 left before the remaining majority held the current file")
	}
	// Removing it again changes nothing.
	again, err := cl.c["m2"].RemoveMetadataServer(ctx, "cpu", "m1")
	if _, rev2 := cl.config(t, "cpu"); err != nil || rev2 != rev || !reflect.DeepEqual(again, got) {
		t.Fatalf("second removal: %+v %v", again, err)
	}
}

// TestRemoveMetadataServerNeedsRemainingMajority: with the only other
// remaining server down, the removal cannot make a majority of the rest
// hold the file, and the list does not change.
func TestRemoveMetadataServerNeedsRemainingMajority(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3")
	cfg, _ := missedByM3(t, cl)
	cl.peers.setDown(errPeerDown, "m3")
	m2 := cl.c["m2"]
	m2.ListChangeAttempts = 2
	_, err := m2.RemoveMetadataServer(testCtx(t), "cpu", "m1")
	if !errors.Is(err, metadata.ErrNoQuorum) || !strings.Contains(err.Error(), "gave up after 2 rounds") {
		t.Fatalf("got %v", err)
	}
	if got, _ := cl.config(t, "cpu"); !reflect.DeepEqual(got, cfg) {
		t.Fatalf("TableConfig changed: %+v", got)
	}
}

// TestRemoveMetadataServerAnywhere: a front end can remove a server (it
// fetches the file without keeping it), a server can remove itself, and
// the last one cannot go.
func TestRemoveMetadataServerAnywhere(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "f1")
	cfg, _ := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	ctx := testCtx(t)
	got, err := cl.c["f1"].RemoveMetadataServer(ctx, "cpu", "m1")
	if err != nil || !reflect.DeepEqual(got.MetadataServers, []string{"m2", "m3"}) {
		t.Fatalf("removal by a front end: %+v %v", got, err)
	}
	if cl.holds("f1", "cpu", cfg.MetadataTxnID) {
		t.Fatal("the front end kept the file")
	}
	got, err = cl.c["m2"].RemoveMetadataServer(ctx, "cpu", "m2")
	if err != nil || !reflect.DeepEqual(got.MetadataServers, []string{"m3"}) {
		t.Fatalf("m2 removing itself: %+v %v", got, err)
	}
	_, err = cl.c["m3"].RemoveMetadataServer(ctx, "cpu", "m3")
	if !errors.Is(err, metadata.ErrInvalidOp) || !strings.Contains(err.Error(), `"m3" is the only metadata server of "cpu"`) {
		t.Fatalf("removing the last one: %v", err)
	}
	if got, _ := cl.config(t, "cpu"); !reflect.DeepEqual(got.MetadataServers, []string{"m3"}) {
		t.Fatalf("metadata servers %v", got.MetadataServers)
	}
}

// TestRemoveMetadataServerStartsOver: a commit between the removal's store
// and its CAS makes the CAS lose; the next round stores the new file on the
// remaining servers and removes on it.
func TestRemoveMetadataServerStartsOver(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3")
	_, f := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	var committed *metadata.File
	cl.c["m2"].Store = &hookStore{Store: cl.store, before: func() {
		cl.peers.setDown(errPeerDown, "m3") // m3 misses the commit
		committed = cl.toggle(t, "m1", f)
		cl.peers.setDown(nil, "m3")
	}}
	got, err := cl.c["m2"].RemoveMetadataServer(testCtx(t), "cpu", "m1")
	if err != nil || got.MetadataTxnID != committed.TxnID || !reflect.DeepEqual(got.MetadataServers, []string{"m2", "m3"}) {
		t.Fatalf("removal: %+v %v", got, err)
	}
	if !cl.holds("m3", "cpu", committed.TxnID) {
		t.Fatal("the remaining servers do not all hold the current file")
	}
}
