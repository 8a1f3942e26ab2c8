package rpc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tsdb/tsdb/errcode"
)

// TestStatusErrorKinds: a peer's answer matches the errcode kind of its
// code (errcode's one table), ErrUnauthorized for a 401 as before, and no
// other kind.
func TestStatusErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		se   *StatusError
		kind error
	}{
		{&StatusError{Status: 409, Code: errcode.CodeMoved}, errcode.ErrMoved},
		{&StatusError{Status: 409, Code: errcode.CodeStalePlacement}, errcode.ErrStalePlacement},
		{&StatusError{Status: 503, Code: errcode.CodeOutcomeUnknownRows}, errcode.ErrInsertOutcomeUnknown},
		{&StatusError{Status: 409, Code: errcode.CodeConflict}, errcode.ErrConflict},
		{&StatusError{Status: 404, Code: errcode.CodeNotFound}, errcode.ErrFileNotFound},
		{&StatusError{Status: 401, Code: errcode.CodeUnauthorized}, errcode.ErrUnauthorized},
	} {
		err := fmt.Errorf("call: %w", tc.se)
		if !errors.Is(err, tc.kind) {
			t.Errorf("%v does not match %v", tc.se, tc.kind)
		}
		if errors.Is(err, errcode.ErrInternal) {
			t.Errorf("%v matches errcode.ErrInternal", tc.se)
		}
	}
	if errors.Is(&StatusError{Status: 500, Code: errcode.CodeMoved}, errcode.ErrUnavailable) {
		t.Error("the code decides the kind, not the status")
	}
	if !errors.Is(&StatusError{Status: 401}, ErrUnauthorized) || errors.Is(&StatusError{Status: 403}, ErrUnauthorized) {
		t.Error("ErrUnauthorized is any 401 answer and nothing else")
	}
	// A peer's answer is not this server's answer: Classify does not look
	// through it.
	if status, code := errcode.Classify(&StatusError{Status: 409, Code: errcode.CodeMoved}); status != 500 || code != errcode.CodeInternal {
		t.Errorf("an untranslated peer answer is classified %d %s", status, code)
	}
}
