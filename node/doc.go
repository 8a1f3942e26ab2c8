// Package node assembles one tsdb server from its parts (DESIGN.md section
// 11): the partition store (one pebble DB), the metadata file store, the etcd
// coordination store, the replica machinery (replica, which builds the
// router), the master (cluster/master), the front end (frontend) and the
// HTTP server. `tsdb server`, `tsdb dev` and the integration tests all
// start servers through Start, so tests run the same wiring as production.
//
// Node does not import the HTTP server package: the caller passes
// Config.HTTP (cmd/tsdb's newHTTPServer; the tests' testHTTP), which builds
// the server from the Handlers node hands it (the front end, the internal
// API, the peer clock, the metrics registry and the limits).
//
// Node only assembles: it holds no policy of its own beyond Config's
// defaults and validation. Each part it wires is its owner's: the write
// limit (internal/writelimit), the etcd client (internal/etcdclient), the
// pebble metrics (partition.RegisterMetrics), the registration of a
// restarted server and its advertised address (cluster/membership), the
// load it publishes (replica.Load), the operators' marks and the leader
// (operator.Marks), the master's counters (master.NewMetrics), the
// METADATA sweep (metadata.FileStore.SweepListed) and the smear drain at
// stop (smear.Forwarder.DrainForStop). Tests reach the parts' hooks through
// Config's unexported knobs (replica.TestingKnobs and node's own).
//
// Start runs in steps: openStorage (data directory, partition store,
// metadata file store), tlsConfigs (listener, internal calls), connectEtcd,
// buildClients (directory, clock check, internal-API clients, committer,
// clock, metrics, load), the listener, join (membership registration, the
// replica.Server and its router, the membership watch, loading the tables
// held here), buildServing (metrics registry, master, smear queue and
// forwarder, front end, HTTP server) and startLoops. A failed step undoes
// the earlier ones in reverse order.
//
// # Goroutines
//
// Every goroutine node starts is started with goAttach, stops when its
// context (the node's background context, cancelled by Stop) ends, and is
// waited for by Stop before it closes anything:
//
//   - the membership watch (membership.Watch): keeps the live-server
//     directory current and wakes the pushers of a server that came back;
//   - the HTTP server's Serve: stopped by Stop's Shutdown, Stop's first
//     step, so no request is served past it;
//   - the table watch (metadata.WatchTables): hands each table's new
//     METADATA to replica.Server.OnTableEvent;
//   - the metadata sweep (every SweepInterval), the reconciliation of every
//     table against etcd (replica.Server.Reconcile, every
//     ReconcileInterval) and the replica lifecycle
//     (replica.Server.LifecycleTick, every LifecycleTick);
//   - the split loop (replica.Server.RunSplits: size checks every
//     SplitCheckInterval, sooner after a large insert);
//   - the smear forwarder: Stop drains the queue (bounded by
//     SmearDrainTimeout) after the HTTP shutdown and before the cancel;
//   - the election (election.Run), whose terms run the master's Lead;
//   - the resync loop (replica.Server.RunResync: tables a push found
//     stale) and the session loop (replica.Server.RunSession: re-confirming
//     assignments after a lost etcd session);
//   - the sealer (every SealInterval, unless SealAfter < 0): folds the
//     storage buckets that ended and went quiet into column blocks
//     (partition.Store.Seal; its compaction honours the cancel).
//
// The replica.Server's own goroutines (one pusher per local replica, and
// catch-up calls that end with their own timeout) stop in its Close, which
// Stop calls after the loops above returned. The membership registration's
// goroutine keeps its lease alive (and rewrites the summary, Node.summary)
// until Stop closes it. The etcd client's own goroutines stop when Stop
// closes it, last.
//
// Stop: HTTP shutdown, smear drain, cancel, wait for the goroutines, close
// the replica machinery, then the smear queue, the registration, the RPC
// clients, the partition store and the etcd client.
package node
