// Package router is the front end of a tsdb server (DESIGN.md sections 6 and
// 11): it keeps a cache of each table's METADATA, routes every row of an insert
// to the partition whose [begin, end) covers its time, stamps the rows with a
// version from the server's hybrid logical clock (once, at the first server
// that accepts them), and fans queries (model.Query, raw or aggregate) out to
// every overlapping partition, clipping each to its range (Query.Clip) and
// merging the answers.
//
// Today every partition of a table has its replicas on the server that
// created it, so routing ends at a local replica. The seams for the multi-
// server issues are the MetaSource interface (where METADATA comes from) and
// the per-partition write and read functions, which will grow a remote branch.
//
// A local replica is created only when the current METADATA lists this
// server's placement for the partition (DESIGN.md rule 4); the partition store
// refuses to re-create a dropped placement.
package router
