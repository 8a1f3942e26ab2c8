// Package membership keeps the list of live tsdb servers in etcd (DESIGN.md
// sections 3 and 9): each server registers itself under a lease, and anyone
// can list or watch who is registered.
//
// # Model
//
// A server is a member while the key <prefix>servers/<server_id> exists. Its
// value is compact JSON,
//
//	{"id":"s1","addr":"10.0.0.1:7000","started_at":"2026-01-02T03:04:05Z",
//	 "summary":{"partitions":12,"bytes":123456,"insert_rows_per_sec":1500}}
//
// a few hundred bytes of aggregates (per-partition statistics travel over
// the internal API, never through etcd). The key is attached to an etcd
// lease (TTL 10 s by default), so it disappears by itself when its server
// stops renewing the lease: crash, partition from etcd, or a process frozen
// for longer than the TTL. The summary is rewritten at most every
// RefreshEvery (10 s by default) and only when it changed, which keeps etcd's
// history small. A server whose key is gone is suspect; the master declares
// it dead after a grace period (section 9; not this package's concern).
//
// Register claims the key only if it is absent (a Txn on CreateRevision ==
// 0). A live registration with the same id is ErrDuplicateID, naming the
// other's address: two processes with one id would corrupt placements. A
// restarted server whose previous incarnation's lease has not expired yet
// gets the same error until it does (the message says when); the caller may
// retry, as RegisterAfterRestart does: every second, for up to two TTLs.
// AdvertiseAddr picks the address a server registers (Info.Addr) from its
// configuration and its listener.
//
// # Lease semantics
//
// One goroutine per Registration owns its lease. Every TTL/3 it sends one
// keep-alive; the time the keep-alive was sent plus the TTL etcd returned is
// a lower bound of the lease's expiry (the server renewed it after we sent),
// and that bound, less a tenth of the TTL, is how long Valid stays true. The
// goroutine also watches its own key, so a revoke or expiry (both delete the
// key) or an overwrite by someone else ends the lease at once.
//
// When the lease is lost (etcd says "lease not found", the key vanished or
// changed hands, or no keep-alive was acknowledged before the bound ran
// out), Valid turns false, then the epoch's Done channel closes, and the
// goroutine registers again with a NEW lease, with backoff and jitter, until
// it succeeds or Close is called. A success starts a new epoch: Epoch grows
// by one, Done returns a new channel, Valid is true again. If the old lease
// was merely unconfirmed and still holds the key, the new registration takes
// the key over atomically (a Txn on the key's lease) and revokes the old
// lease. A registration never reports Valid on a lease it cannot confirm.
//
// Close stops the goroutine and revokes the lease: the key disappears at
// once, and watchers see the server leave without waiting for the TTL.
//
// # What Valid means for callers
//
// Leases bound authority (section 9). A server must not start a split, a
// metadata change, or a master duty unless Valid(); it stops such work when
// Done closes, and starts again only after re-registration (Epoch grew).
// Valid answers for the moment it is called; a write to etcd that must not
// land after the lease is lost should also carry the compare from Guard,
// which etcd checks atomically with the write. Serving inserts and queries
// does not depend on Valid: acknowledgements do not need etcd.
//
// # Watching
//
// List reads the members and the revision they were read at. Watch follows
// them: it lists, delivers the full sorted list to its callback, watches
// from that revision + 1 and delivers the full list again after every batch
// of changes. When its stream breaks it resumes after the last revision it
// applied; if etcd compacted that history away (ErrCompacted), after any
// other watch error, and once a minute, it lists again and resumes from the
// new revision (DESIGN.md rule 10), so a missed notification delays the view
// but never strands it. The loop itself is the module's one Get→Watch→resync
// loop (internal/etcdwatch, shared with metadata's TableWatcher); this
// package keeps the member set and the delivery rule. The callback runs on
// the Watcher's goroutine, one call at a time. Retries (re-registration,
// watch) wait per internal/backoff: 100 ms doubling to 5 s, equal jitter.
//
// # Goroutines and timeouts
//
// Every etcd request is bounded by a timeout: Config.CallTimeout (5 s by
// default) for grants, reads and revokes, TTL/3 for summary rewrites, and
// for a keep-alive the time left until the lease's confirmed expiry. Opening a
// watch is the exception: clientv3 waits for etcd to be reachable, so the
// own-key watch runs on a goroutine of its own and never holds up the
// keep-alive, and a Watcher simply waits there (it has nothing else to do)
// until etcd is back or its context ends. A Registration owns its loop and
// that watch goroutine, both stopped by Close; a Watcher owns one
// goroutine, stopped by its context or Stop, and Wait returns once it has
// exited. The etcd client belongs to the caller, who closes it after both.
package membership
