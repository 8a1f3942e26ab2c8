package http

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/http/ingest"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/router"
	"github.com/tsdb/tsdb/smear"
)

// classifyBefore is classify as it was before errcode (issue 15), kept to
// prove that the table answers every error as it did: same status, code
// and message.
func classifyBefore(err error) (int, string, string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status, ae.code, ae.msg
	}
	switch {
	case errors.Is(err, partition.ErrTooManyBuckets):
		return 422, api.CodeTooManyBuckets, err.Error()
	case errors.Is(err, partition.ErrAnswerTooLarge):
		return 422, api.CodeAnswerTooLarge, err.Error()
	case errors.Is(err, wire.ErrStalePlacement):
		return 409, api.CodeStalePlacement, err.Error()
	case errors.Is(err, wire.ErrMoved), errors.Is(err, partition.ErrUnloading):
		return 409, api.CodeMoved, err.Error()
	case errors.Is(err, partition.ErrCannotSplit):
		return 409, api.CodeCannotSplit, err.Error()
	case errors.Is(err, wire.ErrInsertOutcomeUnknown):
		return 503, api.CodeOutcomeUnknownRows, OutcomeUnknownMessage + " (" + err.Error() + ")"
	}
	var pe *ingest.ParseError
	switch {
	case errors.As(err, &pe):
		return 400, api.CodeInvalidRow, pe.Error()
	case errors.Is(err, metadata.ErrTableNotFound):
		return 404, api.CodeTableNotFound, err.Error()
	case errors.Is(err, metadata.ErrTableExists):
		return 409, api.CodeTableExists, err.Error()
	case errors.Is(err, model.ErrInvalidTable):
		return 400, api.CodeInvalidTableName, err.Error()
	case errors.Is(err, metadata.ErrInvalidConfig):
		return 400, api.CodeBadRequest, err.Error()
	case errors.Is(err, ErrBodyTooLarge):
		return 413, api.CodeTooLarge, err.Error()
	case errors.Is(err, ErrUnsupportedEncoding), errors.Is(err, ErrUnsupportedType):
		return 415, api.CodeUnsupportedMedia, err.Error()
	case errors.Is(err, ErrCorruptBody), errors.Is(err, ErrBadRequest):
		return 400, api.CodeBadRequest, err.Error()
	case errors.Is(err, ErrInvalidQuery):
		return 400, api.CodeInvalidQuery, err.Error()
	case errors.Is(err, api.ErrOffline):
		return 503, api.CodeOffline, err.Error()
	case errors.Is(err, api.ErrServerNotFound):
		return 404, api.CodeServerNotFound, err.Error()
	case errors.Is(err, api.ErrQueueFull):
		return 503, api.CodeQueueFull, err.Error()
	}
	switch {
	case errors.Is(err, metadata.ErrConflict):
		return 409, api.CodeConflict, err.Error()
	case errors.Is(err, metadata.ErrTxnMismatch):
		return 409, api.CodeTxnMismatch, err.Error()
	case errors.Is(err, metadata.ErrInvalidOp):
		return 400, api.CodeInvalidOp, err.Error()
	case errors.Is(err, metadata.ErrInvalidFile), errors.Is(err, metadata.ErrCorruptFile),
		errors.Is(err, metadata.ErrChecksum):
		return 400, api.CodeBadRequest, err.Error()
	case errors.Is(err, metadata.ErrNotMetadataServer):
		return 421, api.CodeNotMetadataServer, err.Error()
	case errors.Is(err, metadata.ErrNoQuorum):
		return 503, api.CodeNoQuorum, err.Error()
	case errors.Is(err, metadata.ErrOutcomeUnknown):
		return 503, api.CodeOutcomeUnknown, err.Error()
	case errors.Is(err, metadata.ErrStale):
		return 409, api.CodeStale, err.Error()
	}
	if errors.Is(err, wire.ErrUnavailable) || errors.Is(err, metadata.ErrFileNotFound) {
		return 503, api.CodeUnavailable, err.Error()
	}
	return 500, api.CodeInternal, "internal error: " + err.Error()
}

