// Package model holds the data model every other package agrees on: rows, typed
// field values, the per-field versions that drive last-writer-wins merges, the
// hybrid logical clock that assigns those versions, canonical series keys, and
// the input limits of DESIGN.md section 1.
//
// It has no I/O and imports nothing of this module, so storage (partition/),
// the wire layer (http/) and later replication and smearing share one
// definition of a row.
package model
