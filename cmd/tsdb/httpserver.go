package main

import (
	"runtime/debug"

	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/node"
)

// newHTTPServer is the node.Config.HTTP of `tsdb server` and `tsdb dev`:
// it builds a server's HTTP server (package http) from the handlers node
// hands it. Node does not import the HTTP server package; cmd wires it in.
func newHTTPServer(h node.Handlers) (node.HTTPServer, error) {
	return tsdbhttp.NewServer(tsdbhttp.Config{
		AuthToken:             h.AuthToken,
		ClusterSecret:         h.ClusterSecret,
		Internal:              h.Internal,
		Clock:                 h.Clock,
		MaxBodyBytes:          h.MaxBodyBytes,
		Registry:              h.Registry,
		Logger:                h.Logger,
		MaxConcurrentRequests: h.MaxConcurrentRequests,
		MaxQueryBuckets:       h.MaxQueryBuckets,
		Version:               version,
		Commit:                vcsRevision(),
		// /query's InfluxQL runs on the front end (frontend.InfluxBackend).
		Influx: h.Backend.Influx(),
	}, h.Backend), nil
}

// vcsRevision is the VCS revision the binary was built from (go build
// stamps it), with "-dirty" when the tree was modified; "" when unknown.
// /health answers it as its commit.
func vcsRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
