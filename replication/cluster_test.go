package replication

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// Tests in this file run Pushers over real pebble replicas; every push goes
// through the row encoding and Receive into another real replica.

// waitUntil blocks until cond holds, re-checking it after every
// confirmation or view change of p (no polling). The deadline is a safety
// net against a hang, not an assertion on speed.
func waitUntil(t testing.TB, p *Pusher, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		p.mu.Lock()
		changed := p.mu.changed
		p.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("gave up waiting for %s; status %+v", what, p.Status())
		}
	}
}

// fault is what the test network does to one push.
type fault int

const (
	faultNone    fault = iota
	faultRefuse        // the receiver is unreachable: nothing applied
	faultLostAck       // the receiver applied the rows, the answer was lost
)

// testNet delivers pushes between the nodes of one partition, injects
// faults and counts, per unique row, every delivery.
type testNet struct {
	mu         sync.Mutex
	nodes      map[string]*testNode
	rng        *rand.Rand
	faultRate  float64
	faultKind  fault
	shipped    map[string]int  // unique row key → deliveries
	sent       map[string]bool // "from>to>row key" of every delivered unique row
	violations []string
	pushes     int
	bytes      int
	// applied is the receivers' relay filter (one per server in
	// production; keyed by receiving placement, so one serves all);
	// dropped counts the relayed rows it dropped.
	applied Applied
	dropped int
	// elided counts the relayed rows pushes left out as held
	// (wire.PushRequest.Held), unheld the claims answered unheld.
	elided, unheld int
}

type testNode struct {
	id     string
	log    *replicaLog
	pusher *Pusher
}

type netSender struct {
	net  *testNet
	from string
}

func (s netSender) Push(_ context.Context, target metadata.Target, req wire.PushRequest) (wire.PushResponse, error) {
	n := s.net
	n.mu.Lock()
	dst := n.nodes[target.ServerID]
	f := faultNone
	if n.rng.Float64() < n.faultRate {
		f = n.faultKind
	}
	n.mu.Unlock()
	if dst == nil || dst.log.placement() != req.ToPlacement {
		return wire.PushResponse{}, fmt.Errorf("no placement %s on %s: %w", req.ToPlacement, target.ServerID, ErrStalePlacement)
	}
	if f == faultRefuse {
		return wire.PushResponse{}, errDown
	}
	var rows []model.Row
	if len(req.Rows) > 0 { // a push of held claims only carries none
		var err error
		if rows, err = DecodeRows(req.Rows); err != nil {
			return wire.PushResponse{}, err
		}
	}
	res, err := ReceiveWith(dst.log, req, &n.applied)
	if err != nil {
		return wire.PushResponse{}, err
	}
	n.mu.Lock()
	n.dropped += res.Dropped
	for _, h := range req.Held {
		n.elided += h.Rows
	}
	n.unheld += len(res.Unheld)
	n.mu.Unlock()
	dst.pusher.Notify()
	n.account(s.from, target, rows, len(req.Rows))
	if f == faultLostAck {
		return wire.PushResponse{}, errDown
	}
	return wire.PushResponse{Unheld: res.Unheld}, nil
}

// account counts deliveries of unique rows (series "u,origin=<server>")
// and records who sent each to whom.
func (n *testNet) account(from string, target metadata.Target, rows []model.Row, size int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pushes++
	n.bytes += size
	for _, r := range rows {
		if strings.HasPrefix(r.Series, "u,origin=") {
			key := fmt.Sprintf("%s@%d", r.Series, r.Time)
			n.shipped[key]++
			n.sent[from+">"+target.ServerID+">"+key] = true
		}
	}
}

