// Package http serves tsdb's public API (DESIGN.md section 10) on fasthttp:
// table creation and inspection, inserts as a JSON array, NDJSON or InfluxDB
// line protocol (gzip or zstd bodies accepted), raw and aggregate queries,
// /healthz and Prometheus /metrics.
//
// The package owns decoding, validation and the mapping of errors to HTTP
// statuses; everything else is behind the Backend interface, which the node
// package implements with the router and the metadata committer. A request is
// validated whole before anything is written: a batch with one bad row is
// rejected with a 400 naming the row, never half-applied.
//
// fasthttp reuses a request's memory once its handler returns. Inserts are
// written to storage before the handler returns, so parsed rows may alias the
// request body; anything that keeps rows longer (the smear queue, later) must
// copy them first.
package http
