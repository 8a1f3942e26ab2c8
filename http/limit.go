package http

import (
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/http/api"
)

// overloadRetryAfter is the Retry-After, in seconds, of a request refused
// because the server is full: requests last milliseconds to seconds, so a
// second later a slot is likely free.
const overloadRetryAfter = "1"

// limited reports whether path is a public API path, whose requests count
// against Config.MaxConcurrentRequests: everything but /healthz, /ping,
// /health and /metrics (which must answer on a loaded server, for probes
// and monitoring) and /internal/ (the cluster's own traffic: refusing a push
// or a sub-query would only move the load to a retry).
func limited(path string) bool {
	switch path {
	case "/healthz", "/metrics", "/ping", "/health":
		return false
	}
	return !strings.HasPrefix(path, "/internal/")
}

// admit routes a request within the bound of concurrent public requests:
// a public request takes a slot for as long as its handler runs, and one
// arriving when every slot is taken is answered at once with 503
// api.CodeOverloaded and Retry-After instead of waiting (a queue would
// hold its body in memory all the same). fasthttp has read the body by
// then: what the cap bounds is the work and the answers in flight, while a
// body's size is bounded by Config.MaxBodyBytes. It returns the route's
// name for metrics.
func (s *Server) admit(ctx *fasthttp.RequestCtx, path string) string {
	if !limited(path) {
		return s.route(ctx, path)
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.metrics.rejected.Inc()
		ctx.Response.Header.Set("Retry-After", overloadRetryAfter)
		s.writeAPIError(ctx, 503, api.CodeOverloaded, fmt.Sprintf(
			"the server is serving as many requests as it allows (%d, tsdb server --max-concurrent-requests); retry after %s s or on another server",
			cap(s.slots), overloadRetryAfter))
		return "overloaded"
	}
	defer func() { <-s.slots }()
	return s.route(ctx, path)
}
