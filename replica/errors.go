package replica

import tsdbhttp "github.com/tsdb/tsdb/http"

// The sentinels this package answers with, which the internal API maps to
// its status codes. They are the http package's until issue 15's error
// vocabulary (package errcode) lands; then this file points them there and
// replica no longer imports the http server package.
var (
	errUnavailable          = tsdbhttp.ErrUnavailable
	errMoved                = tsdbhttp.ErrMoved
	errStalePlacement       = tsdbhttp.ErrStalePlacement
	errBadRequest           = tsdbhttp.ErrBadRequest
	errInsertOutcomeUnknown = tsdbhttp.ErrInsertOutcomeUnknown
)
