package replica

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// TestPlanAcks (issue 14 item 3): W counts the table's replication factor,
// never fewer copies because servers[] lists fewer (joining servers are not
// listed), and a coordinator that servers[] no longer lists under its
// placement does not count its own copy.
func TestPlanAcks(t *testing.T) {
	mine, other := uuid.New(), uuid.New()
	list := func(ids ...string) []metadata.Placement {
		var out []metadata.Placement
		for _, id := range ids {
			pl := metadata.Placement{ServerID: id, PlacementID: uuid.New()}
			if id == "me" {
				pl.PlacementID = mine
			}
			out = append(out, pl)
		}
		return out
	}
	tests := []struct {
		name        string
		consistency string
		rf          int
		servers     []metadata.Placement
		need, peers int // W, and how many of the others must confirm
		others      string
	}{
		{"quorum, full", api.ConsistencyQuorum, 3, list("me", "b", "c"), 2, 1, "[b c]"},
		{"default is quorum", "", 3, list("me", "b", "c"), 2, 1, "[b c]"},
		{"quorum, two listed (one joining)", api.ConsistencyQuorum, 3, list("me", "b"), 2, 1, "[b]"},
		{"quorum, one listed (two joining)", api.ConsistencyQuorum, 3, list("me"), 2, 1, "[]"},
		{"all, one listed", api.ConsistencyAll, 3, list("me"), 3, 2, "[]"},
		{"one, one listed", api.ConsistencyOne, 3, list("me"), 1, 0, "[]"},
		{"quorum, a move lists RF+1", api.ConsistencyQuorum, 3, list("me", "b", "c", "d"), 3, 2, "[b c d]"},
		{"all, a move lists RF+1", api.ConsistencyAll, 3, list("me", "b", "c", "d"), 4, 3, "[b c d]"},
		{"quorum, RF 5", api.ConsistencyQuorum, 5, list("me", "b", "c", "d", "e"), 3, 2, "[b c d e]"},
		{"quorum, RF 1", api.ConsistencyQuorum, 1, list("me"), 1, 0, "[]"},
		{"coordinator not listed", api.ConsistencyQuorum, 3, list("b", "c", "d"), 2, 2, "[b c d]"},
		{"one, coordinator not listed", api.ConsistencyOne, 3, list("b", "c", "d"), 1, 1, "[b c d]"},
		{"coordinator's server listed under another placement", api.ConsistencyQuorum, 3,
			[]metadata.Placement{{ServerID: "me", PlacementID: other}, {ServerID: "b", PlacementID: uuid.New()}, {ServerID: "c", PlacementID: uuid.New()}},
			2, 2, "[b c]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := planAcks(tt.consistency, tt.rf, tt.servers, "me", mine)
			if err != nil {
				t.Fatal(err)
			}
			if plan.need != tt.need || plan.fromOthers() != tt.peers || fmt.Sprint(plan.others) != tt.others {
				t.Fatalf("planAcks = need %d, %d from others %v; want need %d, %d from others %s",
					plan.need, plan.fromOthers(), plan.others, tt.need, tt.peers, tt.others)
			}
		})
	}
	if _, err := planAcks("most", 3, list("me"), "me", mine); !errors.Is(err, wire.ErrBadRequest) {
		t.Fatalf("unknown consistency: %v, want ErrBadRequest", err)
	}
}
