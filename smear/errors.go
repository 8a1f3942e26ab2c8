package smear

import (
	"errors"

	"github.com/tsdb/tsdb/errcode"
)

// Sentinel errors of the smear package. Callers test them with errors.Is;
// the package wraps them with context.
var (
	// ErrFull is returned by Queue.Enqueue when admitting the rows would
	// take the queue over Options.MaxRows or Options.MaxBytes. Nothing was
	// written. The HTTP layer answers 503 with a Retry-After of
	// Queue.RetryAfter(). A member of errcode.ErrQueueFull.
	ErrFull = errcode.New(errcode.ErrQueueFull, "smear: queue full")
	// ErrBehind is returned by Queue.Enqueue while admission control
	// refuses smeared inserts: the forwarder has fallen behind (rows are
	// overdue and the queue takes rows faster than it forwards them; see
	// doc.go, "Admission"). Nothing was written. The HTTP layer answers
	// it as ErrFull: 503 queue_full with a Retry-After of
	// Queue.RetryAfter(). A member of errcode.ErrQueueFull.
	ErrBehind = errcode.New(errcode.ErrQueueFull, "smear: forwarding behind")
	// ErrDueFull is returned by Queue.Enqueue when the rows already due
	// in the same second (AdmitTick) as the new ones reach what the
	// forwarder can forward in that time (its estimated capacity, with
	// some headroom): admitting them would make rows late. Nothing was
	// written. Another due time may have room: the front end draws again
	// a few times before it answers 503 queue_full. A member of
	// errcode.ErrQueueFull.
	ErrDueFull = errcode.New(errcode.ErrQueueFull, "smear: forward budget of that due time used up")
	// ErrTooLarge is returned by Queue.Enqueue for one batch that alone
	// exceeds Options.MaxRows or Options.MaxBytes: it could never be
	// admitted, so retrying is pointless. The caller should insert those
	// rows directly, without smearing. Nothing was written.
	ErrTooLarge = errors.New("smear: batch larger than the whole queue")
	// ErrClosed is returned by every operation on a closed Queue, and by
	// Forwarder.Run and Drain when their queue was closed under them.
	ErrClosed = errors.New("smear: queue closed")
	// ErrCorrupt reports a stored queue entry that does not decode. The
	// entry is moved aside (see doc.go, "Quarantine"), never deleted.
	ErrCorrupt = errors.New("smear: corrupt queue entry")
	// ErrDiscarded is what a Sender reports, in rowErrs, for a row it
	// discarded rather than delivered (its table was dropped): the row
	// leaves the queue like an accepted one, but does not count as
	// forwarded (the forward rate and capacity estimate measure
	// deliveries).
	ErrDiscarded = errors.New("smear: row discarded")
	// errHeld fails the rows of a call the forwarder did not make: their
	// partition's last call failed and another call to it is in flight.
	errHeld = errors.New("smear: partition's last forward failed and a probe call is in flight; rows requeued with backoff")
	// ErrInvalidOptions is returned by Open for unusable Options.
	ErrInvalidOptions = errors.New("smear: invalid options")
)
