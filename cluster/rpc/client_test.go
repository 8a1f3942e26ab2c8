package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

type echoRequest struct {
	Name   string  `json:"name"`
	Values []int64 `json:"values"`
}

type echoResponse struct {
	Greeting string  `json:"greeting"`
	Sum      int64   `json:"sum"`
	Values   []int64 `json:"values"`
}

func TestCallRoundTrip(t *testing.T) {
	type seen struct{ reqEncoding, reqType, accept, respEncoding string }
	var mu sync.Mutex
	var got seen
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		if !Authorized(ctx, "s3cret") {
			WriteError(ctx, 401, CodeUnauthorized, "bad secret")
			return
		}
		var req echoRequest
		if DecodeRequest(ctx, 1<<20, &req) != nil {
			return
		}
		resp := echoResponse{Greeting: "hello " + req.Name, Values: req.Values}
		for _, v := range req.Values {
			resp.Sum += v
		}
		WriteResponse(ctx, 200, resp)
		mu.Lock()
		got = seen{
			reqEncoding:  string(ctx.Request.Header.ContentEncoding()),
			reqType:      string(ctx.Request.Header.ContentType()),
			accept:       string(ctx.Request.Header.Peek("Accept-Encoding")),
			respEncoding: string(ctx.Response.Header.ContentEncoding()),
		}
		mu.Unlock()
	})
	c, rec := newTestClient(t, Config{Secret: "s3cret"})

	req := echoRequest{Name: "tsdb", Values: make([]int64, 1000)}
	var want int64
	for i := range req.Values {
		req.Values[i] = int64(i % 10)
		want += req.Values[i]
	}
	var resp echoResponse
	if err := c.Call(t.Context(), addr, "/internal/echo", req, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Greeting != "hello tsdb" || resp.Sum != want || len(resp.Values) != 1000 || resp.Values[999] != 9 {
		t.Fatalf("answer %q sum %d len %d", resp.Greeting, resp.Sum, len(resp.Values))
	}
	mu.Lock()
	defer mu.Unlock()
	wantSeen := seen{reqEncoding: "zstd", reqType: "application/json", accept: "zstd", respEncoding: "zstd"}
	if got != wantSeen {
		t.Fatalf("server saw %+v, want %+v", got, wantSeen)
	}
	if s := rec.get(); len(s) != 0 {
		t.Fatalf("slept %v on success", s)
	}
}

func TestCallNilBodies(t *testing.T) {
	var bodyLen, encoding atomic.Value
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		bodyLen.Store(len(ctx.Request.Body()))
		encoding.Store(string(ctx.Request.Header.ContentEncoding()))
		switch string(ctx.Path()) {
		case "/empty":
			WriteResponse(ctx, 204, nil)
		default:
			WriteResponse(ctx, 200, echoResponse{Greeting: "ignored"})
		}
	})
	c, _ := newTestClient(t, Config{})

	// nil req sends no body; nil resp discards the answer.
	if err := c.Call(t.Context(), addr, "/json", nil, nil); err != nil {
		t.Fatal(err)
	}
	if bodyLen.Load().(int) != 0 || encoding.Load().(string) != "" {
		t.Fatalf("nil req sent %d bytes with encoding %q", bodyLen.Load(), encoding.Load())
	}
	// An empty answer leaves resp untouched.
	resp := echoResponse{Greeting: "unchanged"}
	if err := c.Call(t.Context(), addr, "/empty", nil, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Greeting != "unchanged" {
		t.Fatalf("resp changed to %+v", resp)
	}
}

// statusServer answers each request with the next of statuses (the last
// repeats) and counts requests. headers are set on every non-2xx answer.
func statusServer(t *testing.T, hits *atomic.Int32, headers map[string]string, statuses ...int) string {
	t.Helper()
	return startServer(t, func(ctx *fasthttp.RequestCtx) {
		n := int(hits.Add(1))
		st := statuses[min(n, len(statuses))-1]
		if st/100 == 2 {
			WriteResponse(ctx, st, echoResponse{Greeting: fmt.Sprintf("attempt %d", n)})
			return
		}
		for k, v := range headers {
			ctx.Response.Header.Set(k, v)
		}
		WriteError(ctx, st, fmt.Sprintf("code_%d", st), fmt.Sprintf("status %d on attempt %d", st, n))
	})
}

