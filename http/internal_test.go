package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
)

// fakeInternal records the requests it receives and answers each with a
// canned response, or with err when set.
type fakeInternal struct {
	mu struct {
		sync.Mutex
		got []any
		err error
	}
}

func (f *fakeInternal) record(req any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.got = append(f.mu.got, req)
	return f.mu.err
}

func (f *fakeInternal) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.err = err
}

func (f *fakeInternal) requests() []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]any(nil), f.mu.got...)
}

var (
	txnA = strings.Repeat("a", 40)
	txnB = strings.Repeat("b", 40)
	encA = []byte{0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3} // opaque to the server
)

func (f *fakeInternal) FetchMetadata(_ context.Context, req api.FetchMetadataRequest) (api.FetchMetadataResponse, error) {
	if err := f.record(req); err != nil {
		return api.FetchMetadataResponse{}, err
	}
	return api.FetchMetadataResponse{TxnID: txnA, TxnSeq: 7, Encoded: encA}, nil
}

func (f *fakeInternal) StoreMetadata(_ context.Context, req api.StoreMetadataRequest) error {
	return f.record(req)
}

func (f *fakeInternal) ChangeMetadata(_ context.Context, req api.ChangeMetadataRequest) (api.ChangeMetadataResponse, error) {
	if err := f.record(req); err != nil {
		return api.ChangeMetadataResponse{}, err
	}
	return api.ChangeMetadataResponse{TxnID: req.NewTxnID, TxnSeq: 8, Encoded: encA}, nil
}

func (f *fakeInternal) JoinMetadata(_ context.Context, req api.JoinMetadataRequest) (api.JoinMetadataResponse, error) {
	if err := f.record(req); err != nil {
		return api.JoinMetadataResponse{}, err
	}
	return api.JoinMetadataResponse{TxnID: txnA, TxnSeq: 7, MetadataServers: []string{"s1", "s2"}}, nil
}

func (f *fakeInternal) Discover(_ context.Context, req api.DiscoveryRequest) (api.DiscoveryResponse, error) {
	if err := f.record(req); err != nil {
		return api.DiscoveryResponse{}, err
	}
	res := make([]metadata.Discovery, len(req.Replicas))
	for i := range res {
		res[i] = metadata.Discovery{Status: metadata.StatusServe, Targets: []metadata.Target{}}
	}
	return api.DiscoveryResponse{TxnID: txnA, TxnSeq: 7, Results: res}, nil
}

func (f *fakeInternal) Replicate(_ context.Context, req api.PushRequest) error {
	return f.record(req)
}

func (f *fakeInternal) ForwardInsert(_ context.Context, req api.ForwardInsertRequest) (api.ForwardInsertResponse, error) {
	if err := f.record(req); err != nil {
		return api.ForwardInsertResponse{}, err
	}
	return api.ForwardInsertResponse{Rows: req.Count}, nil
}

func (f *fakeInternal) SubQuery(_ context.Context, req api.SubQueryRequest) (api.SubQueryResponse, error) {
	if err := f.record(req); err != nil {
		return api.SubQueryResponse{}, err
	}
	return api.SubQueryResponse{Rows: encA, Count: 2, Truncated: true}, nil
}

func (f *fakeInternal) Replicas(_ context.Context, req api.ReplicasRequest) (api.ReplicasResponse, error) {
	if err := f.record(req); err != nil {
		return api.ReplicasResponse{}, err
	}
	return api.ReplicasResponse{Server: "s1", Replicas: []api.ReplicaStatus{cannedReplica}}, nil
}

func (f *fakeInternal) CatchUp(_ context.Context, req api.CatchUpRequest) error {
	return f.record(req)
}

func (f *fakeInternal) SplitPoint(_ context.Context, req api.SplitPointRequest) (api.SplitPointResponse, error) {
	if err := f.record(req); err != nil {
		return api.SplitPointResponse{}, err
	}
	return api.SplitPointResponse{At: 42}, nil
}

