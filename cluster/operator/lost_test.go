package operator

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/embedetcd"
)

func TestLostMarks(t *testing.T) {
	e, err := embedetcd.Start(embedetcd.Config{Dir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	m := LostMark{Server: "s3", Table: "t", PartitionID: uuid.New(), Placement: uuid.New(), Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := MarkLost(ctx, cli, "/x/", m); err != nil {
		t.Fatal(err)
	}
	if err := MarkLost(ctx, cli, "/x/", LostMark{Server: "s3"}); err == nil {
		t.Fatal("a mark without a placement was stored")
	}
	if _, err := cli.Put(ctx, LostPrefix("/x/")+uuid.NewString(), "not json"); err != nil {
		t.Fatal(err)
	}
	got, err := Lost(ctx, cli, "/x/")
	if err != nil || len(got) != 1 || got[m.Placement] != m {
		t.Fatalf("Lost = %+v, %v; want only %+v", got, err, m)
	}
	if err := ClearLost(ctx, cli, "/x/", m.Placement); err != nil {
		t.Fatal(err)
	}
	if got, err := Lost(ctx, cli, "/x/"); err != nil || len(got) != 0 {
		t.Fatalf("after ClearLost: %+v, %v", got, err)
	}
}
