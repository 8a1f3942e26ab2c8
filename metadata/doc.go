// Package metadata owns a table's coordination state (DESIGN.md sections 3
// and 4): the TableConfig kept in etcd, the METADATA file that holds the
// table's partition map, the pure operations that derive one file from the
// next, the durable store of those files on each metadata server, and the
// commit step that makes a new file current.
//
// # Model
//
// A table's partition map is the METADATA File of its current transaction.
// Files form a chain through parent_txnid; each has a random 160-bit txnid
// and a txnseq one above its parent's. TableConfig, a small JSON value at
// <prefix>tables/<name> in etcd, names the current transaction
// (metadata_txnid, metadata_txnseq, metadata_checksum) and the servers that
// store the files (metadata_servers). The partition map itself never goes
// into etcd.
//
// A file is encoded as compact JSON compressed by zstd (Encode); its
// checksum is the SHA-256 of those bytes. Files are immutable: an op never
// edits a file, it builds the next one.
//
// # Ops are pure
//
// Apply(base, newTxnID, op) is a pure, deterministic function: every choice
// (partition ids, placement ids, servers, split points) is carried in the op,
// so the same inputs give byte-identical output on any server. That is what
// makes a store of the same txnid idempotent (only if the bytes match) and a
// retried commit safe. Each op checks its preconditions and fails with
// ErrInvalidOp; its result is validated (File.Validate) before it can be
// stored.
//
// # Commit
//
// Committer runs a change on the coordinating metadata server:
//
//  1. read TableConfig; the requested base must be current (else ErrConflict);
//  2. load the base file (checksum verified) and apply the op;
//  3. store the new file locally, then on the other metadata servers through
//     Peers, and wait until a majority (itself included) hold it durably
//     (else ErrNoQuorum, and nothing is committed);
//  4. compare-and-swap TableConfig on the ModRevision read in step 1;
//  5. after any CAS error or timeout, re-read TableConfig: if it names the
//     new txnid (or a successor of it), the commit succeeded; if the revision
//     moved otherwise, ErrConflict; if nothing moved, the same CAS is
//     re-issued, since at most one copy of it can land. If etcd cannot be
//     reached in time the answer is ErrOutcomeUnknown, never a guess.
//
// No file is ever deleted inline: a losing file stays until
// FileStore.Sweep, run in the background, removes files that are off the
// committed chain and older than a grace period. That rule is what keeps a
// committed file whose CAS reply was lost from being deleted.
// FileStore.SweepListed sweeps against a complete table listing from etcd
// (what a server's periodic sweep does).
//
// # Missing files, metadata server join and leave
//
// A server that lacks a file it needs (the current file for Load and
// Current, the base of a Change, the committed file of a retried Change)
// fetches it through Peers from the table's other metadata servers, each
// answering with its local copy only (LocalFile), verifies it against
// TableConfig, and, if it is a metadata server of the table, stores it
// durably before it answers. Current refuses (ErrStale) to hand out a view
// older than the txnseq a requester names.
//
// JoinMetadataServer adds Self to metadata_servers once it holds the
// current file; RemoveMetadataServer removes a server once a majority of
// the remaining ones hold it (DESIGN.md rule 5). Both are CASes on the
// revision read and start over, bounded, when a commit or another list
// change wins; a Change racing them loses its CAS the same way.
//
// # Change notification
//
// WatchTables follows every TableConfig: it reads the prefix, watches from
// the read's revision + 1, and after any watch failure, compaction, or
// every resync period reads again and delivers only what differs from what
// it already delivered (DESIGN.md rule 10).
//
// # Partition discovery
//
// Discover is the pure function of DESIGN.md section 4 that tells a server
// what to do with one of its local replicas under a given file: SERVE,
// LOAD (joining, or a split child not yet finalized), UNLOAD (the id or
// the placement left the map) or DROP (retention deleted its whole range:
// it ends at or before the file's DroppedBefore), with the servers it must
// push to; no target starts below DroppedBefore, so expired rows are never
// pushed. PlanRetention is retention's pure decider (the master commits
// its DROP_PARTITIONS). Servers
// evaluate it locally on every new file; metadata servers answer it for a
// server that has no copy of the file.
//
// # Dependencies and concurrency
//
// The types of the TableConfig and of the partition map (TableConfig,
// SmearConfig, Duration, File, Partition, Placement, Split, Child) and their
// validation are declared in package model, shared with the public API;
// metadata names them by alias (type File = model.File, ...), and
// ErrInvalidConfig and ErrInvalidFile are model's values. metadata owns
// what is done with them: the encodings (Encode, encodeConfig), the ops,
// the stores, the commit.
//
// The package imports only model, errcode and two leaf helpers
// (internal/backoff, internal/etcdwatch: stdlib and the etcd client) from
// this module, and stays free of pebble and fasthttp; etcd is reached
// through the Store interface (EtcdStore uses only Get and Txn) and, for
// TableWatcher, Get and Watch, through the module's one watch loop
// (internal/etcdwatch). Store implementations, FileStore and Committer are
// safe for concurrent use; a TableWatcher owns one goroutine, which Stop
// ends and waits for. Concurrent changes of one table are serialized by the
// CAS alone; losers get ErrConflict and re-plan on the new current file.
package metadata
