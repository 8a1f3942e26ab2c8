package embedetcd

import (
	"context"
	"testing"
	"time"

	"github.com/tsdb/tsdb/internal/diskusage"
)

func TestStartPutGet(t *testing.T) {
	e, err := Start(Config{Dir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cli, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("got %v", resp.Kvs)
	}
}

// TestWALSegmentsSmall: the data directory of an idle embedded etcd holds
// WAL segments of walSegmentBytes, not etcd's 64 MB (counted in allocated
// blocks, as du does: etcd preallocates them).
func TestWALSegmentsSmall(t *testing.T) {
	dir := t.TempDir()
	e, err := Start(Config{Dir: dir, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	u, err := diskusage.Of(dir, ".wal")
	if err != nil {
		t.Fatal(err)
	}
	blocks := u.Allocated
	if blocks == 0 || blocks > 2*walSegmentBytes {
		t.Fatalf("the WAL takes %d bytes on disk; want some, at most two segments of %d", blocks, walSegmentBytes)
	}
}
