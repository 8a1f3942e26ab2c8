package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// replBackend serves one table ("metrics") for the insert, replica and
// server-change endpoints and records what it is asked; every other
// Backend method panics. err, when set, is the answer of Replicas,
// JoinServer and RemoveServer.
type replBackend struct {
	panicky
	cfg   metadata.TableConfig
	file  *metadata.File
	parts []wire.PartitionReplicas

	mu struct {
		sync.Mutex
		inserts []model.InsertOptions
		changes []serverChange
		splits  []*int64
		err     error
		// insertErr is the answer of Insert.
		insertErr error
	}
}

// serverChange is one JoinServer or RemoveServer call.
type serverChange struct {
	join      bool
	table     string
	partition uuid.UUID
	req       api.ServerChangeRequest
}

func newReplBackend() *replBackend {
	f := testFile(txnB, txnA, 2)
	b := &replBackend{
		cfg: metadata.TableConfig{Name: "metrics", MetadataTxnID: txnB, MetadataTxnSeq: 2, MetadataServers: []string{"s1"},
			ReplicationFactor: 2, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		file: f,
	}
	r := cannedReplica
	r.PartitionID = f.Partitions[0].ID
	b.parts = []wire.PartitionReplicas{{Partition: f.Partitions[0], Replicas: []wire.ReplicaStatus{r}},
		{Partition: f.Partitions[1], Replicas: []wire.ReplicaStatus{}}}
	return b
}

func (b *replBackend) Table(_ context.Context, name string) (metadata.TableConfig, *metadata.File, error) {
	if name != b.cfg.Name {
		return metadata.TableConfig{}, nil, fmt.Errorf("%w: %s", metadata.ErrTableNotFound, name)
	}
	return b.cfg, b.file, nil
}

func (b *replBackend) Insert(_ context.Context, _ string, _ []model.Row, opts model.InsertOptions) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.inserts = append(b.mu.inserts, opts)
	return b.mu.insertErr
}

func (b *replBackend) Replicas(_ context.Context, table string) ([]wire.PartitionReplicas, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.parts, b.mu.err
}

func (b *replBackend) JoinServer(_ context.Context, table string, p uuid.UUID, req api.ServerChangeRequest) (*metadata.File, error) {
	return b.change(serverChange{true, table, p, req})
}

func (b *replBackend) RemoveServer(_ context.Context, table string, p uuid.UUID, req api.ServerChangeRequest) (*metadata.File, error) {
	return b.change(serverChange{false, table, p, req})
}

func (b *replBackend) change(c serverChange) (*metadata.File, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.changes = append(b.mu.changes, c)
	if b.mu.err != nil {
		return nil, b.mu.err
	}
	return &metadata.File{Table: c.table, TxnID: strings.Repeat("c", 40), TxnSeq: 3, ParentTxnID: txnB}, nil
}

// SplitPartition records the split and answers a file where partition 0
// splits at the asked time (or 50).
func (b *replBackend) SplitPartition(_ context.Context, table string, p uuid.UUID, at *int64) (*metadata.File, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.splits = append(b.mu.splits, at)
	if b.mu.err != nil {
		return nil, b.mu.err
	}
	if table != b.cfg.Name {
		return nil, fmt.Errorf("%w: %s", metadata.ErrTableNotFound, table)
	}
	f := *b.file
	f.Partitions = slices.Clone(f.Partitions)
	point := int64(50)
	if at != nil {
		point = *at
	}
	f.Partitions[0].ID = p
	f.Partitions[0].Split = &metadata.Split{Points: []int64{point}, Children: []metadata.Child{{ID: uuid.New()}, {ID: uuid.New()}}}
	return &f, nil
}

func (b *replBackend) splits() []*int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.mu.splits)
}

func (b *replBackend) setErr(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.err = err
}

func (b *replBackend) lastInsert() (model.InsertOptions, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.mu.inserts) == 0 {
		return model.InsertOptions{}, 0
	}
	return b.mu.inserts[len(b.mu.inserts)-1], len(b.mu.inserts)
}

