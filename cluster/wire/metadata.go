package wire

import "github.com/tsdb/tsdb/metadata"

// Paths of the internal API (DESIGN.md section 10). Every internal call is a
// POST of a zstd-compressed JSON body (package cluster/rpc), authenticated by
// the cluster secret when one is configured, never by the public bearer
// token.
const (
	// PathMetadataFetch answers FetchMetadataRequest with FetchMetadataResponse.
	PathMetadataFetch = "/internal/metadata/fetch"
	// PathMetadataStore takes a StoreMetadataRequest; 204 once durable.
	PathMetadataStore = "/internal/metadata/store"
	// PathMetadataChange answers ChangeMetadataRequest with ChangeMetadataResponse.
	PathMetadataChange = "/internal/metadata/change"
	// PathMetadataJoin asks the receiving server to become a metadata server
	// of a table (JoinMetadataRequest → JoinMetadataResponse).
	PathMetadataJoin = "/internal/metadata/join"
	// PathDiscovery answers DiscoveryRequest with DiscoveryResponse.
	PathDiscovery = "/internal/discovery"
)

// FetchMetadataRequest asks a metadata server for a METADATA file.
type FetchMetadataRequest struct {
	// Table names the table.
	Table string `json:"table"`
	// TxnID names the transaction; empty means the current one.
	TxnID string `json:"txnid,omitempty"`
	// MinTxnSeq, when non-zero, is the oldest txnseq the requester accepts
	// for the current file (DESIGN.md rule 8).
	MinTxnSeq uint64 `json:"min_txnseq,omitempty"`
}

// FetchMetadataResponse carries one encoded METADATA file (zstd JSON, as
// stored). The receiver verifies it against the TableConfig it trusts.
type FetchMetadataResponse struct {
	TxnID   string `json:"txnid"`
	TxnSeq  uint64 `json:"txnseq"`
	Encoded []byte `json:"encoded"`
}

// StoreMetadataRequest asks a metadata server to store a proposed file
// durably. A store of the same (table, txnid) succeeds only if the bytes
// match.
type StoreMetadataRequest struct {
	Table   string `json:"table"`
	TxnID   string `json:"txnid"`
	Encoded []byte `json:"encoded"`
}

// ChangeMetadataRequest asks a metadata server to coordinate one change
// (DESIGN.md section 4). NewTxnID is chosen by the requester, so a retry of
// the same request, through any metadata server, is recognised.
type ChangeMetadataRequest struct {
	Table     string      `json:"table"`
	BaseTxnID string      `json:"base_txnid"`
	NewTxnID  string      `json:"new_txnid"`
	Op        metadata.Op `json:"op"`
}

// ChangeMetadataResponse describes the committed transaction.
type ChangeMetadataResponse struct {
	TxnID  string `json:"txnid"`
	TxnSeq uint64 `json:"txnseq"`
	// Encoded is the committed file, so the requester need not fetch it.
	Encoded []byte `json:"encoded"`
}

// JoinMetadataRequest asks the receiver to join a table's metadata servers:
// it downloads the current file, checks it, and CASes itself into
// metadata_servers, starting over if the transaction moved meanwhile.
type JoinMetadataRequest struct {
	Table string `json:"table"`
}

// JoinMetadataResponse names the transaction the joiner holds.
type JoinMetadataResponse struct {
	TxnID           string   `json:"txnid"`
	TxnSeq          uint64   `json:"txnseq"`
	MetadataServers []string `json:"metadata_servers"`
}

// DiscoveryRequest asks a metadata server to run partition discovery for
// replicas held by Server (DESIGN.md section 4).
type DiscoveryRequest struct {
	Table string `json:"table"`
	// Server is the server holding the replicas.
	Server string `json:"server"`
	// MinTxnSeq, when non-zero, is the oldest txnseq the answer may use.
	MinTxnSeq uint64                `json:"min_txnseq,omitempty"`
	Replicas  []metadata.ReplicaRef `json:"replicas"`
}

// DiscoveryResponse holds one answer per requested replica, in order, and
// the transaction they were computed from.
type DiscoveryResponse struct {
	TxnID   string               `json:"txnid"`
	TxnSeq  uint64               `json:"txnseq"`
	Results []metadata.Discovery `json:"results"`
}
