// Package diskusage measures the files of a directory as du does: their
// apparent size and the bytes allocated to them (preallocated blocks
// included), which is how a store's WAL files left after a shutdown show.
package diskusage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Usage is what Of found.
type Usage struct {
	// Files is the number of files counted.
	Files int
	// Apparent is the sum of their sizes.
	Apparent int64
	// Allocated is the sum of the blocks allocated to them, in bytes (the
	// apparent size where the file system does not report blocks).
	Allocated int64
}

// Of measures the regular files below dir (recursively) whose name ends
// with suffix ("" for all). A file removed while it walks (a store still
// deleting obsolete files) is skipped.
func Of(dir, suffix string) (Usage, error) {
	var u Usage
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), suffix) {
			return nil
		}
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		u.Files++
		u.Apparent += fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			u.Allocated += st.Blocks * 512
		} else {
			u.Allocated += fi.Size()
		}
		return nil
	})
	return u, err
}
