// Package sysmem tells how much memory the process may use: the machine's
// physical memory, or less when its control group (a container, a systemd
// unit) or one of that group's ancestors limits it. The server sizes its
// default block cache from it.
package sysmem

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// Limit returns the bytes of memory available to the process: the
// smallest of the physical memory and the memory limits set on its
// control group and that group's ancestors (cgroup v2 memory.max, v1
// memory.limit_in_bytes), or 0 when none is known.
func Limit() uint64 {
	self, _ := os.ReadFile("/proc/self/cgroup")
	return limit(physical(), self, os.DirFS("/sys/fs/cgroup"))
}

// limit is Limit with the physical memory, the contents of
// /proc/self/cgroup and the cgroup file system (/sys/fs/cgroup) given.
func limit(phys uint64, self []byte, cgroups fs.FS) uint64 {
	best := phys
	take := func(n uint64, ok bool) {
		if ok && (best == 0 || n < best) {
			best = n
		}
	}
	for _, f := range limitFiles(self) {
		take(readLimit(cgroups, f))
	}
	return best
}

// limitFiles lists the memory limit files of the process's control groups
// and their ancestors, relative to /sys/fs/cgroup: a v2 group's
// memory.max, a v1 memory group's memory.limit_in_bytes. The group's path
// is as /proc/self/cgroup gives it, "/" inside a cgroup namespace (whose
// root is then the container's group).
func limitFiles(self []byte) []string {
	var files []string
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir, file = ".", "memory.max"
		case hasController(parts[1], "memory"):
			dir, file = "memory", "memory.limit_in_bytes"
		default:
			continue
		}
		for p := path.Clean("/" + parts[2]); ; p = path.Dir(p) {
			files = append(files, path.Join(dir, p[1:], file))
			if p == "/" {
				break
			}
		}
	}
	if len(files) == 0 {
		// /proc unreadable: the root groups' files, which a container
		// with its own cgroup namespace sees as its own.
		files = []string{"memory.max", "memory/memory.limit_in_bytes"}
	}
	return files
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup memory limit file: a byte count, or "max" (v2)
// or a value near 2^63 (v1) for none.
func readLimit(cgroups fs.FS, name string) (uint64, bool) {
	b, err := fs.ReadFile(cgroups, name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || n == 0 || n >= 1<<62 { // "max", garbage, v1's "no limit"
		return 0, false
	}
	return n, true
}
