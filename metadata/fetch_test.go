package metadata_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// missedByM3 creates "cpu" on [m1 m2 m3] and commits one change while m3
// is down, so m3 holds neither file. It returns the current config and file.
func missedByM3(t *testing.T, cl *cluster) (metadata.TableConfig, *metadata.File) {
	t.Helper()
	cl.peers.setDown(errPeerDown, "m3")
	_, f := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	next := cl.toggle(t, "m1", f)
	cl.peers.setDown(nil, "m3")
	if cl.holds("m3", "cpu", f.TxnID) || cl.holds("m3", "cpu", next.TxnID) {
		t.Fatal("m3 stored a file while down")
	}
	cfg, _ := cl.config(t, "cpu")
	return cfg, next
}

func TestLoadFetchesMissingFile(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3")
	cfg, want := missedByM3(t, cl)
	ctx := testCtx(t)
	got, f, err := cl.c["m3"].Load(ctx, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, cfg) || !reflect.DeepEqual(f, want) {
		t.Fatalf("Load: %+v %+v", got, f)
	}
	// A metadata server keeps what it fetched, durably, before answering.
	enc, err := cl.peers.files["m3"].Get("cpu", cfg.MetadataTxnID)
	if err != nil {
		t.Fatalf("m3 did not store the fetched file: %v", err)
	}
	if metadata.Checksum(enc) != cfg.MetadataChecksum {
		t.Fatal("m3 stored other bytes than the committed file")
	}
	// The next Load is local.
	before := cl.peers.fetches.Load()
	if _, _, err := cl.c["m3"].Load(ctx, "cpu"); err != nil {
		t.Fatal(err)
	}
	if n := cl.peers.fetches.Load() - before; n != 0 {
		t.Fatalf("a second Load fetched %d times", n)
	}
}

// TestLoadOnFrontEnd: a server that is not a metadata server of the table
// fetches the current file but does not store it.
func TestLoadOnFrontEnd(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "f1")
	cfg, f := cl.create(t, "m1", "cpu", "m1", "m2", "m3")
	got, lf, err := cl.c["f1"].Load(testCtx(t), "cpu")
	if err != nil || got.MetadataTxnID != cfg.MetadataTxnID || !reflect.DeepEqual(lf, f) {
		t.Fatalf("Load on a front end: %+v %v", got, err)
	}
	if cl.holds("f1", "cpu", cfg.MetadataTxnID) {
		t.Fatal("a front end stored a file of a table it is no metadata server of")
	}
}

// TestLoadVerifiesFetchedCopies: a damaged answer is refused, the error
// names every server's failure, and a good copy from another server wins.
func TestLoadVerifiesFetchedCopies(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "f1")
	cfg, want := missedByM3(t, cl)
	ctx := testCtx(t)
	cl.peers.setCorrupt("m1", true)
	cl.peers.setDown(errPeerDown, "m2")
	_, _, err := cl.c["m3"].Load(ctx, "cpu")
	if !errors.Is(err, metadata.ErrFileNotFound) {
		t.Fatalf("got %v, want ErrFileNotFound", err)
	}
	if errors.Is(err, metadata.ErrChecksum) || errors.Is(err, errPeerDown) {
		t.Fatalf("a peer's error leaked into the error chain: %v", err)
	}
	for _, s := range []string{"m1: metadata: checksum mismatch", "m2: peer down", cfg.MetadataTxnID} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not mention %q", err, s)
		}
	}
	if cl.holds("m3", "cpu", cfg.MetadataTxnID) {
		t.Fatal("m3 stored a damaged copy")
	}
	// With m2 back, the good copy wins whatever order the servers are
	// tried in (f1, a front end, fetches on every Load).
	cl.peers.setDown(nil, "m2")
	for range 8 {
		_, f, err := cl.c["f1"].Load(ctx, "cpu")
		if err != nil || !reflect.DeepEqual(f, want) {
			t.Fatalf("Load with one good copy: %v", err)
		}
	}
	if _, _, err := cl.c["m3"].Load(ctx, "cpu"); err != nil {
		t.Fatal(err)
	}
	if enc, err := cl.peers.files["m3"].Get("cpu", cfg.MetadataTxnID); err != nil || metadata.Checksum(enc) != cfg.MetadataChecksum {
		t.Fatalf("m3 stored %v", err)
	}
}

// TestLoadFetchBounded: a peer that never answers costs FetchTimeout, and
// a caller whose ctx ends gets ctx's error, not ErrFileNotFound.
func TestLoadFetchBounded(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3")
	missedByM3(t, cl)
	m3 := cl.c["m3"]
	m3.FetchTimeout = 50 * time.Millisecond
	cl.peers.setHang("m1")
	for range 4 {
		if _, _, err := m3.Load(testCtx(t), "cpu"); err != nil {
			t.Fatalf("one hanging peer of two: %v", err)
		}
		// Forget the copy so the next Load fetches again.
		removeFile(t, cl, "m3", "cpu")
	}
	cl.peers.setHang("m2")
	_, _, err := m3.Load(testCtx(t), "cpu")
	if !errors.Is(err, metadata.ErrFileNotFound) || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("two hanging peers: %v", err)
	}
	m3.FetchTimeout = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := m3.Load(ctx, "cpu"); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, metadata.ErrFileNotFound) {
		t.Fatalf("caller's ctx ended: %v", err)
	}
}

