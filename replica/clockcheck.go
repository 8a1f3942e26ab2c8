package replica

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tsdb/tsdb/model"
)

// DefaultMaxClockOffset is how far this server's clock may be from its
// peers' before it refuses to coordinate writes (DESIGN.md rule 2).
const DefaultMaxClockOffset = 500 * time.Millisecond

// clockWindow is how long a peer's clock samples count.
const clockWindow = 10 * time.Second

// ClockCheck estimates this server's clock offset from each peer's, as seen
// on internal calls, both ways: every request and every answer carries its
// sender's wall clock (rpc.ClockHeader; a push also in its body), and the
// receiver's reading minus it is the offset plus the network delay. A
// server that only sends calls (a coordinator nobody pushes to) learns its
// offset from the answers. The delay only adds, so the smallest difference
// over a window is the offset plus the smallest delay (on a LAN, well under
// a millisecond): a loaded moment does not look like a bad clock.
type ClockCheck struct {
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

func NewClockCheck(max time.Duration) *ClockCheck {
	c := &ClockCheck{max: max}
	c.mu.peers = make(map[string]*skewWindow)
	return c
}

// Observe records a call from peer sent at sentAt (the peer's wall clock,
// ns) and received at now (ours).
func (c *ClockCheck) Observe(peer string, sentAt int64, now time.Time) {
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

// Check returns an error when a majority of this server's peers (peers is
// how many there are, live) saw this server's clock more than max away from
// theirs in the last window. One bad peer among two cannot make a good
// server refuse: it takes a majority of all of them.
func (c *ClockCheck) Check(now time.Time, peers int) error {
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

// farVersionLogEvery is how often a refused far-future version is logged at
// most (the metric counts every one).
const farVersionLogEvery = 10 * time.Second

// farVersions counts and logs the versions this server's clock refused to
// follow: more than the max clock offset ahead of its wall clock (rule 2:
// one far-future version must not move every clock forward). The rows
// carrying them are kept with their versions; only the clock stays.
type farVersions struct {
	max      time.Duration
	log      *slog.Logger
	rejected prometheus.Counter

	mu struct {
		sync.Mutex
		logged     time.Time // when one was last logged
		suppressed int       // refused since, not logged
	}
}

func newFarVersions(max time.Duration, log *slog.Logger) *farVersions {
	return &farVersions{max: max, log: log, rejected: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tsdb_clock_rejected_versions_total",
		Help: "Versions received more than the max clock offset ahead of this server's clock: stored with their rows, but the clock did not follow them.",
	})}
}

// refused records that the clock refused v, received from (a peer's push,
// a forwarded insert), when the wall clock read now (ns).
func (f *farVersions) refused(v model.Version, from string, now int64) {
	f.rejected.Inc()
	f.mu.Lock()
	t := time.Unix(0, now)
	if !f.mu.logged.IsZero() && t.Sub(f.mu.logged) < farVersionLogEvery && t.After(f.mu.logged) {
		f.mu.suppressed++
		f.mu.Unlock()
		return
	}
	suppressed := f.mu.suppressed
	f.mu.logged, f.mu.suppressed = t, 0
	f.mu.Unlock()
	f.log.Warn("clock: a version far ahead of this server's clock is stored but not followed (rule 2: clocks move at most the max offset)",
		"from", from, "version_wall", v.Wall, "version_node", v.Node, "ahead", time.Duration(v.Wall-now), "max_offset", f.max,
		"suppressed_since_last_log", suppressed)
}

// observeVersion moves this server's clock past v (received from: a peer's
// push or a forwarded insert), unless v is beyond the max clock offset
// ahead: then the clock stays, and the refusal is counted and logged.
func (s *Server) observeVersion(v model.Version, from string) {
	if v.Wall == 0 || s.clock.Observe(v) {
		return
	}
	s.farVersions.refused(v, from, s.now().UnixNano())
}

// CheckClock returns an error (503) when this server must not stamp
// versions: a majority of its live peers see its clock beyond the max
// offset (rule 2).
func (s *Server) CheckClock() error {
	return s.clocks.Check(s.now(), s.dir.Count()-1)
}