// cannedReplica is the replica state the fake Internal reports.
var cannedReplica = api.ReplicaStatus{
	Server: "s1", Table: "metrics",
	PartitionID: uuid.MustParse("11111111-1111-1111-1111-111111111111"),
	Placement:   uuid.MustParse("aaaaaaaa-0000-0000-0000-000000000001"),
	Status:      metadata.StatusServe, TxnSeq: 7, Rows: 10, Bytes: 4096, HighSeq: 12, SyncedSeq: 12,
	Targets: []api.TargetStatus{{Server: "s2", Placement: uuid.MustParse("bbbbbbbb-0000-0000-0000-000000000002"),
		Kind: metadata.TargetReplica, Confirmed: 9, Lag: 3, LastPush: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}},
}

// startServer serves s on a loopback port until the test ends and returns
// its host:port.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return ln.Addr().String()
}

// newClient returns an internal API client that makes one attempt per call,
// so that a 503 answer is seen at once.
func newClient(t *testing.T, secret string) *rpc.Client {
	t.Helper()
	c := rpc.NewClient(rpc.Config{Secret: secret, MaxAttempts: 1, Timeout: 10 * time.Second})
	t.Cleanup(c.Close)
	return c
}

func statusOf(t *testing.T, err error) *rpc.StatusError {
	t.Helper()
	var se *rpc.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *rpc.StatusError", err)
	}
	return se
}

// Valid requests of the replication and forwarding endpoints.
var (
	validPush = api.PushRequest{Table: "metrics", PartitionID: uuid.New(), FromServer: "s2", FromPlacement: uuid.New(),
		ToPlacement: uuid.New(), TxnSeq: 7, Rows: encA, Count: 2, LastSeq: 42}
	validForward = api.ForwardInsertRequest{Table: "metrics", PartitionID: uuid.New(), ToPlacement: uuid.New(),
		TxnSeq: 7, Consistency: api.ConsistencyAll, Rows: encA, Count: 2}
	validSubQuery = api.SubQueryRequest{Table: "metrics", PartitionID: uuid.New(), ToPlacement: uuid.New(), TxnSeq: 7,
		From: 10, To: 20, Series: "cpu", Prefix: true, Fields: []string{"usage"}, Agg: true, Step: 5, GroupAll: true}
)

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var validChange = api.ChangeMetadataRequest{
	Table: "metrics", BaseTxnID: txnA, NewTxnID: txnB,
	Op: metadata.Op{Type: metadata.OpSetOffline, SetOffline: &metadata.SetOfflineOp{PartitionID: uuid.New(), Offline: true}},
}

