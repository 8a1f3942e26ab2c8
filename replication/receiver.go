package replication

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// Applier is a local replica receiving pushes; *partition.Replica
// implements it.
type Applier interface {
	// ApplyPush stores rows pushed from the placement p.Origin and
	// records it with each row whose stored value it alone wrote (see
	// partition.Replica.ApplyFrom), so that this replica's pushes do not
	// send the row back there.
	//
	// p.OriginSeq, when not 0, bounds the sequences of origin's log that
	// hold the rows there (the push's LastSeq): the replica reports it
	// when it relays those rows (partition.LogEntry.OriginSeq). p.Own
	// flags the rows that are the sender's own changes
	// (wire.PushRequest.Own), written without a read.
	ApplyPush(rows []model.Row, p partition.Push) (partition.ApplyResult, error)
}

// ChunkApplier is an Applier that stores a row snapshot's chunks
// (partition.IsChunk) as they are: IngestChunk checks the chunk holds
// count rows, records from's origin and origin sequence like ApplyPush,
// and returns once they are synced.
type ChunkApplier interface {
	Applier
	IngestChunk(chunk []byte, count int, from partition.Push) (partition.ApplyResult, error)
}

// Receive decodes req.Rows and applies them to a; when it returns nil the
// rows are synced (Apply's contract), so the caller may confirm the push.
// A row snapshot's chunk (partition.IsChunk) goes to a as it is, which
// must then be a ChunkApplier: it ingests the chunk, synced.
// It returns the number of rows received. An empty push (no rows, as a
// Complete signal) applies nothing. A body that does not decode, or holds
// another number of rows than req.Count, fails with ErrCorrupt before
// anything is applied. Checking that the receiver holds req.ToPlacement as
// LOAD or SERVE (else stale placement) is the caller's job.
func Receive(a Applier, req wire.PushRequest) (int, error) {
	res, err := ReceiveWith(a, req, nil)
	return res.Rows, err
}

// ReceiveResult is what ReceiveWith received.
type ReceiveResult struct {
	// Rows is the number of rows the push held.
	Rows int
	// Dropped is the number of them dropped as relayed copies of rows the
	// receiver held already (not applied).
	Dropped int
	// Unheld are the origins of the push's Held claims the receiver could
	// not confirm, with its levels of their logs
	// (wire.PushResponse.Unheld): its ClaimsTo was not recorded, and the
	// sender must push those rows.
	Unheld []wire.OriginLevel
}

// ReceiveWith is Receive with the relay filter of the receiving replica:
// applied, when not nil, remembers what each sender's pushes delivered
// (their ClaimsTo, once applied), and the rows of req.Relayed that it
// shows the receiver holds already are dropped before the apply (no row
// lookup). A Relayed or Own span out of the rows' bounds, or out of
// order, is ErrCorrupt before anything is applied.
//
// The push's Held claims (rows the sender left out, relayed from a third
// replica) are checked against applied once its rows are applied,
// waiting up to applied.Wait for an origin's own push still on its way
// (see Applied.Wait); the origins of the claims it cannot confirm come
// back in Unheld with the levels held, and the push's ClaimsTo is then
// not recorded. A nil applied confirms no claim.
func ReceiveWith(a Applier, req wire.PushRequest, applied *Applied) (ReceiveResult, error) {
	if len(req.Rows) == 0 && req.Count != 0 {
		return ReceiveResult{}, fmt.Errorf("%w: push from %s claims %d rows and has none", ErrCorrupt, req.FromServer, req.Count)
	}
	for _, h := range req.Held {
		if h.Origin == uuid.Nil || h.Seq == 0 {
			return ReceiveResult{}, fmt.Errorf("%w: push from %s: a held claim names no origin or sequence", ErrCorrupt, req.FromServer)
		}
	}
	if len(req.Rows) == 0 && len(req.Held) == 0 {
		// A probe, a joiner's Complete signal, or a sender telling how
		// far its cursor moved without a push (every change it read was
		// this replica's own, or outside its range: Pusher.refreshLevel).
		applied.note(req.ToPlacement, req.FromPlacement, min(req.ClaimsTo, req.LastSeq))
		return ReceiveResult{}, nil
	}
	var res ReceiveResult
	if len(req.Rows) > 0 {
		n, dropped, err := receive(a, req, applied)
		if err != nil {
			return ReceiveResult{}, err
		}
		res.Rows, res.Dropped = n, dropped
	}
	if len(req.Held) > 0 {
		if x, one := heldOrigin(req.Held); one {
			// With the rows applied, this receiver holds the sender's
			// log up to ClaimsTo but for the values relayed from x:
			// enough for x's own claims on the sender, which never cover
			// those (a replica pushes nobody's values back to it). Noted
			// before the wait below, so two replicas whose pushes here
			// claim each other's relays do not wait for each other.
			applied.noteExcept(req.ToPlacement, req.FromPlacement, x, min(req.ClaimsTo, req.LastSeq))
		}
	}
	if res.Unheld = applied.unheld(req.ToPlacement, req.FromPlacement, req.Held); len(res.Unheld) > 0 {
		// The push's rows are applied, but without the rows it left
		// out the receiver does not hold the sender's log up to
		// ClaimsTo: not recorded (the sender pushes them next).
		return res, nil
	}
	// Every sender path has ClaimsTo <= LastSeq (the push's reach); a
	// claim above it would be a sender's bug, and is recorded at most at
	// LastSeq.
	applied.note(req.ToPlacement, req.FromPlacement, min(req.ClaimsTo, req.LastSeq))
	return res, nil
}

