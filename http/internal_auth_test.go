package http

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
)

// counterValue returns the value of an unlabelled counter in reg (0 when
// absent).
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestInternalUnauthorizedCounted (issue 14 item 8): an internal call
// without the cluster secret or with a wrong one gets 401, never reaches
// the backend, and is counted in tsdb_internal_unauthorized_total.
func TestInternalUnauthorizedCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	fake := &fakeInternal{}
	addr := startServer(t, NewServer(Config{AuthToken: "tok", ClusterSecret: "sec", Internal: fake, Registry: reg}, panicky{}))
	join := wire.JoinMetadataRequest{Table: "metrics"}
	for _, secret := range []string{"", "wrong"} {
		err := newClient(t, secret).Call(context.Background(), addr, wire.PathMetadataJoin, join, nil)
		if !errors.Is(err, rpc.ErrUnauthorized) {
			t.Fatalf("secret %q: %v, want 401", secret, err)
		}
	}
	if n := len(fake.requests()); n != 0 {
		t.Fatalf("the backend was called %d times without the secret", n)
	}
	if got := counterValue(t, reg, "tsdb_internal_unauthorized_total"); got != 2 {
		t.Fatalf("tsdb_internal_unauthorized_total = %v, want 2", got)
	}
	if err := newClient(t, "sec").Call(context.Background(), addr, wire.PathMetadataJoin, join, nil); err != nil {
		t.Fatalf("with the secret: %v", err)
	}
	if got := counterValue(t, reg, "tsdb_internal_unauthorized_total"); got != 2 {
		t.Fatalf("tsdb_internal_unauthorized_total = %v after an authorized call, want 2", got)
	}
}

// TestInternalClosedWithTokenAndNoSecret (issue 14 item 8): a server whose
// public API wants a bearer token and that has no cluster secret keeps its
// internal API closed (401 for everyone) instead of open to anyone; node
// refuses to start that way, this is the HTTP layer failing closed too.
func TestInternalClosedWithTokenAndNoSecret(t *testing.T) {
	reg := prometheus.NewRegistry()
	fake := &fakeInternal{}
	addr := startServer(t, NewServer(Config{AuthToken: "tok", Internal: fake, Registry: reg}, panicky{}))
	err := newClient(t, "").Call(context.Background(), addr, wire.PathMetadataJoin, wire.JoinMetadataRequest{Table: "metrics"}, nil)
	if !errors.Is(err, rpc.ErrUnauthorized) {
		t.Fatalf("internal call to a token-protected server without a cluster secret: %v, want 401", err)
	}
	if n := len(fake.requests()); n != 0 {
		t.Fatalf("the backend was called %d times", n)
	}
	if got := counterValue(t, reg, "tsdb_internal_unauthorized_total"); got != 1 {
		t.Fatalf("tsdb_internal_unauthorized_total = %v, want 1", got)
	}
}
