// Package replica runs the local partition replicas of one tsdb server
// (DESIGN.md sections 4 to 6): everything a server does as the holder of
// replicas, as opposed to what it does as a front end (routing a client's
// request, package router and the public API) or as the master (package
// node until cluster/master takes it).
//
// # Responsibility
//
// A Server, built by New from the parts the node opened (partition store,
// METADATA committer and file store, etcd client, membership directory and
// registration, internal-API clients, hybrid logical clock), owns:
//
//   - coordination and acknowledgement of inserts (coordinate.go): one
//     version per insert, a synced write, then a wait until W copies hold
//     it (acks.go's pure deciders ackCount and planAcks), and in a
//     splitting partition until the children's majorities do;
//   - serving reads (serving, readable) and the catch-up that makes a
//     quorum read see every quorum-acknowledged row (catchup.go);
//   - the internal API's handlers (replication_endpoints.go for pushes,
//     forwarded inserts, sub-queries, replica listings and catch-ups;
//     meta.go for the metadata sub-queries, series keys and field keys;
//     metadata_endpoints.go for the METADATA exchange). Server has the
//     methods of the http server's Internal interface, and of
//     router.Replicas: the router it builds (Router) reaches replicas,
//     local or remote, through it;
//   - table sync (tables.go): the table watch's events, the periodic
//     reconciliation, the resync of a table a push found stale, the
//     re-confirmation after a lost etcd session, and Install, which makes
//     a METADATA file current here, creates the replicas it assigns and
//     runs discovery for the local ones;
//   - the replica lifecycle (lifecycle.go): one pusher per local replica,
//     its view set from discovery (SERVE, LOAD, UNLOAD, DROP), the drop of
//     an UNLOAD replica and of a DROP one (retention), JOIN_FINALIZE of a
//     joined one;
//   - dropped tables (droptable.go): the local replicas of a table whose
//     TableConfig is gone, or of a dropped table of a re-created name, are
//     dropped with tombstones;
//   - METADATA change requests (change.go, RequestChange), split start
//     (split_start.go: the size trigger, SplitPartition, the split point,
//     SPLIT_BEGIN with PickChildServers) and SPLIT_FINALIZE (split.go);
//   - lost placements on the replica side (lost.go): a wiped disk's
//     placements are settled lost, never served nor created, and reported
//     to the master by a mark in etcd (the master's repair is not here);
//   - the clock check (clockcheck.go, rule 2): ClockCheck estimates this
//     server's offset from its peers' as seen on internal calls, and a
//     server a majority of peers sees off refuses to coordinate writes;
//   - the transport of package metadata to the other metadata servers
//     (Peers) and the replication metrics (Metrics: pushes, rows and
//     bytes moved by replication.MoveKind, row snapshots ended and their
//     durations through replication.Config.OnSnapshotEnd; Replicas adds
//     each replica's log start and length, snapshots and moved data);
//   - the load a server publishes in its membership key (Load, load.go:
//     replicas, bytes on disk, coordinated rows per second).
//
// # Invariants (DESIGN.md section 12)
//
// Rule 1: a confirmation is given only for rows in a synced batch. An
// insert is acknowledged only after the replica's synced Apply and the
// confirmations of the copies it waits for; a push is confirmed (Replicate
// returns) only after replication.Receive applied it synced, and held
// further while a split this replica knows of needs the children to have
// the rows (confirmSplitPush). Pushers send only rows at or below the
// synced watermark (package replication).
//
// Rule 3: a replica is dropped only when it is UNLOAD, has at least one
// target, and every target confirmed everything: tryDrop checks this with
// the pusher's DropReady inside partition.Store.DropReplicaIf, under the
// replica's apply lock, so the check and the DeleteRange are atomic with
// respect to incoming writes; an UNLOAD replica refuses writes (it answers
// "moved" to inserts and "stale placement" to pushes). Its retention form
// (issue 18): a DROP replica, whose whole range retention deleted, is
// dropped without a target (dropExpired); its rows expired.
//
// Rule 4: local data is keyed by placement id. Replicas are created only by
// Install, for the placements the METADATA assigns to this server (as LOAD
// or SERVE; the router's EnsureLocalReplicas), never for a placement the
// store dropped or marked lost; a push to a placement this server does not
// hold as LOAD or SERVE is answered "stale placement" and never creates one.
//
// Rule 8 also lives here: a request naming a newer txnseq than this
// server's view makes it sync the table before it answers (serving,
// Replicate, ForwardInsert).
//
// # Errors
//
// The package answers with the error vocabulary (package errcode): the
// internal API's refusals of package cluster/wire (ErrMoved,
// ErrStalePlacement, ErrInsertOutcomeUnknown, ErrUnavailable,
// ErrBadRequest, which the HTTP server maps to their statuses and codes),
// and the sentinels of partition, metadata, replication and router. A
// peer's answer is read by its errcode kind, never by its code string:
// routeError sorts a remote replica's for the router (localRouteError a
// local one's), metadata.FromPeer passes a metadata server's refusal on as
// metadata's sentinel, and errcode.Translate a push's or a split point's.
// It does not import the HTTP server package.
//
// # Goroutines
//
// The node runs the loops, each until its context ends: Reconcile and
// LifecycleTick (as periodic passes), RunSplits, RunResync and RunSession,
// and OnTableEvent from the table watch. The Server starts, and owns:
//
//   - one pusher per local replica (replication.Pusher.Run), started when
//     discovery first runs for the replica; it stops when the replica is
//     dropped (tryDrop cancels it and waits for it) or when Close cancels
//     them all, and Close waits for every one;
//   - in a quorum read's catch-up, one call per peer asked, each bounded
//     by the catch-up's timeout, which is cancelled when catchUp returns;
//     their results go to a buffered channel, so none blocks.
package replica
