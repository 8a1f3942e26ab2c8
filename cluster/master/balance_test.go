package master

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/metadata"
)

// TestPlanMoves checks the rebalance planner alone: it reaches counts
// within one of the mean, never moves an offline, splitting, joining or
// over-replicated partition or onto a server that holds it, and keeps to
// its budget.
func TestPlanMoves(t *testing.T) {
	pl := func(ids ...string) []metadata.Placement {
		var out []metadata.Placement
		for _, id := range ids {
			out = append(out, metadata.Placement{ServerID: id, PlacementID: uuid.New()})
		}
		return out
	}
	var parts []metadata.Partition
	for range 6 {
		parts = append(parts, metadata.Partition{ID: uuid.New(), Servers: pl("a", "b", "c")})
	}
	parts[0].Offline = true
	parts[1].Split = &metadata.Split{}
	parts[2].Joining = pl("d")
	file := &metadata.File{Table: "t", Partitions: parts}
	v := &clusterView{isLive: map[string]bool{}, draining: map[string]time.Time{"e": {}},
		tables: []tableView{{cfg: metadata.TableConfig{Name: "t", ReplicationFactor: 3}, file: file}}}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		v.live = append(v.live, membership.Info{ID: id})
		v.isLive[id] = true
	}
	counts, _ := v.placementCounts()
	before := maps.Clone(counts)
	if got := planMoves(v, counts, 0); got != nil {
		t.Fatalf("budget 0 planned %v", got)
	}
	moves := planMoves(v, counts, 10)
	movable := map[uuid.UUID]bool{parts[3].ID: true, parts[4].ID: true, parts[5].ID: true}
	for _, m := range moves {
		p, _ := file.Partition(m.pid)
		if !movable[m.pid] || listed(p, m.to) || m.to == "e" || !slices.ContainsFunc(p.Servers, func(x metadata.Placement) bool { return x.ServerID == m.from }) {
			t.Errorf("bad move %+v", m)
		}
	}
	// a, b, c hold 6 each (split children are empty here), d 1: the mean
	// over a–d is 19/4; d can take one of each movable partition.
	if len(moves) == 0 || counts["d"] <= before["d"] {
		t.Fatalf("moves %v, counts %v (before %v)", moves, counts, before)
	}
	if got := planMoves(v, counts, 1); len(got) > 1 {
		t.Errorf("budget 1 planned %d moves", len(got))
	}
}
