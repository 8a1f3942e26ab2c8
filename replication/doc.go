// Package replication moves rows between the replicas of a partition by
// push (DESIGN.md section 5): every replica tails its own sequence log and
// pushes to each of its targets from that target's durable cursor. It also
// holds the binary encodings of rows and partial aggregates used on the
// internal API.
//
// The package declares what it needs of a replica (Log to read and keep
// cursors, Applier to receive) and of the network (Sender); *partition.Replica
// implements the first two and node wires the rest, so everything here is
// testable with fakes.
//
// # Lifecycle of a Pusher
//
// One Pusher serves one local replica. The node calls SetView with every
// discovery answer for the replica (its targets: other replicas, joining
// servers, split children) and Notify after every stored insert or received
// push. Run owns one goroutine per current target; each loops:
//
//  1. cursor := Log.Confirmed(target); entries := Log.ReadLog(cursor,
//     BatchRows). ReadLog returns only rows at or below the synced
//     watermark (rule 1), so a confirmed sequence is never reused after a
//     crash.
//  2. Filter the rows for the target (below), encode them and send one
//     PushRequest. If every row was filtered out and no Complete signal is
//     due, there is no network call: the cursor just advances.
//  3. On success (the receiver synced the rows) the cursor moves to the
//     last entry's sequence with Log.SetConfirmed, durably, and
//     WaitConfirmed waiters wake. A cursor never moves back. A cursor
//     claims that the target has every row written at or below it, so a
//     batch cut by its size moves it only if the batch skips no sequence:
//     a skipped sequence (in a log written before log records, where an
//     overwrite deleted the entry it superseded) is a row overwritten
//     since, whose new entry may lie beyond the batch. Otherwise the next reads go on from the
//     batch's end and the cursor moves once a read reaches the end of the
//     log (rows overwritten before that read are in it).
//  4. On failure the cursor stays; the goroutine backs off (RetryMin
//     doubling to RetryMax, each wait uniform in [d/2, d]) and records the
//     error for Status. A stale placement answer also calls OnStale, so the
//     node re-runs discovery.
//  5. When nothing is left above the cursor it sleeps until Notify, SetView
//     or the Tick wakes it. Wake-ups are coalesced and never cancel a push
//     in flight; removing a target from the view does.
//
// A cursor is keyed by the target's placement id, so a restart (or a new
// Pusher) resumes where the last confirmation left off, and a server that
// re-joins under a new placement starts from zero.
//
// # Log truncation and row snapshots (issue 16)
//
// When the Log is a TruncatingLog (a partition replica) and Config.KeepLog
// is off, Run truncates it about once per Tick up to the lowest cursor of
// the view's targets (and of every split target's tail stream), once that
// is at least Config.TruncateMin sequences past the current point, never
// under p.mu; with no target and no mark in a view SetView installed, up
// to the synced watermark (not before the first SetView: a restart would
// otherwise force row snapshots on the targets not installed yet). SetView
// also tells a LogValuesLog whether anyone reads its entries
// (partition.Replica.SetLogValues): not while the view has no target and
// no mark, when each Apply keeps only its last change's entry and raises
// the truncation point below it; on again before the marks' snapshots of
// a view with a target. A target whose cursor is below the truncation point (a new
// target, a joiner or split child whose mark was taken after a
// truncation, a cursor that came back lower after a crash) cannot be
// served from the log: ReadLog refuses (partition.ErrLogTruncated) and the
// target gets a row snapshot instead: the rows of a LogSnapshot (its
// mark's while it reads one, else one taken now at high sequence H) read
// in key order (RowSnapshot.ReadRows), filtered and pushed in batches like
// log entries. The cursor stays until the batch that reaches the end of
// the snapshot is confirmed, then claims H (rule 1: every row held at H is
// then synced at the target). A failed push keeps the snapshot: its
// position moves only past delivered batches, so the retry resends the
// batch that failed; a read error of the snapshot or a change of the
// target's range drops it, and the next step starts a new one from the
// first row. A step that reads a row snapshot is a catch-up step
// (Config.CatchUpSlots, Config.CatchUpBatchRows). Snapshot rows carry no origin,
// so one may go back to the placement it came from, where it ties.
//
// A target that is down does not pin the log: one whose steps have all
// failed for at least Config.LaggardAfter (target.failingSince, cleared
// by any successful step) and whose cursor is more than Config.MaxLogLag
// sequences below the synced watermark is left out of the lowest cursor
// (logged once per outage: "log truncated past a down target"); back, it
// takes a row snapshot. A split target's tail stream is never left out,
// and a mark's snapshot keeps its own truncation point. Acknowledgement
// and the drop condition read cursors only, so they do not change.
//
// # Moved data (issue 16)
//
// Every push is of one MoveKind, decided where its batch is made: a batch
// read from a row snapshot is marked PushRequest.Snapshot and is kind
// snapshot whatever the target's kind; a batch from the log is push, join
// or split by the target's kind (KindOf). Stats gives what a Pusher's
// confirmed pushes moved by kind, in rows and bytes (PushBytes), and its
// row snapshots in progress and ended (done, failed, dropped);
// Config.OnSnapshotEnd is called as each one ends, with its rows and
// duration. The node turns them into its metrics and its replica states
// (package replica).
//
// WaitConfirmed is the insert acknowledgement: it counts only targets of
// kind replica whose server is in the given list (servers[] of the newest
// txn), never joining or split targets. Drained is the replication input of
// rule 3: at least one target and every target confirmed the replica's
// high sequence (synced or not); DropReady adds that the replica is
// unloading and no Apply is in flight on it, and is the condition the
// node drops replicas with.
//
// # What each target receives
//
//   - replica: every row except those the target's own placement pushed
//     here (partition.LogEntry.Origin, recorded by Receive through
//     Applier.ApplyFrom when the push alone wrote the stored value): that
//     placement holds them already ("rows are not pushed back to where
//     they came from"). With replication factor 3 a row coordinated at A
//     travels A→B, A→C, then B and C each push it to the one replica that
//     is neither themselves nor the sender: 4 deliveries, as many as a rule
//     on the stamping server would give. The rule is keyed on who sent the
//     row, never on the node id its versions carry: a row stamped by a
//     front end (a smeared insert keeps its versions) may be stored first
//     by another replica while the front end's own replica lacks it.
//   - split: only rows whose time lies in the child's [Begin, End).
//   - joining: everything (a joiner has nothing yet, whatever its server
//     wrote before).
//
// # Join mark
//
// The first time a placement appears as a joining target of a Pusher, the
// Pusher fixes its mark := the Seq of a snapshot of the log
// (Log.SnapshotLog), and the target's pushes up to the mark read that
// snapshot: a row held at the mark and overwritten since may be in the
// live log only above the mark (its old entry truncated, or deleted by the
// overwrite in a log written before log records). A split target's backfill does the same. The
// snapshot is released once the cursor reaches the mark, when the target
// is removed (its mark is forgotten with it) and when Run returns (the next
// Run sets the marks again). Once the target's cursor reaches
// the mark, every push to it carries Complete=true, and an empty push is
// sent as soon as it becomes complete when no row push carries it (and
// again at every Tick while the target stays joining, so a receiver that
// restarted learns it again). The mark is fixed, so the join converges
// under continuous inserts. On the receiving side JoinProgress records
// which servers said Complete for each placement.
//
// # Row encoding (AppendRows, DecodeRows)
//
//	rows    := 'R' 0x01 count:uvarint row{count}
//	row     := dtime:varint series nfields:uvarint field{nfields}
//	series  := 0 (the previous row's series; "" before the first row)
//	         | len+1:uvarint bytes
//	field   := tag:byte [name] [version] payload
//	tag     := kind (bits 0-3: 1 float, 2 int, 3 bool, 4 string, 5 deleted)
//	         | 0x40 (name omitted: the previous row's field at this index)
//	         | 0x80 (version omitted: the previous field's in the stream,
//	                 the zero version before the first)
//	name    := len:uvarint bytes
//	version := wall:varint node:8 bytes little-endian
//	payload := float: 8 bytes little-endian IEEE 754 bits
//	         | int: varint | bool: 1 byte, 0 or 1 | string: len:uvarint bytes
//	         | deleted: nothing (a tombstone, model.KindDeleted)
//
// Tombstones travel on every internal path that carries rows (pushes,
// forwarded inserts, the smear queue's entries); a server built before
// kind 5 existed refuses them as an unknown kind (ErrCorrupt).
//
// varint is zigzag (encoding/binary's AppendVarint); dtime is the row's
// time minus the previous row's (0 before the first), in wrapping int64
// arithmetic. The encoding is uncompressed: the transport compresses push
// bodies (zstd) if it wants to.
//
// # Aggregate encoding (AppendAggs, DecodeAggs)
//
//	aggs    := 'A' 0x02 nseries:uvarint series{nseries}
//	series  := len:uvarint bytes nbuckets:uvarint bucket{nbuckets}
//	bucket  := dstart:varint nfields:uvarint field{nfields}
//	field   := len:uvarint name state
//	state   := count:varint n:varint sum:f64 min:f64 max:f64
//	           firstTime:varint firstSeries first:f64
//	           lastTime:varint lastSeries last:f64 mean:f64 m2:f64
//	firstSeries, lastSeries := 0 (the enclosing series) | len+1:uvarint bytes
//
// dstart is the bucket's start minus the previous bucket's in the series
// (0 before the first); f64 is 8 bytes little-endian. Version 0x01 (before
// issue 18) has no mean and m2; DecodeAggs still reads it, with mean =
// sum/n and m2 = 0 (stddev then undercounts that part's spread).
//
// Decoders are strict (truncation, unknown kinds, reserved bits, a bool
// other than 0/1, trailing bytes: ErrCorrupt), never panic, and check every
// count against the bytes that remain before allocating for it.
//
// # Concurrency
//
// All Pusher methods are safe for concurrent use and may be called before
// Run. No goroutine outlives Run. Pusher.confirmMu and Pusher.mu are never
// held together. The Sender, Log.ReadLog and Log.SetConfirmed are called
// without Pusher.mu; Log.SyncedSeq, Log.HighSeq and Log.Confirmed are also called under
// it and must not call back into the Pusher.
package replication