// TestInternalRoutes calls every internal endpoint through rpc.Client (zstd
// both ways) and checks the backend got the request and the answer decodes.
func TestInternalRoutes(t *testing.T) {
	fake := &fakeInternal{}
	addr := startServer(t, NewServer(Config{ClusterSecret: "sec", Internal: fake}, panicky{}))
	c := newClient(t, "sec")
	ref := metadata.ReplicaRef{PartitionID: uuid.New(), PlacementID: uuid.New()}
	for _, tc := range []struct {
		path       string
		req        any
		resp, want any
	}{
		{api.PathMetadataFetch, api.FetchMetadataRequest{Table: "metrics", MinTxnSeq: 3},
			&api.FetchMetadataResponse{}, &api.FetchMetadataResponse{TxnID: txnA, TxnSeq: 7, Encoded: encA}},
		{api.PathMetadataFetch, api.FetchMetadataRequest{Table: "metrics", TxnID: txnA},
			&api.FetchMetadataResponse{}, &api.FetchMetadataResponse{TxnID: txnA, TxnSeq: 7, Encoded: encA}},
		{api.PathMetadataStore, api.StoreMetadataRequest{Table: "metrics", TxnID: txnA, Encoded: encA},
			&api.FetchMetadataResponse{}, &api.FetchMetadataResponse{}}, // 204: resp untouched
		{api.PathMetadataChange, validChange,
			&api.ChangeMetadataResponse{}, &api.ChangeMetadataResponse{TxnID: txnB, TxnSeq: 8, Encoded: encA}},
		{api.PathMetadataJoin, api.JoinMetadataRequest{Table: "metrics"},
			&api.JoinMetadataResponse{}, &api.JoinMetadataResponse{TxnID: txnA, TxnSeq: 7, MetadataServers: []string{"s1", "s2"}}},
		{api.PathDiscovery, api.DiscoveryRequest{Table: "metrics", Server: "s2", Replicas: []metadata.ReplicaRef{ref}},
			&api.DiscoveryResponse{}, &api.DiscoveryResponse{TxnID: txnA, TxnSeq: 7,
				Results: []metadata.Discovery{{Status: metadata.StatusServe, Targets: []metadata.Target{}}}}},
		{api.PathReplicate, validPush,
			&api.ForwardInsertResponse{}, &api.ForwardInsertResponse{}}, // 204: resp untouched
		{api.PathReplicate, api.PushRequest{Table: "metrics", PartitionID: ref.PartitionID, FromServer: "s2",
			FromPlacement: uuid.New(), ToPlacement: ref.PlacementID, TxnSeq: 7, Complete: true},
			&api.ForwardInsertResponse{}, &api.ForwardInsertResponse{}}, // no rows: a completion notice
		{api.PathInsert, validForward,
			&api.ForwardInsertResponse{}, &api.ForwardInsertResponse{Rows: 2}},
		{api.PathQuery, validSubQuery,
			&api.SubQueryResponse{}, &api.SubQueryResponse{Rows: encA, Count: 2, Truncated: true}},
		{api.PathReplicas, api.ReplicasRequest{},
			&api.ReplicasResponse{}, &api.ReplicasResponse{Server: "s1", Replicas: []api.ReplicaStatus{cannedReplica}}},
		{api.PathReplicas, api.ReplicasRequest{Table: "metrics"},
			&api.ReplicasResponse{}, &api.ReplicasResponse{Server: "s1", Replicas: []api.ReplicaStatus{cannedReplica}}},
		{api.PathCatchUp, api.CatchUpRequest{Table: "metrics", PartitionID: ref.PartitionID, FromPlacement: uuid.New(),
			ToPlacement: ref.PlacementID, ToServer: "s2", TxnSeq: 7},
			&api.ForwardInsertResponse{}, &api.ForwardInsertResponse{}}, // 204: resp untouched
	} {
		if err := c.Call(context.Background(), addr, tc.path, tc.req, tc.resp); err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if !reflect.DeepEqual(tc.resp, tc.want) {
			t.Errorf("%s: answer %+v, want %+v", tc.path, tc.resp, tc.want)
		}
		got := fake.requests()
		if last := got[len(got)-1]; !jsonEqual(t, last, tc.req) {
			t.Errorf("%s: backend got %+v, want %+v", tc.path, last, tc.req)
		}
	}
	// A push answers 204 with no body, like the store.
	resp := rawPost(t, "http://"+addr+api.PathReplicate, "sec", "", string(mustJSON(t, validPush)))
	if resp.status != http.StatusNoContent || resp.body != "" {
		t.Errorf("replicate: %d %q, want 204 and no body", resp.status, resp.body)
	}
	// The store answers 204 with no body.
	resp = rawPost(t, "http://"+addr+api.PathMetadataStore, "sec", "",
		`{"table":"metrics","txnid":"`+txnA+`","encoded":"AQID"}`)
	if resp.status != http.StatusNoContent || resp.body != "" {
		t.Errorf("store: %d %q, want 204 and no body", resp.status, resp.body)
	}
	// Without Accept-Encoding: zstd the answer is plain JSON.
	resp = rawPost(t, "http://"+addr+api.PathMetadataJoin, "sec", "", `{"table":"metrics"}`)
	if resp.status != 200 || resp.encoding != "" || !strings.Contains(resp.body, `"metadata_servers":["s1","s2"]`) {
		t.Errorf("join without zstd: %d %q %s", resp.status, resp.encoding, resp.body)
	}
	metrics := scrape(t, addr)
	for _, route := range []string{"internal_metadata_fetch", "internal_metadata_store", "internal_metadata_change",
		"internal_metadata_join", "internal_discovery", "internal_replicate", "internal_insert", "internal_query",
		"internal_replicas"} {
		if !strings.Contains(metrics, `route="`+route+`"`) {
			t.Errorf("/metrics lacks route %q", route)
		}
	}
}

