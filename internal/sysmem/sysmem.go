// Package sysmem tells how much memory the process may use: the machine's
// physical memory, or less when a control group (a container) limits it.
// The server sizes its default block cache from it.
package sysmem

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// cgroupFiles are the memory limits of control groups v2 and v1, relative
// to the cgroup file system's root (/sys/fs/cgroup).
var cgroupFiles = []string{"memory.max", "memory/memory.limit_in_bytes"}

// Limit returns the bytes of memory available to the process: the
// smallest of the physical memory and the control group limits that are
// set, or 0 when none is known.
func Limit() uint64 {
	return limit(physical(), os.DirFS("/sys/fs/cgroup"))
}

// limit is Limit with the physical memory and the cgroup file system given.
func limit(phys uint64, cgroups fs.FS) uint64 {
	best := phys
	for _, name := range cgroupFiles {
		n, ok := readLimit(cgroups, name)
		if ok && (best == 0 || n < best) {
			best = n
		}
	}
	return best
}

// readLimit reads a cgroup memory limit file: a byte count, or "max" (v2)
// or a huge value (v1) for none.
func readLimit(cgroups fs.FS, name string) (uint64, bool) {
	b, err := fs.ReadFile(cgroups, filepath.ToSlash(name))
	if err != nil {
		return 0, false
	}
	s := string(bytes.TrimSpace(b))
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || n >= 1<<62 { // v1's "no limit" is about 2^63
		return 0, false
	}
	return n, true
}
