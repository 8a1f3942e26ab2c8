// Package http serves tsdb's public API (DESIGN.md section 10) on fasthttp:
// table creation and inspection (with each partition's replica states on
// ?replicas=1), inserts as a JSON array, NDJSON or InfluxDB line protocol
// (gzip or zstd bodies accepted; X-TSDB-Consistency picks how many replicas
// must hold the rows), raw and aggregate queries, deletes (POST
// /api/v1/tables/{t}/delete, a JSON body of bounds), a partition's join and
// leave, the decoded METADATA file of a table, /healthz and Prometheus
// /metrics. The InfluxDB routes (/write, /api/v2/write, /query, /ping,
// /health; docs/influx.md) answer as InfluxDB 1.8.10: its version headers,
// its authentication schemes (auth.go: Token, Bearer, basic, u/p, all
// against the one token) and its error shapes (influxerr.go:
// writeAPIError picks the shape by the request's path); /query runs
// InfluxQL through package influx on Config.Influx. The same server
// answers the internal API (/internal/…) that
// servers call on each other, behind the Internal interface: METADATA
// storage and changes, discovery, replication pushes, forwarded inserts,
// sub-queries and replica states; authenticated by the cluster secret only,
// bodies and answers in package cluster/rpc's wire format (zstd JSON),
// errors mapped to their status and code by the one table of package
// errcode (classify; cluster/wire's ErrMoved, ErrStalePlacement and
// ErrInsertOutcomeUnknown, members of errcode's kinds, are the replicas' way
// to pick the replication ones). A peer's error answer that no layer
// translated is answered 500 internal, never with the peer's code.
//
// The package owns decoding, validation and the mapping of errors to HTTP
// statuses; everything else is behind two interfaces: Backend, the public
// API's, which package frontend implements (with the router, the smear
// queue and the metadata committer), and Internal, which package replica
// implements. Only cmd/tsdb imports this package: it builds the server from
// the handlers a node exposes (node.Config.HTTP). A request is
// validated whole before anything is written: a batch with one bad row is
// rejected with a 400 naming the row, never half-applied.
//
// fasthttp reuses a request's memory once its handler returns. Inserts are
// written before the handler returns (to their replicas, or encoded into the
// smear queue's own store), so parsed rows may alias the request body;
// anything that keeps rows longer must copy them first.
package http