// checkNotSentBack records a violation for every unique row a node pushed
// back to the server whose placement had pushed it there (its log's
// origin): the skip rule of DESIGN.md section 5.
func (n *testNet) checkNotSentBack(t testing.TB) {
	t.Helper()
	server := map[uuid.UUID]string{}
	for id, nd := range n.nodes {
		server[nd.log.placement()] = id
	}
	for id, nd := range n.nodes {
		entries, err := nd.log.ReadLog(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		// A row may have several entries: a relay stored first (it
		// overtook the origin's push), then the origin's own push,
		// written without a read. Only a row whose every entry came from
		// one placement must never go back there.
		origins := map[string]map[uuid.UUID]bool{}
		for _, e := range entries {
			if !strings.HasPrefix(e.Row.Series, "u,origin=") {
				continue
			}
			key := fmt.Sprintf("%s@%d", e.Row.Series, e.Row.Time)
			if origins[key] == nil {
				origins[key] = map[uuid.UUID]bool{}
			}
			origins[key][e.Origin] = true
		}
		for key, os := range origins {
			if len(os) != 1 {
				continue
			}
			for o := range os {
				if from := server[o]; o != uuid.Nil && n.sent[id+">"+from+">"+key] {
					n.violations = append(n.violations, fmt.Sprintf("%s→%s: %s came from there", id, from, key))
				}
			}
		}
	}
}

func TestThreeReplicasConverge(t *testing.T) {
	tests := []struct {
		name  string
		kind  fault
		rate  float64
		exact bool // each unique row is delivered 4 to 6 times
		// truncate: the pushers truncate their logs (not KeepLog); the
		// logs' origins are then not checked (checkNotSentBack reads them
		// from 0).
		truncate bool
		// sendRelays: pushes carry the relayed rows (Config.SendRelays)
		// instead of claiming them held.
		sendRelays bool
	}{
		{"no faults", faultNone, 0, true, false, false},
		{"no faults, relays sent", faultNone, 0, true, false, true},
		{"refused pushes", faultRefuse, 0.3, true, false, false},
		{"lost acks", faultLostAck, 0.3, false, false, false},
		{"refused pushes, truncating", faultRefuse, 0.3, true, true, false},
	}
	for _, tt := range tests {
		for _, late := range []bool{false, true} {
			name := tt.name
			if late {
				name += ", late rows"
			}
			t.Run(name, func(t *testing.T) {
				seed := rand.Uint64()
				t.Logf("seed %d", seed)
				testConverge(t, tt.kind, tt.rate, tt.exact, tt.truncate, tt.sendRelays, late, seed)
			})
		}
	}
}

// testConverge runs TestThreeReplicasConverge. With late, every replica
// holds a row far newer than the others first, so no row written after it
// takes Apply's path for rows newer than every stored one: each replica's
// own rows are written blind at the receivers (wire.PushRequest.Own), and
// only the lookups of the relays end their relaying.
func testConverge(t *testing.T, kind fault, rate float64, exact, truncate, sendRelays, late bool, seed uint64) {
	const uniquePerNode, shared = 120, 10
	pid := uuid.New()
	ids := []string{"s1", "s2", "s3"}
	net := &testNet{nodes: map[string]*testNode{}, rng: rand.New(rand.NewPCG(seed, 1)),
		faultRate: rate, faultKind: kind, shipped: map[string]int{}, sent: map[string]bool{}}
	if late {
		// Held claims wait for their origin's push (the other runs answer
		// them unheld at once, and push the rows after).
		net.applied.Wait = 20 * time.Millisecond
	}
	for _, id := range ids {
		n := &testNode{id: id, log: newReplica(t, pid)}
		n.pusher = NewPusher(Config{
			Table: "metrics", Placement: n.log.placement(), Self: id, Log: n.log,
			Sender: netSender{net: net, from: id}, BatchRows: 16,
			RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond, Tick: 100 * time.Millisecond,
			KeepLog: !truncate, TruncateMin: 1, // checkNotSentBack reads every log entry's origin
			SendRelays: sendRelays,
		})
		net.nodes[id] = n
	}
	for _, n := range net.nodes {
		var targets []metadata.Target
		for _, o := range ids {
			targets = append(targets, replicaTarget(o, net.nodes[o].log.placement(), pid))
		}
		n.pusher.SetView(1, view(targets...)) // its own placement is dropped
		runPusher(t, n.pusher)
	}
	newest := 0
	if late {
		for _, id := range ids {
			mustApply(t, net.nodes[id].log, model.Row{Time: 1e12, Series: "newest", Fields: []model.Field{
				{Name: "v_" + id, Value: model.Int(1), Version: model.Version{Wall: 1, Node: model.NodeID(id)}},
			}})
		}
		newest = 1
	}

	// Every node writes its unique rows and its fields of the shared rows,
	// concurrently with the pushes.
	var wg sync.WaitGroup
	for k, id := range ids {
		n := net.nodes[id]
		wg.Go(func() {
			node := model.NodeID(id)
			for i := 0; i < uniquePerNode; i += 10 {
				var rows []model.Row
				for j := i; j < i+10; j++ {
					rows = append(rows, model.Row{Time: int64(j), Series: "u,origin=" + id, Fields: []model.Field{
						{Name: "v", Value: model.Int(int64(j)), Version: model.Version{Wall: int64(j + 1), Node: node}},
					}})
				}
				if i/10 < shared {
					rows = append(rows, model.Row{Time: int64(i / 10), Series: "shared", Fields: []model.Field{
						{Name: "c", Value: model.String(id), Version: model.Version{Wall: int64(100 + k), Node: node}},
						{Name: "f_" + id, Value: model.Float(float64(k)), Version: model.Version{Wall: 1, Node: node}},
					}})
				}
				mustApply(t, n.log, rows...)
				n.pusher.Notify()
			}
		})
	}
	wg.Wait()

	// Converged once, in one round, no replica's log moved and each one's
	// synced rows are confirmed by both others.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for round := 1; ; round++ {
		if round > 100 {
			// Relays that never end (a change written blind at every
			// hop) keep every log moving.
			t.Fatalf("replicas still writing after %d rounds of confirmation: relays circulate", round-1)
		}
		before := make([]uint64, len(ids))
		for i, id := range ids {
			before[i] = net.nodes[id].log.SyncedSeq()
		}
		for i, id := range ids {
			others := slices.DeleteFunc(slices.Clone(ids), func(s string) bool { return s == id })
			if err := net.nodes[id].pusher.WaitConfirmed(ctx, before[i], others, 2); err != nil {
				t.Fatalf("round %d: %s: %v", round, id, err)
			}
		}
		moved := false
		for i, id := range ids {
			moved = moved || net.nodes[id].log.SyncedSeq() != before[i]
		}
		if !moved {
			break
		}
	}

	want := scanAll(t, net.nodes["s1"].log)
	if len(want) != 3*uniquePerNode+shared+newest {
		t.Fatalf("s1 holds %d rows, want %d", len(want), 3*uniquePerNode+shared+newest)
	}
	for _, id := range ids[1:] {
		if err := sameRows(scanAll(t, net.nodes[id].log), want); err != nil {
			t.Fatalf("%s differs from s1: %v", id, err)
		}
	}
	for _, r := range want {
		if r.Series != "shared" {
			continue
		}
		if len(r.Fields) != 4 || r.Fields[0].Name != "c" || r.Fields[0].Value.S != "s3" {
			t.Fatalf("shared row merged to %+v; want c=s3 (highest version) and f_s1..f_s3", r)
		}
	}
	if truncate {
		// Every row is confirmed by both peers: each log gets truncated to
		// its end (but the last entry), and the replicas still agree.
		for _, id := range ids {
			l := net.nodes[id].log
			drainMemory(t, l) // as seals would
			pollUntil(t, id+"'s log truncated", func() bool { return l.LogStart() == l.SyncedSeq()-1 })
		}
		for _, id := range ids[1:] {
			if err := sameRows(scanAll(t, net.nodes[id].log), want); err != nil {
				t.Fatalf("%s differs from s1 after truncation: %v", id, err)
			}
		}
	}
	net.mu.Lock()
	defer net.mu.Unlock()
	if !truncate {
		net.checkNotSentBack(t)
	}
	if len(net.violations) > 0 {
		t.Fatalf("rows pushed back to their origin: %v", net.violations[:min(5, len(net.violations))])
	}
	if len(net.shipped) != 3*uniquePerNode {
		t.Fatalf("%d unique rows shipped, want %d", len(net.shipped), 3*uniquePerNode)
	}
	if sendRelays != (net.elided == 0) {
		t.Fatalf("%d relayed rows left out as held with SendRelays %v", net.elided, sendRelays)
	}
	for key, n := range net.shipped {
		// origin→2 peers, each peer→the other unless the push claims it
		// held (wire.PushRequest.Held); and each peer that stored the
		// other's relay before the origin's own push writes that push
		// again (without a read) and relays it once more: 2 to 6.
		if exact && (n < 2 || n > 6) {
			t.Fatalf("row %s delivered %d times; want 2 to 6 (origin→2 peers, each peer→the other unless held, once more after a relay that overtook the origin's push)", key, n)
		}
	}
	t.Logf("%d pushes, %d bytes, %.1f bytes/row delivered, %d relayed rows dropped unread, %d left out as held, %d claims unheld",
		net.pushes, net.bytes, float64(net.bytes)/float64(sumValues(net.shipped)), net.dropped, net.elided, net.unheld)
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return max(n, 1)
}