// TestInternalSecret checks the cluster secret guards /internal/ and the
// public bearer token neither is needed there nor replaces the secret.
func TestInternalSecret(t *testing.T) {
	fake := &fakeInternal{}
	addr := startServer(t, NewServer(Config{AuthToken: "tok", ClusterSecret: "sec", Internal: fake}, panicky{}))
	join := api.JoinMetadataRequest{Table: "metrics"}
	for _, secret := range []string{"", "wrong", "sec2", "se"} {
		err := newClient(t, secret).Call(context.Background(), addr, api.PathMetadataJoin, join, nil)
		if !errors.Is(err, rpc.ErrUnauthorized) {
			t.Fatalf("secret %q: %v, want 401", secret, err)
		}
		se := statusOf(t, err)
		if se.Code != api.CodeUnauthorized || !strings.Contains(se.Message, rpc.SecretHeader) {
			t.Errorf("secret %q: %+v, want code unauthorized naming %s", secret, se, rpc.SecretHeader)
		}
	}
	if n := len(fake.requests()); n != 0 {
		t.Fatalf("the backend was called %d times without the secret", n)
	}
	if err := newClient(t, "sec").Call(context.Background(), addr, api.PathMetadataJoin, join, nil); err != nil {
		t.Fatalf("with the secret and no bearer token: %v", err)
	}
	// The bearer token alone is not enough.
	req, _ := http.NewRequest("POST", "http://"+addr+api.PathMetadataJoin, strings.NewReader(`{"table":"metrics"}`))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bearer token without the secret: %d, want 401", resp.StatusCode)
	}
	// The secret does not open the public API either.
	if r := rawGet(t, "http://"+addr+"/api/v1/tables", "sec"); r.status != http.StatusUnauthorized {
		t.Fatalf("public API with the cluster secret only: %d, want 401", r.status)
	}

	// A cluster with neither a secret nor a bearer token lets every
	// internal request in (with a token and no secret, see
	// TestInternalClosedWithTokenAndNoSecret).
	addr = startServer(t, NewServer(Config{Internal: &fakeInternal{}}, panicky{}))
	if err := newClient(t, "").Call(context.Background(), addr, api.PathMetadataJoin, join, nil); err != nil {
		t.Fatalf("no secret configured: %v", err)
	}
}