func (b *replBackend) changes() []serverChange {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]serverChange(nil), b.mu.changes...)
}

// publicRequest sends a request with the bearer token "tok".
func publicRequest(t *testing.T, method, url string, headers map[string]string, body string) rawAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

// errorOf decodes an error answer: tsdb's shape, or one of InfluxDB's
// (influxerr.go), whose tsdb code is in the X-Tsdb-Error-Code header.
func errorOf(t *testing.T, r rawAnswer) api.ErrorBody {
	t.Helper()
	var eb api.ErrorResponse
	if err := json.Unmarshal([]byte(r.body), &eb); err == nil && eb.Error.Code != "" {
		return eb.Error
	}
	var v1 struct{ Error string }
	if err := json.Unmarshal([]byte(r.body), &v1); err == nil && v1.Error != "" && r.tsdbCode != "" {
		return api.ErrorBody{Code: r.tsdbCode, Message: v1.Error}
	}
	var v2 struct{ Code, Message string }
	if err := json.Unmarshal([]byte(r.body), &v2); err == nil && v2.Code != "" && r.tsdbCode != "" {
		return api.ErrorBody{Code: r.tsdbCode, Message: v2.Message}
	}
	t.Fatalf("answer %d %q is not an error body", r.status, r.body)
	return api.ErrorBody{}
}

// TestInsertConsistencyHeader checks X-TSDB-Consistency on every insert
// route: absent means quorum, the three levels in any case reach the
// backend, anything else is a 400 naming the header and the levels.
func TestInsertConsistencyHeader(t *testing.T) {
	be := newReplBackend()
	addr := startServer(t, NewServer(Config{AuthToken: "tok"}, be))
	base := "http://" + addr
	routes := []struct {
		url, body string
		status    int
	}{
		{base + "/api/v1/tables/metrics/insert", `[{"time":1,"series":"cpu","fields":{"v":1}}]`, 200},
		{base + "/write?db=metrics", "cpu v=1 1\n", 204},
		{base + "/api/v2/write?bucket=metrics", "cpu v=1 1\n", 204},
	}
	calls := 0
	for _, rt := range routes {
		for _, tc := range []struct {
			header string // "-" for no header
			want   string
		}{
			{"-", api.ConsistencyQuorum},
			{"one", api.ConsistencyOne},
			{"QUORUM", api.ConsistencyQuorum},
			{" All ", api.ConsistencyAll},
			{"quorum", api.ConsistencyQuorum},
		} {
			h := map[string]string{}
			if tc.header != "-" {
				h[api.HeaderConsistency] = tc.header
			}
			r := publicRequest(t, "POST", rt.url, h, rt.body)
			calls++
			opts, n := be.lastInsert()
			if r.status != rt.status || n != calls || opts.Consistency != tc.want {
				t.Errorf("%s with %q: %d %s, backend got %+v (call %d of %d), want %q", rt.url, tc.header, r.status, r.body,
					opts, n, calls, tc.want)
			}
		}
		for _, bad := range []string{"two", "majority", "one,all", "0"} {
			r := publicRequest(t, "POST", rt.url, map[string]string{api.HeaderConsistency: bad}, rt.body)
			eb := errorOf(t, r)
			if r.status != 400 || eb.Code != api.CodeBadRequest || !strings.Contains(eb.Message, api.HeaderConsistency) ||
				!strings.Contains(eb.Message, "one, quorum or all") || !strings.Contains(eb.Message, bad) {
				t.Errorf("%s with %q: %d %s, want 400 naming the header, the value and the levels", rt.url, bad, r.status, r.body)
			}
		}
		if _, n := be.lastInsert(); n != calls {
			t.Fatalf("%s: the backend saw %d inserts, want %d (bad headers must not insert)", rt.url, n, calls)
		}
	}
}

