package http

import (
	"bufio"
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
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// fakeInternal records the requests it receives and answers each with a
// canned response, or with err when set.
type fakeInternal struct {
	mu struct {
		sync.Mutex
		got []any
		err error
		// shares is Replicate's answer.
		shares wire.PushResponse
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

func (f *fakeInternal) FetchMetadata(_ context.Context, req wire.FetchMetadataRequest) (wire.FetchMetadataResponse, error) {
	if err := f.record(req); err != nil {
		return wire.FetchMetadataResponse{}, err
	}
	return wire.FetchMetadataResponse{TxnID: txnA, TxnSeq: 7, Encoded: encA}, nil
}

func (f *fakeInternal) StoreMetadata(_ context.Context, req wire.StoreMetadataRequest) error {
	return f.record(req)
}

func (f *fakeInternal) ChangeMetadata(_ context.Context, req wire.ChangeMetadataRequest) (wire.ChangeMetadataResponse, error) {
	if err := f.record(req); err != nil {
		return wire.ChangeMetadataResponse{}, err
	}
	return wire.ChangeMetadataResponse{TxnID: req.NewTxnID, TxnSeq: 8, Encoded: encA}, nil
}

func (f *fakeInternal) JoinMetadata(_ context.Context, req wire.JoinMetadataRequest) (wire.JoinMetadataResponse, error) {
	if err := f.record(req); err != nil {
		return wire.JoinMetadataResponse{}, err
	}
	return wire.JoinMetadataResponse{TxnID: txnA, TxnSeq: 7, MetadataServers: []string{"s1", "s2"}}, nil
}

func (f *fakeInternal) Discover(_ context.Context, req wire.DiscoveryRequest) (wire.DiscoveryResponse, error) {
	if err := f.record(req); err != nil {
		return wire.DiscoveryResponse{}, err
	}
	res := make([]metadata.Discovery, len(req.Replicas))
	for i := range res {
		res[i] = metadata.Discovery{Status: metadata.StatusServe, Targets: []metadata.Target{}}
	}
	return wire.DiscoveryResponse{TxnID: txnA, TxnSeq: 7, Results: res}, nil
}

func (f *fakeInternal) Replicate(_ context.Context, req wire.PushRequest) (wire.PushResponse, error) {
	err := f.record(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.shares, err
}

func (f *fakeInternal) setShares(r wire.PushResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.shares = r
}

func (f *fakeInternal) ForwardInsert(_ context.Context, req wire.ForwardInsertRequest) (wire.ForwardInsertResponse, error) {
	if err := f.record(req); err != nil {
		return wire.ForwardInsertResponse{}, err
	}
	return wire.ForwardInsertResponse{Rows: req.Count}, nil
}

func (f *fakeInternal) SubQuery(_ context.Context, req wire.SubQueryRequest) (wire.SubQueryResponse, error) {
	if err := f.record(req); err != nil {
		return wire.SubQueryResponse{}, err
	}
	return wire.SubQueryResponse{Rows: encA, Count: 2, Truncated: true}, nil
}

func (f *fakeInternal) MetaQuery(_ context.Context, req wire.MetaQueryRequest) (wire.MetaQueryResponse, error) {
	if err := f.record(req); err != nil {
		return wire.MetaQueryResponse{}, err
	}
	return wire.MetaQueryResponse{SeriesKeys: []string{"cpu,host=a"}}, nil
}

func (f *fakeInternal) Replicas(_ context.Context, req wire.ReplicasRequest) (wire.ReplicasResponse, error) {
	if err := f.record(req); err != nil {
		return wire.ReplicasResponse{}, err
	}
	return wire.ReplicasResponse{Server: "s1", Replicas: []wire.ReplicaStatus{cannedReplica}}, nil
}

func (f *fakeInternal) CatchUp(_ context.Context, req wire.CatchUpRequest) error {
	return f.record(req)
}

func (f *fakeInternal) SplitPoint(_ context.Context, req wire.SplitPointRequest) (wire.SplitPointResponse, error) {
	if err := f.record(req); err != nil {
		return wire.SplitPointResponse{}, err
	}
	return wire.SplitPointResponse{At: 42}, nil
}

// cannedReplica is the replica state the fake Internal reports.
var cannedReplica = wire.ReplicaStatus{
	Server: "s1", Table: "metrics",
	PartitionID: uuid.MustParse("11111111-1111-1111-1111-111111111111"),
	Placement:   uuid.MustParse("aaaaaaaa-0000-0000-0000-000000000001"),
	Status:      string(metadata.StatusServe), TxnSeq: 7, Rows: 10, Bytes: 4096, HighSeq: 12, SyncedSeq: 12,
	Targets: []wire.TargetStatus{{Server: "s2", Placement: uuid.MustParse("bbbbbbbb-0000-0000-0000-000000000002"),
		Kind: string(metadata.TargetReplica), Confirmed: 9, Lag: 3, LastPush: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}},
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
	validPush = wire.PushRequest{Table: "metrics", PartitionID: uuid.New(), FromServer: "s2", FromPlacement: uuid.New(),
		ToPlacement: uuid.New(), TxnSeq: 7, Rows: encA, Count: 2, LastSeq: 42}
	validForward = wire.ForwardInsertRequest{Table: "metrics", PartitionID: uuid.New(), ToPlacement: uuid.New(),
		TxnSeq: 7, InsertOptions: model.InsertOptions{Consistency: api.ConsistencyAll}, Rows: encA, Count: 2}
	validSubQuery = wire.SubQueryRequest{Table: "metrics", PartitionID: uuid.New(), ToPlacement: uuid.New(), TxnSeq: 7,
		Query: model.Query{From: 10, To: 20, Series: "cpu", Prefix: true, Fields: []string{"usage"}, Step: 5, GroupAll: true}, Agg: true}
	validMeta = wire.MetaQueryRequest{Table: "metrics", PartitionID: uuid.New(), ToPlacement: uuid.New(), TxnSeq: 7,
		Kind: wire.MetaSeriesKeys, Query: model.Query{Measurement: "cpu", Tags: &model.TagExpr{Op: model.TagEq, Key: "host", Value: "a"}}, Limit: 3}
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

var validChange = wire.ChangeMetadataRequest{
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
		{wire.PathMetadataFetch, wire.FetchMetadataRequest{Table: "metrics", MinTxnSeq: 3},
			&wire.FetchMetadataResponse{}, &wire.FetchMetadataResponse{TxnID: txnA, TxnSeq: 7, Encoded: encA}},
		{wire.PathMetadataFetch, wire.FetchMetadataRequest{Table: "metrics", TxnID: txnA},
			&wire.FetchMetadataResponse{}, &wire.FetchMetadataResponse{TxnID: txnA, TxnSeq: 7, Encoded: encA}},
		{wire.PathMetadataStore, wire.StoreMetadataRequest{Table: "metrics", TxnID: txnA, Encoded: encA},
			&wire.FetchMetadataResponse{}, &wire.FetchMetadataResponse{}}, // 204: resp untouched
		{wire.PathMetadataChange, validChange,
			&wire.ChangeMetadataResponse{}, &wire.ChangeMetadataResponse{TxnID: txnB, TxnSeq: 8, Encoded: encA}},
		{wire.PathMetadataJoin, wire.JoinMetadataRequest{Table: "metrics"},
			&wire.JoinMetadataResponse{}, &wire.JoinMetadataResponse{TxnID: txnA, TxnSeq: 7, MetadataServers: []string{"s1", "s2"}}},
		{wire.PathDiscovery, wire.DiscoveryRequest{Table: "metrics", Server: "s2", Replicas: []metadata.ReplicaRef{ref}},
			&wire.DiscoveryResponse{}, &wire.DiscoveryResponse{TxnID: txnA, TxnSeq: 7,
				Results: []metadata.Discovery{{Status: metadata.StatusServe, Targets: []metadata.Target{}}}}},
		{wire.PathReplicate, validPush,
			&wire.ForwardInsertResponse{}, &wire.ForwardInsertResponse{}}, // 204: resp untouched
		{wire.PathReplicate, wire.PushRequest{Table: "metrics", PartitionID: ref.PartitionID, FromServer: "s2",
			FromPlacement: uuid.New(), ToPlacement: ref.PlacementID, TxnSeq: 7, Complete: true},
			&wire.ForwardInsertResponse{}, &wire.ForwardInsertResponse{}}, // no rows: a completion notice
		{wire.PathInsert, validForward,
			&wire.ForwardInsertResponse{}, &wire.ForwardInsertResponse{Rows: 2}},
		{wire.PathQuery, validSubQuery,
			&wire.SubQueryResponse{}, &wire.SubQueryResponse{Rows: encA, Count: 2, Truncated: true}},
		{wire.PathMeta, validMeta,
			&wire.MetaQueryResponse{}, &wire.MetaQueryResponse{SeriesKeys: []string{"cpu,host=a"}}},
		{wire.PathReplicas, wire.ReplicasRequest{},
			&wire.ReplicasResponse{}, &wire.ReplicasResponse{Server: "s1", Replicas: []wire.ReplicaStatus{cannedReplica}}},
		{wire.PathReplicas, wire.ReplicasRequest{Table: "metrics"},
			&wire.ReplicasResponse{}, &wire.ReplicasResponse{Server: "s1", Replicas: []wire.ReplicaStatus{cannedReplica}}},
		{wire.PathCatchUp, wire.CatchUpRequest{Table: "metrics", PartitionID: ref.PartitionID, FromPlacement: uuid.New(),
			ToPlacement: ref.PlacementID, ToServer: "s2", TxnSeq: 7},
			&wire.ForwardInsertResponse{}, &wire.ForwardInsertResponse{}}, // 204: resp untouched
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
	// A push answers 204 with no body, like the store, unless it names
	// the replicas sharing the target's rows.
	resp := rawPost(t, "http://"+addr+wire.PathReplicate, "sec", "", string(mustJSON(t, validPush)))
	if resp.status != http.StatusNoContent || resp.body != "" {
		t.Errorf("replicate: %d %q, want 204 and no body", resp.status, resp.body)
	}
	sharer := uuid.New()
	want := wire.PushResponse{Shares: []uuid.UUID{sharer}}
	fake.setShares(want)
	var answer wire.PushResponse
	if err := c.Call(context.Background(), addr, wire.PathReplicate, validPush, &answer); err != nil {
		t.Fatalf("replicate with sharers: %v", err)
	}
	if !reflect.DeepEqual(answer, want) {
		t.Errorf("replicate with sharers: answer %+v, want %+v", answer, want)
	}
	fake.setShares(wire.PushResponse{})
	// The store answers 204 with no body.
	resp = rawPost(t, "http://"+addr+wire.PathMetadataStore, "sec", "",
		`{"table":"metrics","txnid":"`+txnA+`","encoded":"AQID"}`)
	if resp.status != http.StatusNoContent || resp.body != "" {
		t.Errorf("store: %d %q, want 204 and no body", resp.status, resp.body)
	}
	// Without Accept-Encoding: zstd the answer is plain JSON.
	resp = rawPost(t, "http://"+addr+wire.PathMetadataJoin, "sec", "", `{"table":"metrics"}`)
	if resp.status != 200 || resp.encoding != "" || !strings.Contains(resp.body, `"metadata_servers":["s1","s2"]`) {
		t.Errorf("join without zstd: %d %q %s", resp.status, resp.encoding, resp.body)
	}
	metrics := scrape(t, addr)
	for _, route := range []string{"internal_metadata_fetch", "internal_metadata_store", "internal_metadata_change",
		"internal_metadata_join", "internal_discovery", "internal_replicate", "internal_insert", "internal_query",
		"internal_meta", "internal_replicas"} {
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
	join := wire.JoinMetadataRequest{Table: "metrics"}
	for _, secret := range []string{"", "wrong", "sec2", "se"} {
		err := newClient(t, secret).Call(context.Background(), addr, wire.PathMetadataJoin, join, nil)
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
	if err := newClient(t, "sec").Call(context.Background(), addr, wire.PathMetadataJoin, join, nil); err != nil {
		t.Fatalf("with the secret and no bearer token: %v", err)
	}
	// The bearer token alone is not enough.
	req, _ := http.NewRequest("POST", "http://"+addr+wire.PathMetadataJoin, strings.NewReader(`{"table":"metrics"}`))
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
	if err := newClient(t, "").Call(context.Background(), addr, wire.PathMetadataJoin, join, nil); err != nil {
		t.Fatalf("no secret configured: %v", err)
	}
}

// TestInternalErrorMapping checks each backend error reaches rpc.Client as
// the status and code the callers test for.
func TestInternalErrorMapping(t *testing.T) {
	fake := &fakeInternal{}
	addr := startServer(t, NewServer(Config{Internal: fake}, panicky{}))
	c := newClient(t, "")
	fetch := wire.FetchMetadataRequest{Table: "metrics", TxnID: txnA}
	join := wire.JoinMetadataRequest{Table: "metrics"}
	for _, tc := range []struct {
		err    error
		path   string
		req    any
		status int
		code   string
	}{
		{metadata.ErrConflict, wire.PathMetadataChange, validChange, 409, api.CodeConflict},
		{metadata.ErrTxnMismatch, wire.PathMetadataStore, wire.StoreMetadataRequest{Table: "metrics", TxnID: txnA, Encoded: encA}, 409, api.CodeTxnMismatch},
		{metadata.ErrStale, wire.PathMetadataFetch, fetch, 409, api.CodeStale},
		{metadata.ErrInvalidOp, wire.PathMetadataChange, validChange, 400, api.CodeInvalidOp},
		{metadata.ErrInvalidFile, wire.PathMetadataStore, wire.StoreMetadataRequest{Table: "metrics", TxnID: txnA, Encoded: encA}, 400, api.CodeBadRequest},
		{metadata.ErrCorruptFile, wire.PathMetadataStore, wire.StoreMetadataRequest{Table: "metrics", TxnID: txnA, Encoded: encA}, 400, api.CodeBadRequest},
		{metadata.ErrChecksum, wire.PathMetadataFetch, fetch, 400, api.CodeBadRequest},
		{metadata.ErrNotMetadataServer, wire.PathMetadataChange, validChange, 421, api.CodeNotMetadataServer},
		{metadata.ErrNoQuorum, wire.PathMetadataChange, validChange, 503, api.CodeNoQuorum},
		{metadata.ErrOutcomeUnknown, wire.PathMetadataChange, validChange, 503, api.CodeOutcomeUnknown},
		{metadata.ErrFileNotFound, wire.PathMetadataFetch, fetch, 404, api.CodeNotFound},
		{metadata.ErrFileNotFound, wire.PathMetadataJoin, join, 503, api.CodeUnavailable},
		{metadata.ErrTableNotFound, wire.PathMetadataJoin, join, 404, api.CodeTableNotFound},
		{fmt.Errorf("%w: peer s2: %w", metadata.ErrNoQuorum, metadata.ErrFileNotFound), wire.PathMetadataChange, validChange, 503, api.CodeNoQuorum},
		{errors.New("disk on fire"), wire.PathDiscovery, wire.DiscoveryRequest{Table: "metrics", Server: "s2"}, 500, api.CodeInternal},
		{wire.ErrStalePlacement, wire.PathReplicate, validPush, 409, api.CodeStalePlacement},
		{wire.ErrMoved, wire.PathInsert, validForward, 409, api.CodeMoved},
		{wire.ErrMoved, wire.PathQuery, validSubQuery, 409, api.CodeMoved},
		{wire.ErrStalePlacement, wire.PathQuery, validSubQuery, 409, api.CodeStalePlacement},
		{wire.ErrInsertOutcomeUnknown, wire.PathInsert, validForward, 503, api.CodeOutcomeUnknownRows},
		{partition.ErrUnloading, wire.PathInsert, validForward, 409, api.CodeMoved},
		// The move is what the caller must act on, whatever revealed it.
		{fmt.Errorf("%w: %w", metadata.ErrStale, wire.ErrMoved), wire.PathInsert, validForward, 409, api.CodeMoved},
		{fmt.Errorf("%w: %w", wire.ErrUnavailable, wire.ErrStalePlacement), wire.PathReplicate, validPush, 409, api.CodeStalePlacement},
		{metadata.ErrTableNotFound, wire.PathReplicas, wire.ReplicasRequest{Table: "metrics"}, 404, api.CodeTableNotFound},
		{wire.ErrUnavailable, wire.PathReplicas, wire.ReplicasRequest{}, 503, api.CodeUnavailable},
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
		{wire.PathMetadataFetch, wire.FetchMetadataRequest{}, api.CodeBadRequest, "table: required"},
		{wire.PathMetadataFetch, wire.FetchMetadataRequest{Table: "Metrics"}, api.CodeInvalidTableName, "table: "},
		{wire.PathMetadataFetch, wire.FetchMetadataRequest{Table: "metrics", TxnID: "abc"}, api.CodeBadRequest, "txnid: \"abc\""},
		{wire.PathMetadataStore, wire.StoreMetadataRequest{Table: "metrics", Encoded: encA}, api.CodeBadRequest, "txnid: required"},
		{wire.PathMetadataStore, wire.StoreMetadataRequest{Table: "metrics", TxnID: txnA}, api.CodeBadRequest, "encoded: required"},
		{wire.PathMetadataChange, wire.ChangeMetadataRequest{Table: "metrics", BaseTxnID: txnA, NewTxnID: strings.ToUpper(txnB), Op: validChange.Op},
			api.CodeBadRequest, "new_txnid: "},
		{wire.PathMetadataChange, wire.ChangeMetadataRequest{Table: "metrics", NewTxnID: txnB, Op: validChange.Op},
			api.CodeBadRequest, "base_txnid: required"},
		{wire.PathMetadataChange, wire.ChangeMetadataRequest{Table: "metrics", BaseTxnID: txnA, NewTxnID: txnA, Op: validChange.Op},
			api.CodeBadRequest, "new_txnid: equals base_txnid"},
		{wire.PathMetadataChange, wire.ChangeMetadataRequest{Table: "metrics", BaseTxnID: txnA, NewTxnID: txnB},
			api.CodeBadRequest, "op.type: required"},
		{wire.PathMetadataJoin, wire.JoinMetadataRequest{Table: strings.Repeat("x", 65)}, api.CodeInvalidTableName, "table: "},
		{wire.PathDiscovery, wire.DiscoveryRequest{Table: "metrics"}, api.CodeBadRequest, "server: required"},
		{wire.PathDiscovery, wire.DiscoveryRequest{Table: "metrics", Server: "s2", Replicas: []metadata.ReplicaRef{{PartitionID: uuid.New()}}},
			api.CodeBadRequest, "replicas[0].placement_id: required"},
		// Replication and forwarding: every request names the partition,
		// the receiving placement and the sender's txnseq (rule 8).
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.PartitionID = uuid.Nil }), api.CodeBadRequest, "partition_id: required"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.ToPlacement = uuid.Nil }), api.CodeBadRequest, "to_placement: required"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.TxnSeq = 0 }), api.CodeBadRequest, "txnseq: required"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.FromServer = "" }), api.CodeBadRequest, "from_server: required"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.FromServer = "a/b" }), api.CodeBadRequest, "from_server: "},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.FromPlacement = uuid.Nil }), api.CodeBadRequest, "from_placement: required"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.FromPlacement = r.ToPlacement }), api.CodeBadRequest, "to_placement: equals from_placement"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.Rows = nil }), api.CodeBadRequest, "rows: required when count is 2"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.Count = -1 }), api.CodeBadRequest, "count: -1"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.LastSeq = 0 }), api.CodeBadRequest, "last_seq: required"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.Table = "Metrics" }), api.CodeInvalidTableName, "table: "},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.Held = []wire.HeldRelay{{Seq: 1, Rows: 1}} }), api.CodeBadRequest, "held[0].origin: required"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.Held = []wire.HeldRelay{{Origin: r.FromPlacement, Seq: 1, Rows: 1}} }), api.CodeBadRequest, "held[0].origin: "},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.Held = []wire.HeldRelay{{Origin: uuid.New(), Rows: 1}} }), api.CodeBadRequest, "held[0].seq: required"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) { r.Held = []wire.HeldRelay{{Origin: uuid.New(), Seq: 1}} }), api.CodeBadRequest, "held[0].rows: 0"},
		{wire.PathReplicate, with(validPush, func(r *wire.PushRequest) {
			r.Rows, r.Count, r.LastSeq, r.Held = nil, 0, 0, []wire.HeldRelay{{Origin: uuid.New(), Seq: 1, Rows: 1}}
		}), api.CodeBadRequest, "last_seq: required with held"},
		{wire.PathInsert, with(validForward, func(r *wire.ForwardInsertRequest) { r.Consistency = "QUORUM" }), api.CodeBadRequest, `consistency: "QUORUM"`},
		{wire.PathInsert, with(validForward, func(r *wire.ForwardInsertRequest) { r.Rows = nil }), api.CodeBadRequest, "rows: required"},
		{wire.PathInsert, with(validForward, func(r *wire.ForwardInsertRequest) { r.TxnSeq = 0 }), api.CodeBadRequest, "txnseq: required"},
		{wire.PathInsert, wire.ForwardInsertRequest{Table: "metrics"}, api.CodeBadRequest, "partition_id: required; http: bad request: to_placement: required; http: bad request: txnseq: required"},
		{wire.PathQuery, with(validSubQuery, func(r *wire.SubQueryRequest) { r.From = 30 }), api.CodeBadRequest, "to: 20 is before from (30)"},
		{wire.PathQuery, with(validSubQuery, func(r *wire.SubQueryRequest) { r.Limit = -1 }), api.CodeBadRequest, "limit: -1"},
		{wire.PathQuery, with(validSubQuery, func(r *wire.SubQueryRequest) { r.Step = -1 }), api.CodeBadRequest, "step: -1"},
		{wire.PathQuery, with(validSubQuery, func(r *wire.SubQueryRequest) { r.Agg = false }), api.CodeBadRequest, "step: set without agg"},
		{wire.PathQuery, with(validSubQuery, func(r *wire.SubQueryRequest) { r.ToPlacement = uuid.Nil }), api.CodeBadRequest, "to_placement: required"},
		{wire.PathQuery, with(validSubQuery, func(r *wire.SubQueryRequest) { r.Tags = &model.TagExpr{Op: "~"} }), api.CodeBadRequest, `tags: model: invalid tag predicate: unknown operator "~"`},
		{wire.PathQuery, with(validSubQuery, func(r *wire.SubQueryRequest) { r.GroupBy = []string{"host"} }), api.CodeBadRequest, "group_all and group_by: both set"},
		{wire.PathMeta, with(validMeta, func(r *wire.MetaQueryRequest) { r.Kind = "tag_keys" }), api.CodeBadRequest, `kind: "tag_keys"`},
		{wire.PathMeta, with(validMeta, func(r *wire.MetaQueryRequest) { r.Limit = -1 }), api.CodeBadRequest, "limit: -1"},
		{wire.PathMeta, with(validMeta, func(r *wire.MetaQueryRequest) { r.Query.Consistency = "most" }), api.CodeBadRequest, `consistency: "most"`},
		{wire.PathMeta, with(validMeta, func(r *wire.MetaQueryRequest) {
			r.Query.Tags = &model.TagExpr{Op: model.TagMatch, Key: "h", Value: "("}
		}), api.CodeBadRequest, "tags: "},
		{wire.PathMeta, with(validMeta, func(r *wire.MetaQueryRequest) { r.TxnSeq = 0 }), api.CodeBadRequest, "txnseq: required"},
		{wire.PathReplicas, wire.ReplicasRequest{Table: "no-such"}, api.CodeInvalidTableName, "table: "},
		{wire.PathReplicas, map[string]any{"tables": "metrics"}, api.CodeBadRequest, "unknown field"},
		// Several problems are reported together, on one line.
		{wire.PathMetadataStore, wire.StoreMetadataRequest{}, api.CodeBadRequest, "table: required; "},
		// Unknown fields: a peer speaking another schema fails loudly.
		{wire.PathMetadataJoin, map[string]any{"table": "metrics", "tabel": "x"}, api.CodeBadRequest, "unknown field"},
		{wire.PathMetadataJoin, "metrics", api.CodeBadRequest, "cannot unmarshal"},
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
		r := rawPostHeaders(t, "http://"+addr+wire.PathMetadataJoin, map[string]string{
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
	big := wire.DiscoveryRequest{Table: "metrics", Server: strings.Repeat("s", 8000)}
	se := statusOf(t, c.Call(context.Background(), addr, wire.PathDiscovery, big, nil))
	if se.Status != 413 || se.Code != api.CodeTooLarge {
		t.Errorf("decompressed over the limit: %+v, want 413", se)
	}
	// Just under the limit once decompressed is accepted.
	ok := wire.DiscoveryRequest{Table: "metrics", Server: strings.Repeat("s", 3900)}
	if err := c.Call(context.Background(), addr, wire.PathDiscovery, ok, nil); err != nil {
		t.Errorf("under the limit: %v", err)
	}
	// Over the limit as sent.
	r := postOverLimit(t, addr, wire.PathMetadataJoin, nil, 5000)
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
	r := rawGet(t, "http://"+addr+wire.PathMetadataFetch, "sec")
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
	for _, path := range []string{wire.PathMetadataFetch, wire.PathDiscovery, "/internal/nope"} {
		se := statusOf(t, newClient(t, "").Call(context.Background(), addr, path, wire.JoinMetadataRequest{Table: "m"}, nil))
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
	// tsdbCode is the X-Tsdb-Error-Code header of an error answered in
	// an InfluxDB shape (influxerr.go).
	tsdbCode string
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

// postOverLimit sends a POST whose headers announce a body of length
// bytes and sends no body, then reads the answer. The server must refuse
// on the Content-Length alone; because nothing unread is left in its
// socket when it closes, the close is a FIN, not a reset, so the answer
// always arrives. (Sending the body too races the server's close: the
// client may see "connection reset" before the 413.)
func postOverLimit(t *testing.T, addr, target string, headers map[string]string, length int) rawAnswer {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", target, addr, length)
	for k, v := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawAnswer{status: resp.StatusCode, body: string(body), tsdbCode: resp.Header.Get(headerTSDBErrorCode)}
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
		encoding: resp.Header.Get("Content-Encoding"), allow: resp.Header.Get("Allow"),
		tsdbCode: resp.Header.Get(headerTSDBErrorCode)}
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
	join := wire.JoinMetadataRequest{Table: "metrics"}
	if err := client("sec").Call(context.Background(), addr, wire.PathMetadataJoin, join, nil); err != nil {
		t.Fatal(err)
	}
	if count("srv/caller") != 1 || count("caller/srv") != 1 {
		t.Fatalf("after one call: %v, want one sample each way", seen)
	}
	fake.setErr(wire.ErrUnavailable)
	if err := client("sec").Call(context.Background(), addr, wire.PathMetadataJoin, join, nil); err == nil {
		t.Fatal("the backend's error was not returned")
	}
	if count("srv/caller") != 2 || count("caller/srv") != 2 {
		t.Fatalf("after an error answer: %v, want two samples each way", seen)
	}
	if err := client("wrong").Call(context.Background(), addr, wire.PathMetadataJoin, join, nil); !errors.Is(err, rpc.ErrUnauthorized) {
		t.Fatalf("wrong secret: %v", err)
	}
	if count("srv/caller") != 2 {
		t.Fatalf("an unauthorized request was sampled: %v", seen)
	}
}
