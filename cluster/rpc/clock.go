package rpc

import (
	"strconv"
	"strings"
	"time"
)

// ClockHeader carries the sender's wall clock and server id,
// "<unix ns> <server id>", on internal requests and on their answers: each
// side of every internal call learns the other's clock offset from it
// (DESIGN.md rule 2), the callee from the request and the caller from the
// answer.
const ClockHeader = "X-TSDB-Clock"

// PeerClock stamps this server's clock on internal calls and hands the
// stamps of peers to Observe.
type PeerClock struct {
	// ServerID names this server in its stamps.
	ServerID string
	// Now reads this server's wall clock.
	Now func() time.Time
	// Observe receives a peer's stamp (its server id and its wall clock in
	// ns when it sent the message) and this server's reading when the
	// message arrived.
	Observe func(peer string, sentAt int64, received time.Time)
}

// Stamp returns the ClockHeader value for a message sent now.
func (pc *PeerClock) Stamp() string {
	return strconv.FormatInt(pc.Now().UnixNano(), 10) + " " + pc.ServerID
}

// Receive hands a message's ClockHeader value to Observe; an absent or
// malformed stamp, or this server's own, is ignored.
func (pc *PeerClock) Receive(v []byte) {
	peer, sentAt, ok := ParseClockStamp(string(v))
	if !ok || peer == pc.ServerID {
		return
	}
	pc.Observe(peer, sentAt, pc.Now())
}

// ParseClockStamp reads a ClockHeader value.
func ParseClockStamp(v string) (peer string, sentAt int64, ok bool) {
	ns, peer, found := strings.Cut(strings.TrimSpace(v), " ")
	if !found || peer == "" {
		return "", 0, false
	}
	sentAt, err := strconv.ParseInt(ns, 10, 64)
	if err != nil || sentAt <= 0 {
		return "", 0, false
	}
	return peer, sentAt, true
}
