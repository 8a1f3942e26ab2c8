package node

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/replication"
)

// snapKillBase is the first loader batch number of the rows loaded before
// the join (the loader that runs during the snapshot counts from 0): its
// rows are at 1000 s and after, the loader's below.
const snapKillBase = 1_000_000

// TestKill9DuringRowSnapshot (issue 16, rule 1): a row snapshot moving as
// snapshot chunks is interrupted by a kill -9 of either side and resumes
// or restarts, ending with every acknowledged row once.
//
// Two real `tsdb server` processes; table crash of RF 1 on one of them
// (the holder) is loaded with tens of thousands of rows, and the holder,
// with no target, truncates its log. The other server joins the
// partition: below the truncation point, it gets a row snapshot, in
// chunks of an eighth of --max-body-bytes (8 KiB: hundreds of chunks). A
// loader inserts through both servers all along. Once the holder's
// replica state shows the snapshot running with a fifth of the rows or
// more confirmed (moved rows of kind snapshot, no snapshot done), the
// receiver (case receiver) or the sender (case sender) is killed with
// SIGKILL and restarted. The join finalizes, a snapshot is done after the restart,
// both replicas converge (same rows and checksum) and every acknowledged
// row is answered once through each server. If the kill lands after the
// snapshot ended (it was not in the middle), the case is set up again
// with twice the rows, up to three times.
func TestKill9DuringRowSnapshot(t *testing.T) {
	for _, side := range []string{"receiver", "sender"} {
		t.Run(side, func(t *testing.T) {
			rows := 60_000
			for attempt := 1; ; attempt++ {
				if snapshotKillCase(t, side == "sender", rows) {
					return
				}
				if attempt == 3 {
					t.Fatalf("the kill landed after the row snapshot's end %d times (%d rows the last time)", attempt, rows)
				}
				rows *= 2
			}
		})
	}
}

