// Package nodehttp wires the HTTP server (package http) into a node: New is
// the node.Config.HTTP of `tsdb server`, `tsdb dev` and the tests. It is
// the one place outside cmd that imports both, so that node does not import
// the HTTP server package.
package nodehttp

import (
	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/node"
)

// New builds a node's HTTP server from its handlers.
func New(h node.Handlers) (node.HTTPServer, error) {
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
	}, h.Backend), nil
}
