package rpc

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// startServer serves h on a fresh 127.0.0.1 port until the test ends and
// returns the address. Register anything that unblocks h after calling
// startServer, so that it runs first (cleanups run last-in, first-out).
func startServer(t testing.TB, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h, Name: "rpc-test"}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		// Shutdown is a no-op if Serve has not registered the listener
		// yet (a test that made no request); closing it ends Serve then.
		_ = ln.Close()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// refusedAddr returns an address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// hangupAddr returns the address of a listener that accepts connections and
// closes them at once, before any answer. It counts the connections.
func hangupAddr(t *testing.T, conns *atomic.Int32) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			_ = c.Close()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// sleeps records the backoffs a client asked for, without sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func (s *sleeps) get() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// randSeq returns the values in order, then repeats the last one.
func randSeq(vals ...float64) func() float64 {
	var mu sync.Mutex
	i := 0
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		v := vals[min(i, len(vals)-1)]
		i++
		return v
	}
}

// newTestClient returns a client with a recording Sleep and a fixed jitter
// of 0.5, closed when the test ends.
func newTestClient(t *testing.T, cfg Config) (*Client, *sleeps) {
	t.Helper()
	rec := &sleeps{}
	if cfg.Sleep == nil {
		cfg.Sleep = rec.sleep
	}
	if cfg.Rand == nil {
		cfg.Rand = randSeq(0.5)
	}
	c := NewClient(cfg)
	t.Cleanup(c.Close)
	return c, rec
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
