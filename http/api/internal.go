package api

import "github.com/tsdb/tsdb/errcode"

// Error codes the internal API adds to the public ones.
const (
	// CodeConflict (409): the change's base is not the current transaction,
	// or another change won the compare-and-swap. Re-read and re-plan.
	CodeConflict = errcode.CodeConflict
	// CodeInvalidOp (400): the op failed its preconditions.
	CodeInvalidOp = errcode.CodeInvalidOp
	// CodeNotMetadataServer (421): the receiver is not a metadata server of
	// the table; ask one that is.
	CodeNotMetadataServer = errcode.CodeNotMetadataServer
	// CodeTxnMismatch (409): a file with other bytes is stored under that txnid.
	CodeTxnMismatch = errcode.CodeTxnMismatch
	// CodeStale (409): the receiver's view is older than the min_txnseq the
	// request named, even after catching up.
	CodeStale = errcode.CodeStale
	// CodeOutcomeUnknown (503): the commit may or may not have happened; the
	// requester re-reads TableConfig to learn which.
	CodeOutcomeUnknown = errcode.CodeOutcomeUnknown
	// CodeNoQuorum (503): fewer than a majority of the metadata servers
	// stored the file; nothing was committed.
	CodeNoQuorum = errcode.CodeNoQuorum
)