// TestInternalErrorMapping checks each backend error reaches rpc.Client as
// the status and code the callers test for.
func TestInternalErrorMapping(t *testing.T) {
	fake := &fakeInternal{}
	addr := startServer(t, NewServer(Config{Internal: fake}, panicky{}))
	c := newClient(t, "")
	fetch := api.FetchMetadataRequest{Table: "metrics", TxnID: txnA}
	join := api.JoinMetadataRequest{Table: "metrics"}
	for _, tc := range []struct {
		err    error
		path   string
		req    any
		status int
		code   string
	}{
		{metadata.ErrConflict, api.PathMetadataChange, validChange, 409, api.CodeConflict},
		{metadata.ErrTxnMismatch, api.PathMetadataStore, api.StoreMetadataRequest{Table: "metrics", TxnID: txnA, Encoded: encA}, 409, api.CodeTxnMismatch},
		{metadata.ErrStale, api.PathMetadataFetch, fetch, 409, api.CodeStale},
		{metadata.ErrInvalidOp, api.PathMetadataChange, validChange, 400, api.CodeInvalidOp},
		{metadata.ErrInvalidFile, api.PathMetadataStore, api.StoreMetadataRequest{Table: "metrics", TxnID: txnA, Encoded: encA}, 400, api.CodeBadRequest},
		{metadata.ErrCorruptFile, api.PathMetadataStore, api.StoreMetadataRequest{Table: "metrics", TxnID: txnA, Encoded: encA}, 400, api.CodeBadRequest},
		{metadata.ErrChecksum, api.PathMetadataFetch, fetch, 400, api.CodeBadRequest},
		{metadata.ErrNotMetadataServer, api.PathMetadataChange, validChange, 421, api.CodeNotMetadataServer},
		{metadata.ErrNoQuorum, api.PathMetadataChange, validChange, 503, api.CodeNoQuorum},
		{metadata.ErrOutcomeUnknown, api.PathMetadataChange, validChange, 503, api.CodeOutcomeUnknown},
		{metadata.ErrFileNotFound, api.PathMetadataFetch, fetch, 404, api.CodeNotFound},
		{metadata.ErrFileNotFound, api.PathMetadataJoin, join, 503, api.CodeUnavailable},
		{metadata.ErrTableNotFound, api.PathMetadataJoin, join, 404, api.CodeTableNotFound},
		{fmt.Errorf("%w: peer s2: %w", metadata.ErrNoQuorum, metadata.ErrFileNotFound), api.PathMetadataChange, validChange, 503, api.CodeNoQuorum},
		{errors.New("disk on fire"), api.PathDiscovery, api.DiscoveryRequest{Table: "metrics", Server: "s2"}, 500, api.CodeInternal},
		{ErrStalePlacement, api.PathReplicate, validPush, 409, api.CodeStalePlacement},
		{ErrMoved, api.PathInsert, validForward, 409, api.CodeMoved},
		{ErrMoved, api.PathQuery, validSubQuery, 409, api.CodeMoved},
		{ErrStalePlacement, api.PathQuery, validSubQuery, 409, api.CodeStalePlacement},
		{ErrInsertOutcomeUnknown, api.PathInsert, validForward, 503, api.CodeOutcomeUnknownRows},
		{partition.ErrUnloading, api.PathInsert, validForward, 409, api.CodeMoved},
		// The move is what the caller must act on, whatever revealed it.
		{fmt.Errorf("%w: %w", metadata.ErrStale, ErrMoved), api.PathInsert, validForward, 409, api.CodeMoved},
		{fmt.Errorf("%w: %w", ErrUnavailable, ErrStalePlacement), api.PathReplicate, validPush, 409, api.CodeStalePlacement},
		{metadata.ErrTableNotFound, api.PathReplicas, api.ReplicasRequest{Table: "metrics"}, 404, api.CodeTableNotFound},
		{ErrUnavailable, api.PathReplicas, api.ReplicasRequest{}, 503, api.CodeUnavailable},
	} {
		fake.setErr(fmt.Errorf("context: %w", tc.err))
		err := c.Call(context.Background(), addr, tc.path, tc.req, nil)
		se := statusOf(t, err)
		if se.Status != tc.status || se.Code != tc.code || !strings.Contains(se.Message, tc.err.Error()) {
			t.Errorf("%v on %s: got %d %q %q, want %d %q", tc.err, tc.path, se.Status, se.Code, se.Message, tc.status, tc.code)
		}
		if tc.code == api.CodeOutcomeUnknownRows && !strings.HasPrefix(se.Message, "outcome unknown: the rows may still appear") {
			t.Errorf("%v on %s: message %q does not start with the outcome-unknown sentence", tc.err, tc.path, se.Message)
		}
	}
}

