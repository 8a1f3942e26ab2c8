package model

import (
	"hash/fnv"
	"sync"
	"sync/atomic"
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

// Clock is a hybrid logical clock: each reading is max(wall, last + 1),
// where wall is the wall clock truncated to the millisecond (in nanosecond
// units): the nanosecond digits then count the readings of one millisecond,
// and a version column compresses like millisecond timestamps
// (docs/storage-plan.md). Readings stay comparable with nanosecond versions
// stored before: a reading is never below last + 1.
//
// Observe moves it past every version the server receives, so versions a
// server assigns always order after everything it has seen — except a
// version more than the clock's max ahead (SetMaxAhead) beyond its wall
// clock, which Observe refuses: one far-future version must not drag every
// clock in the cluster forward.
type Clock struct {
	node     uint64
	now      func() int64
	maxAhead atomic.Int64 // ns; 0: unbounded

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
	wall := TruncateToMillisecond(c.now())
	c.mu.Lock()
	if wall <= c.mu.last {
		wall = c.mu.last + 1
	}
	c.mu.last = wall
	c.mu.Unlock()
	return Version{Wall: wall, Node: c.node}
}

// TruncateToMillisecond rounds the nanosecond reading ns down to a whole
// millisecond (towards minus infinity, so a negative reading rounds down too).
func TruncateToMillisecond(ns int64) int64 {
	r := ns % 1e6
	if r < 0 {
		r += 1e6
	}
	return ns - r
}

// SetMaxAhead bounds how far Observe may move the clock ahead of its wall
// clock; d <= 0 removes the bound (the default).
func (c *Clock) SetMaxAhead(d time.Duration) {
	c.maxAhead.Store(int64(max(d, 0)))
}

// Observe advances the clock past v and reports true, unless v is more than
// the max ahead (SetMaxAhead) beyond the wall clock: then the clock stays
// where it is and Observe reports false. A refused version is still a valid
// version of its row (its data); only this clock declines to follow it.
func (c *Clock) Observe(v Version) bool {
	if limit := c.maxAhead.Load(); limit > 0 && v.Wall > c.now()+limit {
		return false
	}
	c.mu.Lock()
	if v.Wall > c.mu.last {
		c.mu.last = v.Wall
	}
	c.mu.Unlock()
	return true
}
