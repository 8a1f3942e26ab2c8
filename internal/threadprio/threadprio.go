// Package threadprio runs a goroutine's CPU-bound background work at a
// lower operating-system priority than the rest of the process, so that a
// busy background loop (the sealer) gives way to the threads serving
// requests and to the other processes on the machine (a client reading
// an answer), which Go's scheduler alone cannot arrange: it has no
// goroutine priorities, and a goroutine woken by the network waits while
// every processor runs CPU-bound work.
package threadprio

import "errors"

// ErrUnsupported is Lower's error where threads have no priority of their
// own that an unprivileged process can lower (every system but Linux).
var ErrUnsupported = errors.New("threadprio: per-thread priority not supported on this system")

// Lower locks the calling goroutine to its OS thread and raises that
// thread's nice value to nice (1 to 19: the larger, the less CPU the
// thread gets while other threads want it; the thread still gets all of
// an idle processor). The goroutine must never call
// runtime.UnlockOSThread: the thread then ends with the goroutine, and its
// priority with it (the process's main thread is parked for good
// instead), so no other goroutine ever runs at it. An unprivileged
// process cannot lower a nice value again, which is why the priority is
// not given back.
//
// A nice value out of range is refused before anything is done; when
// the system refuses the priority, the goroutine stays locked to its
// thread at the priority it had.
func Lower(nice int) error {
	if nice < 1 || nice > 19 {
		return errors.New("threadprio: nice must be 1 to 19")
	}
	return lower(nice)
}
