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
	// ErrInvalidOptions is returned by Open for unusable Options.
	ErrInvalidOptions = errors.New("smear: invalid options")
	// ErrInvalidHeader is returned by ParseHeader for an X-TSDB-Smear value
	// that is neither an "off" nor an "on" spelling.
	ErrInvalidHeader = errors.New("smear: invalid X-TSDB-Smear header")
)
