package http

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// panicky is a backend with a bug: every call panics.
type panicky struct{}

func (panicky) CreateTable(context.Context, api.CreateTableRequest) (metadata.TableConfig, error) {
	panic("bug")
}

func (panicky) PatchTable(context.Context, string, api.PatchTableRequest) (metadata.TableConfig, error) {
	panic("bug")
}

func (panicky) DropTable(context.Context, string, bool) error              { panic("bug") }
func (panicky) ListTables(context.Context) ([]metadata.TableConfig, error) { panic("bug") }
func (panicky) Table(context.Context, string) (metadata.TableConfig, *metadata.File, error) {
	panic("bug")
}
func (panicky) Insert(context.Context, string, []model.Row, model.InsertOptions) error { panic("bug") }
func (panicky) Query(context.Context, string, model.Query) ([]model.Row, bool, error) {
	panic("bug")
}
func (panicky) Aggregate(context.Context, string, model.Query) ([]model.SeriesAgg, error) {
	panic("bug")
}
func (panicky) DeleteRows(context.Context, string, model.Query) error              { panic("bug") }
func (panicky) Cluster(context.Context) (api.ClusterResponse, error)               { panic("bug") }
func (panicky) Replicas(context.Context, string) ([]wire.PartitionReplicas, error) { panic("bug") }
func (panicky) JoinServer(context.Context, string, uuid.UUID, api.ServerChangeRequest) (*metadata.File, error) {
	panic("bug")
}
func (panicky) RemoveServer(context.Context, string, uuid.UUID, api.ServerChangeRequest) (*metadata.File, error) {
	panic("bug")
}
func (panicky) SplitPartition(context.Context, string, uuid.UUID, *int64) (*metadata.File, error) {
	panic("bug")
}
func (panicky) Metadata(context.Context, string, string) (metadata.TableConfig, *metadata.File, error) {
	panic("bug")
}

// TestHandlerPanicIsA500 checks a bug behind a handler answers 500 and the
// server keeps serving.
func TestHandlerPanicIsA500(t *testing.T) {
	s := NewServer(Config{}, panicky{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	cl := &http.Client{Timeout: 10 * time.Second}
	for i := 0; i < 3; i++ {
		resp, err := cl.Get("http://" + ln.Addr().String() + "/api/v1/tables")
		if err != nil {
			t.Fatalf("request %d: %v (the server died?)", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 500 {
			t.Fatalf("status %d, want 500", resp.StatusCode)
		}
	}
	resp, err := cl.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz after panics: %v %v", resp, err)
	}
	resp.Body.Close()
}
func (panicky) SetOffline(context.Context, string, uuid.UUID, bool) (*metadata.File, error) {
	panic("bug")
}
func (panicky) Drain(context.Context, string, bool) (api.DrainResponse, error) { panic("bug") }
func (panicky) Rebalance(context.Context) (api.RebalanceResponse, error)       { panic("bug") }
func (panicky) Health(context.Context) (api.HealthResponse, error)             { panic("bug") }
