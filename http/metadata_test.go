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

// metadataBackend serves Metadata from a map of files by txnid; every other
// Backend method panics. Metadata runs under mu, so the test may change cfg
// under it.
type metadataBackend struct {
	panicky
	cfg   metadata.TableConfig
	files map[string]*metadata.File

	mu struct {
		sync.Mutex
		asked []string // txnids asked for
	}
}

func (b *metadataBackend) Metadata(_ context.Context, table, txnID string) (metadata.TableConfig, *metadata.File, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.asked = append(b.mu.asked, txnID)
	if table != b.cfg.Name {
		return metadata.TableConfig{}, nil, fmt.Errorf("%w: %s", metadata.ErrTableNotFound, table)
	}
	if txnID == "" {
		txnID = b.cfg.MetadataTxnID
	}
	f, ok := b.files[txnID]
	if !ok {
		return metadata.TableConfig{}, nil, fmt.Errorf("%w: %s/%s", metadata.ErrFileNotFound, table, txnID)
	}
	return b.cfg, f, nil
}

func (b *metadataBackend) lastAsked() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.asked[len(b.mu.asked)-1]
}

func testFile(txnID, parent string, seq uint64) *metadata.File {
	mid := int64(1767225600000000000)
	return &metadata.File{
		Table: "metrics", TxnID: txnID, TxnSeq: seq, ParentTxnID: parent,
		Partitions: []metadata.Partition{
			{ID: uuid.New(), End: &mid, Servers: []metadata.Placement{{ServerID: "s1", PlacementID: uuid.New()}}},
			{ID: uuid.New(), Begin: &mid, Servers: []metadata.Placement{{ServerID: "s2", PlacementID: uuid.New()}},
				Joining: []metadata.Placement{{ServerID: "s3", PlacementID: uuid.New()}}, Offline: true},
		},
	}
}

// TestTableMetadataEndpoint checks GET /api/v1/tables/{t}/metadata: the
// current file, a named one, and the errors around them.
func TestTableMetadataEndpoint(t *testing.T) {
	cur, old := testFile(txnB, txnA, 2), testFile(txnA, "", 1)
	be := &metadataBackend{
		cfg: metadata.TableConfig{Name: "metrics", MetadataTxnID: txnB, MetadataTxnSeq: 2, MetadataServers: []string{"s1"},
			ReplicationFactor: 1, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		files: map[string]*metadata.File{txnA: old, txnB: cur},
	}
	addr := startServer(t, NewServer(Config{AuthToken: "tok"}, be))
	base := "http://" + addr + "/api/v1/tables/"
	get := func(url string) rawAnswer {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer tok")
		return do(t, req)
	}
	for _, tc := range []struct {
		query     string
		want      *metadata.File
		wantAsked string
	}{
		{"", cur, ""},
		{"?txnid=" + txnA, old, txnA},
		{"?txnid=" + txnB, cur, txnB},
	} {
		r := get(base + "metrics/metadata" + tc.query)
		if r.status != 200 {
			t.Fatalf("%q: %d %s", tc.query, r.status, r.body)
		}
		var got api.MetadataResponse
		if err := json.Unmarshal([]byte(r.body), &got); err != nil {
			t.Fatalf("%q: %v: %s", tc.query, err, r.body)
		}
		if !jsonEqual(t, got.Metadata, tc.want) || !jsonEqual(t, got.Config, be.cfg) {
			t.Errorf("%q: got %s", tc.query, r.body)
		}
		if a := be.lastAsked(); a != tc.wantAsked {
			t.Errorf("%q: backend asked for txnid %q, want %q", tc.query, a, tc.wantAsked)
		}
		// The file keeps its own JSON: open ends are null.
		if !strings.Contains(r.body, `"begin":null`) || !strings.Contains(r.body, `"parent_txnid"`) {
			t.Errorf("%q: the file is not in its own JSON form: %s", tc.query, r.body)
		}
	}
	unknown := strings.Repeat("c", 40)
	for _, tc := range []struct {
		url, method string
		status      int
		code, want  string
	}{
		{base + "metrics/metadata?txnid=xyz", "GET", 400, api.CodeBadRequest, `txnid: "xyz"`},
		{base + "metrics/metadata?txnid=" + strings.ToUpper(txnA), "GET", 400, api.CodeBadRequest, "txnid: "},
		{base + "metrics/metadata?txnid=" + unknown, "GET", 404, api.CodeNotFound, unknown},
		{base + "nope/metadata", "GET", 404, api.CodeTableNotFound, "nope"},
		{base + "Bad/metadata", "GET", 400, api.CodeInvalidTableName, "Bad"},
		{base + "metrics/metadata", "POST", 405, api.CodeMethodNotAllowed, "GET"},
	} {
		req, _ := http.NewRequest(tc.method, tc.url, nil)
		req.Header.Set("Authorization", "Bearer tok")
		r := do(t, req)
		var eb api.ErrorResponse
		json.Unmarshal([]byte(r.body), &eb)
		if r.status != tc.status || eb.Error.Code != tc.code || !strings.Contains(eb.Error.Message, tc.want) {
			t.Errorf("%s %s: %d %s, want %d %s naming %q", tc.method, tc.url, r.status, r.body, tc.status, tc.code, tc.want)
		}
	}
	// The bearer token applies.
	if r := rawGet(t, base+"metrics/metadata", ""); r.status != 401 {
		t.Errorf("without the bearer token: %d, want 401", r.status)
	}
	// A missing current file is the server's problem (503), not the client's.
	be.mu.Lock()
	be.cfg.MetadataTxnID = unknown // guarded: the handler reads it under mu
	be.mu.Unlock()
	if r := get(base + "metrics/metadata"); r.status != 503 || !strings.Contains(r.body, api.CodeUnavailable) {
		t.Errorf("current file missing: %d %s, want 503", r.status, r.body)
	}
}
