package node

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tsdb/tsdb/metadata"
)

// TestJoinerPushesNothingBack (issue 16): a joiner's rows came from the
// replicas it joins, which hold them. Once it serves, its pushes to them
// must carry none of those rows: a push skips the rows a target sent it
// itself, and claims held the rows another replica sent it, which the
// target holds as that replica's own pushes delivered them, even those
// that came as a row snapshot (the senders' logs are truncated, and
// their data spaces hold only their own changes: SnapshotLogged). Before,
// the joiner's log was truncated while it loaded, and it sent each of
// them a row snapshot of its whole range once it served.
func TestJoinerPushesNothingBack(t *testing.T) {
	var blockJoinFrom atomic.Value // the server whose pushes to the joiner wait
	blockJoinFrom.Store("")
	c := startCluster(t, 3, func(cfg *Config) {
		// Logs truncated as soon as every target confirmed: the joiner
		// gets row snapshots.
		cfg.knobs.TruncateMin = 1
		id := cfg.ID
		cfg.knobs.BlockPush = func(tg metadata.Target) bool {
			return tg.Kind == metadata.TargetJoining && blockJoinFrom.Load() == id
		}
	})
	c.createTable("s1", "cpu", 2)
	p := c.currentFile("s1", "cpu").Partitions[0]
	var holders []string
	for _, pl := range p.Servers {
		holders = append(holders, pl.ServerID)
	}
	joiner := ""
	for _, id := range []string{"s1", "s2", "s3"} {
		if !slices.Contains(holders, id) {
			joiner = id
		}
	}
	// holders[0]'s log ends with the rows holders[1] wrote: its cursor
	// for holders[1] gets there without a push (rows are not pushed back),
	// so holders[1] learns how far it holds holders[0]'s log only from
	// the level holders[0] tells it when idle (refreshLevel).
	c.insertLP(holders[0], "cpu", lpBatch("a", 0, 1000, 100))
	waitFor(t, "the holders converged", func() bool { return c.converged("cpu", 1000, holders...) })
	c.insertLP(holders[1], "cpu", lpBatch("b", 0, 1000, 100))
	waitFor(t, "the holders converged", func() bool { return c.converged("cpu", 2000, holders...) })
	for _, id := range holders {
		waitFor(t, id+"'s log truncated", func() bool { return c.localReplica(id, "cpu").LogStart() > 1 })
	}
	// The joiner's rows come as holders[0]'s row snapshot: holders[1]'s
	// pushes to it wait until it holds them all.
	blockJoinFrom.Store(holders[1])

	cl := c.client(holders[0])
	cl.must(200, cl.do("POST", "/api/v1/tables/cpu/partitions/"+p.ID.String()+"/join", []byte(`{"server":"`+joiner+`"}`)), nil)
	waitFor(t, joiner+" holding "+holders[0]+"'s rows", func() bool {
		rep := c.localReplica(joiner, "cpu")
		if rep == nil {
			return false
		}
		sum, err := rep.Checksum()
		return err == nil && sum.Rows == 2000
	})
	blockJoinFrom.Store("")
	waitFor(t, joiner+" serving, its holders confirmed", func() bool {
		f := c.currentFile("s1", "cpu")
		q := f.Partitions[0]
		if len(q.Joining) != 0 || len(q.Servers) != 3 {
			return false
		}
		rep := c.localReplica(joiner, "cpu")
		if rep == nil {
			return false
		}
		for _, pl := range q.Servers {
			if pl.ServerID != joiner && rep.Confirmed(pl.PlacementID) < rep.HighSeq() {
				return false
			}
		}
		return true
	})
	if moved := movedRows(c.client(joiner)); moved != 0 {
		t.Fatalf("the joiner pushed %v rows back to the replicas it joined", moved)
	}
	// And it replicates what it is sent from now on.
	c.insertLP(joiner, "cpu", lpBatch("c", 5000, 10, 10))
	waitFor(t, "three replicas converged", func() bool { return c.converged("cpu", 2010, "s1", "s2", "s3") })
}

// movedRows returns the sum of a server's tsdb_moved_rows_total over its
// kinds: the rows of the pushes it sent that were confirmed.
func movedRows(c *client) float64 {
	r := c.do("GET", "/metrics", nil)
	total := 0.0
	for line := range strings.Lines(string(r.body)) {
		if rest, ok := strings.CutPrefix(line, "tsdb_moved_rows_total{"); ok {
			_, v, _ := strings.Cut(rest, "} ")
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				panic(fmt.Sprintf("tsdb_moved_rows_total: %q", line))
			}
			total += n
		}
	}
	return total
}
