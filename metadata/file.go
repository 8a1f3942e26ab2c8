package metadata

import "github.com/tsdb/tsdb/model"

// The partition map's types are model's (package model holds the data
// every package agrees on, and the public API answers them as is); metadata
// names them for its users. Their methods (Find, Overlapping, PlacementOf,
// Clone, Validate, ...) are declared in model.
type (
	// File is the METADATA file of one transaction (model.File).
	File = model.File
	// Partition is one entry of the partition map (model.Partition).
	Partition = model.Partition
	// Placement is one assignment of a partition to a server
	// (model.Placement).
	Placement = model.Placement
	// Split describes a split in progress (model.Split).
	Split = model.Split
	// Child is a partition-to-be of a split (model.Child).
	Child = model.Child
)

// ValidTxnID reports whether s has the form NewTxnID produces
// (model.ValidTxnID).
func ValidTxnID(s string) bool { return model.ValidTxnID(s) }
