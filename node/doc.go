// Package node assembles one tsdb server from its parts (DESIGN.md section
// 11): the partition store (one pebble DB), the metadata file store, the etcd
// coordination store, the router, the replica machinery, the master
// (cluster/master), the front end (frontend) and the HTTP server. `tsdb
// server`, `tsdb dev` and the integration tests all start servers through
// Start, so tests run the same wiring as production.
//
// Node does not import the HTTP server package: the caller passes
// Config.HTTP (internal/nodehttp.New), which builds the server from the
// Handlers node hands it (the front end, the internal API, the peer clock,
// the metrics registry and the limits).
//
// Start runs in steps: openStorage (data directory, partition store,
// metadata file store), tlsConfigs, connectEtcd, buildClients (directory,
// clock check, internal-API clients, committer), buildReplicas (clock,
// replication state, router), the listener, join (membership registration
// and watch, loading the tables held here), buildServing (metrics, master,
// smear queue and forwarder, front end, HTTP server) and startLoops. A
// failed step undoes the earlier ones in reverse order.
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
//   - the table watch (metadata.WatchTables): installs each table's new
//     METADATA;
//   - the metadata sweep (every SweepInterval), the reconciliation of every
//     table against etcd (every ReconcileInterval) and the replica lifecycle
//     (every LifecycleTick);
//   - the split loop (size checks every SplitCheckInterval, sooner after a
//     large insert);
//   - the smear forwarder: Stop drains the queue (bounded by
//     SmearDrainTimeout) after the HTTP shutdown and before the cancel;
//   - the election (election.Run), whose terms run the master's Lead;
//   - the resync loop (tables a push found stale) and the session loop
//     (re-confirming assignments after a lost etcd session);
//   - one pusher per local replica (started by the replica lifecycle and
//     stopped with its replica or by the cancel).
//
// Catch-up asks its peers from short-lived goroutines that end with the
// call's own timeout. The membership registration keeps its lease alive
// until Stop closes it.
//
// Stop: HTTP shutdown, smear drain, cancel, wait for the goroutines, then
// close the smear queue, the registration, the RPC clients, the partition
// store and the etcd client, in that order.
package node
