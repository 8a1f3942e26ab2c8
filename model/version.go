package model

import (
	"hash/fnv"
	"sync"
	"time"
)

// Version orders writes of the same field. Wall is a hybrid logical clock
// reading in nanoseconds; Node is derived from the id of the server that first
// accepted the write, so two servers never produce the same version.
type Version struct {
	Wall int64
	Node uint64
}

// Less reports whether v orders before o.
func (v Version) Less(o Version) bool {
	if v.Wall != o.Wall {
		return v.Wall < o.Wall
	}
	return v.Node < o.Node
}

// IsZero reports whether v is the zero version, which no clock hands out.
func (v Version) IsZero() bool { return v.Wall == 0 && v.Node == 0 }

// NodeID derives the version suffix of a server from its id (FNV-64a). It is
// never zero.
func NodeID(serverID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(serverID))
	if n := h.Sum64(); n != 0 {
		return n
	}
	return 1
}

// Clock is a hybrid logical clock: each reading is max(wall ns, last + 1),
// and Observe moves it past every version the server receives, so versions a
// server assigns always order after everything it has seen.
type Clock struct {
	node uint64
	now  func() int64

	mu struct {
		sync.Mutex
		last int64 // highest Wall handed out or observed
	}
}

// NewClock returns a clock for the server with the given id. now defaults to
// the system clock; tests pass a fake.
func NewClock(serverID string, now func() int64) *Clock {
	if now == nil {
		now = func() int64 { return time.Now().UnixNano() }
	}
	return &Clock{node: NodeID(serverID), now: now}
}

// Now returns a fresh version, strictly greater than every earlier reading.
func (c *Clock) Now() Version {
	wall := c.now()
	c.mu.Lock()
	if wall <= c.mu.last {
		wall = c.mu.last + 1
	}
	c.mu.last = wall
	c.mu.Unlock()
	return Version{Wall: wall, Node: c.node}
}

// Observe advances the clock past v.
func (c *Clock) Observe(v Version) {
	c.mu.Lock()
	if v.Wall > c.mu.last {
		c.mu.last = v.Wall
	}
	c.mu.Unlock()
}
