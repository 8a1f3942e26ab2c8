// Package model holds the data model every other package agrees on: rows, typed
// field values, the per-field versions that drive last-writer-wins merges, the
// hybrid logical clock that assigns those versions, canonical series keys,
// the input limits of DESIGN.md section 1, the aggregate functions and their
// mergeable partial states, the one query type (Query: raw and aggregate,
// from the HTTP API down to a partition's scan, and the JSON query of an
// internal sub-query), an insert's options (InsertOptions, also the
// options of an internal forwarded insert), and a table's config and
// partition map: TableConfig (with SmearConfig and Duration, its defaults,
// EnsureDefaults and Validate) and the METADATA File (Partition, Placement,
// Split, Child; Find, Overlapping, PlacementOf, Clone, Validate). One
// declaration serves etcd's TableConfig JSON, the METADATA file's encoding
// (package metadata stores, commits and names them by alias) and the public
// API's answers (package http/api names them by alias), so the three
// encodings cannot drift apart.
//
// Invariants: it has no I/O and imports nothing of this module but errcode
// (the stdlib-only error vocabulary, of which ErrInvalidConfig and
// ErrInvalidFile are members), so storage (partition/), metadata, the wire
// layer (http/, http/api) and a client of the public API share one
// definition of a row and of a table without linking etcd or the server.
// The JSON field names of TableConfig and File are a contract (etcd, the
// METADATA files on disk, the public API): never rename them.
package model
