package main

import (
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
		// /query's InfluxQL runs on the front end (frontend.InfluxBackend).
		Influx: h.Backend.Influx(),
	}, h.Backend), nil
}
