// Package wire holds the request and response types of tsdb's internal API
// (DESIGN.md section 10): the POSTs under /internal/... that servers send
// each other through package cluster/rpc. They are METADATA fetch, store,
// change and join and partition discovery (metadata.go), and replication's
// pushes, forwarded inserts, sub-queries, metadata sub-queries (series
// keys, field keys), catch-ups, replica surveys and split points
// (replication.go).
//
// Invariants:
//   - The JSON field names are a contract between servers of one cluster
//     (a rolling upgrade runs two versions side by side): rename nothing,
//     and add only fields whose zero value means what their absence meant.
//   - The package declares types and paths only: no behaviour, no I/O. It
//     imports metadata and model (and the error vocabulary) and nothing
//     above them, so that partition, replication, router and the cluster
//     code can all speak it.
//   - The public API's types (what clients and `tsdb admin` send and read)
//     are in package http/api, which does not import this one. Where the
//     public API shows an internal value (a replica's state in GET
//     /api/v1/tables/{t}?replicas=1) the HTTP server converts this package's
//     type into http/api's, whose JSON encoding is the same.
package wire