func TestCallRetriesThenSucceeds(t *testing.T) {
	var hits atomic.Int32
	addr := statusServer(t, &hits, nil, 503, 503, 200)
	c, rec := newTestClient(t, Config{BaseBackoff: 50 * time.Millisecond, MaxBackoff: 2 * time.Second})

	var resp echoResponse
	if err := c.Call(t.Context(), addr, "/internal/x", echoRequest{Name: "a"}, &resp); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 3 || resp.Greeting != "attempt 3" {
		t.Fatalf("hits %d, answer %q", hits.Load(), resp.Greeting)
	}
	// Full jitter with rand 0.5: 0.5*50ms, then 0.5*100ms.
	if want := []time.Duration{25 * time.Millisecond, 50 * time.Millisecond}; !equalDurations(rec.get(), want) {
		t.Fatalf("backoffs %v, want %v", rec.get(), want)
	}
}

func TestCallBackoffScheduleAndUnavailable(t *testing.T) {
	var hits atomic.Int32
	addr := statusServer(t, &hits, nil, 503)
	c, rec := newTestClient(t, Config{
		MaxAttempts: 6,
		BaseBackoff: 50 * time.Millisecond,
		MaxBackoff:  120 * time.Millisecond,
		Rand:        randSeq(0, 0.5, 0.5, 0.25, 0.999),
	})
	err := c.Call(t.Context(), addr, "/internal/x", nil, nil)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "6 attempts") {
		t.Fatalf("err %q does not name the attempt count", err)
	}
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 503 || se.Code != "code_503" || se.Message != "status 503 on attempt 6" {
		t.Fatalf("last error %#v", se)
	}
	if hits.Load() != 6 {
		t.Fatalf("hits %d, want 6", hits.Load())
	}
	// Ceilings 50, 100, 120 (capped), 120, 120 ms times the jitter.
	want := []time.Duration{0, 50 * time.Millisecond, 60 * time.Millisecond, 30 * time.Millisecond,
		time.Duration(0.999 * float64(120*time.Millisecond))}
	if !equalDurations(rec.get(), want) {
		t.Fatalf("backoffs %v, want %v", rec.get(), want)
	}
}

func TestCallRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		want       time.Duration
	}{
		{"429 seconds", 429, "1", time.Second},
		{"429 capped by MaxBackoff", 429, "10", 2 * time.Second},
		{"429 zero keeps the jitter", 429, "0", 25 * time.Millisecond},
		{"429 invalid ignored", 429, "soon", 25 * time.Millisecond},
		{"503 seconds", 503, "1", time.Second},
		{"429 past date", 429, "Mon, 02 Jan 2006 15:04:05 GMT", 25 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			addr := statusServer(t, &hits, map[string]string{"Retry-After": tc.retryAfter}, tc.status, 200)
			c, rec := newTestClient(t, Config{BaseBackoff: 50 * time.Millisecond, MaxBackoff: 2 * time.Second})
			if err := c.Call(t.Context(), addr, "/internal/x", nil, nil); err != nil {
				t.Fatal(err)
			}
			if hits.Load() != 2 {
				t.Fatalf("hits %d, want 2", hits.Load())
			}
			if got := rec.get(); !equalDurations(got, []time.Duration{tc.want}) {
				t.Fatalf("backoffs %v, want [%v]", got, tc.want)
			}
		})
	}
}

func TestCallDoesNotRetry(t *testing.T) {
	for _, status := range []int{400, 403, 404, 409, 413, 500, 501} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var hits atomic.Int32
			addr := statusServer(t, &hits, nil, status, 200)
			c, rec := newTestClient(t, Config{})
			err := c.Call(t.Context(), addr, "/internal/x", echoRequest{}, nil)
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("err %v, want *StatusError", err)
			}
			want := StatusError{Status: status, Code: fmt.Sprintf("code_%d", status), Message: fmt.Sprintf("status %d on attempt 1", status)}
			if *se != want {
				t.Fatalf("got %+v, want %+v", *se, want)
			}
			if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrUnauthorized) {
				t.Fatalf("err %v matches a sentinel it should not", err)
			}
			if hits.Load() != 1 || len(rec.get()) != 0 {
				t.Fatalf("hits %d, backoffs %v: retried", hits.Load(), rec.get())
			}
		})
	}
}