// TestTableReplicas checks GET /api/v1/tables/{t}?replicas=1 and that the
// answer without the flag is unchanged.
func TestTableReplicas(t *testing.T) {
	be := newReplBackend()
	addr := startServer(t, NewServer(Config{AuthToken: "tok"}, be))
	url := "http://" + addr + "/api/v1/tables/metrics"
	for _, q := range []string{"?replicas=1", "?replicas=true"} {
		r := publicRequest(t, "GET", url+q, nil, "")
		var got api.TableReplicasResponse
		if r.status != 200 || json.Unmarshal([]byte(r.body), &got) != nil {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
		if !jsonEqual(t, got.Config, be.cfg) || !jsonEqual(t, got.Partitions, be.parts) {
			t.Errorf("%s: got %s", q, r.body)
		}
		for _, want := range []string{`"replicas":[{"server":"s1"`, `"high_seq":12`, `"targets":[{"server":"s2"`,
			`"lag":3`, `"status":"SERVE"`, `"replicas":[]`, `"servers":[{"server_id":"s1"`} {
			if !strings.Contains(r.body, want) {
				t.Errorf("%s: answer lacks %s: %s", q, want, r.body)
			}
		}
	}
	for _, q := range []string{"", "?replicas=0", "?replicas=false"} {
		r := publicRequest(t, "GET", url+q, nil, "")
		var got api.TableResponse
		if r.status != 200 || json.Unmarshal([]byte(r.body), &got) != nil || strings.Contains(r.body, `"replicas"`) ||
			!jsonEqual(t, got.Partitions, be.file.Partitions) {
			t.Errorf("%q: %d %s, want the plain table answer", q, r.status, r.body)
		}
	}
	for _, tc := range []struct {
		url    string
		status int
		code   string
		want   string
	}{
		{url + "?replicas=yes", 400, api.CodeBadRequest, `replicas: "yes"`},
		{url + "?replicas=", 400, api.CodeBadRequest, `replicas: ""`},
		{url + "?replicas=2", 400, api.CodeBadRequest, "want 1, true, 0 or false"},
		{"http://" + addr + "/api/v1/tables/nope?replicas=1", 404, api.CodeTableNotFound, "nope"},
	} {
		r := publicRequest(t, "GET", tc.url, nil, "")
		if eb := errorOf(t, r); r.status != tc.status || eb.Code != tc.code || !strings.Contains(eb.Message, tc.want) {
			t.Errorf("%s: %d %s, want %d %s naming %q", tc.url, r.status, r.body, tc.status, tc.code, tc.want)
		}
	}
	be.setErr(fmt.Errorf("%w: no replica answered", wire.ErrUnavailable))
	if r := publicRequest(t, "GET", url+"?replicas=1", nil, ""); r.status != 503 || errorOf(t, r).Code != api.CodeUnavailable {
		t.Errorf("backend unavailable: %d %s, want 503", r.status, r.body)
	}
	be.setErr(nil)
	if r := rawGet(t, url+"?replicas=1", ""); r.status != 401 {
		t.Errorf("without the bearer token: %d, want 401", r.status)
	}
}

// TestPartitionJoinLeave checks POST …/partitions/{p}/join and …/leave:
// the request reaching the backend, the answer, and every refusal.
func TestPartitionJoinLeave(t *testing.T) {
	be := newReplBackend()
	addr := startServer(t, NewServer(Config{AuthToken: "tok"}, be))
	pid := be.file.Partitions[1].ID
	base := "http://" + addr + "/api/v1/tables/metrics/partitions/"
	want := []serverChange{
		{true, "metrics", pid, api.ServerChangeRequest{Server: "s3"}},
		{true, "metrics", pid, api.ServerChangeRequest{Server: "s3", Force: true}},
		{false, "metrics", pid, api.ServerChangeRequest{Server: "s2"}},
	}
	for _, tc := range []struct{ verb, body string }{
		{"join", `{"server":"s3"}`},
		{"join", `{"server":"s3","force":true}`},
		{"leave", `{"server":"s2","force":false}`},
	} {
		r := publicRequest(t, "POST", base+pid.String()+"/"+tc.verb, nil, tc.body)
		var got api.ChangeResponse
		if r.status != 200 || json.Unmarshal([]byte(r.body), &got) != nil ||
			got != (api.ChangeResponse{TxnID: strings.Repeat("c", 40), TxnSeq: 3}) {
			t.Errorf("%s %s: %d %s", tc.verb, tc.body, r.status, r.body)
		}
	}
	// The upper-case form of the uuid names the same partition.
	r := publicRequest(t, "POST", base+strings.ToUpper(pid.String())+"/leave", nil, `{"server":"s2"}`)
	if r.status != 200 {
		t.Errorf("upper-case partition id: %d %s", r.status, r.body)
	}
	want = append(want, want[2])
	if got := be.changes(); !jsonEqual(t, fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want)) {
		t.Fatalf("backend got %+v, want %+v", got, want)
	}

	for _, tc := range []struct {
		method, url, body string
		status            int
		code, want        string
	}{
		{"POST", base + "xyz/join", `{"server":"s3"}`, 400, api.CodeBadRequest, `partition id "xyz" is not a uuid`},
		{"POST", base + uuid.Nil.String() + "/join", `{"server":"s3"}`, 400, api.CodeBadRequest, "nil uuid"},
		// fasthttp folds "partitions//join" into "partitions/join".
		{"POST", base + "/join", `{"server":"s3"}`, 404, api.CodeNotFound, "no such endpoint"},
		{"POST", base + pid.String() + "/join", `{}`, 400, api.CodeBadRequest, "server: required"},
		{"POST", base + pid.String() + "/join", ``, 400, api.CodeBadRequest, "request body: "},
		{"POST", base + pid.String() + "/join", `{"server":"a/b"}`, 400, api.CodeBadRequest, "server: server id \"a/b\" contains '/'"},
		{"POST", base + pid.String() + "/join", `{"server":"s3","froce":true}`, 400, api.CodeBadRequest, "unknown field"},
		{"POST", base + pid.String() + "/join", `{"server":"s3"} {}`, 400, api.CodeBadRequest, "data after the JSON object"},
		{"POST", base + pid.String() + "/leave", `{"server":"s2","force":true}`, 400, api.CodeBadRequest, "force: only a join"},
		{"POST", base + pid.String() + "/leave", `{"force":true}`, 400, api.CodeBadRequest, "server: required; http: bad request: force: "},
		{"POST", "http://" + addr + "/api/v1/tables/Metrics/partitions/" + pid.String() + "/join", `{"server":"s3"}`,
			400, api.CodeInvalidTableName, "Metrics"},
		{"GET", base + pid.String() + "/join", ``, 405, api.CodeMethodNotAllowed, "POST"},
		{"POST", base + pid.String() + "/drain", `{"server":"s3"}`, 404, api.CodeNotFound, "no such endpoint"},
		{"POST", base + pid.String(), `{"server":"s3"}`, 404, api.CodeNotFound, "no such endpoint"},
		{"POST", base + pid.String() + "/join/x", `{"server":"s3"}`, 404, api.CodeNotFound, "no such endpoint"},
	} {
		r := publicRequest(t, tc.method, tc.url, nil, tc.body)
		if eb := errorOf(t, r); r.status != tc.status || eb.Code != tc.code || !strings.Contains(eb.Message, tc.want) {
			t.Errorf("%s %s %s: %d %s, want %d %s naming %q", tc.method, tc.url, tc.body, r.status, r.body, tc.status, tc.code, tc.want)
		}
	}
	if n := len(be.changes()); n != len(want) {
		t.Fatalf("the backend saw %d changes, want %d (refused requests must not reach it)", n, len(want))
	}

	// The backend's refusals.
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{metadata.ErrInvalidOp, 400, api.CodeInvalidOp},
		{metadata.ErrConflict, 409, api.CodeConflict},
		{metadata.ErrTableNotFound, 404, api.CodeTableNotFound},
		{metadata.ErrNoQuorum, 503, api.CodeNoQuorum},
		{metadata.ErrOutcomeUnknown, 503, api.CodeOutcomeUnknown},
	} {
		be.setErr(fmt.Errorf("server s3 of partition %s: %w", pid, tc.err))
		for _, verb := range []string{"join", "leave"} {
			r := publicRequest(t, "POST", base+pid.String()+"/"+verb, nil, `{"server":"s3"}`)
			if eb := errorOf(t, r); r.status != tc.status || eb.Code != tc.code || !strings.Contains(eb.Message, tc.err.Error()) {
				t.Errorf("%s, %v: %d %s, want %d %s", verb, tc.err, r.status, r.body, tc.status, tc.code)
			}
		}
	}
	be.setErr(nil)
	if r := rawPostHeaders(t, base+pid.String()+"/join", nil, `{"server":"s3"}`); r.status != 401 {
		t.Errorf("without the bearer token: %d, want 401", r.status)
	}
	metrics := scrape(t, addr)
	for _, route := range []string{"partition_join", "partition_leave"} {
		if !strings.Contains(metrics, `route="`+route+`"`) {
			t.Errorf("/metrics lacks route %q", route)
		}
	}
}

