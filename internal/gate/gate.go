// Package gate counts the operations in flight on a resource (a pebble DB)
// so that its Close can wait for them, and refuses new ones once closing.
package gate

import "sync"

// Gate is open until Close. The zero value is an open gate.
type Gate struct {
	mu struct {
		sync.Mutex
		closed bool
	}
	// wg counts operations inside the gate; Add happens under mu while
	// closed is false, so it never races with Wait.
	wg sync.WaitGroup
}

// Enter lets an operation in, or returns closed once Close was called.
// Every successful Enter must be followed by Exit.
func (g *Gate) Enter(closed error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.closed {
		return closed
	}
	g.wg.Add(1)
	return nil
}

// Exit ends an operation Enter let in.
func (g *Gate) Exit() { g.wg.Done() }

// Close refuses new operations and waits for those inside to exit.
func (g *Gate) Close() {
	g.mu.Lock()
	g.mu.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}
