package replica

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tsdb/tsdb/cluster/membership"
)

func servers(loads ...int) []membership.Info {
	out := make([]membership.Info, len(loads))
	for i, l := range loads {
		out[i] = membership.Info{ID: string(rune('a' + i)), Summary: membership.Summary{Partitions: l}}
	}
	return out
}

func ids(infos []membership.Info) []string {
	out := make([]string, len(infos))
	for i, s := range infos {
		out[i] = s.ID
	}
	slices.Sort(out)
	return out
}

// TestPickChildServers: each child gets the least-loaded servers; the
// second child prefers servers the first did not get, so the two children
// land on different sets when there are servers enough; with fewer servers
// than the replication factor every child gets all of them.
func TestPickChildServers(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2)).IntN
	for _, tc := range []struct {
		name   string
		live   []membership.Info
		k      int
		want   [2][]string
		unique bool // only check that the sets are disjoint
	}{
		{"six servers: disjoint, least loaded first", servers(5, 0, 1, 9, 2, 3), 3, [2][]string{{"b", "c", "e"}, {"a", "d", "f"}}, false},
		{"three servers: the same set", servers(4, 1, 2), 3, [2][]string{{"a", "b", "c"}, {"a", "b", "c"}}, false},
		{"two servers, RF 3: both everywhere", servers(0, 0), 3, [2][]string{{"a", "b"}, {"a", "b"}}, false},
		{"four servers, RF 2: disjoint", servers(0, 0, 0, 0), 2, [2][]string{}, true},
	} {
		got := PickChildServers(tc.live, 2, tc.k, rnd)
		if len(got) != 2 {
			t.Fatalf("%s: %d children", tc.name, len(got))
		}
		if tc.unique {
			a, b := ids(got[0]), ids(got[1])
			if len(a) != tc.k || len(b) != tc.k || slices.ContainsFunc(a, func(s string) bool { return slices.Contains(b, s) }) {
				t.Errorf("%s: %v and %v, want two disjoint sets of %d", tc.name, a, b, tc.k)
			}
			continue
		}
		for c := range got {
			if g := ids(got[c]); !slices.Equal(g, tc.want[c]) {
				t.Errorf("%s: child %d on %v, want %v", tc.name, c, g, tc.want[c])
			}
		}
	}
	// Five servers, RF 3: the second child takes the two servers the
	// first left out and the least loaded of the first's.
	got := PickChildServers(servers(0, 0, 0, 10, 10), 2, 3, rnd)
	if a, b := ids(got[0]), ids(got[1]); !slices.Equal(a, []string{"a", "b", "c"}) || !slices.Contains(b, "d") || !slices.Contains(b, "e") {
		t.Errorf("five servers: %v and %v, want a,b,c then d, e and one of a,b,c", a, b)
	}
}
