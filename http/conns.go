package http

import (
	"net"
	"sync"
	"sync/atomic"
)

// connTracker keeps the connections a Server accepted, so that Shutdown
// can close the ones fasthttp would wait for in vain. fasthttp counts a
// connection as active from the moment it starts reading its first
// request, so a connection a client dialed and never used (Go's
// http.Transport keeps the spare connection of a dial race in its pool)
// holds ShutdownWithContext until ReadTimeout (60 s). Shutdown closes such
// never-read connections at once, and every remaining one once the grace
// period for in-flight requests is over.
type connTracker struct {
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

// Track returns ln whose accepted connections the server can close on
// Shutdown. Serve tracks its listener itself; Track is for a caller that
// wraps the listener further (in TLS), where the raw connections must be
// the tracked ones.
func (s *Server) Track(ln net.Listener) net.Listener {
	if _, ok := ln.(*trackingListener); ok {
		return ln
	}
	s.tracking.Store(true)
	return &trackingListener{Listener: ln, t: &s.conns}
}

type trackingListener struct {
	net.Listener
	t *connTracker
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, t: l.t}
	l.t.mu.Lock()
	if l.t.conns == nil {
		l.t.conns = make(map[*trackedConn]struct{})
	}
	l.t.conns[tc] = struct{}{}
	l.t.mu.Unlock()
	return tc, nil
}

// trackedConn is an accepted connection that records whether it ever
// read a byte.
type trackedConn struct {
	net.Conn
	t    *connTracker
	read atomic.Bool
}

func (c *trackedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.read.Load() {
		c.read.Store(true)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.t.mu.Lock()
	delete(c.t.conns, c)
	c.t.mu.Unlock()
	return c.Conn.Close()
}

// closeConns closes the tracked connections: all of them, or only those
// that never read a byte (no request can be in flight on them).
func (t *connTracker) closeConns(all bool) {
	t.mu.Lock()
	var victims []*trackedConn
	for c := range t.conns {
		if all || !c.read.Load() {
			victims = append(victims, c)
		}
	}
	t.mu.Unlock()
	for _, c := range victims {
		_ = c.Close()
	}
}
