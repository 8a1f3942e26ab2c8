package metadata

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/errcode"
)

// mapRPCErrorBefore is how the node mapped a metadata server's answers
// before FromPeer (node/peers.go mapRPCError, issue 15), kept to prove
// FromPeer maps every answer the same way.
func mapRPCErrorBefore(err error) error {
	var se *rpc.StatusError
	if !errors.As(err, &se) {
		return err
	}
	var sentinel error
	switch se.Code {
	case errcode.CodeConflict:
		sentinel = ErrConflict
	case errcode.CodeTxnMismatch:
		sentinel = ErrTxnMismatch
	case errcode.CodeStale:
		sentinel = ErrStale
	case errcode.CodeInvalidOp:
		sentinel = ErrInvalidOp
	case errcode.CodeNotMetadataServer:
		sentinel = ErrNotMetadataServer
	case errcode.CodeNoQuorum:
		sentinel = ErrNoQuorum
	case errcode.CodeOutcomeUnknown:
		sentinel = ErrOutcomeUnknown
	case errcode.CodeTableNotFound:
		sentinel = ErrTableNotFound
	case errcode.CodeTableExists:
		sentinel = ErrTableExists
	case errcode.CodeNotFound:
		if se.Status == http.StatusNotFound {
			sentinel = ErrFileNotFound
		}
	}
	if sentinel == nil {
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// TestFromPeer: FromPeer translates every answer as the node's
// mapRPCError did: same text, same sentinels matched.
func TestFromPeer(t *testing.T) {
	sentinels := []error{ErrTableNotFound, ErrTableExists, ErrConflict, ErrInvalidOp,
		ErrInvalidConfig, ErrInvalidFile, ErrCorruptFile, ErrFileNotFound, ErrTxnMismatch,
		ErrChecksum, ErrNoQuorum, ErrNotMetadataServer, ErrOutcomeUnknown, ErrStale}
	codes := []string{"", "bad_request", "invalid_table_name", "invalid_row", "invalid_query",
		"unauthorized", "not_found", "table_not_found", "method_not_allowed", "table_exists",
		"payload_too_large", "unsupported_media_type", "internal", "unavailable", "overloaded",
		"too_many_buckets", "answer_too_large", "partition_offline", "server_not_found",
		"queue_full", "conflict", "invalid_op", "not_metadata_server", "txn_mismatch", "stale",
		"outcome_unknown", "no_quorum", "stale_placement", "moved", "insert_outcome_unknown",
		"cannot_split", "teapot"}
	var errs []error
	for _, status := range []int{400, 401, 404, 409, 421, 500, 503} {
		for _, code := range codes {
			se := &rpc.StatusError{Status: status, Code: code, Message: "m"}
			errs = append(errs, se, fmt.Errorf("%w: attempts failed: %w", rpc.ErrUnavailable, se))
		}
	}
	errs = append(errs, errors.New("boom"), rpc.ErrUnavailable, fmt.Errorf("x: %w", ErrConflict))
	for _, err := range errs {
		want, got := mapRPCErrorBefore(err), FromPeer(err)
		if got.Error() != want.Error() {
			t.Errorf("%v: %q, before %q", err, got, want)
		}
		for _, s := range sentinels {
			if errors.Is(got, s) != errors.Is(want, s) {
				t.Errorf("%v: matches %v: %v, before %v", err, s, errors.Is(got, s), errors.Is(want, s))
			}
		}
	}
}
