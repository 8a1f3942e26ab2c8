package errcode

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

// TestTable pins every kind's answer and every code's kind: the codes and
// statuses are the API's, and must not change.
func TestTable(t *testing.T) {
	answers := []struct {
		kind   error
		status int
		code   string
	}{
		{ErrTooManyBuckets, 422, "too_many_buckets"},
		{ErrAnswerTooLarge, 422, "answer_too_large"},
		{ErrStalePlacement, 409, "stale_placement"},
		{ErrMoved, 409, "moved"},
		{ErrCannotSplit, 409, "cannot_split"},
		{ErrInsertOutcomeUnknown, 503, "insert_outcome_unknown"},
		{ErrInvalidRow, 400, "invalid_row"},
		{ErrTableNotFound, 404, "table_not_found"},
		{ErrTableExists, 409, "table_exists"},
		{ErrInvalidTableName, 400, "invalid_table_name"},
		{ErrInvalidConfig, 400, "bad_request"},
		{ErrTooLarge, 413, "payload_too_large"},
		{ErrUnsupportedMedia, 415, "unsupported_media_type"},
		{ErrBadRequest, 400, "bad_request"},
		{ErrInvalidQuery, 400, "invalid_query"},
		{ErrOffline, 503, "partition_offline"},
		{ErrServerNotFound, 404, "server_not_found"},
		{ErrQueueFull, 503, "queue_full"},
		{ErrConflict, 409, "conflict"},
		{ErrTxnMismatch, 409, "txn_mismatch"},
		{ErrInvalidOp, 400, "invalid_op"},
		{ErrInvalidFile, 400, "bad_request"},
		{ErrNotMetadataServer, 421, "not_metadata_server"},
		{ErrNoQuorum, 503, "no_quorum"},
		{ErrOutcomeUnknown, 503, "outcome_unknown"},
		{ErrStale, 409, "stale"},
		{ErrUnavailable, 503, "unavailable"},
		{ErrFileNotFound, 503, "unavailable"},
		{ErrUnauthorized, 401, "unauthorized"},
		{ErrOverloaded, 503, "overloaded"},
		{ErrInternal, 500, "internal"},
	}
	for _, a := range answers {
		err := fmt.Errorf("context: %w", a.kind)
		if status, code := Classify(err); status != a.status || code != a.code {
			t.Errorf("Classify(%v) = %d %s, want %d %s", a.kind, status, code, a.status, a.code)
		}
		if k := Kind(err); k != a.kind {
			t.Errorf("Kind(%v) = %v", a.kind, k)
		}
	}
	// Every kind of the table is pinned above.
	kinds := map[error]bool{}
	for _, r := range table {
		kinds[r.kind] = true
	}
	if len(kinds) != len(answers) {
		t.Errorf("the table has %d kinds, the test pins %d", len(kinds), len(answers))
	}

	froms := []struct {
		status int
		code   string
		kind   error // nil: no kind
	}{
		{422, "too_many_buckets", ErrTooManyBuckets},
		{422, "answer_too_large", ErrAnswerTooLarge},
		{409, "stale_placement", ErrStalePlacement},
		{409, "moved", ErrMoved},
		{409, "cannot_split", ErrCannotSplit},
		{503, "insert_outcome_unknown", ErrInsertOutcomeUnknown},
		{400, "invalid_row", ErrInvalidRow},
		{404, "table_not_found", ErrTableNotFound},
		{409, "table_exists", ErrTableExists},
		{400, "invalid_table_name", ErrInvalidTableName},
		{413, "payload_too_large", ErrTooLarge},
		{415, "unsupported_media_type", ErrUnsupportedMedia},
		{400, "bad_request", ErrBadRequest},
		{400, "invalid_query", ErrInvalidQuery},
		{503, "partition_offline", ErrOffline},
		{404, "server_not_found", ErrServerNotFound},
		{503, "queue_full", ErrQueueFull},
		{409, "conflict", ErrConflict},
		{409, "txn_mismatch", ErrTxnMismatch},
		{400, "invalid_op", ErrInvalidOp},
		{421, "not_metadata_server", ErrNotMetadataServer},
		{503, "no_quorum", ErrNoQuorum},
		{503, "outcome_unknown", ErrOutcomeUnknown},
		{409, "stale", ErrStale},
		{503, "unavailable", ErrUnavailable},
		{404, "not_found", ErrFileNotFound},
		{401, "unauthorized", ErrUnauthorized},
		{503, "overloaded", ErrOverloaded},
		{500, "internal", ErrInternal},
		// The code decides, not the status (as the node always mapped).
		{500, "conflict", ErrConflict},
		{409, "not_found", nil}, // only a 404 not_found is a missing file
		{405, "method_not_allowed", nil},
		{418, "teapot", nil},
		{500, "", nil},
	}
	for _, f := range froms {
		if k := Sentinel(f.status, f.code); k != f.kind {
			t.Errorf("Sentinel(%d, %q) = %v, want %v", f.status, f.code, k, f.kind)
		}
		err := FromCode(f.status, f.code, "the message")
		if err.Error() != "the message" {
			t.Errorf("FromCode(%d, %q).Error() = %q", f.status, f.code, err.Error())
		}
		if f.kind != nil && !errors.Is(err, f.kind) {
			t.Errorf("FromCode(%d, %q) does not match %v", f.status, f.code, f.kind)
		}
		if f.kind == nil && Kind(err) != nil {
			t.Errorf("FromCode(%d, %q) matches %v", f.status, f.code, Kind(err))
		}
	}
}

