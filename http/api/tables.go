package api

import (
	"time"

	"github.com/google/uuid"
)

// The tables' part of the API: a table's config and its partition map as
// GET /api/v1/tables[/{t}[/metadata]] answers them. The types mirror the
// server's own (package metadata) field for field, with the same JSON
// encoding (tables_test.go holds both to it), so that a client need not link
// the server's packages.

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

// TableConfig is a table's record (POST /api/v1/tables answers it; DESIGN.md
// section 3).
type TableConfig struct {
	// Name is the table name, [a-z][a-z0-9_]{0,63}.
	Name string `json:"name"`
	// MetadataTxnID and MetadataTxnSeq name the committed METADATA file,
	// MetadataChecksum is the checksum of its encoded bytes.
	MetadataTxnID    string `json:"metadata_txnid"`
	MetadataTxnSeq   uint64 `json:"metadata_txnseq"`
	MetadataChecksum string `json:"metadata_checksum"`
	// MetadataServers are the ids of the servers that store the table's
	// METADATA files.
	MetadataServers []string `json:"metadata_servers"`
	// ReplicationFactor is the number of servers per partition.
	ReplicationFactor int `json:"replication_factor"`
	// PartitionSizeTarget is the size in bytes above which a partition
	// splits.
	PartitionSizeTarget int64 `json:"partition_size_target"`
	// Retention drops whole partitions older than it; 0 keeps data forever.
	Retention Duration `json:"retention"`
	// Smear holds the insert-smearing settings (DESIGN.md section 7).
	Smear SmearConfig `json:"smear"`
	// CreatedAt is when the table was created (UTC).
	CreatedAt time.Time `json:"created_at"`
}

// SmearConfig holds a table's insert-smearing settings.
type SmearConfig struct {
	Enabled           bool     `json:"enabled"`
	MaxDelay          Duration `json:"max_delay"`
	KeyrangeThreshold Duration `json:"keyrange_threshold"`
}

// File is one METADATA file: a table's whole partition map as of a
// transaction (DESIGN.md section 4).
type File struct {
	Table       string `json:"table"`
	TxnID       string `json:"txnid"`
	TxnSeq      uint64 `json:"txnseq"`
	ParentTxnID string `json:"parent_txnid"`
	// Partitions are sorted by Begin and cover the whole time axis.
	Partitions []Partition `json:"partitions"`
}

// Partition returns the partition of f with the given id.
func (f *File) Partition(id uuid.UUID) (*Partition, bool) {
	for i := range f.Partitions {
		if f.Partitions[i].ID == id {
			return &f.Partitions[i], true
		}
	}
	return nil, false
}

// Partition is one entry of the partition map: the range [Begin, End) of the
// time axis (integer ns; nil is open) and the servers that hold it.
type Partition struct {
	ID    uuid.UUID `json:"id"`
	Begin *int64    `json:"begin"`
	End   *int64    `json:"end"`
	// Servers serve reads and writes; Joining receive pushes until
	// JOIN_FINALIZE.
	Servers []Placement `json:"servers"`
	Joining []Placement `json:"joining"`
	// Split is set between SPLIT_BEGIN and SPLIT_FINALIZE/SPLIT_ABORT.
	Split *Split `json:"split,omitempty"`
	// Offline is set by an operator (SET_OFFLINE).
	Offline bool `json:"offline,omitempty"`
}

// Placement is one assignment of a partition to a server.
type Placement struct {
	ServerID    string    `json:"server_id"`
	PlacementID uuid.UUID `json:"placement_id"`
}

// Split is a split in progress: its points and the children that will
// replace the partition.
type Split struct {
	Points   []int64 `json:"points"`
	Children []Child `json:"children"`
}

// Child is a partition-to-be of a split.
type Child struct {
	ID      uuid.UUID   `json:"id"`
	Begin   *int64      `json:"begin"`
	End     *int64      `json:"end"`
	Servers []Placement `json:"servers"`
}
