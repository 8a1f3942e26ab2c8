package metadata_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// TestBeforeCASAbortsCommit: a coordinator that dies between the majority
// store and the CAS commits nothing; its files stay as orphans until the
// sweep removes them.
func TestBeforeCASAbortsCommit(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3")
	m1 := cl.c["m1"]
	died := errors.New("coordinator died")
	var calls [][2]string // the hook runs on the committing goroutine
	m1.BeforeCAS = func(table, txnID string) error {
		calls = append(calls, [2]string{table, txnID})
		return died
	}
	ctx := testCtx(t)
	cfg, op := createArgs("cpu", 1, "m1", "m2", "m3")
	if _, _, err := m1.Create(ctx, cfg, op); !errors.Is(err, died) {
		t.Fatalf("create: %v", err)
	}
	if _, _, err := cl.store.GetTable(ctx, "cpu"); !errors.Is(err, metadata.ErrTableNotFound) {
		t.Fatalf("the aborted create made a table: %v", err)
	}
	orphanCreate := calls[0][1]
	for _, s := range []string{"m1", "m2", "m3"} {
		if !cl.holds(s, "cpu", orphanCreate) {
			t.Fatalf("%s lacks the stored file: the hook ran before the majority store", s)
		}
	}

	m1.BeforeCAS = nil
	created, f := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	m1.BeforeCAS = func(table, txnID string) error {
		calls = append(calls, [2]string{table, txnID})
		return died
	}
	txn := metadata.NewTxnID()
	if _, err := m1.Change(ctx, "cpu", created.MetadataTxnID, txn, offline(f, true)); !errors.Is(err, died) || errors.Is(err, metadata.ErrConflict) {
		t.Fatalf("change: %v", err)
	}
	if want := [2]string{"cpu", txn}; len(calls) != 2 || calls[1] != want {
		t.Fatalf("hook calls %v", calls)
	}
	if got, _ := cl.config(t, "cpu"); !reflect.DeepEqual(got, created) {
		t.Fatalf("the aborted change moved TableConfig: %+v", got)
	}
	// The orphans stay until the sweep, which keeps the committed chain.
	current := func(string) (string, bool) { return created.MetadataTxnID, true }
	for _, s := range []string{"m1", "m2", "m3"} {
		fs := cl.peers.files[s]
		if n, err := fs.Sweep(time.Now(), time.Hour, 3, current); err != nil || n != 0 {
			t.Fatalf("%s: sweep within the grace period deleted %d: %v", s, n, err)
		}
		if n, err := fs.Sweep(time.Now().Add(2*time.Hour), time.Hour, 3, current); err != nil || n != 2 {
			t.Fatalf("%s: sweep after the grace period deleted %d, want the 2 orphans: %v", s, n, err)
		}
		if names, _ := fs.List("cpu"); !slices.Equal(names, []string{created.MetadataTxnID}) {
			t.Fatalf("%s keeps %v", s, names)
		}
	}
	// Once the coordinator is healthy the same change commits.
	m1.BeforeCAS = nil
	if _, err := m1.Change(ctx, "cpu", created.MetadataTxnID, metadata.NewTxnID(), offline(f, true)); err != nil {
		t.Fatal(err)
	}
}

// TestCommitRoundTrips: an uncontended commit costs the fewest etcd calls
// the protocol allows: Create one CreateTable, Change one GetTable and one
// UpdateTable.
func TestCommitRoundTrips(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3")
	counting := &countingStore{Store: cl.store}
	m1 := cl.c["m1"]
	m1.Store = counting
	_, f := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	if got, want := counting.counts(), [4]int64{0, 0, 1, 0}; got != want {
		t.Fatalf("Create: {get list create update} = %v, want %v", got, want)
	}
	for i := range 3 {
		before := counting.counts()
		f = cl.toggle(t, "m1", f)
		after := counting.counts()
		if d := [4]int64{after[0] - before[0], after[1] - before[1], after[2] - before[2], after[3] - before[3]}; d != [4]int64{1, 0, 0, 1} {
			t.Fatalf("Change %d: {get list create update} = %v, want [1 0 0 1]", i, d)
		}
	}
	if n := cl.peers.fetches.Load(); n != 0 {
		t.Fatalf("%d fetches with every file in place", n)
	}
}

// BenchmarkCommitEtcd measures an uncontended Change on a real embedded
// etcd with 3 metadata servers, each storing durably in its own FileStore
// (in-process peers), and reports the latency percentiles.
func BenchmarkCommitEtcd(b *testing.B) {
	cl := newCluster(b, "m1", "m2", "m3")
	m1 := cl.c["m1"]
	m1.StragglerWait = 0 // the default
	_, f := cl.create(b, "m1", "cpu", "m1", "m2", "m3")
	ctx := testCtx(b)
	lat := make([]time.Duration, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		txn := metadata.NewTxnID()
		start := time.Now()
		next, err := m1.Change(ctx, "cpu", f.TxnID, txn, offline(f, !f.Partitions[0].Offline))
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		f = next
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
}
