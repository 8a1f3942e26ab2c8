// Package api holds the request and response types of tsdb's public HTTP
// API (DESIGN.md section 10) and a typed client of it (client.go: per-request
// timeout, retries of 503 answers after their Retry-After, bearer token, TLS,
// errors carrying status, code and message). `tsdb admin`, the load test and
// the tests speak only this package; the server (package http) encodes the
// same types. The table config and the partition map (TableConfig, File,
// Partition, ..., Duration) are the data model's own types (package model),
// named here by alias; the replicas' states are converted from the internal
// API's (cluster/wire). It also holds the public API's default limits
// (limits.go) and the refusals the server's front end answers with
// (errors.go: ErrOffline, ErrServerNotFound, ErrQueueFull, RetryError), so
// that neither node nor frontend imports the server.
//
// Invariants:
//   - It imports the standard library, uuid and at most the module's leaf
//     packages (model, the error vocabulary): never metadata, the cluster
//     packages or the server, so a client links none of them (no etcd).
//   - The JSON encoding of every type is the API's contract: tables_test.go
//     pins the tables' answers; where a type mirrors a server type
//     (ReplicaStatus, TargetStatus) it encodes to the same bytes, which
//     package http's tests check.
//   - The internal API's types (/internal/...) are in package cluster/wire.
package api

import (
	"time"

	"github.com/tsdb/tsdb/errcode"
)

// Error codes of ErrorBody.Code. Each maps to one HTTP status. The strings
// are declared once, in package errcode, with the table that maps them to
// statuses and sentinels.
const (
	CodeBadRequest       = errcode.CodeBadRequest       // 400
	CodeInvalidTableName = errcode.CodeInvalidTableName // 400
	CodeInvalidRow       = errcode.CodeInvalidRow       // 400
	CodeInvalidQuery     = errcode.CodeInvalidQuery     // 400
	CodeUnauthorized     = errcode.CodeUnauthorized     // 401
	CodeNotFound         = errcode.CodeNotFound         // 404
	CodeTableNotFound    = errcode.CodeTableNotFound    // 404
	CodeMethodNotAllowed = errcode.CodeMethodNotAllowed // 405
	CodeTableExists      = errcode.CodeTableExists      // 409
	CodeTooLarge         = errcode.CodeTooLarge         // 413
	CodeUnsupportedMedia = errcode.CodeUnsupportedMedia // 415
	CodeInternal         = errcode.CodeInternal         // 500
	CodeUnavailable      = errcode.CodeUnavailable      // 503
	// CodeOverloaded (503, with Retry-After): the server already serves
	// as many public requests as --max-concurrent-requests allows.
	CodeOverloaded = errcode.CodeOverloaded
	// CodeTooManyBuckets (422): an aggregate answer would hold more
	// buckets, summed over its series, than --max-query-buckets.
	CodeTooManyBuckets = errcode.CodeTooManyBuckets
	// CodeAnswerTooLarge (422): a partition's part of a query answer is
	// over --max-subquery-bytes.
	CodeAnswerTooLarge = errcode.CodeAnswerTooLarge
)

// ErrorResponse is the body of every error answer:
// {"error": {"code": "...", "message": "..."}}.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody names the problem: a stable code and a human message.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// SmearRequest sets a table's insert smearing (DESIGN.md section 7).
type SmearRequest struct {
	Enabled           *bool     `json:"enabled,omitempty"`
	MaxDelay          *Duration `json:"max_delay,omitempty"`
	KeyrangeThreshold *Duration `json:"keyrange_threshold,omitempty"`
}

// CreateTableRequest is the body of POST /api/v1/tables. Absent fields take
// their defaults.
type CreateTableRequest struct {
	Name                string        `json:"name"`
	ReplicationFactor   int           `json:"replication_factor,omitempty"`
	PartitionSizeTarget int64         `json:"partition_size_target,omitempty"`
	Retention           *Duration     `json:"retention,omitempty"`
	Smear               *SmearRequest `json:"smear,omitempty"`
}

// PatchTableRequest is the body of PATCH /api/v1/tables/{t}: the fields of
// a table that may change after its creation. Only retention may; any
// other field is refused (400 naming it).
type PatchTableRequest struct {
	// Retention replaces the table's retention ("30d", "720h", integer
	// ns; 0 keeps data forever). Required.
	Retention *Duration `json:"retention"`
}

// InsertResponse answers a JSON or NDJSON insert.
type InsertResponse struct {
	Rows int `json:"rows"`
}

// Row is one row of a raw query answer (and of a JSON insert, where Time may
// also be an RFC 3339 string).
type Row struct {
	Time   int64          `json:"time"`
	Series string         `json:"series"`
	Fields map[string]any `json:"fields"`
}

// RawQueryResponse answers a query without agg: rows sorted by (time, series).
type RawQueryResponse struct {
	Rows      []Row `json:"rows"`
	Truncated bool  `json:"truncated"`
	Partial   bool  `json:"partial,omitempty"`
}

// Bucket is one step bucket of an aggregate answer.
type Bucket struct {
	Time   int64              `json:"time"`
	Values map[string]float64 `json:"values"`
}

// SeriesResult is the aggregate answer of one series ("*" for group=none).
type SeriesResult struct {
	Series  string   `json:"series"`
	Buckets []Bucket `json:"buckets"`
}

// AggQueryResponse answers a query with agg.
type AggQueryResponse struct {
	Series  []SeriesResult `json:"series"`
	Partial bool           `json:"partial,omitempty"`
}

// ServerInfo describes one server in GET /api/v1/cluster.
type ServerInfo struct {
	ID        string    `json:"id"`
	Addr      string    `json:"addr"`
	StartedAt time.Time `json:"started_at"`
	// Replicas, Bytes and InsertRowsPerSec are the load the server last
	// published in its membership key (refreshed every ~10 s).
	Replicas         int     `json:"replicas"`
	Bytes            uint64  `json:"bytes"`
	InsertRowsPerSec float64 `json:"insert_rows_per_sec"`
	// Master is true for the server elected master (DESIGN.md section 9).
	Master bool `json:"master,omitempty"`
	// Draining is true for a server an operator is draining (tsdb admin
	// drain), until the drain is undone.
	Draining bool `json:"draining,omitempty"`
	// SmearQueueRows and SmearQueueBytes are the depth of the server's
	// smear queue, as last published.
	SmearQueueRows  int64 `json:"smear_queue_rows"`
	SmearQueueBytes int64 `json:"smear_queue_bytes"`
}

// ClusterResponse answers GET /api/v1/cluster.
type ClusterResponse struct {
	Servers []ServerInfo `json:"servers"`
}

// Headers of the insert and query API.
const (
	HeaderConsistency = "X-TSDB-Consistency"
	HeaderSmear       = "X-TSDB-Smear"
	// HeaderErrorCode carries the error code of an error answered in one
	// of InfluxDB's shapes (on /write, /query, /api/v2/write:
	// {"error":"message"} or {"code","message"}), which have no room for
	// it.
	HeaderErrorCode = "X-Tsdb-Error-Code"
)