func TestSplitTargetsGetTheirRange(t *testing.T) {
	parent := uuid.New()
	src := newReplica(t, parent)
	var rows []model.Row
	for i := range 100 {
		server := "s1"
		if i%3 == 0 {
			server = "s2" // split targets do not skip rows by origin
		}
		rows = append(rows, row(server, "cpu", int64(i), 1, "v", float64(i)))
	}
	mustApply(t, src, rows...)

	b30, b60, b1000, b2000 := int64(30), int64(60), int64(1000), int64(2000)
	children := []struct {
		server     string
		begin, end *int64
		want       []int64 // [from, to) of times
	}{
		{"s2", nil, &b30, []int64{0, 30}},
		{"s3", &b30, &b60, []int64{30, 60}},
		{"s4", &b60, nil, []int64{60, 100}},
		{"s5", &b1000, &b2000, nil},
	}
	store := openStore(t)
	rec := &recorder{apply: map[uuid.UUID]Applier{}}
	var targets []metadata.Target
	logs := map[uuid.UUID]*replicaLog{}
	for _, c := range children {
		dst := addReplica(t, store, uuid.New())
		tg := metadata.Target{ServerID: c.server, PlacementID: dst.placement(), PartitionID: uuid.New(),
			Begin: c.begin, End: c.end, Kind: metadata.TargetSplit}
		targets = append(targets, tg)
		rec.apply[tg.PlacementID] = dst
		logs[tg.PlacementID] = dst
	}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 7})
	p.SetView(1, view(targets...))
	runPusher(t, p)
	waitUntil(t, p, "every child confirmed", p.Drained)

	for i, c := range children {
		got := scanAll(t, logs[targets[i].PlacementID])
		var times []int64
		for _, r := range got {
			times = append(times, r.Time)
		}
		var want []int64
		if c.want != nil {
			for ts := c.want[0]; ts < c.want[1]; ts++ {
				want = append(want, ts)
			}
		}
		if !slices.Equal(times, want) {
			t.Errorf("child %s holds times %v, want %v", c.server, times, want)
		}
	}
	for _, ps := range rec.all() {
		if ps.target.ServerID == "s5" {
			t.Fatalf("pushed %d rows to a child whose range holds none", ps.req.Count)
		}
		if ps.req.PartitionID != ps.target.PartitionID || ps.req.FromPlacement != src.placement() || ps.req.TxnSeq != 1 {
			t.Fatalf("push header %+v does not name the child, the sender and the view", ps.req)
		}
	}
}