func TestCallNonJSONErrorBody(t *testing.T) {
	var hits atomic.Int32
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		hits.Add(1)
		ctx.SetStatusCode(502)
		ctx.SetBodyString("  upstream went away\n")
	})
	c, rec := newTestClient(t, Config{MaxAttempts: 2})
	err := c.Call(t.Context(), addr, "/internal/x", nil, nil)
	var se *StatusError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &se) {
		t.Fatalf("err %v, want ErrUnavailable wrapping *StatusError", err)
	}
	if se.Status != 502 || se.Code != "" || se.Message != "upstream went away" {
		t.Fatalf("got %+v", *se)
	}
	if hits.Load() != 2 || len(rec.get()) != 1 {
		t.Fatalf("hits %d, backoffs %v", hits.Load(), rec.get())
	}
}

func TestCallUnauthorized(t *testing.T) {
	var hits atomic.Int32
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		hits.Add(1)
		if !Authorized(ctx, "s3cret") {
			WriteError(ctx, 401, CodeUnauthorized, "missing or wrong cluster secret")
			return
		}
		WriteResponse(ctx, 200, nil)
	})
	for _, tc := range []struct {
		name, secret string
		ok           bool
	}{
		{"missing", "", false},
		{"wrong", "guess", false},
		{"prefix", "s3cre", false},
		{"right", "s3cret", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			c, rec := newTestClient(t, Config{Secret: tc.secret})
			err := c.Call(t.Context(), addr, "/internal/x", nil, nil)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrUnauthorized) {
				t.Fatalf("err %v, want ErrUnauthorized", err)
			}
			var se *StatusError
			if !errors.As(err, &se) || se.Code != CodeUnauthorized {
				t.Fatalf("err %v, want a 401 StatusError", err)
			}
			if hits.Load() != 1 || len(rec.get()) != 0 {
				t.Fatalf("hits %d, backoffs %v: retried", hits.Load(), rec.get())
			}
		})
	}
}

func TestCallConnectionFailures(t *testing.T) {
	var conns atomic.Int32
	for _, tc := range []struct {
		name  string
		addr  string
		conns *atomic.Int32 // connections the server saw, when it can count
	}{
		{"refused", refusedAddr(t), nil},
		{"closed before answer", hangupAddr(t, &conns), &conns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rec := newTestClient(t, Config{MaxAttempts: 3})
			err := c.Call(t.Context(), tc.addr, "/internal/x", echoRequest{Name: "x"}, nil)
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err %v, want ErrUnavailable", err)
			}
			if !strings.Contains(err.Error(), "3 attempts") {
				t.Fatalf("err %q does not name the attempt count", err)
			}
			if n := len(rec.get()); n != 2 {
				t.Fatalf("%d backoffs, want 2", n)
			}
			if tc.conns != nil && tc.conns.Load() != 3 {
				t.Fatalf("server saw %d connections, want 3", tc.conns.Load())
			}
		})
	}
}

// blockingServer blocks the requests for which block returns true until the
// test ends, and answers the others at once.
func blockingServer(t *testing.T, hits *atomic.Int32, entered chan<- struct{}, block func(n int32) bool) string {
	t.Helper()
	release := make(chan struct{})
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		n := hits.Add(1)
		if block(n) {
			if entered != nil {
				entered <- struct{}{}
			}
			<-release
		}
		WriteResponse(ctx, 200, echoResponse{Greeting: fmt.Sprintf("attempt %d", n)})
	})
	t.Cleanup(func() { close(release) }) // runs before the server's shutdown
	return addr
}

func TestCallAttemptTimeoutRetried(t *testing.T) {
	var hits atomic.Int32
	addr := blockingServer(t, &hits, nil, func(n int32) bool { return n == 1 })
	c, rec := newTestClient(t, Config{Timeout: 100 * time.Millisecond, MaxAttempts: 4})

	var resp echoResponse
	if err := c.Call(t.Context(), addr, "/internal/x", nil, &resp); err != nil {
		t.Fatal(err)
	}
	// The first attempt hung and timed out; a later one answered.
	if hits.Load() < 2 || resp.Greeting == "attempt 1" {
		t.Fatalf("hits %d, answer %q", hits.Load(), resp.Greeting)
	}
	if int32(len(rec.get())) != hits.Load()-1 {
		t.Fatalf("%d backoffs for %d attempts", len(rec.get()), hits.Load())
	}
}