// receive applies a push that holds rows and returns their number and how
// many of them were dropped as relayed copies.
func receive(a Applier, req wire.PushRequest, applied *Applied) (int, int, error) {
	// The rows' bound in the sender's log, remembered for relaying them:
	// a row snapshot's batch holds rows as read from the sender's data
	// space, which may hold rows of other replicas sharing it that are in
	// no entry of the sender's log, so its rows get none, unless the
	// sender says its space holds only its own (SnapshotLogged).
	originSeq := req.LastSeq
	if req.Snapshot && !req.SnapshotLogged {
		originSeq = 0
	}
	if partition.IsChunk(req.Rows) {
		ca, ok := a.(ChunkApplier)
		if !ok {
			return 0, 0, fmt.Errorf("%w: push from %s holds a snapshot chunk this replica cannot ingest", ErrCorrupt, req.FromServer)
		}
		if _, err := ca.IngestChunk(req.Rows, req.Count, partition.Push{Origin: req.FromPlacement, OriginSeq: originSeq}); err != nil {
			if errors.Is(err, partition.ErrCorrupt) {
				err = fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			return 0, 0, fmt.Errorf("replication: ingest push from %s to %s: %w", req.FromServer, req.ToPlacement, err)
		}
		return req.Count, 0, nil
	}
	rows, err := DecodeRows(req.Rows)
	if err != nil {
		return 0, 0, fmt.Errorf("replication: push from %s to %s: %w", req.FromServer, req.ToPlacement, err)
	}
	if len(rows) != req.Count {
		return 0, 0, fmt.Errorf("%w: push from %s claims %d rows and holds %d", ErrCorrupt, req.FromServer, req.Count, len(rows))
	}
	if len(rows) == 0 {
		return 0, 0, nil
	}
	own, err := ownFlags(req)
	if err != nil {
		return 0, 0, err
	}
	keep, own, err := applied.dropHeld(rows, own, req)
	if err != nil {
		return 0, 0, err
	}
	if len(keep) > 0 {
		if _, err := a.ApplyPush(keep, partition.Push{Origin: req.FromPlacement, OriginSeq: originSeq, Own: own}); err != nil {
			return 0, 0, fmt.Errorf("replication: apply push from %s to %s: %w", req.FromServer, req.ToPlacement, err)
		}
	}
	return len(rows), len(rows) - len(keep), nil
}

// Applied is the relay filter of a server's receiving replicas: per
// receiving placement and sending placement, the highest ClaimsTo of a
// push from that sender that the receiver applied (synced). The receiver
// then holds every row of the sender's log up to it (the sender's cursor
// means exactly that), so a copy of such a row that a third replica
// relays (wire.RelaySpan, Seq at most that) can be dropped unread: this
// is the relayed half of DESIGN.md section 5's pushes, which before
// cost a row lookup each at every receiver.
//
// It is memory only: after a restart it is empty and relayed rows are
// applied (looked up) as before. The zero value is ready; a nil *Applied
// drops nothing and remembers nothing. Safe for concurrent use.
type Applied struct {
	// Wait bounds how long a push's Held claim waits for its origin's
	// own push to arrive (ReceiveWith): the origin pushes to the sender
	// and the receiver at the same time, and the sender relays only once
	// it applied the rows, so the origin's push is usually on its way or
	// being applied. It waits only for an origin that delivered a push to
	// the receiving replica within the last second (heldRecent): a dead
	// origin costs no wait. 0: no wait. Set before use.
	Wait time.Duration
	// recent replaces heldRecent when not 0 (tests).
	recent time.Duration

	mu sync.Mutex
	// seqs maps receiving placement → sending placement → its levels.
	seqs map[uuid.UUID]map[uuid.UUID]*appliedLevel
	// changed is closed (and cleared) by every note: the wake of the
	// claims waiting in unheld. nil while nobody waits.
	changed chan struct{}
}

// heldRecent is how recently an origin must have delivered a push to the
// receiving replica for a Held claim to wait for it (Applied.Wait).
const heldRecent = time.Second

// DefaultRelayWait is the Applied.Wait of a server's receiving replicas.
// A relay reaches the receiver a few milliseconds after the origin's own
// push of the same rows (the relaying replica applied and synced them
// first); a claim that waits longer than this is answered unheld and its
// rows are pushed.
const DefaultRelayWait = 50 * time.Millisecond

// appliedLevel is what a receiving replica holds of a sender's log.
type appliedLevel struct {
	// seq is the sender's highest ClaimsTo applied: every row of its log
	// up to it.
	seq uint64
	// except are levels of every row of the sender's log but the values
	// relayed from one third replica (Origin; see noteExcept).
	except []wire.OriginLevel
	// at is when a push of the sender last raised a level.
	at time.Time
}

// holdsFor returns how far the level covers the values a third replica
// claimant may claim relayed from the sender: all of the sender's log
// but the values relayed from the claimant itself.
func (l *appliedLevel) holdsFor(claimant uuid.UUID) uint64 {
	seq := l.seq
	for _, e := range l.except {
		if e.Origin == claimant {
			seq = max(seq, e.Seq)
		}
	}
	return seq
}

// heldOrigin returns the origin of held's claims and whether they all
// name one.
func heldOrigin(held []wire.HeldRelay) (uuid.UUID, bool) {
	for _, h := range held[1:] {
		if h.Origin != held[0].Origin {
			return uuid.Nil, false
		}
	}
	return held[0].Origin, true
}

// level returns to's level of from's log, creating it; a.mu is held.
func (a *Applied) level(to, from uuid.UUID) *appliedLevel {
	if a.seqs == nil {
		a.seqs = make(map[uuid.UUID]map[uuid.UUID]*appliedLevel)
	}
	m := a.seqs[to]
	if m == nil {
		m = make(map[uuid.UUID]*appliedLevel)
		a.seqs[to] = m
	}
	l := m[from]
	if l == nil {
		l = &appliedLevel{}
		m[from] = l
	}
	return l
}

// raised stamps l and wakes the claims waiting in unheld; a.mu is held.
func (a *Applied) raised(l *appliedLevel) {
	l.at = time.Now()
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}

// note records that to applied from's log up to seq (0: nothing known).
func (a *Applied) note(to, from uuid.UUID, seq uint64) {
	if a == nil || seq == 0 || from == uuid.Nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.level(to, from)
	l.seq = max(l.seq, seq)
	a.raised(l)
}

// noteExcept records that to applied from's log up to seq but for the
// values relayed from the replica placement except: a push of from
// applied, whose Held claims all name except (rows it left out), holds
// that whether or not the claims hold. A claim of except on from's
// values needs no more (holdsFor): from never pushes a value back to the
// replica it came from, so the values except relays as from's never
// include one that from got from except.
func (a *Applied) noteExcept(to, from, except uuid.UUID, seq uint64) {
	if a == nil || seq == 0 || from == uuid.Nil || except == uuid.Nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.level(to, from)
	k := slices.IndexFunc(l.except, func(e wire.OriginLevel) bool { return e.Origin == except })
	if k < 0 {
		l.except = append(l.except, wire.OriginLevel{Origin: except})
		k = len(l.except) - 1
	}
	l.except[k].Seq = max(l.except[k].Seq, seq)
	a.raised(l)
}

// holds returns how far to holds origin's log for the claims of the
// placement claimant (a relay of origin's values, wire.RelaySpan or
// wire.HeldRelay; see appliedLevel.holdsFor).
func (a *Applied) holds(to, origin, claimant uuid.UUID) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	level, _ := a.holdsLocked(to, origin, claimant)
	return level
}

