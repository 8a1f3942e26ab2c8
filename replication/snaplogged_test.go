package replication

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// receiveSender is a Sender that applies every push to its target's
// replica with ReceiveWith, the whole request as sent (the recorder keeps
// the rows only), each receiver with its own relay filter.
type receiveSender struct {
	mu      sync.Mutex
	to      map[uuid.UUID]*replicaLog
	applied map[uuid.UUID]*Applied
	pushes  []wire.PushRequest // without their rows
}

func (s *receiveSender) Push(_ context.Context, _ metadata.Target, req wire.PushRequest) (wire.PushResponse, error) {
	res, err := ReceiveWith(s.to[req.ToPlacement], req, s.applied[req.ToPlacement])
	if err != nil {
		return wire.PushResponse{}, err
	}
	req.Rows = nil
	s.mu.Lock()
	s.pushes = append(s.pushes, req)
	s.mu.Unlock()
	return wire.PushResponse{Unheld: res.Unheld}, nil
}

// TestSnapshotOfLoggedRowsClaimedHeld: a joiner J gets its rows as a row
// snapshot of replica A (A's log is truncated). When every row A's data
// space holds is a change of A's own log (the space was never shared),
// the push says so (SnapshotLogged) and J remembers A's snapshot sequence
// as the rows' origin sequence: J's own push to B, which holds A's log
// that far, then claims them held and carries none. When A shares its
// space with a local split child, which wrote a row of its own there (in
// no entry of A's log), the snapshot holds that row too: the push must
// not say so, J's push carries every row, and B, which holds A's log but
// not the child's row, gets it. A sender that said so regardless would
// leave B without the child's row, confirmed as held.
func TestSnapshotOfLoggedRowsClaimedHeld(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "own space", true: "shared space"}[shared]
		t.Run(name, func(t *testing.T) {
			pid := uuid.New()
			storeA := openStore(t)
			a := createIn(t, storeA, pid, nil, nil)
			for i := range 100 {
				mustApply(t, a, row("a", "cpu", int64(i), 1, "v", float64(i)))
			}
			b, j := newReplica(t, pid), newReplica(t, pid)
			applied := map[uuid.UUID]*Applied{b.placement(): {}, j.placement(): {}}
			// B holds A's log: A's push recorded its level there.
			if _, err := ReceiveWith(b, pushOf(t, a, b.placement(), pid), applied[b.placement()]); err != nil {
				t.Fatal(err)
			}
			want := 100
			if shared {
				mid := int64(50)
				child := createIn(t, storeA, uuid.New(), nil, &mid)
				mustApply(t, child, row("c", "child", 10, 2, "v", 1))
				want++
			}
			if got := a.RowsAllLogged(); got == shared {
				t.Errorf("RowsAllLogged %v with the space shared %v", got, shared)
			}
			drainMemory(t, a)
			if err := a.TruncateLog(a.HighSeq() - 1); err != nil {
				t.Fatal(err)
			}

			send := &receiveSender{to: map[uuid.UUID]*replicaLog{j.placement(): j, b.placement(): b}, applied: applied}
			p := NewPusher(Config{Table: "metrics", Placement: a.placement(), Self: "sa", Log: a, Sender: send})
			p.SetView(1, view(replicaTarget("sj", j.placement(), pid)))
			runPusher(t, p)
			waitUntil(t, p, "J confirmed", p.Drained)
			snapshots := 0
			for _, req := range send.pushes {
				if !req.Snapshot {
					continue
				}
				snapshots++
				if req.SnapshotLogged == shared {
					t.Errorf("a snapshot push says SnapshotLogged %v with the space shared %v", req.SnapshotLogged, shared)
				}
			}
			if snapshots == 0 {
				t.Fatal("J got no row snapshot")
			}
			if got := len(scanAll(t, j)); got != want {
				t.Fatalf("J holds %d rows, want %d", got, want)
			}

			// J serves: its push to B.
			held := heldPushOf(t, j, b.placement(), pid)
			res, err := ReceiveWith(b, held, applied[b.placement()])
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Unheld) > 0 {
				t.Fatalf("B answered %+v unheld: it holds A's log up to its snapshot", res.Unheld)
			}
			if shared {
				if held.Count != want || len(held.Held) != 0 {
					t.Errorf("J's push to B carries %d rows and claims %+v; want all %d rows, no claim", held.Count, held.Held, want)
				}
			} else if held.Count != 0 || len(held.Held) != 1 || held.Held[0].Origin != a.placement() || held.Held[0].Rows != want {
				t.Errorf("J's push to B carries %d rows and claims %+v; want none carried, A's %d claimed", held.Count, held.Held, want)
			}
			rows := scanAll(t, b)
			if len(rows) != want {
				t.Fatalf("B holds %d rows, want %d", len(rows), want)
			}
			if shared {
				return
			}
			// C holds none of A's log: it answers the claim unheld, and
			// J reads the rows it claimed (their entries carry no value,
			// the rows are read as they are) and pushes them.
			c := newReplica(t, pid)
			toC := heldPushOf(t, j, c.placement(), pid)
			res, err = ReceiveWith(c, toC, &Applied{})
			if err != nil || len(res.Unheld) != 1 {
				t.Fatalf("C's answer: %+v, %v; want A's claim unheld", res, err)
			}
			again, err := j.ReadRelayed(0, toC.LastSeq, a.placement(), res.Unheld[0].Seq)
			if err != nil || len(again) != want {
				t.Fatalf("ReadRelayed: %d entries, %v; want %d", len(again), err, want)
			}
			rowsOf := make([]model.Row, len(again))
			for i := range again {
				rowsOf[i] = again[i].Row
			}
			mustApply(t, c, rowsOf...)
			if err := sameRows(scanAll(t, c), scanAll(t, a)); err != nil {
				t.Fatalf("C after the rows J could not claim: %v", err)
			}
		})
	}
}

// TestIdleTargetToldItsLevel: A's log holds only rows B pushed it, so
// A's cursor for B moves without a push (rows are not pushed back). Once
// A's pusher is idle it tells B how far that is, in an empty push, and B
// records it as its level of A's log: a third replica's claims on rows
// relayed from A up to there are then confirmed by B.
func TestIdleTargetToldItsLevel(t *testing.T) {
	pid := uuid.New()
	a, b := newReplica(t, pid), newReplica(t, pid)
	for i := range 10 {
		if _, err := a.ApplyFrom([]model.Row{row("b", "cpu", int64(i), 1, "v", 1)}, b.placement(), uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	send := &receiveSender{to: map[uuid.UUID]*replicaLog{b.placement(): b}, applied: map[uuid.UUID]*Applied{b.placement(): {}}}
	p := NewPusher(Config{Table: "metrics", Placement: a.placement(), Self: "sa", Log: a, Sender: send, Tick: 5 * time.Millisecond})
	p.SetView(1, view(replicaTarget("sb", b.placement(), pid)))
	runPusher(t, p)
	pollUntil(t, "B's level of A's log at A's high sequence", func() bool {
		return send.applied[b.placement()].Level(b.placement(), a.placement()) == a.HighSeq()
	})
	send.mu.Lock()
	defer send.mu.Unlock()
	for _, req := range send.pushes {
		if req.Count != 0 || len(req.Held) != 0 {
			t.Fatalf("a push to B carried %d rows and %d claims: every row is B's", req.Count, len(req.Held))
		}
	}
}
