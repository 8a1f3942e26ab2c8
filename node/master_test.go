package node

import (
	"testing"

	"github.com/tsdb/tsdb/http/api"
)

// TestMasterElection: three servers elect one master, which GET
// /api/v1/cluster (and so tsdb admin servers) shows on every server; when
// it stops, another server takes over.
func TestMasterElection(t *testing.T) {
	c := startCluster(t, 3)
	master := func() string {
		id := ""
		for sid, n := range c.nodes {
			if n.IsMaster() {
				if id != "" {
					t.Fatalf("two masters at once: %s and %s", id, sid)
				}
				id = sid
			}
		}
		return id
	}
	waitFor(t, "a master", func() bool { return master() != "" })
	first := master()
	for id := range c.nodes {
		var resp api.ClusterResponse
		c.client(id).must(200, c.client(id).do("GET", "/api/v1/cluster", nil), &resp)
		for _, s := range resp.Servers {
			if s.Master != (s.ID == first) {
				t.Fatalf("via %s: server %s master=%v, want the master to be %s", id, s.ID, s.Master, first)
			}
		}
	}
	c.stop(first)
	delete(c.nodes, first)
	waitFor(t, "another master", func() bool { m := master(); return m != "" && m != first })
}
