package replica

import (
	"context"
	"fmt"
	"sync"
)

// Concurrent syncs of one table share one load and install. Under a split
// storm every push from a server that saw the newest METADATA first finds
// this server's view older and syncs the table before it applies (rule 8);
// one install per push, serialized by installMu and each acting on every
// local replica's discovery answer again, made a hundred pushes wait for
// each other for longer than their RPC timeout (docs/performance.md,
// "Pushes that waited for each other's installs").
//
// A caller that finds a sync in flight cannot take its result: that load
// may have read etcd before the change the caller needs. It waits for the
// next sync instead, which starts once the one in flight ends and which
// every caller arriving meanwhile shares.

// syncFlight is one load and install of a table's METADATA.
type syncFlight struct {
	done chan struct{} // closed once err is set
	err  error
}

// tableSyncs is a table's sync in flight and the one queued after it.
type tableSyncs struct {
	running, next *syncFlight
}

// syncCoalescer runs run(key) for the callers of do, one run per key at
// a time, each run shared by every caller that arrived before it started
// (see above).
type syncCoalescer struct {
	run   func(key string) error
	spawn func(func()) // starts a goroutine the owner waits for
	mu    sync.Mutex
	m     map[string]*tableSyncs // guarded by mu
}

func newSyncCoalescer(run func(string) error, spawn func(func())) *syncCoalescer {
	return &syncCoalescer{run: run, spawn: spawn, m: make(map[string]*tableSyncs)}
}

// do returns the result of a run of key that starts after the call: the
// next one, shared with the other callers until it starts. ctx ending
// returns at once; the run goes on.
func (c *syncCoalescer) do(ctx context.Context, key string) error {
	c.mu.Lock()
	ts := c.m[key]
	if ts == nil {
		ts = &tableSyncs{}
		c.m[key] = ts
	}
	var f *syncFlight
	switch {
	case ts.running == nil:
		f = &syncFlight{done: make(chan struct{})}
		ts.running = f
		c.spawn(func() { c.runFrom(key, ts, f) })
	case ts.next == nil:
		f = &syncFlight{done: make(chan struct{})}
		ts.next = f
	default:
		f = ts.next
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runFrom runs flight f of key, then the flight queued meanwhile, if
// any, until none is queued.
func (c *syncCoalescer) runFrom(key string, ts *tableSyncs, f *syncFlight) {
	for f != nil {
		f.err = c.run(key)
		close(f.done)
		c.mu.Lock()
		f, ts.running, ts.next = ts.next, ts.next, nil
		if f == nil {
			delete(c.m, key)
		}
		c.mu.Unlock()
	}
}

// syncTable loads the table's current METADATA (fetching it from a metadata
// server if this server lacks it; a metadata server also stores it),
// refreshes the router, creates the local replicas the file assigns here
// (rule 4) and runs partition discovery for every local replica of the
// table. The load starts after the call; concurrent calls share it (see
// above). It is bounded by SyncTimeout, and ctx ending returns at once
// while the shared sync goes on.
func (s *Server) syncTable(ctx context.Context, table string) error {
	if err := s.syncs.do(ctx, table); err != nil {
		return fmt.Errorf("sync METADATA of %q: %w", table, err)
	}
	return nil
}

// loadAndInstall is one sync of table: the load of its current METADATA
// within SyncTimeout, and its install.
func (s *Server) loadAndInstall(table string) error {
	ctx, cancel := context.WithTimeout(s.bg, s.cfg.SyncTimeout)
	defer cancel()
	cfg, file, err := s.committer.Load(ctx, table)
	if err != nil {
		return fmt.Errorf("load METADATA of %q: %w", table, err)
	}
	return s.Install(cfg, file)
}
