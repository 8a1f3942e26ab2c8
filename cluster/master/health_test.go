package master

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/operator"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// view builds a clusterView of live servers and one table's partitions,
// given contiguous ranges in a valid METADATA.
func view(live []string, rf int, metaServers []string, parts ...metadata.Partition) *clusterView {
	for i := range parts {
		if i > 0 {
			b := int64(i * 10)
			parts[i].Begin, parts[i-1].End = &b, &b
		}
	}
	v := &clusterView{isLive: map[string]bool{}, draining: map[string]time.Time{}, lost: map[uuid.UUID]operator.LostMark{}}
	for _, id := range live {
		v.live = append(v.live, membership.Info{ID: id})
		v.isLive[id] = true
	}
	cfg := metadata.TableConfig{Name: "t", ReplicationFactor: rf, MetadataServers: metaServers}
	v.tables = []tableView{{cfg: cfg, file: &metadata.File{Table: "t", TxnID: strings.Repeat("a", 40), TxnSeq: 1, Partitions: parts}}}
	return v
}

func placements(ids ...string) []metadata.Placement {
	var out []metadata.Placement
	for _, id := range ids {
		out = append(out, metadata.Placement{ServerID: id, PlacementID: uuid.New()})
	}
	return out
}

// TestHealthProblems: the report lists each kind of problem the view has,
// sorted, and every server with its placement counts.
func TestHealthProblems(t *testing.T) {
	under := metadata.Partition{ID: uuid.New(), Servers: placements("a", "c")}
	over := metadata.Partition{ID: uuid.New(), Servers: placements("a", "b", "c")}
	offline := metadata.Partition{ID: uuid.New(), Servers: placements("a", "b"), Offline: true}
	joining := metadata.Partition{ID: uuid.New(), Servers: placements("a", "b"), Joining: placements("d")}
	v := view([]string{"a", "b", "d"}, 2, []string{"a", "c"}, under, over, offline, joining)
	v.draining["d"] = time.Unix(0, 0)
	v.lost[under.Servers[0].PlacementID] = operator.LostMark{Server: "a"}

	h := v.health()
	var kinds []string
	for _, p := range h.Problems {
		kinds = append(kinds, p.Kind+"/"+p.Server)
	}
	want := []string{
		api.ProblemDraining + "/d",
		api.ProblemLeaseExpired + "/c",
		api.ProblemMetadataServers + "/",
		api.ProblemNoMaster + "/",
		api.ProblemOffline + "/",
		api.ProblemOverReplicated + "/",
		api.ProblemUnderReplicated + "/",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("problems %v, want %v", kinds, want)
	}
	var ids []string
	for _, s := range h.Servers {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c", "d"}) {
		t.Fatalf("servers %v", ids)
	}
	if a := h.Servers[0]; a.Partitions != 4 || !a.Live {
		t.Errorf("server a: %+v, want 4 partitions, live", a)
	}
	if d := h.Servers[3]; d.Joining != 1 || !d.Draining {
		t.Errorf("server d: %+v, want 1 joining, draining", d)
	}
	if h.Balanced {
		t.Error("balanced with a join in progress")
	}
}

// TestHealthQuiet: a cluster at its factor everywhere has no problem but
// "no master" when none is elected, and none once one is.
func TestHealthQuiet(t *testing.T) {
	v := view([]string{"a", "b"}, 2, []string{"a", "b"}, metadata.Partition{ID: uuid.New(), Servers: placements("a", "b")})
	v.master = "a"
	h := v.health()
	if len(h.Problems) != 0 || !h.Balanced || h.Mean != 1 {
		t.Errorf("report %+v, want no problem, balanced at mean 1", h)
	}
	if !h.Servers[0].Master || h.Servers[1].Master {
		t.Errorf("servers %+v: a is the master", h.Servers)
	}
}

// TestPlacementCounts counts servers, joiners and split children.
func TestPlacementCounts(t *testing.T) {
	p := metadata.Partition{ID: uuid.New(), Servers: placements("a", "b"), Joining: placements("c"),
		Split: &metadata.Split{Children: []metadata.Child{{ID: uuid.New(), Servers: placements("a", "c")}}}}
	total, joining := view([]string{"a", "b", "c"}, 2, nil, p).placementCounts()
	if total["a"] != 2 || total["b"] != 1 || total["c"] != 2 || joining["c"] != 1 || joining["a"] != 0 {
		t.Errorf("total %v joining %v", total, joining)
	}
}

// TestMetadataServersWanted: the factor, at least one, at most the live
// servers.
func TestMetadataServersWanted(t *testing.T) {
	for _, tc := range []struct{ rf, live, want int }{{3, 5, 3}, {3, 2, 2}, {0, 4, 1}, {3, 0, 1}} {
		if got := metadataServersWanted(metadata.TableConfig{ReplicationFactor: tc.rf}, tc.live); got != tc.want {
			t.Errorf("rf %d live %d: %d, want %d", tc.rf, tc.live, got, tc.want)
		}
	}
}
