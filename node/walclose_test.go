package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/internal/diskusage"
	"github.com/tsdb/tsdb/partition"
)

// TestStopLeavesNoWAL (issue 17 item 5): a server stopped by its normal
// shutdown path (Stop, what SIGTERM runs) leaves no WAL of any size in its
// partition store and smear queue: before, each kept its WAL files,
// preallocated to 110% of the memtable (about 70 MiB and 35 MiB).
func TestStopLeavesNoWAL(t *testing.T) {
	e := testEtcd(t)
	dir := t.TempDir()
	n := startNode(t, e, "s1", dir)
	c := &client{t: t, base: n.URL()}
	createTable(c, "metrics")
	for b := range 10 {
		var lp strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&lp, "cpu,host=h%03d a=%d,b=1.5 %d\n", i, b, t0+int64(b)*int64(time.Second))
		}
		if r := c.do("POST", "/write?db=metrics&precision=ns", []byte(lp.String())); r.status != 204 {
			t.Fatalf("write: %d %s", r.status, r.body)
		}
	}
	stopNode(t, n)
	for _, sub := range []string{"pebble", "smear"} {
		if b := walBlocks(t, filepath.Join(dir, sub)); b > 16<<10 {
			t.Errorf("%s: %d B of WAL left after Stop, want at most a few KiB", sub, b)
		}
	}
}

// TestStartRefusesUnknownStoreFormat (issue 17 item 6): a server whose
// partition store is marked with a format version this build does not
// support fails to start with the store's error, naming the path and the
// versions.
func TestStartRefusesUnknownStoreFormat(t *testing.T) {
	e := testEtcd(t)
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "pebble")
	s, err := partition.Open(partition.Options{Dir: storeDir, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Set([]byte{0x00}, []byte("99"), pebble.Sync); err != nil { // the format marker: a version no build has
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Start(ctx, Config{ID: "s1", Listen: "127.0.0.1:0", DataDir: dir, EtcdEndpoints: []string{e.Endpoint()},
		NoPresplit: true, NoRebalance: true, NoSmear: true, HTTP: testHTTP})
	if err == nil {
		stopNode(t, n)
		t.Fatal("a server started on a store of format version 99")
	}
	if !errors.Is(err, partition.ErrUnknownFormat) || !strings.Contains(err.Error(), storeDir) ||
		!strings.Contains(err.Error(), "format version 99") || !strings.Contains(err.Error(), "supports version 1") {
		t.Fatalf("Start = %v; want ErrUnknownFormat naming %s and both versions", err, storeDir)
	}
	t.Logf("Start: %v", err)
}

// walBlocks returns the bytes allocated to the .log files of dir.
func walBlocks(t *testing.T, dir string) int64 {
	t.Helper()
	u, err := diskusage.Of(dir, ".log")
	if err != nil {
		t.Fatal(err)
	}
	return u.Allocated
}