// TestClassifyReplication checks the replication sentinels win over the
// errors they are reported with.
func TestClassifyReplication(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("insert: %w", wire.ErrMoved), 409, api.CodeMoved},
		{fmt.Errorf("push: %w", wire.ErrStalePlacement), 409, api.CodeStalePlacement},
		{fmt.Errorf("%w: 1 of 3 replicas", wire.ErrInsertOutcomeUnknown), 503, api.CodeOutcomeUnknownRows},
		{fmt.Errorf("%w: %w", metadata.ErrConflict, wire.ErrMoved), 409, api.CodeMoved},
		{fmt.Errorf("%w: %w", wire.ErrUnavailable, wire.ErrInsertOutcomeUnknown), 503, api.CodeOutcomeUnknownRows},
		{errors.Join(metadata.ErrTableNotFound, wire.ErrStalePlacement), 409, api.CodeStalePlacement},
		{fmt.Errorf("apply: %w", partition.ErrUnloading), 409, api.CodeMoved},
		{fmt.Errorf("%w: push: %w", wire.ErrStalePlacement, partition.ErrUnloading), 409, api.CodeStalePlacement},
	} {
		status, code, msg := classify(tc.err)
		if status != tc.status || code != tc.code || !strings.Contains(msg, tc.err.Error()) {
			t.Errorf("%v: %d %s %q, want %d %s", tc.err, status, code, msg, tc.status, tc.code)
		}
	}
	if _, _, msg := classify(wire.ErrInsertOutcomeUnknown); !strings.HasPrefix(msg, OutcomeUnknownMessage) {
		t.Errorf("outcome unknown message %q", msg)
	}
}

