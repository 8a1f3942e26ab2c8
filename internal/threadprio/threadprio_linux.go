package threadprio

import (
	"fmt"
	"runtime"
	"syscall"
)

func lower(nice int) error {
	runtime.LockOSThread()
	// On Linux, setpriority with PRIO_PROCESS and a thread id sets that
	// one thread's nice value (setpriority(2), "BUGS"; sched(7)).
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice); err != nil {
		return fmt.Errorf("threadprio: setpriority(%d): %w", nice, err)
	}
	return nil
}
