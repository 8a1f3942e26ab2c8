package replication

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// heldPushOf builds the push of from's whole log to the replica target to
// as a Pusher's step does with held claims: the relayed rows with a known
// origin sequence left out (ReadLogBare) and claimed in Held.
func heldPushOf(t *testing.T, from *replicaLog, to uuid.UUID, pid uuid.UUID) wire.PushRequest {
	t.Helper()
	entries, err := from.ReadLogBare(0, 0, to)
	if err != nil {
		t.Fatal(err)
	}
	st := pushState{spec: replicaTarget("to", to, pid)}
	rows, spans, own, held := filterRows(nil, nil, nil, nil, entries, &st)
	last := entries[len(entries)-1].Seq
	req := wire.PushRequest{FromServer: "from", FromPlacement: from.placement(), ToPlacement: to,
		Count: len(rows), LastSeq: last, ClaimsTo: last, Relayed: spans, Own: own, Held: held}
	if len(rows) > 0 {
		req.Rows = AppendRows(nil, rows)
	}
	return req
}

// TestHeldClaims: B's push to C leaves out the row A pushed to B and
// claims it held. C confirms the claim once A's own push delivered it (at
// once, or after waiting for a push of A on its way), answers it unheld
// with its level of A's log otherwise (B's claim to its log is then not
// recorded), and the row B then reads again with ReadRelayed is what C
// lacks.
func TestHeldClaims(t *testing.T) {
	pid := uuid.New()
	a, b := newReplica(t, pid), newReplica(t, pid)
	mustApply(t, b, row("b", "own", 1, 1, "v", 1))
	mustApply(t, a, row("a", "cpu,host=x", 10, 1, "v", 1))
	var appliedB Applied
	toB := pushOf(t, a, b.placement(), pid)
	if _, err := ReceiveWith(b, toB, &appliedB); err != nil {
		t.Fatal(err)
	}

	c := newReplica(t, pid)
	held := heldPushOf(t, b, c.placement(), pid)
	if held.Count != 1 || len(held.Held) != 1 || held.Held[0] != (wire.HeldRelay{Origin: a.placement(), Seq: toB.LastSeq, Rows: 1}) {
		t.Fatalf("B's push to C: %d rows, held %+v; want B's own row, A's claimed", held.Count, held.Held)
	}
	var appliedC Applied
	res, err := ReceiveWith(c, held, &appliedC)
	if err != nil || len(res.Unheld) != 1 || res.Unheld[0] != (wire.OriginLevel{Origin: a.placement(), Seq: 0}) {
		t.Fatalf("claim before A's push: %+v, %v; want A unheld at level 0", res, err)
	}
	if got := appliedC.Level(c.placement(), b.placement()); got != 0 {
		t.Fatalf("B's claim recorded at %d with a claim unheld", got)
	}
	if rows := scanAll(t, c); len(rows) != 1 {
		t.Fatalf("C holds %d rows; want B's own row, applied", len(rows))
	}
	again, err := b.ReadRelayed(0, held.LastSeq, a.placement(), res.Unheld[0].Seq)
	if err != nil || len(again) != 1 || again[0].Row.Series != "cpu,host=x" || len(again[0].Row.Fields) != 1 {
		t.Fatalf("ReadRelayed: %+v, %v; want A's row decoded", again, err)
	}

	// A's own push reaches C: the claim holds, and B's claim to its log is
	// recorded.
	if _, err := ReceiveWith(c, pushOf(t, a, c.placement(), pid), &appliedC); err != nil {
		t.Fatal(err)
	}
	res, err = ReceiveWith(c, held, &appliedC)
	if err != nil || len(res.Unheld) != 0 || appliedC.Level(c.placement(), b.placement()) != held.ClaimsTo {
		t.Fatalf("claim after A's push: %+v, %v, level %d; want held, recorded", res, err, appliedC.Level(c.placement(), b.placement()))
	}

	// A claim waits for a push of its origin on its way: A writes again,
	// pushes to B, and B's claim reaches C before A's push does.
	mustApply(t, a, row("a", "cpu,host=x", 20, 2, "v", 2))
	if _, err := ReceiveWith(b, pushOf(t, a, b.placement(), pid), &appliedB); err != nil {
		t.Fatal(err)
	}
	appliedC.Wait, appliedC.recent = time.Minute, time.Hour // A is still pushing here
	held = heldPushOf(t, b, c.placement(), pid)
	done := make(chan ReceiveResult, 1)
	go func() {
		res, err := ReceiveWith(c, held, &appliedC)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	pollUntil(t, "the claim waiting", func() bool {
		appliedC.mu.Lock()
		defer appliedC.mu.Unlock()
		return appliedC.changed != nil
	})
	if _, err := ReceiveWith(c, pushOf(t, a, c.placement(), pid), &appliedC); err != nil {
		t.Fatal(err)
	}
	if res := <-done; len(res.Unheld) != 0 {
		t.Fatalf("a claim answered unheld while its origin's push arrived: %+v", res)
	}

	// An origin that delivered nothing to the receiver lately is not
	// waited for.
	d := newReplica(t, pid)
	start := time.Now()
	res, err = ReceiveWith(d, heldPushOf(t, b, d.placement(), pid), &Applied{Wait: time.Minute})
	if err != nil || len(res.Unheld) != 1 || time.Since(start) > 30*time.Second {
		t.Fatalf("claim on a silent origin: %+v, %v after %v; want unheld at once", res, err, time.Since(start))
	}
	// Nor without a filter, which confirms no claim.
	if res, err := ReceiveWith(d, heldPushOf(t, b, d.placement(), pid), nil); err != nil || len(res.Unheld) != 1 {
		t.Fatalf("nil filter: %+v, %v; want the claim unheld", res, err)
	}
	// A claim without an origin or a sequence is corrupt.
	for _, h := range []wire.HeldRelay{{Seq: 1, Rows: 1}, {Origin: a.placement(), Rows: 1}} {
		req := held
		req.Held = []wire.HeldRelay{h}
		if _, err := ReceiveWith(d, req, &Applied{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("claim %+v: %v; want ErrCorrupt", h, err)
		}
	}
}

// TestCrossedClaims: A's and B's pushes to C each claim the other's
// values relayed, at once. Each push's rows, applied, give C the
// sender's log but for the values of the other (Applied.noteExcept),
// which is all the other's claim covers: neither waits for the other.
// Without it each would wait for the other's push to be confirmed
// whole, out to the end of Wait, and be answered unheld.
func TestCrossedClaims(t *testing.T) {
	pid := uuid.New()
	a, b, c := newReplica(t, pid), newReplica(t, pid), newReplica(t, pid)
	mustApply(t, a, row("a", "cpu,host=a", 1, 1, "v", 1))
	mustApply(t, b, row("b", "cpu,host=b", 2, 1, "v", 2))
	var appliedA, appliedB Applied
	if _, err := ReceiveWith(b, pushOf(t, a, b.placement(), pid), &appliedB); err != nil {
		t.Fatal(err)
	}
	if _, err := ReceiveWith(a, pushOf(t, b, a.placement(), pid), &appliedA); err != nil {
		t.Fatal(err)
	}
	fromA, fromB := heldPushOf(t, a, c.placement(), pid), heldPushOf(t, b, c.placement(), pid)
	if len(fromA.Held) != 1 || len(fromB.Held) != 1 {
		t.Fatalf("claims %+v and %+v; want one each", fromA.Held, fromB.Held)
	}
	appliedC := Applied{Wait: 20 * time.Second, recent: time.Hour}
	// Both origins delivered to C lately, so their claims wait.
	appliedC.noteExcept(c.placement(), a.placement(), uuid.New(), 1)
	appliedC.noteExcept(c.placement(), b.placement(), uuid.New(), 1)
	results := make(chan ReceiveResult, 2)
	for _, req := range []wire.PushRequest{fromA, fromB} {
		go func() {
			res, err := ReceiveWith(c, req, &appliedC)
			if err != nil {
				t.Error(err)
			}
			results <- res
		}()
	}
	for range 2 {
		if res := <-results; len(res.Unheld) != 0 {
			t.Errorf("crossed claims answered unheld: %+v", res.Unheld)
		}
	}
	if rows := scanAll(t, c); len(rows) != 2 {
		t.Fatalf("C holds %d rows, want 2", len(rows))
	}
	for _, r := range []*replicaLog{a, b} {
		if got := appliedC.Level(c.placement(), r.placement()); got != r.HighSeq() {
			t.Errorf("C's level of %s: %d, want %d", r.placement(), got, r.HighSeq())
		}
	}
}

// cutSender is a netSender whose pushes from one server to another all
// fail: a link that stays down.
type cutSender struct {
	netSender
	cut string // the server the pushes to fail
}

func (s cutSender) Push(ctx context.Context, target metadata.Target, req wire.PushRequest) (wire.PushResponse, error) {
	if target.ServerID == s.cut {
		return wire.PushResponse{}, errDown
	}
	return s.netSender.Push(ctx, target, req)
}

// TestHeldRelayReachesTargetOriginNeverReached: s1's pushes reach s2 and
// never s3 (s1 died after its quorum acknowledgement, or the link is
// down). s2's pushes to s3 claim s1's rows held, s3 cannot confirm the
// claims, and s2 pushes the rows: s3 ends with every row of s1. It fails
// when a receiver confirms claims it cannot check, or when a pusher
// confirms a push answered unheld without pushing those rows (DESIGN.md
// section 5: the relays are what keep a third replica whole when the
// coordinator fails).
func TestHeldRelayReachesTargetOriginNeverReached(t *testing.T) {
	pid := uuid.New()
	ids := []string{"s1", "s2", "s3"}
	net := &testNet{nodes: map[string]*testNode{}, rng: rand.New(rand.NewPCG(1, 2)), shipped: map[string]int{}, sent: map[string]bool{}}
	net.applied.Wait = 10 * time.Millisecond
	for _, id := range ids {
		n := &testNode{id: id, log: newReplica(t, pid)}
		var sender Sender = netSender{net: net, from: id}
		if id == "s1" {
			sender = cutSender{netSender{net: net, from: id}, "s3"}
		}
		n.pusher = NewPusher(Config{Table: "metrics", Placement: n.log.placement(), Self: id, Log: n.log,
			Sender: sender, BatchRows: 16, RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond, Tick: 100 * time.Millisecond})
		net.nodes[id] = n
	}
	for _, n := range net.nodes {
		var targets []metadata.Target
		for _, o := range ids {
			targets = append(targets, replicaTarget(o, net.nodes[o].log.placement(), pid))
		}
		n.pusher.SetView(1, view(targets...))
		runPusher(t, n.pusher)
	}
	s1, s3 := net.nodes["s1"], net.nodes["s3"]
	for i := range 10 {
		var rows []model.Row
		for j := range 10 {
			rows = append(rows, row("s1", "cpu,host=s1", int64(10*i+j), 1, "v", float64(j)))
		}
		mustApply(t, s1.log, rows...)
		s1.pusher.Notify()
	}
	deadline := time.Now().Add(time.Minute)
	for len(scanAll(t, s3.log)) < 100 {
		if time.Now().After(deadline) {
			t.Fatalf("s3 holds %d of s1's 100 rows", len(scanAll(t, s3.log)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	net.mu.Lock()
	defer net.mu.Unlock()
	if net.elided == 0 || net.unheld == 0 {
		t.Fatalf("%d rows left out as held, %d claims unheld; want the claims made and refused", net.elided, net.unheld)
	}
}

// claimSender delivers pushes to one replica through ReceiveWith and its
// relay filter, records them, and refuses the push refuse picks.
type claimSender struct {
	mu      sync.Mutex
	to      *replicaLog
	applied *Applied
	refuse  func(req wire.PushRequest) bool
	pushes  []wire.PushRequest // delivered ones, Rows decoded into rows
	rows    [][]model.Row
}

func (s *claimSender) Push(_ context.Context, _ metadata.Target, req wire.PushRequest) (wire.PushResponse, error) {
	s.mu.Lock()
	refuse := s.refuse != nil && s.refuse(req)
	s.mu.Unlock()
	if refuse {
		return wire.PushResponse{}, errDown
	}
	var rows []model.Row
	if len(req.Rows) > 0 {
		var err error
		if rows, err = DecodeRows(req.Rows); err != nil {
			return wire.PushResponse{}, err
		}
	}
	res, err := ReceiveWith(s.to, req, s.applied)
	if err != nil {
		return wire.PushResponse{}, err
	}
	s.mu.Lock()
	req.Rows = nil // the pusher reuses the buffer
	s.pushes = append(s.pushes, req)
	s.rows = append(s.rows, rows)
	s.mu.Unlock()
	return wire.PushResponse{Unheld: res.Unheld}, nil
}

// TestUnheldRowsRetriedAlone: B's push to C carries B's own row and
// claims A's row held; C cannot confirm the claim, and B's push of A's
// row is refused once. The next step pushes A's row alone (B's own row
// is not written at C again), and only then is C's cursor at B's end.
func TestUnheldRowsRetriedAlone(t *testing.T) {
	pid := uuid.New()
	a, b, c := newReplica(t, pid), newReplica(t, pid), newReplica(t, pid)
	mustApply(t, a, row("a", "cpu,host=a", 1, 1, "v", 1))
	if _, err := ReceiveWith(b, pushOf(t, a, b.placement(), pid), &Applied{}); err != nil {
		t.Fatal(err)
	}
	mustApply(t, b, row("b", "cpu,host=b", 2, 1, "v", 2))

	refused := 0
	s := &claimSender{to: c, applied: &Applied{}}
	s.refuse = func(req wire.PushRequest) bool {
		// The first push of the unheld rows: rows, no claims.
		if len(req.Held) == 0 && req.Count > 0 && refused == 0 {
			refused++
			return true
		}
		return false
	}
	p := NewPusher(Config{Table: "metrics", Placement: b.placement(), Self: "b", Log: b, Sender: s,
		RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond, Tick: 100 * time.Millisecond})
	p.SetView(1, view(replicaTarget("c", c.placement(), pid)))
	runPusher(t, p)
	waitUntil(t, p, "C confirmed B's log", func() bool { return b.Confirmed(c.placement()) == b.HighSeq() })

	s.mu.Lock()
	defer s.mu.Unlock()
	if refused != 1 || len(s.pushes) != 2 {
		t.Fatalf("%d pushes delivered, %d refused; want the claims' push and A's row alone", len(s.pushes), refused)
	}
	if first := s.pushes[0]; len(first.Held) != 1 || first.Count != 1 || s.rows[0][0].Series != "cpu,host=b" {
		t.Fatalf("first push: %+v with %+v; want B's own row and a claim on A", first, s.rows[0])
	}
	if second := s.rows[1]; len(second) != 1 || second[0].Series != "cpu,host=a" {
		t.Fatalf("retried push holds %+v; want A's row alone", second)
	}
	if rows := scanAll(t, c); len(rows) != 2 {
		t.Fatalf("C holds %d rows, want 2", len(rows))
	}
}