// snapshotKillCase runs one case of TestKill9DuringRowSnapshot with rows
// rows loaded before the join. It reports false, having stopped its
// servers, when the kill landed after the snapshot had ended; the caller
// then starts over.
func snapshotKillCase(t *testing.T, killSender bool, rows int) (interrupted bool) {
	e := testEtcd(t)
	procs := map[string]*proc{}
	for _, id := range []string{"s1", "s2"} {
		// Pushes of at most an eighth of the body limit: 8 KiB chunks.
		procs[id] = startProc(t, id, t.TempDir(), e.Endpoint(), "--max-body-bytes", "64KiB")
	}
	defer func() {
		if !interrupted {
			for _, p := range procs {
				p.stop()
			}
		}
	}()
	c := procs["s1"].client()
	c.must(201, c.do("POST", "/api/v1/tables", []byte(`{"name":"crash","replication_factor":1}`)), nil)
	var md metadataAnswer
	c.must(200, c.do("GET", "/api/v1/tables/crash/metadata", nil), &md)
	part := md.Metadata.Partitions[0]
	holder := procs[part.Servers[0].ServerID]
	joiner := procs["s1"]
	if holder == joiner {
		joiner = procs["s2"]
	}
	rc := rpc.NewClient(rpc.Config{})
	defer rc.Close()
	state := func(p *proc, counts bool) (wire.ReplicaStatus, bool) {
		var resp wire.ReplicasResponse
		if err := rc.Call(context.Background(), p.addr, wire.PathReplicas, wire.ReplicasRequest{Table: "crash", Counts: counts}, &resp); err != nil ||
			len(resp.Replicas) != 1 {
			return wire.ReplicaStatus{}, false
		}
		return resp.Replicas[0], true
	}

	// The rows before the join: 20 loader batches a request.
	var acked []int
	for i := snapKillBase; i < snapKillBase+rows/loaderRows; i += 20 {
		var body []byte
		var batches []int
		for k := i; k < min(i+20, snapKillBase+rows/loaderRows); k++ {
			body = append(body, loaderBatch(k)...)
			batches = append(batches, k)
		}
		holder.client().must(204, holder.client().do("POST", "/write?db=crash", body), nil)
		acked = append(acked, batches...)
	}
	waitFor(t, holder.id+" truncating its log", func() bool {
		st, ok := state(holder, false)
		return ok && st.LogStart >= replication.DefaultTruncateMin
	})

	l := &loader{pause: 10 * time.Millisecond}
	var mu sync.Mutex
	dead := map[*proc]bool{}
	urls := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, p := range []*proc{holder, joiner} {
			if !dead[p] {
				out = append(out, p.url())
			}
		}
		return out
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { l.run(ctx, urls) })
	defer func() { cancel(); wg.Wait() }()

	hc := holder.client()
	hc.must(200, hc.do("POST", "/api/v1/tables/crash/partitions/"+part.ID.String()+"/join", []byte(`{"server":"`+joiner.id+`"}`)), nil)
	var before wire.ReplicaStatus
	// Killed in the middle: a fifth of the rows or more confirmed.
	waitLong(t, time.Minute, "the row snapshot to "+joiner.id+" running with chunks confirmed", func() bool {
		st, ok := state(holder, false)
		before = st
		return ok && (st.Snapshots.Done > 0 || st.Snapshots.Active == 1 && st.Moved["snapshot"].Rows >= uint64(rows/5))
	})
	if before.Snapshots.Done > 0 {
		t.Logf("the row snapshot ended before a poll saw it running: setting up again with more rows")
		cancel()
		wg.Wait()
		return false
	}
	victim := joiner
	if killSender {
		victim = holder
	}
	mu.Lock()
	dead[victim] = true
	mu.Unlock()
	victim.kill9()
	// Did the snapshot end between the poll and the kill? The holder's
	// state says, or, when the holder is the one killed, its log.
	ended := false
	if killSender {
		b, err := os.ReadFile(filepath.Join(holder.dir, "server.log"))
		if err != nil {
			t.Fatal(err)
		}
		ended = bytes.Contains(b, []byte("row snapshot done"))
	} else if st, ok := state(holder, false); !ok {
		t.Fatalf("no replica state from %s", holder.id)
	} else {
		ended = st.Snapshots.Done > 0
	}
	if ended {
		t.Logf("%s killed after the row snapshot had ended (%d snapshot rows confirmed at the last poll): setting up again with more rows",
			victim.id, before.Moved["snapshot"].Rows)
		cancel()
		wg.Wait()
		return false
	}
	t.Logf("killed %s (the %s) with SIGKILL mid-snapshot: %d of %d rows confirmed in snapshot chunks at the last poll",
		victim.id, map[bool]string{true: "sender", false: "receiver"}[killSender], before.Moved["snapshot"].Rows, rows)
	n := l.ackedCount()
	if !killSender {
		// The holder, alone, acknowledges inserts while the joiner is dead.
		waitFor(t, "10 more batches with the receiver dead", func() bool { return l.ackedCount() >= n+10 })
	}
	victim.start() // same id, data dir and address
	mu.Lock()
	dead[victim] = false
	mu.Unlock()
	n = l.ackedCount()
	waitLong(t, time.Minute, "10 more batches after the restart", func() bool { return l.ackedCount() >= n+10 })

	waitLong(t, 2*time.Minute, joiner.id+" finalizing its join", func() bool {
		var md metadataAnswer
		r := holder.client().do("GET", "/api/v1/tables/crash/metadata", nil)
		if r.status != 200 || json.Unmarshal(r.body, &md) != nil {
			return false
		}
		p := md.Metadata.Partitions[0]
		return len(p.Joining) == 0 && slices.ContainsFunc(p.Servers, func(pl metadata.Placement) bool { return pl.ServerID == joiner.id })
	})
	// A row snapshot was done after the restart: the restarted sender's
	// (its counters start at 0), or the surviving sender's, which had none
	// done at the kill.
	waitLong(t, time.Minute, "a row snapshot done by "+holder.id+" after the restart", func() bool {
		st, ok := state(holder, false)
		return ok && st.Snapshots.Done >= 1
	})
	cancel()
	wg.Wait()
	l.mu.Lock()
	acked = append(acked, l.acked...)
	l.mu.Unlock()

	waitLong(t, time.Minute, "both replicas converging", func() bool {
		sum := ""
		for _, p := range []*proc{holder, joiner} {
			st, ok := state(p, true)
			if !ok || st.Status != string(metadata.StatusServe) || st.Rows < int64(len(acked)*loaderRows) {
				return false
			}
			if sum != "" && st.Checksum != sum {
				return false
			}
			sum = st.Checksum
		}
		return true
	})
	for _, p := range []*proc{holder, joiner} {
		checkAckedOnce(t, p, acked)
	}
	log, _ := os.ReadFile(filepath.Join(holder.dir, "server.log"))
	t.Logf("%d batches acknowledged (%d rows), all once on both replicas; the holder's snapshot log lines:\n%s",
		len(acked), len(acked)*loaderRows, grepLines(log, "row snapshot"))
	return true
}

// grepLines returns the lines of b that contain s.
func grepLines(b []byte, s string) string {
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
