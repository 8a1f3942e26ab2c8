package partition

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/internal/formatmark"
)

// The store's format marker (issue 17, item 6): the single-byte key 0x00,
// whose value is the layout version of the whole store in ASCII decimal
// ("2"). It sorts before every other key, and no namespace scan reaches
// it. A build reads only the versions it knows (supportedFormats): Open
// refuses a store marked with any other version with ErrUnknownFormat,
// naming the path, the version found and the versions supported, before
// it reads or writes anything else. Open writes the marker (synced) when
// it is absent, in a store created empty or written before the marker
// existed, and when it names an older version it upgrades.
//
// The versions:
//   - 1: rows are whole values, written with Set after a read (its older
//     parts, the tag index and the log entries, have markers of their
//     own, 0x07 and 0x08, and are upgraded by Open as before);
//   - 2: Apply writes a change without reading the row as a pebble merge
//     operand, which the store's merger folds (merge.go); a value may
//     also be several row values back to back, as pebble's default merger
//     concatenates them (decodeRaw folds those, value.go). A build before
//     version 2 would find trailing bytes. Version 1 becomes 2 without
//     rewriting anything;
//   - 3: rows of closed storage buckets may be sealed into column blocks
//     (the 'b' keys of a data space, seal.go), which a build before
//     version 3 would not read: their rows would vanish from its reads.
//     Versions 1 and 2 become 3 without rewriting anything;
//   - 4: a block of fewer than block.SummaryMinRows rows may keep no
//     summaries (header flag bit 1), which a build before version 4
//     refuses as a corrupt block. Versions 1 to 3 become 4 without
//     rewriting anything (their blocks all keep summaries);
//   - 5: rows may live in log records only (Options.MemoryHead,
//     memhead.go): a build before version 5 would not read them, and
//     would truncate their records. Open writes 5 before any Apply when
//     the option is on; a store of version 5 opened without it has its
//     rows replayed and written to pebble's head, and is marked 4 again.
//   - 6 and 7 (7 with a memory head, as 5 is 4's): a float field's
//     block summary may be in the decimal form (block field flag bit 4,
//     about 22 bytes instead of 72), which a build before them refuses as
//     a corrupt block. Versions 1 to 5 become 6 or 7 without rewriting
//     anything (their blocks keep the 72 bytes, still read); a store of
//     6 or 7 cannot go back to 4 or 5.
//   - 8 and 9 (9 with a memory head): a float field of a block may be
//     predicted from other fields of the block (block field flag bit 5,
//     its residual and terms instead of its own column), which a build
//     before them refuses as a corrupt block. Versions 1 to 7 become 8 or
//     9 without rewriting anything (their blocks predict nothing); a
//     store of 8 or 9 cannot go back to 6 or 7.
//
// A change of the stored layout that an older build would misread bumps
// storeFormat (and teaches Open to read or upgrade the older versions it
// still supports).
const nsFormat byte = 0x00

var formatKey = []byte{nsFormat}

// storeFormat is the version this build writes in a new store, and
// memHeadFormat the one it writes in a store with a memory head.
const (
	storeFormat   = 8
	memHeadFormat = 9
)

// supportedFormats are the versions this build opens.
var supportedFormats = []int{1, 2, 3, 4, 5, 6, 7, storeFormat, memHeadFormat}

// withMemHead reports whether a store of format version v may hold rows in
// log records only (a memory head's).
func withMemHead(v int) bool { return v == 5 || v == 7 || v == memHeadFormat }

// ErrUnknownFormat is returned by Open for a store whose format marker
// names a version this build does not support (written by a newer build).
// Nothing in the store was changed.
var ErrUnknownFormat = errors.New("partition: unknown store format")

// readFormat returns the store's format version, 0 when the marker is
// absent. A marker of an unsupported version is ErrUnknownFormat, one that
// is not a positive decimal number ErrCorrupt.
func readFormat(db *pebble.DB, dir string) (int, error) {
	ver, raw, err := formatmark.Read(db, formatKey)
	switch {
	case errors.Is(err, formatmark.ErrNotANumber):
		return 0, fmt.Errorf("%w: format marker of %s is %q, not a version number", ErrCorrupt, dir, raw)
	case err != nil:
		return 0, fmt.Errorf("partition: read the format marker of %s: %w", dir, err)
	case ver == 0:
		return 0, nil
	}
	for _, s := range supportedFormats {
		if ver == s {
			return ver, nil
		}
	}
	return 0, fmt.Errorf("%w: the store in %s has format version %d; this build supports version %s only: open it with a tsdb build that supports version %d",
		ErrUnknownFormat, dir, ver, formatList(supportedFormats), ver)
}

func formatList(vs []int) string {
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += strconv.Itoa(v)
	}
	return s
}

// holdsKeys reports whether db holds any key besides the marker: read
// before Open writes anything, it tells a store written before the marker
// existed from a new one.
func holdsKeys(db *pebble.DB) (bool, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsFormat + 1}})
	if err != nil {
		return false, fmt.Errorf("partition: read the store for its format: %w", err)
	}
	held := it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return false, fmt.Errorf("partition: read the store for its format: %w", err)
	}
	return held, nil
}

// writeFormat writes the marker of version to, synced, in a store marked
// with another version (from, 0 when it had none); legacy (holdsKeys
// before Open wrote anything) tells a store written before the marker
// existed from a new one, for the log. Versions 1 to 7 need no change of
// their keys to be version 8 or 9: they only hold no merge operands, no
// blocks, only blocks with summaries, only summaries of 72 bytes or no
// predicted field yet. A store of version 5, 7 or 9 becomes 8 once its
// memory heads are drained (Store.drainMemHeads).
func (s *Store) writeFormat(from, to int, legacy bool) error {
	if err := formatmark.Write(s.db, formatKey, to); err != nil {
		return fmt.Errorf("partition: write the format marker: %w", err)
	}
	switch {
	case from > 0:
		s.log.Info("partition store format changed", "dir", s.dir, "from_format", from, "format", to)
	case legacy:
		s.log.Info("partition store written before the format marker: marked", "dir", s.dir, "format", to)
	}
	return nil
}