// TestPrecedence pins the order of the table where an error matches several
// kinds.
func TestPrecedence(t *testing.T) {
	both := func(outer, inner error) error { return fmt.Errorf("%w: %w", outer, inner) }
	cases := []struct {
		name string
		err  error
		code string
	}{
		{"a limit beats moved", both(ErrMoved, ErrTooManyBuckets), CodeTooManyBuckets},
		{"a limit beats unavailable", both(ErrUnavailable, ErrAnswerTooLarge), CodeAnswerTooLarge},
		{"stale placement beats moved", both(ErrMoved, ErrStalePlacement), CodeStalePlacement},
		{"moved beats the table not found that revealed it", both(ErrTableNotFound, ErrMoved), CodeMoved},
		{"moved beats a stale view", both(ErrStale, ErrMoved), CodeMoved},
		{"outcome unknown beats unavailable", both(ErrUnavailable, ErrInsertOutcomeUnknown), CodeOutcomeUnknownRows},
		{"table not found beats a metadata conflict", both(ErrConflict, ErrTableNotFound), CodeTableNotFound},
		{"an invalid op beats an invalid file", both(ErrInvalidFile, ErrInvalidOp), CodeInvalidOp},
		{"no quorum beats a missing file", both(ErrFileNotFound, ErrNoQuorum), CodeNoQuorum},
		{"no quorum beats unavailable", both(ErrUnavailable, ErrNoQuorum), CodeNoQuorum},
		{"offline beats unavailable", both(ErrUnavailable, ErrOffline), CodeOffline},
		{"queue full beats a stale view", both(ErrStale, ErrQueueFull), CodeQueueFull},
		{"a joined error matches each", errors.Join(errors.New("x"), ErrConflict), CodeConflict},
		{"no kind is internal", errors.New("boom"), CodeInternal},
	}
	for _, c := range cases {
		if _, code := Classify(c.err); code != c.code {
			t.Errorf("%s: code %s, want %s", c.name, code, c.code)
		}
	}
}

func TestMember(t *testing.T) {
	a := New(ErrMoved, "a: partition moved")
	b := New(ErrMoved, "b: partition moved")
	err := fmt.Errorf("replica x: %w", a)
	if !errors.Is(err, a) || errors.Is(err, b) || !errors.Is(err, ErrMoved) {
		t.Fatal("a member matches itself and its kind, not another member")
	}
	if err.Error() != "replica x: a: partition moved" {
		t.Fatalf("text %q", err.Error())
	}
	if status, code := Classify(err); status != http.StatusConflict || code != CodeMoved {
		t.Fatalf("Classify = %d %s", status, code)
	}
}

type parseError struct{ line int }

func (e *parseError) Error() string { return fmt.Sprintf("line %d: bad", e.line) }

func TestMark(t *testing.T) {
	pe := &parseError{3}
	err := Mark(fmt.Errorf("body: %w", pe), ErrInvalidRow)
	var got *parseError
	if !errors.As(err, &got) || got != pe {
		t.Fatal("errors.As does not see through Mark")
	}
	if err.Error() != "body: line 3: bad" || !errors.Is(err, ErrInvalidRow) {
		t.Fatalf("Mark: text %q, is invalid row %v", err.Error(), errors.Is(err, ErrInvalidRow))
	}
	if Mark(nil, ErrInvalidRow) != nil {
		t.Fatal("Mark(nil) is not nil")
	}
}

// peerAnswer is a peer's answer, as *rpc.StatusError is.
type peerAnswer struct {
	status int
	code   string
}

func (e *peerAnswer) Error() string        { return "peer: " + e.code }
func (e *peerAnswer) Is(target error) bool { return errors.Is(Sentinel(e.status, e.code), target) }
func (e *peerAnswer) RemoteAnswer()        {}

// TestRemoteNotClassified: a peer's answer matches its kind with errors.Is,
// but Classify does not answer with the peer's code unless a layer here
// wrapped it in a kind.
func TestRemoteNotClassified(t *testing.T) {
	pa := &peerAnswer{401, CodeUnauthorized}
	err := fmt.Errorf("call peer: %w", pa)
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatal("a peer's answer does not match its kind")
	}
	if status, code := Classify(err); status != 500 || code != CodeInternal {
		t.Fatalf("an untranslated peer answer is classified %d %s", status, code)
	}
	if status, code := Classify(fmt.Errorf("%w: %w", ErrUnavailable, err)); status != 503 || code != CodeUnavailable {
		t.Fatalf("a translated peer answer is classified %d %s", status, code)
	}
}

func TestTranslate(t *testing.T) {
	conflict := New(ErrConflict, "pkg: conflict")
	missing := New(ErrFileNotFound, "pkg: file not found")
	members := []error{conflict, missing}
	for _, tc := range []struct {
		err  error
		want error // nil: unchanged
	}{
		{fmt.Errorf("call: %w", &peerAnswer{409, CodeConflict}), conflict},
		{fmt.Errorf("call: %w", &peerAnswer{404, CodeNotFound}), missing},
		{fmt.Errorf("call: %w", &peerAnswer{503, CodeUnavailable}), nil},
		{fmt.Errorf("call: %w", &peerAnswer{409, CodeMoved}), nil},
		{fmt.Errorf("local: %w", ErrConflict), nil}, // not a peer's answer
		{errors.New("boom"), nil},
	} {
		got := Translate(tc.err, members...)
		switch {
		case tc.want == nil && got != tc.err:
			t.Errorf("%v: translated to %v", tc.err, got)
		case tc.want != nil && (!errors.Is(got, tc.want) || got.Error() != tc.want.Error()+": "+tc.err.Error()):
			t.Errorf("%v: %v, want it wrapped in %v", tc.err, got, tc.want)
		}
	}
	if _, code := Classify(Translate(&peerAnswer{409, CodeConflict}, conflict)); code != CodeConflict {
		t.Errorf("a translated answer is classified %s", code)
	}
}
