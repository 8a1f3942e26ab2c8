package http

import (
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// The conversions from the backend's types (metadata, cluster/wire) to the
// public API's (http/api), whose JSON encoding is the same: nil stays nil
// (JSON null) and an empty slice stays empty ([]). http/api's tests hold
// both encodings to each other.

func apiTableConfig(c metadata.TableConfig) api.TableConfig {
	return api.TableConfig{
		Name: c.Name, MetadataTxnID: c.MetadataTxnID, MetadataTxnSeq: c.MetadataTxnSeq,
		MetadataChecksum: c.MetadataChecksum, MetadataServers: c.MetadataServers,
		ReplicationFactor: c.ReplicationFactor, PartitionSizeTarget: c.PartitionSizeTarget,
		Retention: api.Duration(c.Retention),
		Smear: api.SmearConfig{Enabled: c.Smear.Enabled, MaxDelay: api.Duration(c.Smear.MaxDelay),
			KeyrangeThreshold: api.Duration(c.Smear.KeyrangeThreshold)},
		CreatedAt: c.CreatedAt,
	}
}

func apiTableConfigs(cs []metadata.TableConfig) []api.TableConfig {
	return convertSlice(cs, apiTableConfig)
}

func apiFile(f *metadata.File) *api.File {
	if f == nil {
		return nil
	}
	return &api.File{Table: f.Table, TxnID: f.TxnID, TxnSeq: f.TxnSeq, ParentTxnID: f.ParentTxnID,
		Partitions: apiPartitions(f.Partitions)}
}

func apiPartitions(ps []metadata.Partition) []api.Partition {
	return convertSlice(ps, apiPartition)
}

func apiPartition(p metadata.Partition) api.Partition {
	out := api.Partition{ID: p.ID, Begin: p.Begin, End: p.End, Servers: apiPlacements(p.Servers),
		Joining: apiPlacements(p.Joining), Offline: p.Offline}
	if p.Split != nil {
		out.Split = &api.Split{Points: p.Split.Points, Children: convertSlice(p.Split.Children, func(c metadata.Child) api.Child {
			return api.Child{ID: c.ID, Begin: c.Begin, End: c.End, Servers: apiPlacements(c.Servers)}
		})}
	}
	return out
}

func apiPlacements(ps []metadata.Placement) []api.Placement {
	return convertSlice(ps, func(p metadata.Placement) api.Placement { return api.Placement(p) })
}

func apiPartitionReplicas(ps []wire.PartitionReplicas) []api.PartitionReplicas {
	return convertSlice(ps, func(p wire.PartitionReplicas) api.PartitionReplicas {
		return api.PartitionReplicas{Partition: apiPartition(p.Partition), Replicas: convertSlice(p.Replicas, apiReplicaStatus)}
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
