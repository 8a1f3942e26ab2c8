package http

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// tableBackend answers PATCH and DELETE of a table and records the calls.
type tableBackend struct{ opBackend }

func (b *tableBackend) PatchTable(_ context.Context, name string, req api.PatchTableRequest) (metadata.TableConfig, error) {
	return metadata.TableConfig{Name: name, Retention: *req.Retention}, b.record("patch %s %s", name, req.Retention)
}

func (b *tableBackend) DropTable(_ context.Context, name string, force bool) error {
	return b.record("drop %s %t", name, force)
}

// TestPatchAndDropTable: the routes reach the backend with what they
// parsed; a bad body, a field other than retention, a bad force value or
// table name never does (400 naming the problem).
func TestPatchAndDropTable(t *testing.T) {
	be := &tableBackend{}
	base := "http://" + startServer(t, NewServer(Config{AuthToken: "tok"}, be))
	for _, tc := range []struct {
		method, path, body string
		status             int
		call               string
	}{
		{"PATCH", "/api/v1/tables/cpu", `{"retention":"30d"}`, 200, "patch cpu 720h0m0s"},
		{"PATCH", "/api/v1/tables/cpu", `{"retention":0}`, 200, "patch cpu 0s"},
		{"DELETE", "/api/v1/tables/cpu", "", 204, "drop cpu false"},
		{"DELETE", "/api/v1/tables/cpu?force=true", "", 204, "drop cpu true"},
	} {
		r := publicRequest(t, tc.method, base+tc.path, nil, tc.body)
		calls := be.taken()
		if r.status != tc.status || len(calls) != 1 || calls[0] != tc.call {
			t.Errorf("%s %s %s: %d %s, calls %q; want %d and %q", tc.method, tc.path, tc.body, r.status, r.body, calls, tc.status, tc.call)
		}
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"PATCH", "/api/v1/tables/cpu", `{"retention":"1h","replication_factor":2}`, 400, "replication_factor"},
		{"PATCH", "/api/v1/tables/cpu", `{}`, 400, "retention"},
		{"PATCH", "/api/v1/tables/cpu", `{"retention":"soon"}`, 400, "soon"},
		{"PATCH", "/api/v1/tables/cpu", `not json`, 400, "table patch"},
		{"PATCH", "/api/v1/tables/C!", `{"retention":"1h"}`, 400, "C!"},
		{"DELETE", "/api/v1/tables/cpu?force=yes", "", 400, "force"},
		{"PUT", "/api/v1/tables/cpu", "", 405, "GET, PATCH, DELETE"},
	} {
		r := publicRequest(t, tc.method, base+tc.path, nil, tc.body)
		if r.status != tc.status || !strings.Contains(r.body, tc.want) || len(be.taken()) != 0 {
			t.Errorf("%s %s %s: %d %s, want %d naming %q and no backend call", tc.method, tc.path, tc.body, r.status, r.body, tc.status, tc.want)
		}
	}
	be.err = fmt.Errorf("%w: table \"cpu\": partition p is splitting", metadata.ErrConflict)
	r := publicRequest(t, "DELETE", base+"/api/v1/tables/cpu", nil, "")
	if eb := errorOf(t, r); r.status != 409 || eb.Code != api.CodeConflict || !strings.Contains(eb.Message, "splitting") {
		t.Errorf("DELETE during a split: %d %s", r.status, r.body)
	}
	be.err = fmt.Errorf("%w: %q", metadata.ErrTableNotFound, "cpu")
	if r := publicRequest(t, "DELETE", base+"/api/v1/tables/cpu", nil, ""); r.status != 404 {
		t.Errorf("DELETE of an unknown table: %d %s", r.status, r.body)
	}
}