// readBackend records the consistency of each query, and of each
// aggregate whether it asked for no variance and for sums only.
type readBackend struct {
	*replBackend
	got        []string
	noVariance []bool
	sumsOnly   []bool
}

func (b *readBackend) Query(_ context.Context, _ string, q model.Query) ([]model.Row, bool, error) {
	b.got = append(b.got, q.Consistency)
	return nil, false, nil
}

func (b *readBackend) Aggregate(_ context.Context, _ string, q model.Query) ([]model.SeriesAgg, error) {
	b.got = append(b.got, q.Consistency)
	b.noVariance = append(b.noVariance, q.NoVariance)
	b.sumsOnly = append(b.sumsOnly, q.SumsOnly)
	return nil, nil
}

// TestAggregateNoVariance: only agg=stddev asks the replicas for the
// variance; every other aggregate lets them skip its pass. count, sum and
// avg ask for sums only (model.Query.SumsOnly).
func TestAggregateNoVariance(t *testing.T) {
	be := &readBackend{replBackend: newReplBackend()}
	addr := startServer(t, NewServer(Config{}, be))
	base := "http://" + addr + "/api/v1/tables/metrics/query?agg="
	for a := model.AggCount; a <= model.AggStddev; a++ {
		if r := publicRequest(t, "GET", base+a.String(), nil, ""); r.status != 200 {
			t.Fatalf("agg=%s: %d %s", a, r.status, r.body)
		}
		if got, want := be.noVariance[len(be.noVariance)-1], a != model.AggStddev; got != want {
			t.Errorf("agg=%s: NoVariance %v, want %v", a, got, want)
		}
		if got, want := be.sumsOnly[len(be.sumsOnly)-1], a == model.AggCount || a == model.AggSum || a == model.AggAvg; got != want {
			t.Errorf("agg=%s: SumsOnly %v, want %v", a, got, want)
		}
	}
}

