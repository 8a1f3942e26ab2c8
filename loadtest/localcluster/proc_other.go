//go:build !unix

package localcluster

import (
	"os"
	"syscall"
)

// sysProcAttr has nothing to set off Unix.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// terminate kills the process: there is no SIGTERM off Unix.
func terminate(p *os.Process) error { return p.Kill() }
