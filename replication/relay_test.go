package replication

import (
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/model"
)

// pushOf builds the push of from's whole log to the replica target to
// (placement), as a Pusher's step would: the rows filtered for a replica
// target, their relayed runs, LastSeq and ClaimsTo the log's end.
func pushOf(t *testing.T, from *replicaLog, to uuid.UUID, pid uuid.UUID) wire.PushRequest {
	t.Helper()
	entries, err := from.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := pushState{spec: replicaTarget("to", to, pid)}
	rows, spans, own, _ := filterRows(nil, nil, nil, nil, entries, &st)
	last := entries[len(entries)-1].Seq
	return wire.PushRequest{FromServer: "from", FromPlacement: from.placement(), ToPlacement: to,
		Rows: AppendRows(nil, rows), Count: len(rows), LastSeq: last, ClaimsTo: last, Relayed: spans, Own: own}
}

// TestRelayDroppedOnlyOnceHeld: B relays to C a row that A pushed to B.
// C applies the relay when it arrives before A's own push (it may never
// get that one: A may die), drops it without a lookup once A's push up to
// the row's sequence there is applied, and applies one whose sequence at A
// lies beyond what A's pushes delivered. A nil filter drops nothing.
func TestRelayDroppedOnlyOnceHeld(t *testing.T) {
	pid := uuid.New()
	a, b, c := newReplica(t, pid), newReplica(t, pid), newReplica(t, pid)
	// B's own rows first: its sequences then differ from A's.
	mustApply(t, b, row("b", "own", 1, 1, "v", 1), row("b", "own", 2, 1, "v", 1), row("b", "own", 3, 1, "v", 1))
	mustApply(t, a, row("a", "cpu,host=x", 10, 1, "v", 1))

	// A pushes to B: B's log entry records A and A's sequence.
	var appliedB Applied
	toB := pushOf(t, a, b.placement(), pid)
	if _, err := ReceiveWith(b, toB, &appliedB); err != nil {
		t.Fatal(err)
	}
	entries, err := b.ReadLog(3, 0)
	if err != nil || len(entries) != 1 || entries[0].Origin != a.placement() || entries[0].OriginSeq != toB.LastSeq {
		t.Fatalf("B's log after its own rows: %+v, %v; want one entry from A with A's sequence %d", entries, err, toB.LastSeq)
	}

	// B's relay reaches C first: applied.
	var appliedC Applied
	relay := pushOf(t, b, c.placement(), pid)
	if len(relay.Relayed) != 1 || relay.Relayed[0] != (wire.RelaySpan{Start: 3, End: 4, Origin: a.placement(), Seq: toB.LastSeq}) {
		t.Fatalf("relay spans %+v", relay.Relayed)
	}
	if len(relay.Own) != 1 || relay.Own[0] != (wire.Span{Start: 0, End: 3}) {
		t.Fatalf("own spans %+v; want B's own three rows", relay.Own)
	}
	res, err := ReceiveWith(c, relay, &appliedC)
	if err != nil || res.Rows != 4 || res.Dropped != 0 || len(scanAll(t, c)) != 4 {
		t.Fatalf("relay before the origin's push: %+v, %v, C holds %d rows; want it applied", res, err, len(scanAll(t, c)))
	}

	// A's own push to C, then the relay again: dropped, C unchanged.
	highC := c.HighSeq()
	if _, err := ReceiveWith(c, pushOf(t, a, c.placement(), pid), &appliedC); err != nil {
		t.Fatal(err)
	}
	if got := appliedC.Level(c.placement(), a.placement()); got != toB.LastSeq {
		t.Fatalf("C holds A's log up to %d, want %d", got, toB.LastSeq)
	}
	res, err = ReceiveWith(c, relay, &appliedC)
	if err != nil || res.Rows != 4 || res.Dropped != 1 {
		t.Fatalf("relay after the origin's push: %+v, %v; want A's row dropped", res, err)
	}
	// Only B's own rows of the relay are written again (without a read,
	// each with a sequence: 3). A's push of its row is looked up, since
	// the row was relayed here lately: a tie, not stored.
	if c.HighSeq() != highC+3 || len(scanAll(t, c)) != 4 {
		t.Fatalf("C: high %d → %d, want %d (B's own rows); %d rows", highC, c.HighSeq(), highC+3, len(scanAll(t, c)))
	}

	// A relay of a row beyond what A delivered to C is applied.
	mustApply(t, a, row("a", "cpu,host=x", 20, 2, "v", 2))
	toB2 := pushOf(t, a, b.placement(), pid)
	if _, err := ReceiveWith(b, toB2, &appliedB); err != nil {
		t.Fatal(err)
	}
	// (pushOf sends A's whole log again: B writes A's first row again,
	// without a read, at a sequence of its own whose bound at A is
	// toB2's. Its relay is then beyond what A delivered to C, and applied
	// like the new row.)
	res, err = ReceiveWith(c, pushOf(t, b, c.placement(), pid), &appliedC)
	if err != nil || res.Rows != 6 || res.Dropped != 1 {
		t.Fatalf("relay of one held and one new row of A: %+v, %v; want 1 of 6 dropped", res, err)
	}
	if rows := scanAll(t, c); len(rows) != 5 {
		t.Fatalf("C holds %d rows, want 5", len(rows))
	}

	// Without a filter nothing is dropped; a second receiving placement
	// knows nothing of what the first was delivered.
	d := newReplica(t, pid)
	res, err = ReceiveWith(d, pushOf(t, b, d.placement(), pid), nil)
	if err != nil || res.Dropped != 0 || len(scanAll(t, d)) != 5 {
		t.Fatalf("nil filter: %+v, %v", res, err)
	}
	if appliedC.Level(d.placement(), a.placement()) != 0 {
		t.Fatal("a level leaked to another placement")
	}
}

