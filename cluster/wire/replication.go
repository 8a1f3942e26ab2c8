package wire

import (
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/model"
)

// Internal paths of replication and of the front end's forwarding
// (DESIGN.md sections 5 and 10).
const (
	// PathReplicate takes a PushRequest; answers PushResponse (200, or an
	// empty 204 when it names no sharer, as every older server does) once
	// the rows are synced on the receiver (409 stale_placement when it does
	// not hold ToPlacement as LOAD or SERVE).
	PathReplicate = "/internal/replicate"
	// PathInsert takes a ForwardInsertRequest from a front end to the
	// replica that coordinates the insert; answers ForwardInsertResponse.
	PathInsert = "/internal/insert"
	// PathQuery takes a SubQueryRequest for one partition replica; answers
	// SubQueryResponse.
	PathQuery = "/internal/query"
	// PathMeta takes a MetaQueryRequest for one partition replica (the
	// series keys or field keys it holds); answers MetaQueryResponse.
	PathMeta = "/internal/meta"
	// PathCatchUp takes a CatchUpRequest: the receiving replica pushes the
	// asking replica everything it holds now, and answers 204 once that is
	// confirmed (a quorum read's catch-up, DESIGN.md section 5).
	PathCatchUp = "/internal/catchup"
	// PathReplicas takes a ReplicasRequest; answers ReplicasResponse (the
	// server's local replicas and their replication state).
	PathReplicas = "/internal/replicas"
	// PathSplitPoint takes a SplitPointRequest; answers SplitPointResponse
	// (the split point of one local replica's data, for a manual split
	// through a server that holds no replica of the partition).
	PathSplitPoint = "/internal/splitpoint"
)

// PushRequest carries rows from one replica to another (DESIGN.md section
// 5). Rows is replication's binary row encoding (with every field's
// version).
type PushRequest struct {
	Table string `json:"table"`
	// PartitionID is the target's partition (or split child) id.
	PartitionID uuid.UUID `json:"partition_id"`
	// FromServer and FromPlacement name the sending replica.
	FromServer    string    `json:"from_server"`
	FromPlacement uuid.UUID `json:"from_placement"`
	// ToPlacement is the receiving replica.
	ToPlacement uuid.UUID `json:"to_placement"`
	// TxnSeq is the txnseq of the sender's METADATA (rule 8).
	TxnSeq uint64 `json:"txnseq"`
	// Rows holds Count rows.
	Rows  []byte `json:"rows,omitempty"`
	Count int    `json:"count"`
	// LastSeq is the sender's sequence the push's read reached: the last
	// sequence of a log batch (or the mark, for a batch that ends a mark's
	// snapshot), and the snapshot's sequence H for every batch of a row
	// snapshot (issue 16). Informational (the receiver only requires it
	// to be above 0 when Count is):
	// once the push is confirmed the sender's cursor for the target moves
	// to it only when the batch covers everything up to it, i.e. not after
	// an intermediate batch of a row snapshot (only its last batch claims
	// H) nor after a size-cut log batch that skips a sequence (rule 1).
	LastSeq uint64 `json:"last_seq"`
	// SentAt is the sender's wall clock (ns) when it sent the push: the
	// receiver estimates the clock offset between them (rule 2).
	SentAt int64 `json:"sent_at,omitempty"`
	// Complete tells a joining target that it has received everything
	// the sender had when it first saw the join (its fixed mark).
	Complete bool `json:"complete,omitempty"`
	// Snapshot says the batch was read from a row snapshot (the target
	// is below the sender's log truncation point), not from the log: the
	// sender's moved-data metrics count it as kind snapshot.
	// Informational.
	Snapshot bool `json:"snapshot,omitempty"`
	// SnapshotLogged, with Snapshot, says that every row of the sender's
	// row snapshot is a fold of changes of the sender's own log at or
	// below LastSeq (its data space was never shared:
	// replication.LoggedRowsLog). The receiver then remembers LastSeq as
	// the rows' origin sequence, as for a push read from the log, and
	// its own pushes of them claim them held (Held) at a replica that
	// holds the sender's log that far. Without it a snapshot's rows get
	// none: a shared space holds rows of other placements' logs. (A
	// server from before it refuses pushes carrying it: its JSON decoding
	// is strict.)
	SnapshotLogged bool `json:"snapshot_logged,omitempty"`
	// ClaimsTo, when not 0, is the sequence the sender's cursor for the
	// receiving placement moves to once this push is confirmed: with it
	// applied, the receiver holds every row of the sender's log up to
	// ClaimsTo (those of its range, and those it sent the sender). The
	// receiver remembers it (replication.Applied) to drop the relayed
	// copies of those rows (Relayed). Never above LastSeq; an older
	// sender leaves it 0. A push without rows or claims may carry it too:
	// the sender's cursor moved there without a push (every change it
	// read was the receiver's own, or outside its range), and the
	// receiver records it all the same (replication.Pusher.refreshLevel).
	ClaimsTo uint64 `json:"claims_to,omitempty"`
	// Relayed lists the runs of rows that the sender holds as another
	// replica pushed them (partition.LogEntry.Origin), with a sequence of
	// that replica's log at or above theirs there: a receiver that holds
	// that replica's log up to it (an earlier ClaimsTo from it) drops
	// those rows without looking them up. Optional: a receiver without
	// the filter applies every row. (A server from before it refuses
	// pushes carrying it: its JSON decoding is strict.)
	Relayed []RelaySpan `json:"relayed,omitempty"`
	// Own lists the runs of rows that the sender's log holds as its own
	// changes (partition.LogEntry.Origin is nil: written or merged there,
	// not stored as another replica pushed them). The receiver writes
	// them without reading its stored rows (partition.Push.Own), and
	// looks up the others, which ends their relaying (docs/safety.md,
	// rule 2). Optional: a receiver looks up every row of a push without
	// it, and a row snapshot's batch has none. (A server from before it
	// refuses pushes carrying it: its JSON decoding is strict.)
	Own []Span `json:"own,omitempty"`
	// Held lists relayed rows the push leaves out (issue 16): rows the
	// sender holds as the replica Origin pushed them, each at a sequence
	// of Origin's log at most Seq (partition.LogEntry.OriginSeq), which
	// the receiver holds if it applied Origin's pushes up to Seq (an
	// earlier ClaimsTo from Origin, replication.Applied). Rows counts
	// them. The receiver answers, in PushResponse.Unheld, the origins of
	// the claims it cannot confirm, after waiting briefly for their own
	// pushes; the sender then pushes those rows before it counts the push
	// as confirmed. Only a push to a replica target carries it. (A server
	// from before it refuses pushes carrying it: its JSON decoding is
	// strict.)
	Held []HeldRelay `json:"held,omitempty"`
}

