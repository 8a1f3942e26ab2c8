package master

import tsdbhttp "github.com/tsdb/tsdb/http"

// errUnavailable is the sentinel the health report answers with when the
// cluster cannot be read (503). It is the http package's until issue 15's
// error vocabulary (package errcode) holds it with its text; then this file
// points it there and master no longer imports the http server package (as
// replica/errors.go).
var errUnavailable = tsdbhttp.ErrUnavailable
