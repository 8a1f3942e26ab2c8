package http

import (
	"crypto/tls"
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
// never-read connections at once; a connection with a request in flight is
// left to answer it (its context is cancelled after the grace period), and
// fasthttp closes idle keep-alive connections itself.
type connTracker struct {
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

// track returns ln whose accepted connections Shutdown can close. Under
// TLS, ln is the TLS listener: a connection counts as used once it read
// application data, not handshake bytes, and it keeps the TLS methods
// fasthttp looks for.
func (s *Server) track(ln net.Listener) net.Listener {
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
	if tlsConn, ok := c.(*tls.Conn); ok {
		return &trackedTLSConn{trackedConn: tc, tls: tlsConn}, nil
	}
	return tc, nil
}

// trackedTLSConn is a tracked TLS connection; fasthttp finds it is TLS by
// these two methods.
type trackedTLSConn struct {
	*trackedConn
	tls *tls.Conn
}

// Handshake runs the TLS handshake.
func (c *trackedTLSConn) Handshake() error { return c.tls.Handshake() }

// ConnectionState returns the TLS connection's state.
func (c *trackedTLSConn) ConnectionState() tls.ConnectionState { return c.tls.ConnectionState() }

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

// closeUnused closes the tracked connections that never read a byte (no
// request can be in flight on them).
func (t *connTracker) closeUnused() {
	t.mu.Lock()
	var victims []*trackedConn
	for c := range t.conns {
		if !c.read.Load() {
			victims = append(victims, c)
		}
	}
	t.mu.Unlock()
	for _, c := range victims {
		_ = c.Close()
	}
}