// TestQueryConsistencyHeader: a read is "one" unless X-TSDB-Consistency asks
// for quorum or all; a bad value is a 400 naming the header.
func TestQueryConsistencyHeader(t *testing.T) {
	be := &readBackend{replBackend: newReplBackend()}
	addr := startServer(t, NewServer(Config{}, be))
	base := "http://" + addr + "/api/v1/tables/metrics/query"
	for _, tc := range []struct {
		url, header, want string
	}{
		{base, "-", api.ConsistencyOne},
		{base, "quorum", api.ConsistencyQuorum},
		{base + "?agg=count", " ALL ", api.ConsistencyAll},
		{base + "?agg=count", "-", api.ConsistencyOne},
	} {
		h := map[string]string{}
		if tc.header != "-" {
			h[api.HeaderConsistency] = tc.header
		}
		if r := publicRequest(t, "GET", tc.url, h, ""); r.status != 200 {
			t.Fatalf("%s with %q: %d %s", tc.url, tc.header, r.status, r.body)
		}
		if got := be.got[len(be.got)-1]; got != tc.want {
			t.Errorf("%s with %q: backend got %q, want %q", tc.url, tc.header, got, tc.want)
		}
	}
	r := publicRequest(t, "GET", base, map[string]string{api.HeaderConsistency: "most"}, "")
	if r.status != 400 || !strings.Contains(r.body, api.HeaderConsistency) {
		t.Fatalf("bad consistency: %d %s", r.status, r.body)
	}
}

// TestSplitEndpoint checks POST /api/v1/tables/{t}/partitions/{p}/split:
// no body and {"at": …} in both time forms reach the backend; a bad body,
// a bad time or a bad partition id is a 400 naming the problem and never
// reaches it; the backend's "cannot split" is a 409 cannot_split.
func TestSplitEndpoint(t *testing.T) {
	be := newReplBackend()
	addr := startServer(t, NewServer(Config{AuthToken: "tok"}, be))
	pid := be.file.Partitions[0].ID
	url := fmt.Sprintf("http://%s/api/v1/tables/metrics/partitions/%s/split", addr, pid)
	for _, tc := range []struct {
		body string
		want int64 // -1: no at
	}{
		{"", -1}, {"{}", -1}, {`{"at": "70"}`, 70}, {`{"at": "1970-01-01T00:00:00.000000080Z"}`, 80},
	} {
		r := publicRequest(t, "POST", url, nil, tc.body)
		var resp api.SplitResponse
		if r.status != 200 || json.Unmarshal([]byte(r.body), &resp) != nil || len(resp.Children) != 2 {
			t.Fatalf("split with %q: %d %s", tc.body, r.status, r.body)
		}
		splits := be.splits()
		got := splits[len(splits)-1]
		if (tc.want < 0) != (got == nil) || got != nil && *got != tc.want || tc.want >= 0 && resp.At != tc.want {
			t.Fatalf("split with %q: backend got %v, answer at %d; want %d", tc.body, got, resp.At, tc.want)
		}
	}
	calls := len(be.splits())
	for _, tc := range []struct{ url, body, want string }{
		{url, `{"at": "yesterday"}`, "at:"},
		{url, `{"at": 70}`, "request body"},
		{url, `{"point": "70"}`, "unknown field"},
		{url, `{"at": "70"} {}`, "data after"},
		{strings.Replace(url, pid.String(), "p1", 1), "", "not a uuid"},
	} {
		r := publicRequest(t, "POST", tc.url, nil, tc.body)
		if eb := errorOf(t, r); r.status != 400 || !strings.Contains(eb.Message, tc.want) {
			t.Errorf("split with %q: %d %s, want 400 mentioning %q", tc.body, r.status, r.body, tc.want)
		}
	}
	if len(be.splits()) != calls {
		t.Fatal("a refused split reached the backend")
	}
	if r := publicRequest(t, "GET", url, nil, ""); r.status != 405 {
		t.Errorf("GET split: %d, want 405", r.status)
	}
	be.setErr(fmt.Errorf("replica x: every row is at one time: %w", partition.ErrCannotSplit))
	r := publicRequest(t, "POST", url, nil, "")
	if eb := errorOf(t, r); r.status != 409 || eb.Code != api.CodeCannotSplit || !strings.Contains(eb.Message, "one time") {
		t.Errorf("cannot split: %d %s, want 409 %s", r.status, r.body, api.CodeCannotSplit)
	}
}

