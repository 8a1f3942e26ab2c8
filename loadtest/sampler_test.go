package loadtest

import (
	"testing"
	"time"
)

// TestSamplerPoints: a point carries the gauges of the later scrape as
// they are and the counters as rates over the interval; the first scrape
// of a server only sets its baseline.
func TestSamplerPoints(t *testing.T) {
	origin := time.Unix(1000, 0)
	s := newSampler(nil, []Server{{ID: "s1"}}, time.Second, origin)
	base := sample{at: origin, ok: true, hasWrite: true, write: 1000, refused: 10, retried: 0, sealed: 500, splits: 2}
	s.add([]sample{base})
	if got := s.series()[0].Points; len(got) != 0 {
		t.Fatalf("points after the baseline scrape: %+v, want none", got)
	}
	next := sample{at: origin.Add(2 * time.Second), ok: true, hasWrite: true, write: 5000, refused: 16, retried: 4000,
		queue: 7, capacity: 12000, accept: 9000, forward: 8000, direct: 6000, lead: 1.5, lag: 300, sealed: 20500, splits: 5}
	s.add([]sample{next})
	pts := s.series()[0].Points
	if len(pts) != 1 {
		t.Fatalf("%d points, want 1", len(pts))
	}
	p := pts[0]
	want := Point{T: 2, WriteBytesPerSec: 2000, QueueRows: 7, RetriedRowsPerSec: 2000, ReplicationLagSeqs: 300,
		DueLeadSeconds: 1.5, CapacityRowsPerSec: 12000, AcceptRowsPerSec: 9000, ForwardRowsPerSec: 8000, DirectRowsPerSec: 6000, RefusalsPerSec: 3,
		SealedRowsPerSec: 10000, SplitsStarted: 3}
	if p != want {
		t.Fatalf("point %+v, want %+v", p, want)
	}
}
