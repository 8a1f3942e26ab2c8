package api

import "github.com/tsdb/tsdb/model"

// The tables' part of the API: a table's config and its partition map as
// GET /api/v1/tables[/{t}[/metadata]] answers them.

// TablesResponse answers GET /api/v1/tables.
type TablesResponse struct {
	Tables []TableConfig `json:"tables"`
}

// TableResponse answers GET /api/v1/tables/{t}: the TableConfig and the
// partitions of the current METADATA, sorted by begin.
type TableResponse struct {
	Config     TableConfig `json:"config"`
	Partitions []Partition `json:"partitions"`
}

// MetadataResponse answers GET /api/v1/tables/{t}/metadata: the
// TableConfig and one METADATA file, decoded, in its own JSON form.
type MetadataResponse struct {
	Config   TableConfig `json:"config"`
	Metadata *File       `json:"metadata"`
}

// TableReplicasResponse answers GET /api/v1/tables/{t}?replicas=1: the
// TableConfig and every partition with its replicas' states.
type TableReplicasResponse struct {
	Config     TableConfig         `json:"config"`
	Partitions []PartitionReplicas `json:"partitions"`
}

// The table's config and its partition map are the data model's own types
// (package model), answered as the server holds them: one declaration, one
// JSON encoding, in etcd, in the METADATA file and in these answers.
type (
	// TableConfig is a table's record (POST /api/v1/tables answers it;
	// DESIGN.md section 3).
	TableConfig = model.TableConfig
	// SmearConfig holds a table's insert-smearing settings.
	SmearConfig = model.SmearConfig
	// File is one METADATA file: a table's whole partition map as of a
	// transaction (DESIGN.md section 4).
	File = model.File
	// Partition is one entry of the partition map: the range [Begin, End)
	// of the time axis (integer ns; nil is open) and the servers that hold
	// it.
	Partition = model.Partition
	// Placement is one assignment of a partition to a server.
	Placement = model.Placement
	// Split is a split in progress: its points and the children that will
	// replace the partition.
	Split = model.Split
	// Child is a partition-to-be of a split.
	Child = model.Child
	// Duration is a time.Duration written in JSON as a Go duration string
	// ("120s"); on input an integer number of nanoseconds is accepted too.
	Duration = model.Duration
)
