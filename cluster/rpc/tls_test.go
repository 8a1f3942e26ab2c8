package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/internal/testcerts"
	"github.com/tsdb/tsdb/internal/tlsconfig"
)

// startTLSServer serves h over TLS with a certificate of ca on a fresh
// 127.0.0.1 port until the test ends and returns its https base URL.
func startTLSServer(t *testing.T, ca *testcerts.CA, h fasthttp.RequestHandler) string {
	t.Helper()
	certFile, keyFile := ca.Issue(t, "server")
	cfg, err := tlsconfig.Server(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h, Name: "rpc-test"}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(tls.NewListener(ln, cfg)) }()
	t.Cleanup(func() {
		_ = srv.Shutdown()
		_ = ln.Close()
		<-served
	})
	return "https://" + ln.Addr().String()
}

// TestCallTLS (issue 14 item 9): a call to an https address goes over TLS
// and verifies the peer against Config.TLS's CA; a peer whose certificate
// another CA signed, and a plain-HTTP peer called as https, are refused at
// once (ErrTLS, one attempt, the handler never runs).
func TestCallTLS(t *testing.T) {
	ca, other := testcerts.NewCA(t, "cluster"), testcerts.NewCA(t, "other")
	var calls atomic.Int32
	h := func(ctx *fasthttp.RequestCtx) {
		calls.Add(1)
		if !ctx.IsTLS() {
			WriteError(ctx, 400, CodeBadRequest, "not over TLS")
			return
		}
		WriteResponse(ctx, 200, map[string]string{"ok": "tls"})
	}
	trusted := startTLSServer(t, ca, h)
	untrusted := startTLSServer(t, other, h)
	plain := startServer(t, h)
	clientTLS, err := tlsconfig.Client(ca.CAFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(Config{TLS: clientTLS, MaxAttempts: 3})
	t.Cleanup(c.Close)
	var resp map[string]string
	if err := c.Call(context.Background(), trusted, "/internal/x", map[string]int{"a": 1}, &resp); err != nil || resp["ok"] != "tls" {
		t.Fatalf("call over TLS: %v %v", resp, err)
	}
	if calls.Load() != 1 {
		t.Fatalf("%d calls reached the handler, want 1", calls.Load())
	}
	for _, addr := range []string{untrusted, "https://" + plain} {
		err := c.Call(context.Background(), addr, "/internal/x", nil, nil)
		if !errors.Is(err, ErrTLS) || errors.Is(err, ErrUnavailable) {
			t.Errorf("call to %s: %v, want ErrTLS without retries", addr, err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("%d calls reached a handler, want only the trusted one", calls.Load())
	}
	// A plain address is still called over plain HTTP.
	if err := c.Call(context.Background(), plain, "/internal/x", nil, nil); err == nil || !strings.Contains(err.Error(), "not over TLS") {
		t.Fatalf("plain call: %v, want the handler's answer", err)
	}
}
