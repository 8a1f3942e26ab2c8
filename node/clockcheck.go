package node

import (
	"fmt"
	"sync"
	"time"
)

// DefaultMaxClockOffset is how far this server's clock may be from its
// peers' before it refuses to coordinate writes (DESIGN.md rule 2).
const DefaultMaxClockOffset = 500 * time.Millisecond

// clockWindow is how long a peer's clock samples count.
const clockWindow = 10 * time.Second

// clockCheck estimates this server's clock offset from each peer's, as seen
// on internal calls: a push carries the sender's wall clock, and the
// receiver's reading minus it is the offset plus the network delay. The
// delay only adds, so the smallest difference over a window is the offset
// plus the smallest delay (on a LAN, well under a millisecond): a loaded
// moment does not look like a bad clock.
type clockCheck struct {
	max time.Duration

	mu struct {
		sync.Mutex
		peers map[string]*skewWindow
	}
}

// skewWindow keeps the smallest skew of the current and previous window.
type skewWindow struct {
	start      time.Time
	cur, prev  time.Duration
	hasPrev    bool
	lastSample time.Time
}

func newClockCheck(max time.Duration) *clockCheck {
	c := &clockCheck{max: max}
	c.mu.peers = make(map[string]*skewWindow)
	return c
}

// observe records a call from peer sent at sentAt (the peer's wall clock,
// ns) and received at now (ours).
func (c *clockCheck) observe(peer string, sentAt int64, now time.Time) {
	if sentAt == 0 || peer == "" {
		return
	}
	skew := time.Duration(now.UnixNano() - sentAt)
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.mu.peers[peer]
	switch {
	case w == nil:
		c.mu.peers[peer] = &skewWindow{start: now, cur: skew, lastSample: now}
		return
	case now.Sub(w.start) >= clockWindow:
		w.prev, w.hasPrev = w.cur, now.Sub(w.start) < 2*clockWindow
		w.start, w.cur = now, skew
	case skew < w.cur:
		w.cur = skew
	}
	w.lastSample = now
}

// offset is the estimated offset from peer: the smallest skew seen over the
// last one to two windows.
func (w *skewWindow) offset() time.Duration {
	if w.hasPrev && w.prev < w.cur {
		return w.prev
	}
	return w.cur
}

// check returns an error when a majority of this server's peers (peers is
// how many there are, live) saw this server's clock more than max away from
// theirs in the last window. One bad peer among two cannot make a good
// server refuse: it takes a majority of all of them.
func (c *clockCheck) check(now time.Time, peers int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	heard, off := 0, 0
	var worst time.Duration
	var worstPeer string
	for id, w := range c.mu.peers {
		if now.Sub(w.lastSample) > clockWindow {
			continue
		}
		heard++
		o := w.offset()
		if o > c.max || o < -c.max {
			off++
			if abs(o) > abs(worst) {
				worst, worstPeer = o, id
			}
		}
	}
	if off == 0 || off*2 <= max(peers, heard) {
		return nil
	}
	return fmt.Errorf("this server's clock is %v off %s's (and %d of %d peers' are beyond the %v maximum): it refuses to coordinate writes until the clocks agree",
		worst, worstPeer, off, heard, c.max)
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
