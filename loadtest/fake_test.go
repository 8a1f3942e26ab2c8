package loadtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tsdb/tsdb/http/api"
)

// fakeCluster is N httptest servers answering the API calls of a load
// test with a deterministic model of stored writes: an insert with
// smearing off stores its bytes on the first server only (one hot
// replica set), a smeared one spreads them evenly over every server.
// Probe rows are visible at once.
type fakeCluster struct {
	servers     []*httptest.Server
	noMetric    bool        // do not export MetricStoreWriteBytes
	onWrite     func(n int) // called with the number of each write, from 1
	failEveryK  int         // answer every k-th write 503 queue_full (0: never)
	mu          sync.Mutex  // guards the fields below
	stored      []float64   // bytes per server
	writes      int         // writes received
	probes      map[string]bool
	hidden      map[string]bool // probe series whose rows queries do not show
	tableExists bool
}

func newFakeCluster(t *testing.T, n int) *fakeCluster {
	t.Helper()
	f := &fakeCluster{stored: make([]float64, n), probes: map[string]bool{}, hidden: map[string]bool{}}
	for i := range n {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serve(i, w, r) }))
		t.Cleanup(s.Close)
		f.servers = append(f.servers, s)
	}
	return f
}

// urls returns the servers' base URLs.
func (f *fakeCluster) urls() []string {
	var out []string
	for _, s := range f.servers {
		out = append(out, s.URL)
	}
	return out
}

func (f *fakeCluster) serve(i int, w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/api/v1/cluster":
		var ans api.ClusterResponse
		for j, s := range f.servers {
			ans.Servers = append(ans.Servers, api.ServerInfo{ID: fmt.Sprintf("s%d", j+1), Addr: strings.TrimPrefix(s.URL, "http://")})
		}
		writeJSON(w, 200, ans)
	case r.URL.Path == "/api/v1/tables" && r.Method == http.MethodPost:
		f.createTable(w, r)
	case strings.HasSuffix(r.URL.Path, "/query"):
		f.query(w, r)
	case strings.HasPrefix(r.URL.Path, "/api/v1/tables/"):
		writeJSON(w, 200, json.RawMessage(`{"config": {"replication_factor": 3, "partition_size_target": 4194304,
			"smear": {"enabled": true, "max_delay": "1s", "keyrange_threshold": "1m0s"}}, "partitions": []}`))
	case r.URL.Path == "/write":
		f.write(w, r)
	case r.URL.Path == "/metrics":
		f.metrics(i, w)
	default:
		writeJSON(w, 404, api.ErrorResponse{Error: api.ErrorBody{Code: api.CodeNotFound, Message: r.URL.Path}})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (f *fakeCluster) createTable(w http.ResponseWriter, r *http.Request) {
	var req api.CreateTableRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Smear == nil || req.Smear.MaxDelay == nil {
		writeJSON(w, 400, api.ErrorResponse{Error: api.ErrorBody{Code: api.CodeBadRequest, Message: fmt.Sprint(err)}})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tableExists {
		writeJSON(w, 409, api.ErrorResponse{Error: api.ErrorBody{Code: api.CodeTableExists, Message: "exists"}})
		return
	}
	f.tableExists = true
	writeJSON(w, 201, req)
}

func (f *fakeCluster) write(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.writes++
	n := f.writes
	fail := f.failEveryK > 0 && n%f.failEveryK == 0
	if !fail {
		f.store(body, r.Header.Get(api.HeaderSmear) != "off")
	}
	f.mu.Unlock()
	if f.onWrite != nil {
		f.onWrite(n)
	}
	if fail {
		writeJSON(w, 503, api.ErrorResponse{Error: api.ErrorBody{Code: "queue_full", Message: "full"}})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// store applies the model of stored writes; f.mu is held.
func (f *fakeCluster) store(body []byte, smear bool) {
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		if strings.HasPrefix(line, ProbeMeasurement+",") {
			f.probes[strings.Fields(line)[0]] = true
		}
	}
	if !smear {
		f.stored[0] += float64(len(body))
		return
	}
	for i := range f.stored {
		f.stored[i] += float64(len(body)) / float64(len(f.stored))
	}
}

func (f *fakeCluster) query(w http.ResponseWriter, r *http.Request) {
	series := r.URL.Query().Get("series")
	f.mu.Lock()
	visible := f.probes[series] && !f.hidden[series]
	f.mu.Unlock()
	var ans api.RawQueryResponse
	if visible {
		ans.Rows = []api.Row{{Series: series, Fields: map[string]any{"v": 1.0}}}
	}
	writeJSON(w, 200, ans)
}

func (f *fakeCluster) metrics(i int, w http.ResponseWriter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(w, "# TYPE tsdb_smear_queue_rows gauge\ntsdb_smear_queue_rows %d\n", i)
	if !f.noMetric {
		fmt.Fprintf(w, "# TYPE tsdb_store_write_bytes_total counter\ntsdb_store_write_bytes_total{store=\"partition\"} %g\n", f.stored[i])
	}
}
