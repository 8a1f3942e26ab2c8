package http

import (
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
)

// The conversions from the internal API's replica states (cluster/wire) to
// the public API's (http/api), whose JSON encoding is the same: nil stays nil
// (JSON null) and an empty slice stays empty ([]). apiconv_test.go holds
// both encodings to each other. The table config and the partition map need
// none: the public API answers model's types as the server holds them.

func apiPartitionReplicas(ps []wire.PartitionReplicas) []api.PartitionReplicas {
	return convertSlice(ps, func(p wire.PartitionReplicas) api.PartitionReplicas {
		return api.PartitionReplicas{Partition: p.Partition, Replicas: convertSlice(p.Replicas, apiReplicaStatus)}
	})
}

func apiReplicaStatus(r wire.ReplicaStatus) api.ReplicaStatus {
	return api.ReplicaStatus{
		Server: r.Server, Table: r.Table, PartitionID: r.PartitionID, Placement: r.Placement,
		Begin: r.Begin, End: r.End, Status: string(r.Status), TxnSeq: r.TxnSeq, Rows: r.Rows,
		Checksum: r.Checksum, Bytes: r.Bytes, HighSeq: r.HighSeq, SyncedSeq: r.SyncedSeq,
		Targets: convertSlice(r.Targets, func(t wire.TargetStatus) api.TargetStatus {
			return api.TargetStatus{Server: t.Server, Placement: t.Placement, PartitionID: t.PartitionID,
				Kind: string(t.Kind), Mark: t.Mark, MarkReached: t.MarkReached, Confirmed: t.Confirmed,
				Lag: t.Lag, LastError: t.LastError, LastPush: t.LastPush}
		}),
	}
}

// convertSlice applies f to each element of in; nil stays nil.
func convertSlice[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