// TestRelaySpansChecked: a span outside the push's rows or out of order
// is ErrCorrupt and nothing is applied.
func TestRelaySpansChecked(t *testing.T) {
	rows := []model.Row{row("a", "s", 1, 1, "v", 1), row("a", "s", 2, 1, "v", 2)}
	origin := uuid.New()
	for _, spans := range [][]wire.RelaySpan{
		{{Start: 0, End: 3, Origin: origin, Seq: 1}},
		{{Start: 1, End: 1, Origin: origin, Seq: 1}},
		{{Start: -1, End: 1, Origin: origin, Seq: 1}},
		{{Start: 1, End: 2, Origin: origin, Seq: 1}, {Start: 0, End: 1, Origin: origin, Seq: 1}},
	} {
		var a countingApplier
		var applied Applied
		req := wire.PushRequest{Rows: AppendRows(nil, rows), Count: 2, LastSeq: 5, Relayed: spans}
		if _, err := ReceiveWith(&a, req, &applied); !errors.Is(err, ErrCorrupt) || a.calls != 0 {
			t.Errorf("spans %+v: %v after %d applies; want ErrCorrupt, none", spans, err, a.calls)
		}
	}
	// A well-formed push hands the sender's LastSeq on as the origin's
	// sequence.
	var a countingApplier
	req := wire.PushRequest{Rows: AppendRows(nil, rows), Count: 2, LastSeq: 5, FromPlacement: origin}
	if _, err := ReceiveWith(&a, req, &Applied{}); err != nil || a.originSeq != 5 || a.origin != origin {
		t.Fatalf("%v: origin %s seq %d", err, a.origin, a.originSeq)
	}
	// A row snapshot's batch hands on no sequence: its rows, read from
	// the sender's data space, need not be in the sender's log.
	req.Snapshot = true
	if _, err := ReceiveWith(&a, req, &Applied{}); err != nil || a.originSeq != 0 {
		t.Fatalf("snapshot batch: %v, origin seq %d; want 0", err, a.originSeq)
	}
	// A claim above the push's LastSeq (a sender bug) is recorded as
	// LastSeq.
	var applied Applied
	to := uuid.New()
	req = wire.PushRequest{Rows: AppendRows(nil, rows), Count: 2, LastSeq: 5, ClaimsTo: 9, FromPlacement: origin, ToPlacement: to}
	if _, err := ReceiveWith(&a, req, &applied); err != nil || applied.Level(to, origin) != 5 {
		t.Fatalf("claim above LastSeq: %v, level %d; want 5", err, applied.Level(to, origin))
	}
}

// TestOwnSpansChecked: an Own span outside the push's rows or out of order
// is ErrCorrupt and nothing is applied; a well-formed one reaches the
// replica as one flag per row, without the flags of the relayed rows
// dropped before the apply.
func TestOwnSpansChecked(t *testing.T) {
	rows := []model.Row{row("a", "s", 1, 1, "v", 1), row("a", "s", 2, 1, "v", 2), row("a", "s", 3, 1, "v", 3)}
	for _, spans := range [][]wire.Span{
		{{Start: 0, End: 4}},
		{{Start: 1, End: 1}},
		{{Start: -1, End: 1}},
		{{Start: 1, End: 2}, {Start: 0, End: 1}},
	} {
		var a countingApplier
		req := wire.PushRequest{Rows: AppendRows(nil, rows), Count: 3, LastSeq: 5, Own: spans}
		if _, err := ReceiveWith(&a, req, &Applied{}); !errors.Is(err, ErrCorrupt) || a.calls != 0 {
			t.Errorf("own spans %+v: %v after %d applies; want ErrCorrupt, none", spans, err, a.calls)
		}
	}
	origin, relayOrigin, to := uuid.New(), uuid.New(), uuid.New()
	var applied Applied
	applied.note(to, relayOrigin, 10)
	var a countingApplier
	req := wire.PushRequest{Rows: AppendRows(nil, rows), Count: 3, LastSeq: 5, FromPlacement: origin, ToPlacement: to,
		Own:     []wire.Span{{Start: 0, End: 1}, {Start: 2, End: 3}},
		Relayed: []wire.RelaySpan{{Start: 1, End: 2, Origin: relayOrigin, Seq: 4}}}
	res, err := ReceiveWith(&a, req, &applied)
	if err != nil || res.Dropped != 1 || len(a.rows) != 2 || len(a.own) != 2 || !a.own[0] || !a.own[1] {
		t.Fatalf("%+v, %v: applied %d rows with own flags %v; want 2 rows, both own", res, err, len(a.rows), a.own)
	}
	a = countingApplier{}
	req.Own = nil
	if _, err := ReceiveWith(&a, req, &applied); err != nil || a.own != nil {
		t.Fatalf("no own spans: %v, flags %v; want none", err, a.own)
	}
}
