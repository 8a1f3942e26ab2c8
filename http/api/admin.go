package api

import (
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/errcode"
)

// The operator's API (DESIGN.md section 9; tsdb admin stale, drain, move,
// offline, online, rebalance). Every manual action is recorded where it
// can be seen until it is undone: offline in the partition's METADATA
// entry, a drain in etcd (<prefix>drain/<server>), and both are listed by
// GET /api/v1/cluster/health until undone.
//
//	POST   /api/v1/tables/{t}/partitions/{p}/offline  SET_OFFLINE; answers ChangeResponse
//	POST   /api/v1/tables/{t}/partitions/{p}/online   SET_OFFLINE back; answers ChangeResponse
//	POST   /api/v1/servers/{id}/drain                 marks the server draining; answers DrainResponse
//	DELETE /api/v1/servers/{id}/drain                 clears the mark; answers DrainResponse
//	POST   /api/v1/cluster/rebalance                  asks the master to rebalance; answers RebalanceResponse (202)
//	GET    /api/v1/cluster/health                     answers HealthResponse
//
// A move (tsdb admin move) is a JOIN_SERVER of the new server through
// …/partitions/{p}/join, a wait for its JOIN_FINALIZE, then a
// REMOVE_SERVER of the old one through …/partitions/{p}/leave.

// Error codes of the operator's API.
const (
	// CodeOffline (503): the partition was taken out of service by an
	// operator (tsdb admin offline); inserts into it and queries of it
	// fail until it is back online.
	CodeOffline = errcode.CodeOffline
	// CodeServerNotFound (404): no live or listed server has that id.
	CodeServerNotFound = errcode.CodeServerNotFound
	// CodeQueueFull (503, with Retry-After): the receiving server's smear
	// queue is full; retry after the given seconds, or elsewhere.
	CodeQueueFull = errcode.CodeQueueFull
)

// ChangeResponse answers a METADATA change made by an operator: the
// transaction that holds it.
type ChangeResponse struct {
	TxnID  string `json:"txnid"`
	TxnSeq uint64 `json:"txnseq"`
}

// DrainResponse answers a drain or undrain.
type DrainResponse struct {
	Server   string `json:"server"`
	Draining bool   `json:"draining"`
	// Since is when the drain was asked (zero when not draining).
	Since time.Time `json:"since,omitzero"`
}

// RebalanceResponse answers POST /api/v1/cluster/rebalance.
type RebalanceResponse struct {
	// RequestedAt is the time recorded for the master to act on.
	RequestedAt time.Time `json:"requested_at"`
}

// HealthResponse answers GET /api/v1/cluster/health: every server with the
// partition replicas the METADATA assigns it, and every problem found.
// Problems empty means healthy (tsdb admin stale exits 0).
type HealthResponse struct {
	// Servers are the live servers and the servers listed in any
	// METADATA, sorted by id.
	Servers []ServerHealth `json:"servers"`
	// Problems are sorted by kind, table, partition and server.
	Problems []Problem `json:"problems"`
	// Mean is the mean number of partition replicas per live,
	// non-draining server; Balanced is true when every such server's
	// count is within one of it and nothing is moving.
	Mean     float64 `json:"mean"`
	Balanced bool    `json:"balanced"`
}

// ServerHealth is one server in a HealthResponse.
type ServerHealth struct {
	ID   string `json:"id"`
	Addr string `json:"addr,omitempty"`
	// Live: the server's membership key exists (its lease is renewed).
	Live     bool `json:"live"`
	Draining bool `json:"draining,omitempty"`
	Master   bool `json:"master,omitempty"`
	// Partitions counts the placements the METADATA of every table gives
	// the server: servers[], joining[] and split children.
	Partitions int `json:"partitions"`
	// Joining counts those of them still in joining[].
	Joining int `json:"joining,omitempty"`
}

// Problem kinds of a HealthResponse.
const (
	// ProblemUnderReplicated: a partition has fewer live servers than its
	// table's replication factor.
	ProblemUnderReplicated = "under_replicated"
	// ProblemOverReplicated: a partition lists more servers than the
	// factor with nothing joining (a move or join left halfway).
	ProblemOverReplicated = "over_replicated"
	// ProblemLeaseExpired: a server listed in a METADATA has no
	// membership key (its lease was not renewed).
	ProblemLeaseExpired = "lease_expired"
	// ProblemMissingRange: a table's partition map has a gap or an
	// overlap, or its METADATA could not be read.
	ProblemMissingRange = "missing_range"
	// ProblemOffline: an operator took a partition offline.
	ProblemOffline = "offline"
	// ProblemDraining: an operator marked a server draining.
	ProblemDraining = "draining"
	// ProblemMetadataServers: a table has fewer live metadata servers
	// than it should.
	ProblemMetadataServers = "metadata_servers"
	// ProblemNoMaster: no server is master.
	ProblemNoMaster = "no_master"
)

// Problem is one finding of GET /api/v1/cluster/health.
type Problem struct {
	Kind      string     `json:"kind"`
	Table     string     `json:"table,omitempty"`
	Partition *uuid.UUID `json:"partition,omitempty"`
	Server    string     `json:"server,omitempty"`
	Message   string     `json:"message"`
}
