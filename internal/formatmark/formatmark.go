// Package formatmark reads and writes the format marker of a pebble DB
// (issue 17, item 6): one key whose value is the DB's layout version in
// ASCII decimal, without leading zeros ("1"). The partition store and the
// smear queue each keep one, under their own key, and decide themselves
// which versions they open.
package formatmark

import (
	"errors"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
)

// ErrNotANumber is Read's error for a marker that is not a positive
// decimal number without leading zeros.
var ErrNotANumber = errors.New("not a version number")

// Read returns the version marked under key in db, 0 when there is no
// marker. A marker that is not a version is ErrNotANumber, with the
// marker's bytes in raw for the caller's message.
func Read(db *pebble.DB, key []byte) (version int, raw []byte, err error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	defer closer.Close()
	raw = append([]byte(nil), v...)
	ver, perr := strconv.Atoi(string(raw))
	if perr != nil || ver <= 0 || strconv.Itoa(ver) != string(raw) {
		return 0, raw, ErrNotANumber
	}
	return ver, raw, nil
}

// Write marks version under key in db, synced.
func Write(db *pebble.DB, key []byte, version int) error {
	return db.Set(key, []byte(strconv.Itoa(version)), pebble.Sync)
}
