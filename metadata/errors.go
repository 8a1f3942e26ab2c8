package metadata

import "errors"

// Sentinel errors of the metadata package. Callers test them with errors.Is;
// the package adds context with fmt.Errorf("...: %w", err).
var (
	// ErrTableNotFound: no TableConfig exists under that name.
	ErrTableNotFound = errors.New("metadata: table not found")
	// ErrTableExists: CreateTable found the key already taken.
	ErrTableExists = errors.New("metadata: table already exists")
	// ErrConflict: a compare-and-swap lost, or the requested base transaction
	// is not the current one. The change was not committed; re-read and re-plan.
	ErrConflict = errors.New("metadata: conflict")
	// ErrInvalidOp: an op failed its preconditions or is malformed.
	ErrInvalidOp = errors.New("metadata: invalid op")
	// ErrInvalidConfig: a TableConfig failed validation.
	ErrInvalidConfig = errors.New("metadata: invalid table config")
	// ErrInvalidFile: a METADATA file breaks an invariant (File.Validate).
	ErrInvalidFile = errors.New("metadata: invalid metadata file")
	// ErrCorruptFile: encoded bytes could not be decoded into a valid file.
	ErrCorruptFile = errors.New("metadata: corrupt metadata file")
	// ErrFileNotFound: the file store holds no file for (table, txnid).
	ErrFileNotFound = errors.New("metadata: metadata file not found")
	// ErrTxnMismatch: a file with different bytes is already stored under the
	// same (table, txnid).
	ErrTxnMismatch = errors.New("metadata: txnid already stored with different content")
	// ErrChecksum: a file does not match the checksum TableConfig records.
	ErrChecksum = errors.New("metadata: checksum mismatch")
	// ErrNoQuorum: fewer than a majority of the metadata servers stored the
	// new file; nothing was committed.
	ErrNoQuorum = errors.New("metadata: no quorum of metadata servers")
	// ErrNotMetadataServer: the committer is not among the table's
	// metadata_servers and may not coordinate its changes.
	ErrNotMetadataServer = errors.New("metadata: not a metadata server of the table")
	// ErrOutcomeUnknown: the final compare-and-swap failed and TableConfig
	// could not be re-read in time, so the commit may or may not have
	// happened. The requester re-reads TableConfig: if it names the new txnid
	// the change is committed.
	ErrOutcomeUnknown = errors.New("metadata: commit outcome unknown")
	// ErrStale: the TableConfig this server reads names an older txnseq
	// than the requester asked for (DESIGN.md rule 8); the requester retries
	// later or asks another metadata server.
	ErrStale = errors.New("metadata: view older than requested txnseq")
)
