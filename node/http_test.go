package node

import tsdbhttp "github.com/tsdb/tsdb/http"

// testHTTP is the Config.HTTP of the tests' servers: the same wiring as
// `tsdb server`'s (cmd/tsdb's newHTTPServer), copied here because node does
// not import the HTTP server package outside its tests.
func testHTTP(h Handlers) (HTTPServer, error) {
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