// TestInternalBadRequests checks malformed and invalid bodies are refused
// with a 4xx naming the problem, before the backend sees them.
func TestInternalBadRequests(t *testing.T) {
	fake := &fakeInternal{}
	addr := startServer(t, NewServer(Config{Internal: fake}, panicky{}))
	c := newClient(t, "")
	for _, tc := range []struct {
		path string
		req  any
		code string
		want string // in the message
	}{
		{api.PathMetadataFetch, api.FetchMetadataRequest{}, api.CodeBadRequest, "table: required"},
		{api.PathMetadataFetch, api.FetchMetadataRequest{Table: "Metrics"}, api.CodeInvalidTableName, "table: "},
		{api.PathMetadataFetch, api.FetchMetadataRequest{Table: "metrics", TxnID: "abc"}, api.CodeBadRequest, "txnid: \"abc\""},
		{api.PathMetadataStore, api.StoreMetadataRequest{Table: "metrics", Encoded: encA}, api.CodeBadRequest, "txnid: required"},
		{api.PathMetadataStore, api.StoreMetadataRequest{Table: "metrics", TxnID: txnA}, api.CodeBadRequest, "encoded: required"},
		{api.PathMetadataChange, api.ChangeMetadataRequest{Table: "metrics", BaseTxnID: txnA, NewTxnID: strings.ToUpper(txnB), Op: validChange.Op},
			api.CodeBadRequest, "new_txnid: "},
		{api.PathMetadataChange, api.ChangeMetadataRequest{Table: "metrics", NewTxnID: txnB, Op: validChange.Op},
			api.CodeBadRequest, "base_txnid: required"},
		{api.PathMetadataChange, api.ChangeMetadataRequest{Table: "metrics", BaseTxnID: txnA, NewTxnID: txnA, Op: validChange.Op},
			api.CodeBadRequest, "new_txnid: equals base_txnid"},
		{api.PathMetadataChange, api.ChangeMetadataRequest{Table: "metrics", BaseTxnID: txnA, NewTxnID: txnB},
			api.CodeBadRequest, "op.type: required"},
		{api.PathMetadataJoin, api.JoinMetadataRequest{Table: strings.Repeat("x", 65)}, api.CodeInvalidTableName, "table: "},
		{api.PathDiscovery, api.DiscoveryRequest{Table: "metrics"}, api.CodeBadRequest, "server: required"},
		{api.PathDiscovery, api.DiscoveryRequest{Table: "metrics", Server: "s2", Replicas: []metadata.ReplicaRef{{PartitionID: uuid.New()}}},
			api.CodeBadRequest, "replicas[0].placement_id: required"},
		// Replication and forwarding: every request names the partition,
		// the receiving placement and the sender's txnseq (rule 8).
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.PartitionID = uuid.Nil }), api.CodeBadRequest, "partition_id: required"},
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.ToPlacement = uuid.Nil }), api.CodeBadRequest, "to_placement: required"},
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.TxnSeq = 0 }), api.CodeBadRequest, "txnseq: required"},
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.FromServer = "" }), api.CodeBadRequest, "from_server: required"},
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.FromServer = "a/b" }), api.CodeBadRequest, "from_server: "},
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.FromPlacement = uuid.Nil }), api.CodeBadRequest, "from_placement: required"},
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.FromPlacement = r.ToPlacement }), api.CodeBadRequest, "to_placement: equals from_placement"},
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.Rows = nil }), api.CodeBadRequest, "rows: required when count is 2"},
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.Count = -1 }), api.CodeBadRequest, "count: -1"},
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.LastSeq = 0 }), api.CodeBadRequest, "last_seq: required"},
		{api.PathReplicate, with(validPush, func(r *api.PushRequest) { r.Table = "Metrics" }), api.CodeInvalidTableName, "table: "},
		{api.PathInsert, with(validForward, func(r *api.ForwardInsertRequest) { r.Consistency = "QUORUM" }), api.CodeBadRequest, `consistency: "QUORUM"`},
		{api.PathInsert, with(validForward, func(r *api.ForwardInsertRequest) { r.Rows = nil }), api.CodeBadRequest, "rows: required"},
		{api.PathInsert, with(validForward, func(r *api.ForwardInsertRequest) { r.TxnSeq = 0 }), api.CodeBadRequest, "txnseq: required"},
		{api.PathInsert, api.ForwardInsertRequest{Table: "metrics"}, api.CodeBadRequest, "partition_id: required; http: bad request: to_placement: required; http: bad request: txnseq: required"},
		{api.PathQuery, with(validSubQuery, func(r *api.SubQueryRequest) { r.From = 30 }), api.CodeBadRequest, "to: 20 is before from (30)"},
		{api.PathQuery, with(validSubQuery, func(r *api.SubQueryRequest) { r.Limit = -1 }), api.CodeBadRequest, "limit: -1"},
		{api.PathQuery, with(validSubQuery, func(r *api.SubQueryRequest) { r.Step = -1 }), api.CodeBadRequest, "step: -1"},
		{api.PathQuery, with(validSubQuery, func(r *api.SubQueryRequest) { r.Agg = false }), api.CodeBadRequest, "step: set without agg"},
		{api.PathQuery, with(validSubQuery, func(r *api.SubQueryRequest) { r.ToPlacement = uuid.Nil }), api.CodeBadRequest, "to_placement: required"},
		{api.PathReplicas, api.ReplicasRequest{Table: "no-such"}, api.CodeInvalidTableName, "table: "},
		{api.PathReplicas, map[string]any{"tables": "metrics"}, api.CodeBadRequest, "unknown field"},
		// Several problems are reported together, on one line.
		{api.PathMetadataStore, api.StoreMetadataRequest{}, api.CodeBadRequest, "table: required; "},
		// Unknown fields: a peer speaking another schema fails loudly.
		{api.PathMetadataJoin, map[string]any{"table": "metrics", "tabel": "x"}, api.CodeBadRequest, "unknown field"},
		{api.PathMetadataJoin, "metrics", api.CodeBadRequest, "cannot unmarshal"},
	} {
		err := c.Call(context.Background(), addr, tc.path, tc.req, nil)
		se := statusOf(t, err)
		if se.Status != 400 || se.Code != tc.code || !strings.Contains(se.Message, tc.want) || strings.Contains(se.Message, "\n") {
			t.Errorf("%s %+v: got %d %q %q, want 400 %q with %q on one line", tc.path, tc.req, se.Status, se.Code, se.Message, tc.code, tc.want)
		}
	}
	for _, tc := range []struct {
		body, ctype, encoding string
		status                int
	}{
		{"", "", "", 400},
		{"not json", "", "", 400},
		{`{"table":"metrics"} {}`, "", "", 400},
		{"not zstd at all", "", "zstd", 400},
		{`{"table":"metrics"}`, "text/plain", "", 415},
		{`{"table":"metrics"}`, "", "br", 415},
	} {
		r := rawPostHeaders(t, "http://"+addr+api.PathMetadataJoin, map[string]string{
			"Content-Type": tc.ctype, "Content-Encoding": tc.encoding}, tc.body)
		if r.status != tc.status || !strings.Contains(r.body, `"error"`) {
			t.Errorf("body %q (type %q, encoding %q): %d %s, want %d", tc.body, tc.ctype, tc.encoding, r.status, r.body, tc.status)
		}
	}
	if n := len(fake.requests()); n != 0 {
		t.Fatalf("the backend saw %d invalid requests", n)
	}
}

