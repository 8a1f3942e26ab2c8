package embedetcd

import (
	"context"
	"testing"
	"time"
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
