package node

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tsdb/tsdb/frontend"
	"github.com/tsdb/tsdb/replication"
	"github.com/tsdb/tsdb/smear"
)

// Insert smearing (DESIGN.md section 7) and the server's write limit. An
// insert whose rows fall in a partition narrower than the table's
// keyrange_threshold is stamped with its version by the front end
// (frontend.Frontend.Insert), written to this server's durable smear queue
// with a due time drawn from [0, max_delay], and acknowledged; the
// forwarder sends the rows when due (frontend.SmearSender), routed by the
// METADATA current then, with their versions. The write limit paces every
// write to this server's stores, the queue's included. Node owns the queue
// and the forwarder, opens them before the HTTP server starts, and drains
// the queue in Stop after the HTTP server shut down.

// Bounds of one forward call of the smear forwarder, and the calls in
// flight: a call is one partition's rows (frontend.SmearSender routes a
// pass's rows once), an insert at quorum; several go at once, up to
// smearInFlight, one at a time to a partition whose last call failed
// (smear.ForwarderOptions). A call into a partition whose replicas are slow
// to confirm (a split's children catching up) holds its slot for up to the
// ack timeout while using no CPU; with 4 slots a few such calls stalled
// every other partition's due rows (docs/smearing.md), and 16 leave room
// for the healthy partitions' (not measured on its own: one 90 s run each,
// docs/performance.md, "Smear visibility, second look").
const (
	smearCallRows  = 5000
	smearCallBytes = 2 << 20
	smearInFlight  = 16
)

// openSmear opens this server's smear queue and its forwarder.
func (n *Node) openSmear() error {
	opts := smear.Options{
		Codec:       smear.CodecFuncs{Append: replication.AppendRows, Decode: replication.DecodeRows},
		MaxRows:     n.cfg.SmearMaxRows,
		MaxBytes:    n.cfg.SmearMaxBytes,
		NoAdmission: n.cfg.NoSmearAdmission,
		BeforeWrite: n.limiter.Wait,
		Logger:      n.log,
		Metrics:     smear.NewMetrics(n.registry),
	}
	if n.cfg.knobs.smearQueue != nil {
		n.cfg.knobs.smearQueue(&opts)
	}
	q, err := smear.Open(filepath.Join(n.cfg.DataDir, "smear"), opts)
	if err != nil {
		return fmt.Errorf("node: open smear queue: %w", err)
	}
	n.smearQ = q
	// Calls of at most 5,000 rows: a forward is an insert at quorum, and
	// one that a write-limited replica set cannot confirm within the ack
	// timeout is sent again whole; after such a failure the forwarder
	// keeps one call at a time in flight to that partition.
	var sender smear.Sender = frontend.SmearSender{Router: n.router, Logger: n.log}
	if n.cfg.knobs.smearSender != nil {
		sender = n.cfg.knobs.smearSender(sender)
	}
	n.smearFwd = smear.NewForwarder(q, sender, smear.ForwarderOptions{Logger: n.log,
		MaxRowsPerCall: smearCallRows, MaxBytesPerCall: smearCallBytes, MaxInFlight: smearInFlight})
	return nil
}

// drainSmear forwards everything still queued, for a server that stops:
// bounded by SmearDrainTimeout; what is left stays durable and is
// forwarded after a restart (smear.Forwarder.DrainForStop).
func (n *Node) drainSmear(ctx context.Context) {
	if n.smearFwd != nil {
		n.smearFwd.DrainForStop(ctx, n.cfg.SmearDrainTimeout)
	}
}
