package http

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/tsdb/tsdb/internal/testcerts"
	"github.com/tsdb/tsdb/internal/tlsconfig"
)

// TestShutdownClosesUnusedConnections: a client that dialed and never sent
// a request (Go's http.Transport keeps the spare connection of a dial
// race) must not hold Shutdown. fasthttp counts such a connection as
// active and would wait for it until ReadTimeout (60 s), past the 30 s a
// node's Stop allows; a used keep-alive connection is closed as idle.
// Under TLS the unused connection has done its handshake: it is the
// application data that marks a connection used.
func TestShutdownClosesUnusedConnections(t *testing.T) {
	t.Run("plain", func(t *testing.T) {
		testShutdownClosesUnused(t, nil, func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) })
	})
	t.Run("tls", func(t *testing.T) {
		ca := testcerts.NewCA(t, "ca")
		cert, key := ca.Issue(t, "server")
		serverTLS, err := tlsconfig.Server(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		clientTLS, err := tlsconfig.Client(ca.CAFile, "", "")
		if err != nil {
			t.Fatal(err)
		}
		testShutdownClosesUnused(t, serverTLS, func(addr string) (net.Conn, error) {
			c, err := tls.Dial("tcp", addr, clientTLS)
			if err == nil {
				err = c.Handshake()
			}
			return c, err
		})
	})
}

func testShutdownClosesUnused(t *testing.T, serverTLS *tls.Config, dial func(addr string) (net.Conn, error)) {
	s := NewServer(Config{}, panicky{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if serverTLS != nil {
		ln = tls.NewListener(ln, serverTLS)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()

	unused, err := dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer unused.Close()
	// A used connection left open after its answer (keep-alive).
	used, err := dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer used.Close()
	if _, err := used.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	if n, err := used.Read(buf); err != nil || n == 0 {
		t.Fatalf("healthz answer: %d bytes, %v", n, err)
	}
	// The unused connection was dialed first, so it was accepted before
	// the used one was served (the accept queue is first in, first out).

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a connection that never sent a request: %v, want nil", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	// The unused connection was closed by the server.
	unused.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := unused.Read(buf); err == nil {
		t.Fatalf("the unused connection is still open (read %d bytes)", n)
	}
}

// TestServeAfterShutdown: a Serve that starts after Shutdown (a node stopped
// right after it started, before its serving goroutine ran) closes its
// listener and returns at once instead of accepting for ever; and one that
// runs at the same time as Shutdown stops too.
func TestServeAfterShutdown(t *testing.T) {
	s := NewServer(Config{}, panicky{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after Shutdown = %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve after Shutdown still running after 20 s")
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the listener of a Serve after Shutdown still accepts")
	}

	for range 20 {
		s := NewServer(Config{}, panicky{})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- s.Serve(ln) }()
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("Serve racing Shutdown = %v, want nil", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Serve racing Shutdown still running after 20 s")
		}
	}
}