// HeldRelay is a claim of a push (PushRequest.Held): the sender left
// out Rows rows relayed from the replica placement Origin, whose log
// holds each of them at a sequence at most Seq.
type HeldRelay struct {
	Origin uuid.UUID `json:"origin"`
	Seq    uint64    `json:"seq"`
	Rows   int       `json:"rows"`
}

// Span is a run of rows of a push, Rows[Start:End] in the order of the
// push's rows.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// RelaySpan is a run of rows of a push, Rows[Start:End] in the order of
// the push's rows, relayed from the replica placement Origin, whose log
// holds each of them at a sequence at most Seq.
type RelaySpan struct {
	Start  int       `json:"start"`
	End    int       `json:"end"`
	Origin uuid.UUID `json:"origin"`
	Seq    uint64    `json:"seq"`
}

// PushResponse answers a PushRequest. An empty answer (no body) reads as
// the zero value: a receiver that names nothing.
type PushResponse struct {
	// Shares names the live replicas on the receiver's server that share
	// the target's data space and whose ranges cover the target's
	// (partition.Replica.CoveringSharers): every row one of them holds in
	// the target's range, the target holds too. A sender whose cursor for
	// one of them is above its cursor for the target may raise the
	// target's to it, without a push (issue 16: a split child on a server
	// that holds the parent receives nothing the parent has).
	Shares []uuid.UUID `json:"shares,omitempty"`
	// Unheld names the origins of the push's Held claims that the
	// receiver could not confirm, each with how far it holds that
	// origin's log (0: nothing known): it has not applied the origin's
	// pushes up to the claimed sequence. The push's rows are applied, but
	// its ClaimsTo is not recorded, and the sender must push the rows it
	// left out for those origins at sequences there above that level
	// before it counts the push as confirmed.
	Unheld []OriginLevel `json:"unheld,omitempty"`
}

// OriginLevel is how far a receiving replica holds the log of the replica
// placement Origin: every row of it up to Seq (PushResponse.Unheld).
type OriginLevel struct {
	Origin uuid.UUID `json:"origin"`
	Seq    uint64    `json:"seq"`
}