// classifyAtoms are errors as they reach classify: every sentinel the
// answers depend on, a parse error, an apiError, peers' answers of every
// code (which no layer translated), and the router's, smear's and the rpc
// server's members of errcode kinds in the form they reach classify in
// (the node wraps them; TestClassifyMembers has them bare).
func classifyAtoms() []error {
	atoms := []error{
		errors.New("boom"),
		&apiError{http.StatusNotFound, api.CodeNotFound, "no such file"},
		&ingest.ParseError{Line: 3, Err: model.ErrInvalidTable, Msg: "bad table"},
		&ingest.ParseError{Row: 2, Err: errors.New("x"), Msg: "bad row"},
		ErrBodyTooLarge, ErrUnsupportedEncoding, ErrUnsupportedType, ErrCorruptBody,
		ErrInvalidQuery, ErrBadRequest, wire.ErrUnavailable, api.ErrOffline, api.ErrServerNotFound,
		api.ErrQueueFull, wire.ErrMoved, wire.ErrStalePlacement, wire.ErrInsertOutcomeUnknown,
		&api.RetryError{Err: fmt.Errorf("%w: %w", api.ErrQueueFull, smear.ErrFull)},
		model.ErrInvalidTable,
		partition.ErrUnloading, partition.ErrCannotSplit, partition.ErrTooManyBuckets,
		partition.ErrAnswerTooLarge, partition.TooManyBuckets(10), partition.ErrDropped,
		partition.ErrInvalidRow, partition.ErrInvalidQuery,
		metadata.ErrTableNotFound, metadata.ErrTableExists, metadata.ErrConflict,
		metadata.ErrInvalidOp, metadata.ErrInvalidConfig, metadata.ErrInvalidFile,
		metadata.ErrCorruptFile, metadata.ErrFileNotFound, metadata.ErrTxnMismatch,
		metadata.ErrChecksum, metadata.ErrNoQuorum, metadata.ErrNotMetadataServer,
		metadata.ErrOutcomeUnknown, metadata.ErrStale,
		// As the node's publicError and insert pass them on.
		fmt.Errorf("%w: %w", wire.ErrUnavailable, router.ErrUnavailable),
		fmt.Errorf("%w: %w", wire.ErrUnavailable, router.ErrNotLocal),
		fmt.Errorf("%w: %w", api.ErrOffline, router.ErrOffline),
		router.ErrNoPartition,
		rpc.ErrUnavailable, rpc.ErrUnauthorized, rpc.ErrTimeout,
		&rpc.StatusError{Status: 401, Code: api.CodeUnauthorized, Message: "bad secret"},
		&rpc.StatusError{Status: 502, Message: "bad gateway"},
	}
	for _, r := range []struct {
		status int
		code   string
	}{
		{422, "too_many_buckets"}, {422, "answer_too_large"}, {409, "stale_placement"},
		{409, "moved"}, {409, "cannot_split"}, {503, "insert_outcome_unknown"},
		{400, "invalid_row"}, {404, "table_not_found"}, {409, "table_exists"},
		{400, "invalid_table_name"}, {413, "payload_too_large"}, {415, "unsupported_media_type"},
		{400, "bad_request"}, {400, "invalid_query"}, {503, "partition_offline"},
		{404, "server_not_found"}, {503, "queue_full"}, {409, "conflict"}, {409, "txn_mismatch"},
		{400, "invalid_op"}, {421, "not_metadata_server"}, {503, "no_quorum"},
		{503, "outcome_unknown"}, {409, "stale"}, {503, "unavailable"}, {404, "not_found"},
		{503, "overloaded"}, {500, "internal"},
	} {
		atoms = append(atoms, &rpc.StatusError{Status: r.status, Code: r.code, Message: "peer says " + r.code})
	}
	return atoms
}

// TestClassifyUnchanged: errcode's table answers every error, alone,
// wrapped, and in every pair (either wrapping the other, or joined), exactly
// as classify did before it.
func TestClassifyUnchanged(t *testing.T) {
	atoms := classifyAtoms()
	var errs []error
	for _, a := range atoms {
		errs = append(errs, a, fmt.Errorf("context: %w", a))
		for _, b := range atoms {
			errs = append(errs, fmt.Errorf("%w: %w", a, b), errors.Join(a, b), problems{a, b})
		}
	}
	for _, err := range errs {
		ws, wc, wm := classifyBefore(err)
		if s, c, m := classify(err); s != ws || c != wc || m != wm {
			t.Errorf("%q: %d %s %q, before %d %s %q", err, s, c, m, ws, wc, wm)
		}
	}
}

// TestClassifyMembers pins the bare members of errcode kinds that classify
// never met bare before errcode (the node wraps them, see classifyAtoms):
// they are now answered as their kind.
func TestClassifyMembers(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
	}{
		{router.ErrMoved, errcode.CodeMoved},
		{router.ErrUnavailable, errcode.CodeUnavailable},
		{router.ErrNotLocal, errcode.CodeUnavailable},
		{router.ErrOffline, errcode.CodeOffline},
		{smear.ErrFull, errcode.CodeQueueFull},
		{rpc.ErrBadRequest, errcode.CodeBadRequest},
		{rpc.ErrRequestTooLarge, errcode.CodeTooLarge},
		{rpc.ErrUnsupportedEncoding, errcode.CodeUnsupportedMedia},
	} {
		if _, code, _ := classify(tc.err); code != tc.code {
			t.Errorf("%v: code %s, want %s", tc.err, code, tc.code)
		}
	}
}