// blockingBackend's Insert waits for its context to end.
type blockingBackend struct {
	*replBackend
	entered chan struct{}
}

func (b blockingBackend) Insert(ctx context.Context, _ string, _ []model.Row, _ model.InsertOptions) error {
	close(b.entered)
	<-ctx.Done()
	return ctx.Err()
}

// TestShutdownCancelsWaitingRequests: an insert still waiting when the
// server shuts down has its context cancelled after the grace period, so
// Shutdown returns well within its own deadline instead of waiting for
// the request's.
func TestShutdownCancelsWaitingRequests(t *testing.T) {
	be := blockingBackend{newReplBackend(), make(chan struct{})}
	s := NewServer(Config{}, be)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	answered := make(chan rawAnswer, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/write?db=metrics", strings.NewReader("cpu v=1 1\n"))
		answered <- do(t, req)
	}()
	<-be.entered
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second) // under the request's 55 s
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v; want the waiting request cancelled after the grace period", err)
	}
	if r := <-answered; r.status < 500 {
		t.Fatalf("the cancelled insert answered %d %s, want a 5xx", r.status, r.body)
	}
}

// TestInsertSmearHeader checks X-TSDB-Smear reaches the backend as NoSmear
// on every insert route, a bad value is a 400 that inserts nothing, and a
// full smear queue is a 503 queue_full with Retry-After.
func TestInsertSmearHeader(t *testing.T) {
	be := newReplBackend()
	addr := startServer(t, NewServer(Config{AuthToken: "tok"}, be))
	base := "http://" + addr
	routes := []struct{ url, body string }{
		{base + "/api/v1/tables/metrics/insert", `[{"time":1,"series":"cpu","fields":{"v":1}}]`},
		{base + "/write?db=metrics", "cpu v=1 1\n"},
	}
	calls := 0
	for _, rt := range routes {
		for _, tc := range []struct {
			header  string // "-" for no header
			noSmear bool
		}{{"-", false}, {"on", false}, {"OFF", true}, {" false ", true}, {"0", true}, {"yes", false}} {
			h := map[string]string{}
			if tc.header != "-" {
				h[api.HeaderSmear] = tc.header
			}
			r := publicRequest(t, "POST", rt.url, h, rt.body)
			calls++
			opts, n := be.lastInsert()
			if r.status >= 300 || n != calls || opts.NoSmear != tc.noSmear {
				t.Errorf("%s with %q: %d %s, backend got %+v, want NoSmear %v", rt.url, tc.header, r.status, r.body, opts, tc.noSmear)
			}
		}
		r := publicRequest(t, "POST", rt.url, map[string]string{api.HeaderSmear: "later"}, rt.body)
		if eb := errorOf(t, r); r.status != 400 || !strings.Contains(eb.Message, api.HeaderSmear) {
			t.Errorf("%s with a bad smear header: %d %s", rt.url, r.status, r.body)
		}
		if _, n := be.lastInsert(); n != calls {
			t.Fatalf("a bad smear header inserted")
		}
	}
	be.mu.Lock()
	be.mu.insertErr = &api.RetryError{Err: fmt.Errorf("%w: 10 rows over the limit", api.ErrQueueFull), After: 1500 * time.Millisecond}
	be.mu.Unlock()
	req, _ := http.NewRequest("POST", base+"/write?db=metrics", strings.NewReader("cpu v=1 1\n"))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("full queue: %d, Retry-After %q; want 503 and 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