// ForwardInsertRequest asks the replica ToPlacement of a partition to
// coordinate an insert: stamp versions, write synced, and acknowledge when
// the consistency level's count of replicas has the rows.
type ForwardInsertRequest struct {
	Table       string    `json:"table"`
	PartitionID uuid.UUID `json:"partition_id"`
	ToPlacement uuid.UUID `json:"to_placement"`
	TxnSeq      uint64    `json:"txnseq"`
	// InsertOptions are the insert's options, inlined in the JSON form
	// ("consistency", "versioned"; NoSmear is not sent: the front end
	// decided it). Versioned rows carry the versions their first front end
	// stamped (a smeared insert); otherwise the coordinator stamps them.
	model.InsertOptions
	// Rows is replication's binary row encoding (versions unset unless
	// Versioned).
	Rows  []byte `json:"rows"`
	Count int    `json:"count"`
}

// ForwardInsertResponse acknowledges a forwarded insert.
type ForwardInsertResponse struct {
	Rows int `json:"rows"`
}

// SubQueryRequest asks one replica of a partition for its part of a query.
// Its JSON form is the query's own (model.Query's fields are inlined) beside
// the partition's address, Agg and MaxBytes.
type SubQueryRequest struct {
	Table       string    `json:"table"`
	PartitionID uuid.UUID `json:"partition_id"`
	ToPlacement uuid.UUID `json:"to_placement"`
	TxnSeq      uint64    `json:"txnseq"`
	// Query is the partition's part of the query, clipped to its range
	// by the caller (model.Query.Clip). Its Consistency "quorum" or "all"
	// makes the replica first catch up from that many of its peers; "" or
	// "one" reads it as it is. Its MaxBuckets is the front end's
	// --max-query-buckets (0: the replica's own). Its MaxBytes is not
	// sent: the replica derives its scan's bound from MaxBytes below.
	model.Query
	// Agg asks for partial aggregates (the query's Step, Origin, GroupAll
	// and MaxBuckets) instead of raw rows (its Limit; 0: none).
	Agg bool `json:"agg,omitempty"`
	// MaxBytes is the most the front end reads of the answer (its
	// --max-subquery-bytes; 0: the replica's own): the replica refuses
	// with the code answer_too_large rather than send more. It shadows
	// Query.MaxBytes in the JSON form.
	MaxBytes int `json:"max_bytes,omitempty"`
}

// The kinds of a MetaQueryRequest.
const (
	// MetaSeriesKeys asks for the keys of the series matching the query
	// (partition.Replica.SeriesKeys).
	MetaSeriesKeys = "series_keys"
	// MetaFieldKeys asks for the field names and kinds of the query's
	// Measurement ("" = all) (partition.Replica.FieldKeys).
	MetaFieldKeys = "field_keys"
)

// MetaQueryRequest asks one replica of a partition for its part of a
// metadata query: the series keys (Kind MetaSeriesKeys) or field keys
// (MetaFieldKeys) it holds. The replica is chosen, brought up to date
// (Query.Consistency) and refused as moved exactly as for a SubQueryRequest.
type MetaQueryRequest struct {
	Table       string    `json:"table"`
	PartitionID uuid.UUID `json:"partition_id"`
	ToPlacement uuid.UUID `json:"to_placement"`
	TxnSeq      uint64    `json:"txnseq"`
	// Kind is MetaSeriesKeys or MetaFieldKeys.
	Kind string `json:"kind"`
	// Query selects the series (Series, Prefix, Measurement, Tags; its
	// time range is ignored) and carries the read's Consistency. For
	// field keys only its Measurement and Consistency are read.
	Query model.Query `json:"query"`
	// Limit is the most series keys answered (the smallest ones); 0: all.
	Limit int `json:"limit,omitempty"`
}

// MetaQueryResponse is a replica's answer to a MetaQueryRequest, sorted:
// series keys by key, field keys by measurement, then name.
type MetaQueryResponse struct {
	SeriesKeys []string         `json:"series_keys,omitempty"`
	FieldKeys  []model.FieldKey `json:"field_keys,omitempty"`
}

// CatchUpRequest asks the replica FromPlacement of a partition to push the
// replica ToPlacement (on ToServer) everything it holds at this moment.
type CatchUpRequest struct {
	Table         string    `json:"table"`
	PartitionID   uuid.UUID `json:"partition_id"`
	FromPlacement uuid.UUID `json:"from_placement"`
	ToPlacement   uuid.UUID `json:"to_placement"`
	ToServer      string    `json:"to_server"`
	TxnSeq        uint64    `json:"txnseq"`
}

