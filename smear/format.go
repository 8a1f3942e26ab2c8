package smear

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
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
	v, closer, err := db.Get(formatKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if err := db.Set(formatKey, []byte(strconv.Itoa(queueFormat)), pebble.Sync); err != nil {
			return fmt.Errorf("smear: write the format marker in %s: %w", dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("smear: read the format marker in %s: %w", dir, err)
	}
	defer closer.Close()
	ver, perr := strconv.Atoi(string(v))
	if perr != nil || ver <= 0 || strconv.Itoa(ver) != string(v) {
		return fmt.Errorf("%w: format marker of the queue in %s is %q, not a version number", ErrCorrupt, dir, v)
	}
	if ver != queueFormat {
		return fmt.Errorf("%w: the smear queue in %s has format version %d; this build supports version %d only: open it with a tsdb build that supports version %d",
			ErrUnknownFormat, dir, ver, queueFormat, ver)
	}
	return nil
}
