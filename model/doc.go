// Package model holds the data model every other package agrees on: rows, typed
// field values, the per-field versions that drive last-writer-wins merges, the
// hybrid logical clock that assigns those versions, canonical series keys,
// the input limits of DESIGN.md section 1, the aggregate functions and their
// mergeable partial states, the one query type (Query: raw and aggregate,
// from the HTTP API down to a partition's scan, and the JSON query of an
// internal sub-query) and an insert's options (InsertOptions, also the
// options of an internal forwarded insert).
//
// It has no I/O and imports nothing of this module, so storage (partition/),
// the wire layer (http/) and later replication and smearing share one
// definition of a row.
package model