// SubQueryResponse holds raw rows (replication's row encoding) or partial
// aggregate states (replication's aggregate encoding).
type SubQueryResponse struct {
	Rows      []byte `json:"rows,omitempty"`
	Count     int    `json:"count,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Aggs      []byte `json:"aggs,omitempty"`
}

// ReplicasRequest asks a server for its local replicas, of one table or
// (empty) of all.
type ReplicasRequest struct {
	Table string `json:"table,omitempty"`
	// Placement, when set, asks for that one replica (a split's
	// finalizer reads one parent replica's targets per server).
	Placement uuid.UUID `json:"placement,omitzero"`
	// NoBytes leaves Bytes 0: the size estimates read pebble's index and
	// the memory head of every replica, which a caller reading only the
	// targets does not need.
	NoBytes bool `json:"no_bytes,omitempty"`
	// Counts asks for each replica's row count and checksum, a full scan
	// of it; without it Rows is -1 and Checksum empty (what a split's
	// finalizer, which reads only the targets, asks for).
	Counts bool `json:"counts,omitempty"`
	// SizeScan, when set, makes Bytes the larger of the disk estimate and
	// a key scan stopping past SizeScan bytes for each replica whose
	// estimate is below it, so rows not yet flushed count (the master's
	// pre-split rate estimate).
	SizeScan uint64 `json:"size_scan,omitempty"`
	// SizeScanAfter limits SizeScan to the replicas whose range ends
	// after it (integer ns; an open end always does).
	SizeScanAfter int64 `json:"size_scan_after,omitempty"`
	// SizeScanBefore, when set, limits SizeScan further to the replicas
	// whose range ends at or before it (integer ns; an open end never
	// does): the master measures only the partitions that closed
	// recently, the only ones whose size still changes and counts for
	// its rate estimate. A server from before it scans more, not less.
	SizeScanBefore int64 `json:"size_scan_before,omitempty"`
}

// SizeScanned reports whether req asks for a key scan of a replica whose
// range ends at end (nil: open).
func (req ReplicasRequest) SizeScanned(end *int64) bool {
	switch {
	case req.SizeScan == 0:
		return false
	case end == nil:
		return req.SizeScanBefore == 0
	}
	return *end > req.SizeScanAfter && (req.SizeScanBefore == 0 || *end <= req.SizeScanBefore)
}

// ReplicasResponse lists a server's local replicas.
type ReplicasResponse struct {
	Server   string          `json:"server"`
	Replicas []ReplicaStatus `json:"replicas"`
}

// PartitionReplicas, ReplicaStatus and TargetStatus are the replica states a
// server answers on /internal/replicas and the front end gathers for GET
// /api/v1/tables/{t}?replicas=1: the public API's types, one declaration
// for both (a discovery status and a target kind travel as their strings,
// string(metadata.StatusServe), string(metadata.TargetSplit), ...).
type (
	PartitionReplicas = api.PartitionReplicas
	ReplicaStatus     = api.ReplicaStatus
	TargetStatus      = api.TargetStatus
)

// SplitPointRequest asks a server for the split point of its replica
// Placement of partition PartitionID.
type SplitPointRequest struct {
	Table       string    `json:"table"`
	PartitionID uuid.UUID `json:"partition_id"`
	Placement   uuid.UUID `json:"placement"`
	TxnSeq      uint64    `json:"txnseq"`
}

// SplitPointResponse is a replica's split point: a time with rows on both
// sides, near the middle of its data by bytes.
type SplitPointResponse struct {
	At int64 `json:"at"`
}

// SplitPayload sends Rows after the push's JSON, not inside it as base64
// (rpc.PayloadRequest).
func (r PushRequest) SplitPayload() (header any, payload []byte) {
	rows := r.Rows
	r.Rows = nil
	return r, rows
}

// SetPayload takes the rows sent after the JSON (rpc.PayloadReceiver).
func (r *PushRequest) SetPayload(payload []byte) {
	if len(payload) > 0 {
		r.Rows = payload
	}
}

// SplitPayload sends Rows after the request's JSON, not inside it as
// base64 (rpc.PayloadRequest).
func (r ForwardInsertRequest) SplitPayload() (header any, payload []byte) {
	rows := r.Rows
	r.Rows = nil
	return r, rows
}

// SetPayload takes the rows sent after the JSON (rpc.PayloadReceiver).
func (r *ForwardInsertRequest) SetPayload(payload []byte) {
	if len(payload) > 0 {
		r.Rows = payload
	}
}
