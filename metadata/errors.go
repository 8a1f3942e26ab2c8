package metadata

import (
	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/model"
)

// Sentinel errors of the metadata package. Callers test them with errors.Is;
// the package adds context with fmt.Errorf("...: %w", err). Each is a member
// of a kind of package errcode (the kind named in its declaration), which
// holds the one mapping to the HTTP statuses and codes they are answered
// with: errors.Is matches them as themselves and as their kind.
var (
	// ErrTableNotFound: no TableConfig exists under that name.
	ErrTableNotFound = errcode.New(errcode.ErrTableNotFound, "metadata: table not found")
	// ErrTableExists: CreateTable found the key already taken.
	ErrTableExists = errcode.New(errcode.ErrTableExists, "metadata: table already exists")
	// ErrConflict: a compare-and-swap lost, or the requested base transaction
	// is not the current one. The change was not committed; re-read and re-plan.
	ErrConflict = errcode.New(errcode.ErrConflict, "metadata: conflict")
	// ErrInvalidOp: an op failed its preconditions or is malformed.
	ErrInvalidOp = errcode.New(errcode.ErrInvalidOp, "metadata: invalid op")
	// ErrInvalidConfig: a TableConfig failed validation. It is
	// model.ErrInvalidConfig, which TableConfig.Validate wraps.
	ErrInvalidConfig = model.ErrInvalidConfig
	// ErrInvalidFile: a METADATA file breaks an invariant (File.Validate).
	// It is model.ErrInvalidFile.
	ErrInvalidFile = model.ErrInvalidFile
	// ErrCorruptFile: encoded bytes could not be decoded into a valid file.
	ErrCorruptFile = errcode.New(errcode.ErrInvalidFile, "metadata: corrupt metadata file")
	// ErrFileNotFound: the file store holds no file for (table, txnid).
	ErrFileNotFound = errcode.New(errcode.ErrFileNotFound, "metadata: metadata file not found")
	// ErrTxnMismatch: a file with different bytes is already stored under the
	// same (table, txnid).
	ErrTxnMismatch = errcode.New(errcode.ErrTxnMismatch, "metadata: txnid already stored with different content")
	// ErrChecksum: a file does not match the checksum TableConfig records.
	ErrChecksum = errcode.New(errcode.ErrInvalidFile, "metadata: checksum mismatch")
	// ErrNoQuorum: fewer than a majority of the metadata servers stored the
	// new file; nothing was committed.
	ErrNoQuorum = errcode.New(errcode.ErrNoQuorum, "metadata: no quorum of metadata servers")
	// ErrNotMetadataServer: the committer is not among the table's
	// metadata_servers and may not coordinate its changes.
	ErrNotMetadataServer = errcode.New(errcode.ErrNotMetadataServer, "metadata: not a metadata server of the table")
	// ErrOutcomeUnknown: the final compare-and-swap failed and TableConfig
	// could not be re-read in time, so the commit may or may not have
	// happened. The requester re-reads TableConfig: if it names the new txnid
	// the change is committed.
	ErrOutcomeUnknown = errcode.New(errcode.ErrOutcomeUnknown, "metadata: commit outcome unknown")
	// ErrStale: the TableConfig this server reads names an older txnseq
	// than the requester asked for (DESIGN.md rule 8); the requester retries
	// later or asks another metadata server.
	ErrStale = errcode.New(errcode.ErrStale, "metadata: view older than requested txnseq")
)

// FromPeer passes a metadata server's refusal on as this package's
// sentinel: when err holds a peer's error answer (*rpc.StatusError) whose
// code is one of the metadata commit and table errors (conflict,
// txn_mismatch, stale, invalid_op, not_metadata_server, no_quorum,
// outcome_unknown, table_not_found, table_exists, or a 404 not_found for a
// file the peer does not hold), it returns err wrapped in the matching
// sentinel; otherwise err unchanged. Callers test one set of errors whether
// the call was local or remote.
func FromPeer(err error) error {
	return errcode.Translate(err, ErrConflict, ErrTxnMismatch, ErrStale, ErrInvalidOp,
		ErrNotMetadataServer, ErrNoQuorum, ErrOutcomeUnknown, ErrTableNotFound, ErrTableExists,
		ErrFileNotFound)
}
