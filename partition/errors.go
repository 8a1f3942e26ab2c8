package partition

import (
	"errors"
	"fmt"

	"github.com/tsdb/tsdb/errcode"
)

// Sentinel errors of the partition store. Callers test them with errors.Is;
// the store wraps them with context (which replica, which row). Those that
// cross package and process boundaries are members of a kind of package
// errcode (ErrUnloading of errcode.ErrMoved, ErrCannotSplit,
// ErrTooManyBuckets, ErrAnswerTooLarge of their namesakes): errors.Is
// matches them both as themselves and as the kind.
var (
	// ErrClosed is returned by every operation on a closed Store.
	ErrClosed = errors.New("partition: store closed")
	// ErrDropped is returned for a replica that was dropped: by Apply, reads
	// and ReadLog on a dropped Replica, and by CreateReplica for a placement
	// that was ever dropped (DESIGN.md section 12, rule 4).
	ErrDropped = errors.New("partition: replica dropped")
	// ErrLost is returned by CreateReplica for a placement marked lost: the
	// METADATA listed it for this server when the store was created empty
	// (a wiped disk), so its data is gone and it is never created or
	// served here (DESIGN.md section 5).
	ErrLost = errors.New("partition: placement lost (its data is gone from this server)")
	// ErrInvalidRow is returned by Apply for a row that cannot be stored
	// (empty series, a NUL byte in the series, no fields, a zero version or
	// an unknown value kind). The whole batch is rejected.
	ErrInvalidRow = errors.New("partition: invalid row")
	// ErrInvalidReplica is returned by CreateReplica for unusable info (nil
	// placement, bad table name, begin >= end).
	ErrInvalidReplica = errors.New("partition: invalid replica info")
	// ErrReplicaConflict is returned by CreateReplica when the placement is
	// already registered for another table, partition or range.
	ErrReplicaConflict = errors.New("partition: placement registered with different info")
	// ErrInvalidQuery is returned by Scan and Aggregate for a malformed query
	// (negative step).
	ErrInvalidQuery = errors.New("partition: invalid query")
	// ErrUnloading is returned by Apply on a replica that was told it is
	// UNLOAD (Replica.Unload): it refuses client writes and pushes
	// (DESIGN.md section 12, rule 3). It is a member of errcode.ErrMoved:
	// the front end refreshes its METADATA and routes again.
	ErrUnloading = errcode.New(errcode.ErrMoved, "partition: replica is unloading")
	// ErrCursorAhead is returned by SetConfirmed for a sequence above the
	// replica's synced watermark: no target can hold a change that was not
	// pushed, and only synced changes are pushed (rule 1).
	ErrCursorAhead = errors.New("partition: cursor above the synced watermark")
	// ErrLogTruncated is returned by ReadLog (of a replica or a
	// LogSnapshot) for a read from below the log's truncation point: the
	// entries it would need are deleted (TruncateLog); the reader must
	// read the rows instead (LogSnapshot.ReadRows).
	ErrLogTruncated = errors.New("partition: log truncated above the sequence read from")
	// ErrSnapshotClosed is returned by LogSnapshot.ReadLog after Close.
	ErrSnapshotClosed = errors.New("partition: log snapshot closed")
	// ErrCorrupt is returned when a stored key or value does not decode.
	ErrCorrupt = errors.New("partition: corrupt value")
	// ErrCannotSplit is returned by SplitPoint when the replica's rows
	// cannot be divided into two non-empty sides: it has no rows, or every
	// row is at one timestamp.
	ErrCannotSplit = errcode.New(errcode.ErrCannotSplit, "partition: cannot split")
	// ErrTooManyBuckets is returned by Aggregate when its answer would hold
	// more buckets, summed over all its series, than model.Query.MaxBuckets;
	// the router returns it too when the merged answer of several
	// partitions does (TooManyBuckets builds it).
	ErrTooManyBuckets = errcode.New(errcode.ErrTooManyBuckets, "partition: too many buckets")
	// ErrAnswerTooLarge means a query's answer is over a byte limit: a
	// replica refuses to send a sub-query answer over the limit its front
	// end asked for, and a front end stops reading one past it (the
	// caller wraps it with the limit and what to change).
	ErrAnswerTooLarge = errcode.New(errcode.ErrAnswerTooLarge, "partition: answer too large")
)

// TooManyBuckets is the error of an aggregate answer over limit buckets
// summed over its series: it names the limit and what to change.
func TooManyBuckets(limit int) error {
	return fmt.Errorf("%w: the answer has more than %d buckets summed over all its series "+
		"(the server's limit, tsdb server --max-query-buckets); use a bigger step, "+
		"a narrower time range, fewer series (an exact series or a longer prefix) or group=none",
		ErrTooManyBuckets, limit)
}
