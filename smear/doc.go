// Package smear implements insert smearing (DESIGN.md section 7): an
// insert aimed at a very narrow partition (the "now" partition of a table
// that is written in time order) is not written at once but kept in a
// durable local queue and forwarded after a random delay, so that the write
// load of the present moment spreads over time instead of landing on one
// replica set.
//
// The package has three parts, each usable alone:
//
//   - The policy (policy.go), pure and without I/O: Decide says whether an
//     insert is smeared (the X-TSDB-Smear header is read by the API,
//     api.ParseSmearHeader), DueTime draws the due time uniformly from [now, now+max delay].
//   - The Queue (queue.go, pass.go), one pebble DB per server.
//   - The Forwarder (forwarder.go), which sends due rows through a Sender
//     that the node implements.
//   - Admission control (admission.go), which refuses new rows the
//     forwarder could not deliver on time.
//
// The node wires them into the insert path: it assigns versions, asks
// Decide, draws one DueTime per insert batch, calls Queue.Enqueue and
// acknowledges the client once Enqueue returned nil; it maps ErrFull,
// ErrBehind and ErrDueFull (after drawing other due times) to 503
// queue_full with Retry-After (Queue.RetryAfter) and ErrTooLarge to
// "insert without smearing". Its Sender routes each row by the METADATA
// current at the moment of the forward (it is a Partitioner: the
// forwarder routes a pass's rows once through it) and inserts it with its
// original version.
//
// # Policy
//
// An insert is smeared when smearing is on for the server (--smear), on
// for the table (TableConfig.smear.enabled), not refused by the request
// (X-TSDB-Smear: off, false, 0 or no; the API answers an unrecognised
// value 400, see api.ParseSmearHeader), the table's max delay is positive, and the target
// partition is narrower than the table's keyrange threshold: end − begin <
// threshold, so a partition exactly as wide as the threshold is not
// smeared and an open-ended one never is. Defaults (metadata.DefaultSmear):
// threshold 60 s, max delay 120 s.
//
// One due time is drawn per insert batch of one table: the rows of a
// request stay together as one queue entry and are forwarded together.
// Different requests draw independently, which is what spreads the load.
//
// # Key layout
//
// The queue has its own pebble DB (never shared with the partition store),
// holding a format marker and two namespaces:
//
//	0x00               → "1"           (format marker, format.go)
//	0x01 | due | seq   → entry         (queued rows)
//	0x02 | due | seq   → entry         (quarantined, see below)
//
// Open refuses a queue whose marker names a version other than 1
// (ErrUnknownFormat) and marks a queue that has none (new, or written
// before the marker existed).
//
// due is the due time in ns since the epoch as 8 big-endian bytes with the
// sign bit flipped (so the unsigned byte order is the time order), seq an
// 8-byte big-endian sequence unique within the process (restarted after
// the highest one found on disk at Open). Keys are fixed-length, 17 bytes,
// and sort by due time: the due entries are exactly the range
// [0x01, 0x01|now+1), read in due order.
//
// An entry value is
//
//	format (1 byte, 1) | enqueued (varint ns) | attempts (uvarint) |
//	table (uvarint length + bytes) | row count (uvarint) | rows
//
// where rows is the RowCodec's encoding (the replication package's codec in
// production): every row with its time, series and fields, each field with
// its value and version. No partition id is stored: a row is routed when
// it is forwarded. enqueued is when the rows were first enqueued (kept
// across retries; the delay histogram measures from it); attempts counts
// failed forwards and sets the backoff. The row count lets Open rebuild
// the depth without decoding rows.
//
// # Guarantees
//
//   - Enqueue returns nil only after the entry is synced (pebble WAL
//     fsync). An acknowledged smeared insert therefore survives a crash and
//     restart of this server, but not the loss of its disk during the delay;
//     with X-TSDB-Consistency quorum or all, the node also enqueues copies on
//     other servers before acknowledging, and every copy forwards.
//   - Concurrent Enqueues share fsyncs. Pebble's commit pipeline writes each
//     batch to the WAL under a mutex and queues its sync request; the WAL's
//     flush loop (record.LogWriter.flushLoop) takes every sync request
//     queued so far, writes the pending blocks and issues one fsync for all
//     of them (flushPending → syncWithLatency, then pendingSyncs.pop), up to
//     record.SyncConcurrency (4096) waiters. So N goroutines committing with
//     pebble.Sync at once cost about one fsync, not N: group commit needs no
//     code of ours.
//   - Open replays the DB: it rebuilds the depth (rows, bytes) and the
//     sequence, and the forwarder picks up every entry, due or overdue.
//   - A row leaves the queue only when the Sender accepted it (for the
//     node: an insert acknowledged at quorum): the forwarder deletes an
//     entry, once every call with rows of it has answered, in the same
//     synced batch that writes its failed rows back as a new entry (attempts+1, due after an exponential backoff with
//     jitter, initial 100 ms doubling to 10 s). There is no attempt limit;
//     failures are logged at warn level, rate-limited, and counted.
//   - A row may be forwarded more than once (a crash between the Sender's
//     acceptance and the settling batch, a pass cut short by shutdown, a
//     quorum copy on another server). That is harmless: the merge keeps the
//     higher version per field, and the version travels with the row.
//   - The queue is bounded by Options.MaxRows and Options.MaxBytes (entries'
//     keys and values as written). An Enqueue that would exceed them writes
//     nothing and fails with ErrFull; a batch that alone exceeds them fails
//     with ErrTooLarge. Requeued retries are never refused: they replace the
//     entries they come from and hold a subset of their rows.
//   - Smeared rows become visible to queries only when forwarded.
//
// # Quarantine
//
// An entry that does not decode (a corrupt header or rows, found at Open
// or by the forwarder) cannot be forwarded and must not be lost: it is
// moved, in one synced batch, from 0x01 to 0x02 with the same suffix, logged
// at error level and counted in tsdb_smear_quarantined_entries_total. It
// then leaves the depth. Nothing deletes quarantined entries; an operator
// can inspect them with pebble's tools.
//
// # Forwarding
//
// A queue has exactly one forwarder (NewForwarder panics on a second:
// the in-flight set below is the forwarder's). The forwarder keeps up to
// ForwarderOptions.MaxInFlight Sender calls in flight. When the window
// has room it loads due
// entries in due order, skipping those already in a call's hands (an
// in-memory set), as many rows as twice the free calls hold (at most 8
// calls' worth); routes the
// rows of each table once (Partitioner.Route, when the Sender is one);
// groups them by destination partition; and cuts each group, in due
// order, into calls of at most MaxRowsPerCall rows and MaxBytesPerCall
// bytes (an entry's rows may so be spread over several calls). Each call
// runs in its own goroutine, owned by the forwarder: when it ends, it
// records each row's outcome and settles, in one synced batch, the
// entries none of whose rows is pending any more, then leaves the
// window, which wakes Run to load more. A slow call (a partition
// splitting) so holds one slot, not the forwarder. The window shrinks per
// destination partition (table and Route ordinal): after a call that
// accepted no row (failed as a whole, or every row refused), at most one
// call to that partition is in flight until one succeeds; the rows of
// its other calls are not sent but requeued at once with backoff (held),
// so a failing partition takes one slot and no healthy one waits for it.
// Rows a Sender reports ErrDiscarded (a dropped table) leave the queue
// without counting as forwarded.
//
// Run does this whenever an already-due entry is enqueued, a call ends,
// on Kick, and every PollInterval, and waits for its calls before it
// returns; Drain does it for every entry, due or not, until the queue is
// empty (a drained or leaving server empties its queue before it stops;
// DrainForStop bounds that by a time limit and leaves the rest queued for
// after a restart). Loads are serialized by a mutex, so Run and Drain may
// overlap.
//
// To keep passes from iterating over the tombstones of forwarded entries,
// the queue keeps in memory a lower bound of the due times it holds
// (scanFrom) and starts each scan there. Every write lowers it after its
// commit; a load raises it to the due time of the first entry it left
// (or past upTo), but never past an entry still in flight, lowered again
// to the earliest due time written while it ran. As a safety net against a wrong hint stranding rows, Run
// scans the whole queue once a minute, and Drain does whenever it finds
// nothing while the depth says rows remain.
//
// # Admission
//
// Smearing acknowledges rows before they reach their partition, so a
// queue could take rows far faster than its forwarder delivers them.
// Admission control (admission.go, off with Options.NoAdmission) keeps,
// under the queue's mutex and rebuilt by Open: the queued rows by due
// bucket (AdmitTick, 1 s), the overdue rows (due more than OverdueAfter,
// 2 s, ago), the rows in flight (loaded by the forwarder: moved out of
// their bucket at load, back on give-up) and retrying (written back after
// a failed forward), which are never overdue; the EWMAs (time constant
// RateWindow, 2 s) of rows enqueued, forwarded (discards excluded) and
// handled (settled, requeued ones included) per second; and an estimate
// of the forwarder's capacity (its forward rate while saturated, i.e.
// with rows overdue, falling by at most half per tick; else at least the
// forward rate, a higher estimate decaying with a 2 min time constant
// towards 1.5 times it and not below InitialForwardRate, the value before
// any measure; rows overdue while a call to a failing partition is in
// flight, or in a tick that saw a call fail, do not count as saturation;
// the forward rate proves no more than the queue accepted meanwhile, so a
// drain without the load of accepting may lower the estimate but never
// raise it; an estimate decayed back to InitialForwardRate starts its
// slow start over; until the forwarder is seen saturated, the estimate is
// at least the recent peak of the rows the server wrote straight to their
// partitions per second, NoteDirect, and an estimate that prior set
// counts as measured).
// It is advanced on ticks taken lazily by Enqueue, settles
// and Run: no goroutine of its own, and Options.Now drives it in tests. A
// clock stepped backwards re-bases it (the rows counted overdue go back
// to a bucket; the counts are exact again once the queue is empty). With
// NoAdmission the measures are kept; only the refusals are skipped.
// Enqueue fails, writing nothing:
//
//   - with ErrDueFull when the bucket of its due time already holds
//     rows and would exceed 80% of the capacity over a tick (headroom to
//     work off a backlog; while nothing is overdue, the next two ticks'
//     buckets may take twice the capacity until the estimate is
//     measured, 1.25 times afterwards, and at least one whole
//     entry beyond the capacity over a tick: the estimate grows as the
//     forwarder proves it, and only the near buckets can overshoot);
//   - with ErrBehind when, once the estimate is measured, the
//     rows accepted in the current tick would exceed 1.25 times the
//     capacity over a tick, or one whole entry beyond it if that is more
//     (a queue with room in every due second would otherwise take
//     max_delay's worth of its budget at once);
//   - with ErrBehind while admission is closed: it closes when rows are
//     overdue and, for BehindFor (3 s), the accept rate exceeded the
//     handle rate or the overdue rows were more than 2 s of handling;
//     it opens at the first tick with nothing overdue, or at once when
//     the queue is empty.
//
// Rows in a call's hands and rows requeued after a failed forward are
// never overdue, requeued rows count as handled, and a failing partition
// holds one call slot at most: an unavailable partition does not close
// admission (TestFailingPartitionKeepsAdmissionOpen). Rows loaded on time
// can still be delivered late, when calls wait for a slot or their replica
// sets confirm slowly: admission tracks every planned call (its rows and
// its latest due time) until it ends, and once the calls whose latest row
// is overdue go to two partitions or more, their rows count with the
// overdue ones in the closing and opening rules and as saturation for the
// capacity estimate (TestLateCallsCloseAdmission). Late calls to one
// partition only (a partition splitting or catching up), and probes of a
// failing partition, do not count (TestOneSlowPartitionKeepsAdmissionOpen). Once forwards fail
// in two partitions or more and the rows retrying grew by more than
// minSlotRows in the last tick, they count with the overdue ones in the
// closing and opening rules: a cluster over its capacity, not partitions
// left unavailable, whose rows only cycle through their retries
// (TestWidespreadFailuresCloseAdmission). ErrDueFull refuses
// a due-time draw, not an insert: the caller draws again and calls
// Queue.RefusedDueFull when it gives up, so that
// tsdb_smear_behind_rejections_total counts refused inserts.
//
// # Metrics
//
// NewMetrics builds tsdb_smear_queue_rows and _bytes (gauges),
// tsdb_smear_delay_seconds (histogram, per forwarded row, from its first
// enqueue to its accepted forward), and the counters
// tsdb_smear_enqueued_rows_total, _forwarded_rows_total,
// _retried_rows_total, _full_rejections_total, _forward_failures_total and
// _quarantined_entries_total; for forwarding and admission,
// tsdb_smear_forward_calls_in_flight, _accept_rows_per_second,
// _forward_rows_per_second, _direct_rows_per_second,
// _forward_capacity_rows_per_second,
// _overdue_rows, _late_in_flight_rows, _admission_closed (gauges), _admission_closings_total and
// _behind_rejections_total.
//
// # Concurrency
//
// Queue and Forwarder methods are safe for concurrent use. Forwarder.Run
// and Drain run in their caller's goroutine; the goroutines of their calls
// (at most MaxInFlight) are the forwarder's. Run returns only once no
// call of the forwarder is left; Drain once the calls it started itself
// have ended (a Run running meanwhile keeps its own). The owner stops
// Run (cancels its context and waits for it to return) before Queue.Close;
// operations after Close fail with ErrClosed, and Close waits for
// operations in flight.
package smear