// removeFile deletes server's copy of the table's current file.
func removeFile(t *testing.T, cl *cluster, server, table string) {
	t.Helper()
	cfg, _ := cl.config(t, table)
	if err := os.Remove(filepath.Join(cl.peers.dirs[server], table, cfg.MetadataTxnID)); err != nil {
		t.Fatal(err)
	}
}

// TestChangeFetchesMissingBase: a metadata server that missed the current
// txn can still coordinate the next change.
func TestChangeFetchesMissingBase(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3")
	cfg, f := missedByM3(t, cl)
	next := cl.toggle(t, "m3", f)
	if next.ParentTxnID != cfg.MetadataTxnID || next.TxnSeq != cfg.MetadataTxnSeq+1 {
		t.Fatalf("file %+v", next)
	}
	if !cl.holds("m3", "cpu", cfg.MetadataTxnID) || !cl.holds("m3", "cpu", next.TxnID) {
		t.Fatal("m3 lacks the fetched base or the new file")
	}
}

// TestRetryFetchesCommittedFile: a retried Change reaching a metadata
// server that holds neither the committed file nor its base fetches the
// committed file and checks it was built on the requested base.
func TestRetryFetchesCommittedFile(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "m4", "m5")
	cl.peers.setDown(errPeerDown, "m4", "m5")
	cfg, f := cl.create(t, "m1", "cpu", "m1", "m2", "m3", "m4", "m5")
	txn, op := metadata.NewTxnID(), offline(f, true)
	want, err := cl.c["m1"].Change(testCtx(t), "cpu", cfg.MetadataTxnID, txn, op)
	if err != nil {
		t.Fatal(err)
	}
	cl.peers.setDown(nil, "m4", "m5")
	got, err := cl.c["m4"].Change(testCtx(t), "cpu", cfg.MetadataTxnID, txn, op)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("retry on m4: %v", err)
	}
	if !cl.holds("m4", "cpu", txn) {
		t.Fatal("m4 did not keep the committed file")
	}
	_, err = cl.c["m5"].Change(testCtx(t), "cpu", metadata.NewTxnID(), txn, op)
	if !errors.Is(err, metadata.ErrConflict) || !strings.Contains(err.Error(), "is committed on base "+cfg.MetadataTxnID) {
		t.Fatalf("retry with another base: %v", err)
	}
}

func TestCurrent(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3", "f1")
	cfg, _ := missedByM3(t, cl)
	ctx := testCtx(t)
	for _, minSeq := range []uint64{0, cfg.MetadataTxnSeq} {
		got, enc, err := cl.c["m3"].Current(ctx, "cpu", minSeq)
		if err != nil || !reflect.DeepEqual(got, cfg) || metadata.Checksum(enc) != cfg.MetadataChecksum {
			t.Fatalf("Current(min %d): %+v %v", minSeq, got, err)
		}
	}
	if !cl.holds("m3", "cpu", cfg.MetadataTxnID) {
		t.Fatal("Current on a metadata server did not keep the fetched file")
	}
	_, _, err := cl.c["m3"].Current(ctx, "cpu", cfg.MetadataTxnSeq+1)
	if !errors.Is(err, metadata.ErrStale) || !strings.Contains(err.Error(), "txnseq 3 asked") {
		t.Fatalf("newer txnseq asked: %v", err)
	}
	if _, enc, err := cl.c["f1"].Current(ctx, "cpu", 1); err != nil || metadata.Checksum(enc) != cfg.MetadataChecksum {
		t.Fatalf("Current on a front end: %v", err)
	}
	if cl.holds("f1", "cpu", cfg.MetadataTxnID) {
		t.Fatal("a front end kept the file")
	}
	if _, _, err := cl.c["m3"].Current(ctx, "nope", 0); !errors.Is(err, metadata.ErrTableNotFound) {
		t.Fatalf("unknown table: %v", err)
	}
}

// TestLocalFileNeverFetches: what a server serves to its peers is its own
// copy only.
func TestLocalFileNeverFetches(t *testing.T) {
	cl := newCluster(t, "m1", "m2", "m3")
	cfg, _ := missedByM3(t, cl)
	before := cl.peers.fetches.Load()
	if _, err := cl.c["m3"].LocalFile("cpu", cfg.MetadataTxnID); !errors.Is(err, metadata.ErrFileNotFound) {
		t.Fatalf("m3: %v", err)
	}
	if cl.peers.fetches.Load() != before {
		t.Fatal("LocalFile fetched from a peer")
	}
	enc, err := cl.c["m1"].LocalFile("cpu", cfg.MetadataTxnID)
	if err != nil || metadata.Checksum(enc) != cfg.MetadataChecksum {
		t.Fatalf("m1: %v", err)
	}
	want, _ := cl.peers.files["m1"].Get("cpu", cfg.MetadataTxnID)
	if !bytes.Equal(enc, want) {
		t.Fatal("LocalFile answered other bytes than the store holds")
	}
}