func TestJoinCompletesUnderInserts(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	for i := 0; i < 300; i += 50 {
		var rows []model.Row
		for j := i; j < i+50; j++ {
			rows = append(rows, row("s1", "cpu", int64(j), 1, "v", float64(j)))
		}
		mustApply(t, src, rows...)
	}
	joiner := newReplica(t, pid)
	var progress JoinProgress
	completed := make(chan struct{}, 1)
	rec := &recorder{apply: map[uuid.UUID]Applier{joiner.placement(): joiner}}
	rec.onPush = func(ps recordedPush) {
		if ps.err != nil {
			return
		}
		progress.Record(ps.req.ToPlacement, ps.req.FromServer, ps.req.Complete)
		if ps.req.Complete {
			select {
			case completed <- struct{}{}:
			default:
			}
		}
	}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 32})
	runPusher(t, p)

	// Inserts continue while the joiner catches up.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1000; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			mustApply(t, src, row("s1", "cpu", int64(i), 1, "v", float64(i)))
			p.Notify()
		}
	})
	target := metadata.Target{ServerID: "s9", PlacementID: joiner.placement(), PartitionID: pid, Kind: metadata.TargetJoining}
	p.SetView(1, view(target))
	p.mu.Lock()
	mark := p.mu.marks[joiner.placement()]
	p.mu.Unlock()
	select {
	case <-completed:
	case <-time.After(2 * time.Minute): // a hang guard, not a speed assertion
		t.Fatal("the joiner never got Complete")
	}
	close(stop)
	wg.Wait()
	if mark < 300 {
		t.Fatalf("mark %d; want at least the 300 rows stored before the join", mark)
	}
	if got := progress.Complete(joiner.placement()); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("JoinProgress.Complete = %v, want [s1]", got)
	}

	// Complete first appears on the push that reaches the mark, and stays.
	seenComplete := false
	for _, ps := range rec.all() {
		if ps.err != nil {
			continue
		}
		switch {
		case ps.req.Complete && !seenComplete && ps.req.LastSeq < mark:
			t.Fatalf("Complete on a push up to %d, below the mark %d", ps.req.LastSeq, mark)
		case !ps.req.Complete && ps.req.LastSeq >= mark:
			t.Fatalf("push up to %d (mark %d) without Complete", ps.req.LastSeq, mark)
		}
		seenComplete = seenComplete || ps.req.Complete
	}

	// Everything the source held at the mark is on the joiner.
	entries, err := src.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for _, r := range scanAll(t, joiner) {
		have[r.Time] = true
	}
	for _, e := range entries {
		if e.Seq <= mark && !have[e.Row.Time] {
			t.Fatalf("row at seq %d (time %d), below the mark %d, missing on the joiner", e.Seq, e.Row.Time, mark)
		}
	}
	waitUntil(t, p, "the joiner caught up", p.Drained)
	if err := sameRows(scanAll(t, joiner), scanAll(t, src)); err != nil {
		t.Fatalf("joiner differs from the source after catching up: %v", err)
	}
}

