//go:build unix

package localcluster

import (
	"os"
	"syscall"
)

// sysProcAttr puts a child in its own process group, away from the
// terminal's Ctrl-C.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// terminate asks a process to stop gracefully.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