// holdsLocked is holds, with when origin last delivered a push to to;
// a.mu is held.
func (a *Applied) holdsLocked(to, origin, claimant uuid.UUID) (uint64, time.Time) {
	l := a.seqs[to][origin]
	if l == nil {
		return 0, time.Time{}
	}
	return l.holdsFor(claimant), l.at
}

// unheld returns the origins of held, claims of the placement claimant,
// that cannot be shown to hold at to (all of them for a nil a), with
// to's levels of their logs, each after waiting up to a.Wait in all for a
// push of that origin that raises to's level to its highest claim.
func (a *Applied) unheld(to, claimant uuid.UUID, held []wire.HeldRelay) []wire.OriginLevel {
	var out []wire.OriginLevel
	deadline := time.Now().Add(a.wait())
	for i, h := range held {
		if slices.ContainsFunc(held[:i], func(o wire.HeldRelay) bool { return o.Origin == h.Origin }) {
			continue // one origin is checked once, at its highest claim
		}
		claim := h.Seq
		for _, o := range held[i+1:] {
			if o.Origin == h.Origin {
				claim = max(claim, o.Seq)
			}
		}
		if level, ok := a.waitLevel(to, h.Origin, claimant, claim, deadline); !ok {
			out = append(out, wire.OriginLevel{Origin: h.Origin, Seq: level})
		}
	}
	return out
}