// BenchmarkPush measures push throughput between two real replicas through
// the row encoding and Receive (no network): the source holds the rows,
// and each iteration pushes all of them to a fresh receiving replica.
func BenchmarkPush(b *testing.B) {
	for _, batch := range []int{512, 2048} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			const n = 50_000
			pid := uuid.New()
			// Production store options (64 MiB memtables): both replicas'
			// pebble work, flushes and compactions included, is measured.
			src := addReplica(b, openStoreWith(b, partition.Options{}), pid)
			rows := benchRows(n)
			for i := 0; i < n; i += 1000 {
				if _, err := src.Apply(rows[i : i+1000]); err != nil {
					b.Fatal(err)
				}
			}
			store := openStoreWith(b, partition.Options{})
			b.ReportAllocs()
			for b.Loop() {
				dst := addReplica(b, store, pid)
				rec := &benchSender{dst: dst}
				p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: batch})
				p.SetView(1, view(replicaTarget("s2", dst.placement(), pid)))
				stop := runPusher(b, p)
				waitUntil(b, p, "pushed", p.Drained)
				stop()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// benchSender applies pushes straight into a replica.
type benchSender struct{ dst *replicaLog }

func (s *benchSender) Push(_ context.Context, _ metadata.Target, req wire.PushRequest) (wire.PushResponse, error) {
	_, err := Receive(s.dst, req)
	return wire.PushResponse{}, err
}
