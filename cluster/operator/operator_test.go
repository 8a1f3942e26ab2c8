package operator

import (
	"context"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/embedetcd"
)

func TestDrainMarksAndRebalanceRequests(t *testing.T) {
	e, err := embedetcd.Start(embedetcd.Config{Dir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	since, err := SetDraining(ctx, cli, "/x/", "s1", true, t0)
	if err != nil || !since.Equal(t0) {
		t.Fatalf("first drain: %v %v", since, err)
	}
	// A repeated drain keeps the first mark's time.
	since, err = SetDraining(ctx, cli, "/x/", "s1", true, t0.Add(time.Hour))
	if err != nil || !since.Equal(t0) {
		t.Fatalf("repeated drain: %v %v, want %v", since, err, t0)
	}
	if _, err := SetDraining(ctx, cli, "/x/", "s2", true, t0); err != nil {
		t.Fatal(err)
	}
	got, err := Draining(ctx, cli, "/x")
	if err != nil || len(got) != 2 || !got["s1"].Equal(t0) {
		t.Fatalf("Draining = %v, %v", got, err)
	}
	if _, err := SetDraining(ctx, cli, "/x/", "s1", false, t0); err != nil {
		t.Fatal(err)
	}
	got, _ = Draining(ctx, cli, "/x/")
	if _, ok := got["s1"]; ok || len(got) != 1 {
		t.Fatalf("after undrain: %v", got)
	}
	if _, err := SetDraining(ctx, cli, "/x/", "a/b", true, t0); err == nil {
		t.Fatal("a server id with a slash was accepted")
	}

	rev0, err := RebalanceRequest(ctx, cli, "/x/")
	if err != nil || rev0 != 0 {
		t.Fatalf("no request yet: %d %v", rev0, err)
	}
	if err := RequestRebalance(ctx, cli, "/x/", t0); err != nil {
		t.Fatal(err)
	}
	rev1, _ := RebalanceRequest(ctx, cli, "/x/")
	if err := RequestRebalance(ctx, cli, "/x/", t0); err != nil {
		t.Fatal(err)
	}
	rev2, _ := RebalanceRequest(ctx, cli, "/x/")
	if rev1 == 0 || rev2 <= rev1 {
		t.Fatalf("request revisions %d, %d: each request must change it", rev1, rev2)
	}
}