func (a *Applied) wait() time.Duration {
	if a == nil {
		return 0
	}
	return a.Wait
}

// waitLevel returns to's level of origin for claimant's claims and
// whether it reaches seq, waiting for it until deadline if origin
// delivered a push to to lately.
func (a *Applied) waitLevel(to, origin, claimant uuid.UUID, seq uint64, deadline time.Time) (uint64, bool) {
	if a == nil {
		return 0, false
	}
	for {
		a.mu.Lock()
		level, at := a.holdsLocked(to, origin, claimant)
		if level >= seq {
			a.mu.Unlock()
			return level, true
		}
		d := time.Until(deadline)
		recent := heldRecent
		if a.recent != 0 {
			recent = a.recent
		}
		if d <= 0 || at.IsZero() || time.Since(at) > recent {
			a.mu.Unlock()
			return level, false
		}
		if a.changed == nil {
			a.changed = make(chan struct{})
		}
		ch := a.changed
		a.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

// Level returns how far to is known to hold from's log (0: unknown).
func (a *Applied) Level(to, from uuid.UUID) uint64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.seqs[to][from]; l != nil {
		return l.seq
	}
	return 0
}

// Forget drops what is known of placement to (its replica was dropped).
func (a *Applied) Forget(to uuid.UUID) {
	if a == nil {
		return
	}
	a.mu.Lock()
	delete(a.seqs, to)
	a.mu.Unlock()
}

// ownFlags returns one flag per row of req, set for the rows of req.Own
// (nil when it lists none), after checking every span lies within the
// rows, in order.
func ownFlags(req wire.PushRequest) ([]bool, error) {
	if len(req.Own) == 0 {
		return nil, nil
	}
	prevEnd := 0
	for _, sp := range req.Own {
		if sp.Start < prevEnd || sp.End <= sp.Start || sp.End > req.Count {
			return nil, fmt.Errorf("%w: push from %s: own rows [%d, %d) out of order or beyond its %d rows", ErrCorrupt, req.FromServer, sp.Start, sp.End, req.Count)
		}
		prevEnd = sp.End
	}
	own := make([]bool, req.Count)
	for _, sp := range req.Own {
		for i := sp.Start; i < sp.End; i++ {
			own[i] = true
		}
	}
	return own, nil
}

// dropHeld returns rows without the runs of req.Relayed that the
// receiver is known to hold (rows itself when none is dropped), and own
// (one flag per row, or nil) without the same rows, after checking every
// span lies within rows, in order.
func (a *Applied) dropHeld(rows []model.Row, own []bool, req wire.PushRequest) ([]model.Row, []bool, error) {
	if len(req.Relayed) == 0 {
		return rows, own, nil
	}
	prevEnd := 0
	for _, sp := range req.Relayed {
		if sp.Start < prevEnd || sp.End <= sp.Start || sp.End > len(rows) {
			return nil, nil, fmt.Errorf("%w: push from %s: relayed rows [%d, %d) out of order or beyond its %d rows", ErrCorrupt, req.FromServer, sp.Start, sp.End, len(rows))
		}
		prevEnd = sp.End
	}
	if a == nil {
		return rows, own, nil
	}
	var (
		keep    []model.Row
		keepOwn []bool
	)
	next := 0 // rows before next are in keep or dropped
	for _, sp := range req.Relayed {
		if sp.Seq == 0 || sp.Origin == uuid.Nil {
			continue
		}
		if a.holds(req.ToPlacement, sp.Origin, req.FromPlacement) < sp.Seq {
			continue
		}
		if keep == nil {
			keep = make([]model.Row, 0, len(rows))
		}
		keep = append(keep, rows[next:sp.Start]...)
		if own != nil {
			keepOwn = append(keepOwn, own[next:sp.Start]...)
		}
		next = sp.End
	}
	if keep == nil {
		return rows, own, nil
	}
	keep = append(keep, rows[next:]...)
	if own != nil {
		keepOwn = append(keepOwn, own[next:]...)
		if len(keepOwn) == 0 {
			keepOwn = nil
		}
	}
	return keep, keepOwn, nil
}

// JoinProgress records, per receiving placement, which sending servers
// said Complete: they have pushed everything they held when they first saw
// the join (DESIGN.md section 5). A joining server finalizes once a
// majority of the partition's servers are in Complete. A Complete, once
// recorded, stays until Forget: it remains true when a restarted sender
// later pushes with Complete=false until it reaches its new mark. The
// zero value is ready to use; it is safe for concurrent use.
type JoinProgress struct {
	mu struct {
		sync.Mutex
		// complete holds, per receiving placement, the senders that
		// said Complete.
		complete map[uuid.UUID]map[string]struct{}
	}
}

// Record notes a push from fromServer to placement; complete is the push's
// Complete flag.
func (j *JoinProgress) Record(placement uuid.UUID, fromServer string, complete bool) {
	if !complete {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.mu.complete == nil {
		j.mu.complete = make(map[uuid.UUID]map[string]struct{})
	}
	set := j.mu.complete[placement]
	if set == nil {
		set = make(map[string]struct{})
		j.mu.complete[placement] = set
	}
	set[fromServer] = struct{}{}
}

// Complete returns the servers that said Complete to placement, sorted.
func (j *JoinProgress) Complete(placement uuid.UUID) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	set := j.mu.complete[placement]
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Forget drops what was recorded for placement (it finished joining or was
// dropped).
func (j *JoinProgress) Forget(placement uuid.UUID) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.mu.complete, placement)
}
