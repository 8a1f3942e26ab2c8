package http

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// opBackend answers the operator's endpoints and records their calls.
type opBackend struct {
	panicky
	mu    sync.Mutex
	calls []string
	err   error
}

func (b *opBackend) record(format string, args ...any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, fmt.Sprintf(format, args...))
	return b.err
}

func (b *opBackend) SetOffline(_ context.Context, table string, pid uuid.UUID, offline bool) (*metadata.File, error) {
	if err := b.record("offline %s %s %t", table, pid, offline); err != nil {
		return nil, err
	}
	return &metadata.File{TxnID: strings.Repeat("e", 40), TxnSeq: 9}, nil
}

func (b *opBackend) Drain(_ context.Context, server string, on bool) (api.DrainResponse, error) {
	return api.DrainResponse{Server: server, Draining: on}, b.record("drain %s %t", server, on)
}

func (b *opBackend) Rebalance(context.Context) (api.RebalanceResponse, error) {
	return api.RebalanceResponse{RequestedAt: time.Unix(1, 0).UTC()}, b.record("rebalance")
}

func (b *opBackend) Health(context.Context) (api.HealthResponse, error) {
	return api.HealthResponse{Servers: []api.ServerHealth{{ID: "s1", Live: true, Partitions: 3}}, Problems: []api.Problem{}, Mean: 3, Balanced: true},
		b.record("health")
}

func (b *opBackend) taken() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.calls
	b.calls = nil
	return out
}

func TestOperatorEndpoints(t *testing.T) {
	be := &opBackend{}
	addr := startServer(t, NewServer(Config{AuthToken: "tok"}, be))
	pid := uuid.MustParse("11111111-2222-3333-4444-555555555555")
	base := "http://" + addr
	for _, tc := range []struct {
		method, path string
		status       int
		call         string
		answer       string
	}{
		{"POST", fmt.Sprintf("/api/v1/tables/t/partitions/%s/offline", pid), 200, "offline t " + pid.String() + " true", `"txnseq":9`},
		{"POST", fmt.Sprintf("/api/v1/tables/t/partitions/%s/online", pid), 200, "offline t " + pid.String() + " false", `"txnseq":9`},
		{"POST", "/api/v1/servers/s3/drain", 200, "drain s3 true", `"draining":true`},
		{"DELETE", "/api/v1/servers/s3/drain", 200, "drain s3 false", `"server":"s3"`},
		{"POST", "/api/v1/cluster/rebalance", 202, "rebalance", `"requested_at"`},
		{"GET", "/api/v1/cluster/health", 200, "health", `"balanced":true`},
	} {
		r := publicRequest(t, tc.method, base+tc.path, nil, "")
		calls := be.taken()
		if r.status != tc.status || !strings.Contains(r.body, tc.answer) || len(calls) != 1 || calls[0] != tc.call {
			t.Errorf("%s %s: %d %s, calls %q; want %d with %s and call %q", tc.method, tc.path, r.status, r.body, calls, tc.status, tc.answer, tc.call)
		}
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/v1/servers/s3/drain", 405},
		{"PUT", "/api/v1/cluster/rebalance", 405},
		{"POST", "/api/v1/cluster/health", 405},
		{"POST", "/api/v1/servers/a%20b/drain", 400},
		{"POST", "/api/v1/servers/s3/undrain", 404},
		{"POST", "/api/v1/tables/t/partitions/p1/offline", 400},
		{"POST", "/api/v1/tables/T!/partitions/" + pid.String() + "/online", 400},
	} {
		r := publicRequest(t, tc.method, base+tc.path, nil, "")
		if r.status != tc.status || len(be.taken()) != 0 {
			t.Errorf("%s %s: %d %s, want %d and no backend call", tc.method, tc.path, r.status, r.body, tc.status)
		}
	}
	// Without the token nothing reaches the backend.
	req, err := http.NewRequest("POST", base+"/api/v1/servers/s3/drain", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, req)
	if r.status != 401 || len(be.taken()) != 0 {
		t.Errorf("drain without the token: %d %s", r.status, r.body)
	}
	// The backend's errors keep their codes.
	be.err = fmt.Errorf("%w: no such server", api.ErrServerNotFound)
	r = publicRequest(t, "POST", base+"/api/v1/servers/zz/drain", nil, "")
	if eb := errorOf(t, r); r.status != 404 || eb.Code != api.CodeServerNotFound {
		t.Errorf("unknown server: %d %s", r.status, r.body)
	}
	be.err = fmt.Errorf("%w: partition x of \"t\" was taken offline", api.ErrOffline)
	r = publicRequest(t, "POST", fmt.Sprintf("%s/api/v1/tables/t/partitions/%s/offline", base, pid), nil, "")
	if eb := errorOf(t, r); r.status != 503 || eb.Code != api.CodeOffline {
		t.Errorf("offline error: %d %s", r.status, r.body)
	}
	var h api.HealthResponse
	be.err = nil
	r = publicRequest(t, "GET", base+"/api/v1/cluster/health", nil, "")
	if err := json.Unmarshal([]byte(r.body), &h); err != nil || len(h.Servers) != 1 || h.Problems == nil {
		t.Errorf("health answer %s: %v", r.body, err)
	}
}