// TestInternalBodyLimit checks MaxBodyBytes holds on the internal API both
// as sent and once decompressed.
func TestInternalBodyLimit(t *testing.T) {
	fake := &fakeInternal{}
	addr := startServer(t, NewServer(Config{Internal: fake, MaxBodyBytes: 4096}, panicky{}))
	c := newClient(t, "")
	// Compresses to a few dozen bytes, decompresses past the limit.
	big := api.DiscoveryRequest{Table: "metrics", Server: strings.Repeat("s", 8000)}
	se := statusOf(t, c.Call(context.Background(), addr, api.PathDiscovery, big, nil))
	if se.Status != 413 || se.Code != api.CodeTooLarge {
		t.Errorf("decompressed over the limit: %+v, want 413", se)
	}
	// Just under the limit once decompressed is accepted.
	ok := api.DiscoveryRequest{Table: "metrics", Server: strings.Repeat("s", 3900)}
	if err := c.Call(context.Background(), addr, api.PathDiscovery, ok, nil); err != nil {
		t.Errorf("under the limit: %v", err)
	}
	// Over the limit as sent.
	r := rawPost(t, "http://"+addr+api.PathMetadataJoin, "", "", `{"table":"`+strings.Repeat("m", 5000)+`"}`)
	if r.status != 413 {
		t.Errorf("identity body over the limit: %d %s, want 413", r.status, r.body)
	}
	if n := len(fake.requests()); n != 1 {
		t.Fatalf("the backend saw %d requests, want 1", n)
	}
}

// TestInternalMethodsAndPaths checks the answers outside the endpoints:
// GET is 405, an unknown path 404 (after the secret check), and a server
// without an Internal answers 404 everywhere under /internal/.
func TestInternalMethodsAndPaths(t *testing.T) {
	addr := startServer(t, NewServer(Config{ClusterSecret: "sec", Internal: &fakeInternal{}}, panicky{}))
	r := rawGet(t, "http://"+addr+api.PathMetadataFetch, "sec")
	if r.status != 405 || r.allow != "POST" || !strings.Contains(r.body, api.CodeMethodNotAllowed) {
		t.Errorf("GET: %d allow=%q %s, want 405 allowing POST", r.status, r.allow, r.body)
	}
	se := statusOf(t, newClient(t, "sec").Call(context.Background(), addr, "/internal/nope", struct{}{}, nil))
	if se.Status != 404 || se.Code != api.CodeNotFound {
		t.Errorf("unknown path: %+v, want 404", se)
	}
	se = statusOf(t, newClient(t, "").Call(context.Background(), addr, "/internal/nope", struct{}{}, nil))
	if se.Status != 401 {
		t.Errorf("unknown path without the secret: %+v, want 401", se)
	}

	addr = startServer(t, NewServer(Config{}, panicky{}))
	for _, path := range []string{api.PathMetadataFetch, api.PathDiscovery, "/internal/nope"} {
		se := statusOf(t, newClient(t, "").Call(context.Background(), addr, path, api.JoinMetadataRequest{Table: "m"}, nil))
		if se.Status != 404 || se.Code != api.CodeNotFound {
			t.Errorf("no Internal, %s: %+v, want 404", path, se)
		}
	}
}