func TestCallEveryAttemptTimesOut(t *testing.T) {
	var hits atomic.Int32
	addr := blockingServer(t, &hits, nil, func(int32) bool { return true })
	c, rec := newTestClient(t, Config{Timeout: 100 * time.Millisecond, MaxAttempts: 2})
	err := c.Call(t.Context(), addr, "/internal/x", nil, nil)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v, want ErrUnavailable wrapping ErrTimeout", err)
	}
	// An attempt may time out before its request reaches the handler on a
	// starved machine, so the count is a bound, not an equality.
	if hits.Load() > 2 || len(rec.get()) != 1 {
		t.Fatalf("hits %d, backoffs %v; want 2 attempts", hits.Load(), rec.get())
	}
}

func TestCallContextCancelledDuringBackoff(t *testing.T) {
	var hits atomic.Int32
	addr := statusServer(t, &hits, nil, 503)
	backingOff := make(chan struct{}, 1)
	// The real sleep with a one-hour backoff: only a prompt return on
	// cancel lets this test finish.
	c, _ := newTestClient(t, Config{
		BaseBackoff: time.Hour,
		MaxBackoff:  time.Hour,
		Sleep: func(ctx context.Context, d time.Duration) error {
			backingOff <- struct{}{}
			return sleep(ctx, d)
		},
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-backingOff
		cancel()
	}()
	err := c.Call(ctx, addr, "/internal/x", nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Fatalf("err %v: a cancelled call is not 'unavailable'", err)
	}
	if hits.Load() != 1 {
		t.Fatalf("hits %d, want 1", hits.Load())
	}
}

func TestCallContextCancelledDuringAttempt(t *testing.T) {
	var hits atomic.Int32
	entered := make(chan struct{}, 1)
	// The client is made first so that its Close, which waits for the
	// abandoned attempt, runs after the handler is released.
	c, rec := newTestClient(t, Config{Timeout: time.Hour})
	addr := blockingServer(t, &hits, entered, func(int32) bool { return true })
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-entered
		cancel()
	}()
	err := c.Call(ctx, addr, "/internal/x", nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if hits.Load() != 1 || len(rec.get()) != 0 {
		t.Fatalf("hits %d, backoffs %v", hits.Load(), rec.get())
	}
}

func TestCallContextDeadlineBoundsAttempt(t *testing.T) {
	var hits atomic.Int32
	addr := blockingServer(t, &hits, nil, func(int32) bool { return true })
	c, rec := newTestClient(t, Config{Timeout: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := c.Call(ctx, addr, "/internal/x", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want context.DeadlineExceeded", err)
	}
	if hits.Load() > 1 || len(rec.get()) != 0 {
		t.Fatalf("hits %d, backoffs %v: retried after the deadline", hits.Load(), rec.get())
	}
}

func TestCallContextAlreadyDone(t *testing.T) {
	var hits atomic.Int32
	addr := statusServer(t, &hits, nil, 200)
	c, _ := newTestClient(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Call(ctx, addr, "/internal/x", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("hits %d, want 0", hits.Load())
	}
}

func TestCallResponseTooLarge(t *testing.T) {
	big := echoResponse{Greeting: strings.Repeat("x", 100<<10)}
	var hits atomic.Int32
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		hits.Add(1)
		switch string(ctx.Path()) {
		case "/zstd": // compresses to a few hundred bytes, inflates past the limit
			WriteResponse(ctx, 200, big)
		case "/identity-slightly-over": // within the wire slack, over the limit
			ctx.SetBodyString(`{"greeting":"` + strings.Repeat("y", 1500) + `"}`)
		case "/identity-huge": // refused by the transport's limit
			ctx.SetBodyString(`{"greeting":"` + strings.Repeat("z", 100<<10) + `"}`)
		case "/error-large": // an error body is bounded too
			ctx.SetStatusCode(500)
			ctx.SetBodyString(strings.Repeat("e", 3000))
		}
	})
	for _, path := range []string{"/zstd", "/identity-slightly-over", "/identity-huge", "/error-large"} {
		t.Run(path, func(t *testing.T) {
			hits.Store(0)
			c, rec := newTestClient(t, Config{MaxResponseBytes: 1024})
			var resp echoResponse
			err := c.Call(t.Context(), addr, path, nil, &resp)
			if path == "/error-large" {
				var se *StatusError
				if !errors.As(err, &se) || se.Status != 500 || !strings.Contains(se.Message, "too large") {
					t.Fatalf("err %v, want a 500 StatusError saying the body was too large", err)
				}
			} else if !errors.Is(err, ErrResponseTooLarge) {
				t.Fatalf("err %v, want ErrResponseTooLarge", err)
			}
			if hits.Load() != 1 || len(rec.get()) != 0 {
				t.Fatalf("hits %d, backoffs %v: retried", hits.Load(), rec.get())
			}
			if resp.Greeting != "" {
				t.Fatal("resp was filled")
			}
		})
	}
}

func TestCallBadResponse(t *testing.T) {
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/json":
			ctx.SetBodyString(`{"greeting": `)
		case "/zstd":
			ctx.Response.Header.SetContentEncoding("zstd")
			ctx.SetBodyString("not zstd at all")
		case "/gzip":
			ctx.Response.Header.SetContentEncoding("gzip")
			ctx.SetBodyString("whatever")
		}
	})
	for _, path := range []string{"/json", "/zstd", "/gzip"} {
		t.Run(path, func(t *testing.T) {
			c, rec := newTestClient(t, Config{})
			var resp echoResponse
			if err := c.Call(t.Context(), addr, path, nil, &resp); !errors.Is(err, ErrBadResponse) {
				t.Fatalf("err %v, want ErrBadResponse", err)
			}
			if len(rec.get()) != 0 {
				t.Fatal("retried")
			}
		})
	}
}

