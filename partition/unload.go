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
func (r *Replica) Unload() {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.unloading.Store(true)
	r.applyMu.changed()
}

// Resume undoes Unload (discovery answered SERVE or LOAD again). Idempotent.
func (r *Replica) Resume() {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.unloading.Store(false)
	r.applyMu.changed()
}

// Unloading reports whether Unload is in effect.
func (r *Replica) Unloading() bool { return r.unloading.Load() }