// rawAnswer is what the raw helpers return.
type rawAnswer struct {
	status          int
	body            string
	encoding, allow string
}

func rawPost(t *testing.T, url, secret, encoding, body string) rawAnswer {
	t.Helper()
	return rawPostHeaders(t, url, map[string]string{rpc.SecretHeader: secret, "Content-Encoding": encoding}, body)
}

func rawPostHeaders(t *testing.T, url string, headers map[string]string, body string) rawAnswer {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	return do(t, req)
}

func rawGet(t *testing.T, url, secret string) rawAnswer {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(rpc.SecretHeader, secret)
	return do(t, req)
}

func do(t *testing.T, req *http.Request) rawAnswer {
	t.Helper()
	req.Header.Set("Accept-Encoding", "identity") // keep net/http from asking for gzip
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Encoding") == "zstd" {
		d, _ := zstd.NewReader(nil)
		defer d.Close()
		if b, err = d.DecodeAll(b, nil); err != nil {
			t.Fatal(err)
		}
	}
	return rawAnswer{status: resp.StatusCode, body: string(b),
		encoding: resp.Header.Get("Content-Encoding"), allow: resp.Header.Get("Allow")}
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	return rawGet(t, "http://"+addr+"/metrics", "").body
}

// jsonEqual reports whether a and b encode to the same JSON.
func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// with returns a copy of v changed by f.
func with[T any](v T, f func(*T)) T {
	f(&v)
	return v
}

// TestInternalClockStamps: an authorized internal request hands the
// caller's clock stamp to the server's PeerClock, and every answer to it
// (an error answer too) carries the server's stamp back; a request without
// the cluster secret is not sampled.
func TestInternalClockStamps(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{} // observer/peer → samples
	observer := func(name string) func(string, int64, time.Time) {
		return func(peer string, _ int64, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			seen[name+"/"+peer]++
		}
	}
	count := func(k string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[k]
	}
	fake := &fakeInternal{}
	addr := startServer(t, NewServer(Config{ClusterSecret: "sec", Internal: fake,
		Clock: &rpc.PeerClock{ServerID: "srv", Now: time.Now, Observe: observer("srv")}}, panicky{}))
	client := func(secret string) *rpc.Client {
		c := rpc.NewClient(rpc.Config{Secret: secret, MaxAttempts: 1, Timeout: 10 * time.Second,
			Clock: &rpc.PeerClock{ServerID: "caller", Now: time.Now, Observe: observer("caller")}})
		t.Cleanup(c.Close)
		return c
	}
	join := api.JoinMetadataRequest{Table: "metrics"}
	if err := client("sec").Call(context.Background(), addr, api.PathMetadataJoin, join, nil); err != nil {
		t.Fatal(err)
	}
	if count("srv/caller") != 1 || count("caller/srv") != 1 {
		t.Fatalf("after one call: %v, want one sample each way", seen)
	}
	fake.setErr(ErrUnavailable)
	if err := client("sec").Call(context.Background(), addr, api.PathMetadataJoin, join, nil); err == nil {
		t.Fatal("the backend's error was not returned")
	}
	if count("srv/caller") != 2 || count("caller/srv") != 2 {
		t.Fatalf("after an error answer: %v, want two samples each way", seen)
	}
	if err := client("wrong").Call(context.Background(), addr, api.PathMetadataJoin, join, nil); !errors.Is(err, rpc.ErrUnauthorized) {
		t.Fatalf("wrong secret: %v", err)
	}
	if count("srv/caller") != 2 {
		t.Fatalf("an unauthorized request was sampled: %v", seen)
	}
}
