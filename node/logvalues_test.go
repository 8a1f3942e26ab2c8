package node

import (
	"fmt"
	"testing"
)

// TestLogValuesOffWithoutTargets: the replicas of an RF 1 table (no
// replication target) write their log entries without row values
// (partition.Replica.SetLogValues(false), set by the pusher's first view),
// those of an RF 3 table with them.
func TestLogValuesOffWithoutTargets(t *testing.T) {
	e := testEtcd(t)
	nodes := make([]*Node, 3)
	for i := range nodes {
		nodes[i] = startNode(t, e, fmt.Sprintf("s%d", i+1), t.TempDir())
	}
	c := &client{t: t, base: nodes[0].URL()}
	for _, rf := range []int{1, 3} {
		name := fmt.Sprintf("rf%d", rf)
		c.must(201, c.do("POST", "/api/v1/tables", fmt.Appendf(nil, `{"name":%q,"replication_factor":%d}`, name, rf)), nil)
		c.must(204, c.do("POST", "/write?db="+name, lpBody(0)), nil)
		waitFor(t, name+"'s replicas told whether their log is read", func() bool {
			n := 0
			for _, nd := range nodes {
				for _, r := range nd.store.Replicas() {
					if r.Info().Table != name {
						continue
					}
					if r.LogValues() != (rf > 1) {
						return false
					}
					n++
				}
			}
			return n > 0
		})
	}
}