func TestCallRequestTooLarge(t *testing.T) {
	var hits atomic.Int32
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		hits.Add(1)
		var req echoRequest
		if DecodeRequest(ctx, 1024, &req) != nil {
			return
		}
		WriteResponse(ctx, 200, nil)
	})
	c, rec := newTestClient(t, Config{})
	// Compresses to far less than 1 KiB on the wire, but not once inflated.
	err := c.Call(t.Context(), addr, "/internal/x", echoRequest{Name: strings.Repeat("n", 10<<10)}, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 413 || se.Code != CodeTooLarge {
		t.Fatalf("err %v, want a 413 StatusError", err)
	}
	if hits.Load() != 1 || len(rec.get()) != 0 {
		t.Fatalf("hits %d, backoffs %v: retried", hits.Load(), rec.get())
	}
}

func TestCallEncodeError(t *testing.T) {
	c, _ := newTestClient(t, Config{})
	err := c.Call(t.Context(), refusedAddr(t), "/internal/x", map[string]any{"f": func() {}}, nil)
	if err == nil || !strings.Contains(err.Error(), "encode request") {
		t.Fatalf("err %v, want an encode error", err)
	}
}

func TestCallAfterClose(t *testing.T) {
	var hits atomic.Int32
	addr := statusServer(t, &hits, nil, 200)
	c := NewClient(Config{})
	if err := c.Call(t.Context(), addr, "/internal/x", nil, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, ctx := range []context.Context{t.Context(), context.Background()} {
		if err := c.Call(ctx, addr, "/internal/x", nil, nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("err %v, want ErrClosed", err)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("hits %d, want 1", hits.Load())
	}
}

// TestCallWithoutCancel covers the path where ctx can never be cancelled and
// the exchange runs on the caller's goroutine.
func TestCallWithoutCancel(t *testing.T) {
	var hits atomic.Int32
	addr := statusServer(t, &hits, nil, 503, 200)
	c, rec := newTestClient(t, Config{})
	var resp echoResponse
	if err := c.Call(context.Background(), addr, "/internal/x", nil, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Greeting != "attempt 2" || len(rec.get()) != 1 {
		t.Fatalf("answer %q, backoffs %v", resp.Greeting, rec.get())
	}
}

func TestCallConcurrent(t *testing.T) {
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		var req echoRequest
		if DecodeRequest(ctx, 1<<20, &req) != nil {
			return
		}
		WriteResponse(ctx, 200, echoResponse{Greeting: req.Name})
	})
	c, _ := newTestClient(t, Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			for j := range 20 {
				name := fmt.Sprintf("g%d-%d", i, j)
				var resp echoResponse
				if err := c.Call(t.Context(), addr, "/internal/echo", echoRequest{Name: name}, &resp); err != nil {
					errs <- err
					return
				}
				if resp.Greeting != name {
					errs <- fmt.Errorf("got %q, want %q", resp.Greeting, name)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
