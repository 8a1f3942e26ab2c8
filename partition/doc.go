// Package partition stores the partition replicas of one server in one
// pebble DB (DESIGN.md section 5). The byte layout is specified in
// docs/storage-format.md.
//
// # Model
//
// A Store owns the DB and a registry of replicas. A Replica is identified by
// its placement id, never by its partition id or time range: every key of
// the replica starts with 0x01|placement, so dropping it is one DeleteRange
// and its size one EstimateDiskUsage (DiskUsage; the split measures
// SizeOver and Size estimate the row keyspace only, not the log). Rows are keyed by (time bucket of
// about 68.7 s, series, time) so that time-range scans of one or all series
// are contiguous per bucket.
//
// Rows live in the head (one key per row) until their storage bucket has
// ended for a while; Seal then folds them into one column block per series
// and bucket (seal.go, partition/block). Every reader goes through rowIter
// (rowiter.go), which merges head and blocks in key order, so a row reads
// the same sealed or not; Aggregate reads blocks by columns and summaries.
//
// A tag index per replica (index.go; measurement → tag key → tag value →
// series, and the field keys of each measurement) lets Scan and Aggregate
// seek to the series a query's Measurement and Tags select, and answers
// SeriesKeys and FieldKeys without reading rows. CheckIndex compares it
// with the rows and repairs it.
//
// A row is identified by (series, time). Apply merges a write into the
// stored row field by field: a field is replaced only by a strictly greater
// model.Version; ties and older versions change nothing (so replays and
// retries are idempotent). A tombstone (model.KindDeleted, written by a
// delete) merges the same way; Scan and Aggregate skip tombstoned fields and
// rows whose fields are all tombstones, while ReadLog (what pushes send) and
// Checksum keep them.
//
// # Invariants
//
//   - Every stored row change gets the next per-replica sequence number,
//     written in the same batch as the row. A write that changes nothing
//     gets none.
//   - The sequence index holds every change until the truncation passes
//     it: a batch writes one record of its changes under the sequence of
//     its last one (one entry for a single change), and an overwrite
//     deletes no earlier entry. The row value records its own sequence.
//   - A log entry carries its row's value as the same batch wrote it under
//     the row key (issue 16), so ReadLog reads the log with one sequential
//     iterator and no row lookup. A store without the log
//     format marker (written before) has its entries rewritten by Open
//     (logupgrade.go); readLog also reads an entry of the legacy form, by
//     looking its row up.
//   - TruncateLog deletes the log entries at or below a point that only
//     rises, never past SyncedSeq, and records it (prefix|'t') in the same
//     batch; ReadLog from below it fails with ErrLogTruncated, and the
//     reader takes a row snapshot (LogSnapshot.ReadRows). The point stays
//     below the high sequence, so the newest entry survives (an older
//     build's high sequence). At Open the high sequence is the larger of
//     the last index key and that point.
//   - SetLogValues(false) (the replication pusher, while the replica has
//     no target and no mark) makes each Apply write the entry of its last
//     change only, in the legacy form (without the row value), and raise
//     the truncation point to the sequence before it in the same batch,
//     deleting the entries now below it: a replica nobody pushes from
//     writes each row once and one entry per batch, and a reader that
//     comes later reads from below the point and takes a row snapshot, as
//     after any truncation. A hint only (on is always correct); Open
//     resets it to true.
//   - A sequence index entry names the placement whose push wrote the
//     row's value (ApplyFrom, LogEntry.Origin) only when that push alone
//     wrote it: that placement then holds the value, and the replication
//     pushes need not send it back there.
//   - Sequences are assigned and batches made visible in sequence order, so
//     at any moment the visible changes are exactly 1..HighSeq.
//   - SyncedSeq <= HighSeq, and every change with sequence <= SyncedSeq is
//     durable. SyncedSeq advances only over a contiguous prefix of synced
//     batches. At Open both equal the last key of the sequence index (or
//     the truncation point, when higher).
//   - Apply returns only after its own changes, and every change before
//     them, are synced; ReadLog returns only synced changes (DESIGN.md
//     section 12, rule 1).
//   - A dropped placement leaves a tombstone and is never created again
//     (rule 4).
//   - The tag index holds an entry for every series and field kind of the
//     stored rows: Apply writes the entries of a series or field kind new
//     to the replica in the batch of its rows (the in-memory record of
//     what is indexed, guarded by applyMu, is updated only once the batch
//     is visible). A store without the index marker (written before the
//     index) is indexed by Open.
//   - Replication cursors (target placement → highest confirmed sequence)
//     are kept in memory and under the replica prefix, never decrease
//     while the process runs and never exceed SyncedSeq when written.
//     Their writes are not synced: a lost cursor only causes a re-push.
//   - After Unload returns, no Apply assigns a sequence until Resume; the
//     flag is not persisted.
//   - DropReplicaIf evaluates its condition and deletes the replica under
//     the apply lock, so no Apply changes what the condition saw (rule 3).
//     An Apply still in flight when a drop begins (its batch visible, its
//     sync not yet waited for) fails with ErrDropped: the drop waits for
//     it before deleting, so no Apply reports rows stored that a drop
//     deletes. ApplyInFlight lets a condition refuse such a drop instead.
//
// # Concurrency
//
// All methods of Store and Replica are safe for concurrent use. Apply is
// a pipeline: building and sorting keys happens outside any lock; merging
// with the stored rows, assigning sequences and pebble's ApplyNoSyncWait
// (which returns once the batch is visible) happen under the replica's
// applyMu; the WAL fsync wait (Batch.SyncWait) happens outside it, so
// concurrent Applies on any replicas share fsyncs (group commit). Scan and
// Aggregate take no replica lock: they read pebble's consistent iterator
// view, which may include visible changes whose sync is still pending.
//
// Inside the lock, a row newer than every stored row (the replica keeps an
// upper bound of its stored times; after Open it is the end of the last
// non-empty storage bucket) cannot exist and is not looked up, so
// time-ordered ingest does no reads. The batch holds the rows first, then
// the log record, each in ascending key order, which lets
// pebble's memtable inserter reuse its skiplist position.
//
// ReadLog takes a DB snapshot under applyMu (so it holds exactly the
// changes up to HighSeq) and waits until they are all synced before
// reading it: reading the synced part of a newer state could miss a row
// whose synced change was superseded by an unsynced one.
//
// Close refuses new operations with ErrClosed, waits for those in flight,
// flushes the memtables (bounded by Options.CloseFlushTimeout), closes the
// DB and removes the WAL files the flush made obsolete
// (internal/pebbleclose): a store at rest holds its data, not WAL files
// sized to the memtable. A flush that fails or times out leaves the WAL
// for the next Open to replay. Open checks the store's format marker
// first (format.go): a store of a version this build does not know is
// refused with ErrUnknownFormat. The DB escape hatch (Store.DB) is for benchmarks and
// diagnostics only: writes through it bypass every invariant above.
// RegisterMetrics exports the DB's pebble statistics and the replica count
// to a Prometheus registry, read at scrape time (metrics.go).
//
// # Lock order
//
// Store.mu (registry) → Replica.applyMu → Replica.cursors → syncTracker.mu.
// The store's gate is entered before any of them and never while holding
// one. SetConfirmed takes Replica.cursors alone and holds it across its
// (unsynced) pebble write; a drop takes it under applyMu, so every cursor
// write lands before the drop's DeleteRange or not at all. Checksum and
// SplitPoint, like Scan, take no replica lock.
package partition
