package node

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdb/tsdb/model"
)

// TestSmearedRowReachesStampersReplica (issue 14 item 2): rows smeared by
// front end s1 are stamped with s1's node id, but while s1's own replica
// refuses to coordinate they are stored first by another replica. The
// push filter must not take them for rows that "came from" s1: after
// convergence every replica, s1's included, holds them in its local data.
func TestSmearedRowReachesStampersReplica(t *testing.T) {
	var refuse atomic.Bool
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.NoSmear = false
		cfg.knobs.smearDelay = func(time.Duration) time.Duration { return 0 }
		if cfg.ID == "s1" {
			cfg.knobs.RefuseCoordinate = refuse.Load
		}
	})
	c.createSmearTable("s1", "so", 3, time.Minute)
	refuse.Store(true)

	const rows = 5
	c.insertLP("s1", "so", smearRows("o", rows, 11e9, 1e9)) // smeared: stamped by s1
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.nodes["s1"].smearFwd.Drain(ctx); err != nil {
		t.Fatalf("forwarding the smeared rows: %v", err)
	}

	f := c.currentFile("s1", "so")
	p, ok := f.Find(smearBase + 11e9)
	if !ok || len(p.Servers) != 3 {
		t.Fatalf("narrow partition: %+v, found %v; want 3 servers", p, ok)
	}
	local := func(id string) []model.Row {
		for _, pl := range p.Servers {
			if pl.ServerID != id {
				continue
			}
			rep, ok := c.nodes[id].store.Replica(pl.PlacementID)
			if !ok {
				return nil
			}
			got, _, err := rep.Scan(model.Query{From: math.MinInt64, To: math.MaxInt64, Limit: 100})
			if err != nil {
				t.Fatalf("scan %s's replica: %v", id, err)
			}
			return got
		}
		return nil
	}
	var s1Placement = p.Servers[0].PlacementID
	for _, pl := range p.Servers {
		if pl.ServerID == "s1" {
			s1Placement = pl.PlacementID
		}
	}
	// Converged: s2 and s3 hold the rows, and each has pushed s1's
	// replica everything it holds (its cursor for s1 is at its synced
	// watermark).
	waitFor(t, "s2 and s3 to hold the rows and to have pushed s1 everything", func() bool {
		for _, pl := range p.Servers {
			if pl.ServerID == "s1" {
				continue
			}
			if len(local(pl.ServerID)) != rows {
				return false
			}
			rt := c.nodes[pl.ServerID].replica.Pusher(pl.PlacementID)
			if rt == nil {
				return false
			}
			found := false
			for _, ts := range rt.Status() {
				if ts.Placement == s1Placement {
					found = true
					if ts.Lag != 0 {
						return false
					}
				}
			}
			if !found {
				return false
			}
		}
		return true
	})
	got := local("s1")
	if len(got) != rows {
		t.Fatalf("s1's own replica holds %d of the %d rows it stamped and smeared (stored first by another replica)", len(got), rows)
	}
	for _, r := range got {
		if r.Fields[0].Version.Node != model.NodeID("s1") {
			t.Errorf("row %s has version %v, not stamped by s1: the test does not test the hole", r.Series, r.Fields[0].Version)
		}
	}
}
