package smear

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/internal/formatmark"
)

// The queue's format marker (issue 17, item 6; doc.go, "Key layout"): the
// single-byte key 0x00, whose value is the layout version of the queue's
// DB in ASCII decimal ("1": the keys and entry values of doc.go). Open
// refuses a queue marked with a version this build does not support with
// ErrUnknownFormat, before it replays or quarantines anything, and writes
// the marker (synced) when it is absent: in a new queue and in one written
// before the marker existed, which has the version 1 layout. Entries also
// carry a format byte of their own; one this build cannot read is
// quarantined, not dropped (doc.go).
const nsFormat = 0x00

var formatKey = []byte{nsFormat}

// queueFormat is the version this build writes and reads.
const queueFormat = 1

// ErrUnknownFormat is returned by Open for a queue whose format marker
// names a version this build does not support (written by a newer build).
var ErrUnknownFormat = errors.New("smear: unknown queue format")

// checkFormat refuses a queue of another version and marks an unmarked
// one.
func checkFormat(db *pebble.DB, dir string) error {
	ver, raw, err := formatmark.Read(db, formatKey)
	switch {
	case errors.Is(err, formatmark.ErrNotANumber):
		return fmt.Errorf("%w: format marker of the queue in %s is %q, not a version number", ErrCorrupt, dir, raw)
	case err != nil:
		return fmt.Errorf("smear: read the format marker in %s: %w", dir, err)
	case ver == 0:
		if err := formatmark.Write(db, formatKey, queueFormat); err != nil {
			return fmt.Errorf("smear: write the format marker in %s: %w", dir, err)
		}
		return nil
	case ver != queueFormat:
		return fmt.Errorf("%w: the smear queue in %s has format version %d; this build supports version %d only: open it with a tsdb build that supports version %d",
			ErrUnknownFormat, dir, ver, queueFormat, ver)
	}
	return nil
}
