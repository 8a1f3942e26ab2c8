//go:build !linux

package sysmem

// physical returns 0 (unknown) outside Linux.
func physical() uint64 { return 0 }
