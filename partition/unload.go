package partition

// Unload makes every later Apply fail with ErrUnloading (DESIGN.md section
// 12, rule 3: an UNLOAD replica refuses client writes and pushes from the
// moment it learns its status). It takes the apply lock, so an Apply that
// already holds it makes its batch visible (and gets its sequence) first,
// and none assigns a sequence after Unload returns: HighSeq is then fixed
// until Resume. Such an Apply still waits for its sync and succeeds (unless
// the replica is dropped before it returns: see DropReplica). The
// state is not persisted (discovery re-derives it at start). Idempotent.
//
// ReadLog, Scan, Aggregate, Checksum and the cursor methods keep working on
// an unloading replica, so it can still push what its targets lack.
//
// Unloading a replica that is unloading already returns at once, without
// the apply lock: every METADATA install acts on the UNLOAD answers again,
// and must not wait for the queue of Applies of the replica's data space
// each time (its pushes wait for the install). Unload and Resume must not
// race each other (the server's discovery calls them one at a time).
func (r *Replica) Unload() {
	if r.unloading.Load() {
		return // set under the lock by an Unload that returned
	}
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.unloading.Store(true)
	r.applyMu.changed()
}

// Resume undoes Unload (discovery answered SERVE or LOAD again). Idempotent.
func (r *Replica) Resume() {
	if !r.unloading.Load() {
		return
	}
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.unloading.Store(false)
	r.applyMu.changed()
}

// Unloading reports whether Unload is in effect.
func (r *Replica) Unloading() bool { return r.unloading.Load() }

// Dropped reports whether the replica was dropped (Store.DropReplica,
// DropReplicaIf): it is set before the drop returns, and never cleared.
func (r *Replica) Dropped() bool { return r.dropped.Load() }
