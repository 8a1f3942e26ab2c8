package http

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// holdingBackend blocks its first hold ListTables calls until release is
// closed; later calls answer at once. Every other call panics (panicky).
type holdingBackend struct {
	panicky
	hold    int32
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (b *holdingBackend) ListTables(ctx context.Context) ([]metadata.TableConfig, error) {
	if b.calls.Add(1) <= b.hold {
		b.entered <- struct{}{}
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, nil
}

// TestConcurrencyCap (issue 14 item 7): with N public requests held in a
// handler, the N+1th is answered 503 overloaded with Retry-After and
// counted, while /healthz, /metrics and /internal/ are not held back;
// once the N finish, requests are admitted again.
func TestConcurrencyCap(t *testing.T) {
	const n = 3
	b := &holdingBackend{hold: n, entered: make(chan struct{}, n), release: make(chan struct{})}
	base := "http://" + startServer(t, NewServer(Config{MaxConcurrentRequests: n}, b))
	cl := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) (int, http.Header, []byte) {
		t.Helper()
		resp, err := cl.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, body
	}

	var wg sync.WaitGroup
	held := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := cl.Get(base + "/api/v1/tables")
			if err != nil {
				held <- -1
				return
			}
			resp.Body.Close()
			held <- resp.StatusCode
		}()
	}
	released := false
	defer func() {
		if !released {
			close(b.release)
		}
		wg.Wait()
	}()
	for i := range n {
		select {
		case <-b.entered:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d requests reached the handler", i, n)
		}
	}

	status, h, body := get("/api/v1/tables")
	if status != 503 {
		t.Fatalf("request %d with %d in flight: status %d, want 503: %s", n+1, n, status, body)
	}
	var eb api.ErrorResponse
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code != api.CodeOverloaded ||
		!strings.Contains(eb.Error.Message, "--max-concurrent-requests") {
		t.Fatalf("503 body %s (%v), want code %q naming --max-concurrent-requests", body, err, api.CodeOverloaded)
	}
	if h.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q, want 1", h.Get("Retry-After"))
	}
	// Not held back by the cap: health, metrics and the internal API.
	if status, _, body := get("/healthz"); status != 200 {
		t.Fatalf("/healthz while full: %d %s", status, body)
	}
	if status, _, body := get("/internal/query"); status != 404 { // no Internal: 404, not 503
		t.Fatalf("/internal/ while full: %d %s", status, body)
	}
	status, _, body = get("/metrics")
	if status != 200 || !strings.Contains(string(body), "tsdb_http_rejected_requests_total 1") {
		t.Fatalf("/metrics while full: %d, want tsdb_http_rejected_requests_total 1 in:\n%s", status, body)
	}

	close(b.release)
	released = true
	wg.Wait()
	for range n {
		if s := <-held; s != 200 {
			t.Fatalf("a held request ended with %d, want 200", s)
		}
	}
	if status, _, body := get("/api/v1/tables"); status != 200 {
		t.Fatalf("after the held requests finished: %d %s, want 200", status, body)
	}
}
