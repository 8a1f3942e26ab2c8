package node

// Temporary: the issue-4 seams, being implemented now.

import (
	"context"
	"errors"

	"github.com/google/uuid"

	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

var errTODO = errors.New("not implemented yet")

func (i internal) Replicate(ctx context.Context, req api.PushRequest) error { return errTODO }
func (i internal) ForwardInsert(ctx context.Context, req api.ForwardInsertRequest) (api.ForwardInsertResponse, error) {
	return api.ForwardInsertResponse{}, errTODO
}
func (i internal) SubQuery(ctx context.Context, req api.SubQueryRequest) (api.SubQueryResponse, error) {
	return api.SubQueryResponse{}, errTODO
}
func (i internal) Replicas(ctx context.Context, req api.ReplicasRequest) (api.ReplicasResponse, error) {
	return api.ReplicasResponse{}, errTODO
}
func (b backend) Replicas(ctx context.Context, table string) ([]api.PartitionReplicas, error) {
	return nil, errTODO
}
func (b backend) JoinServer(ctx context.Context, table string, p uuid.UUID, req api.ServerChangeRequest) (*metadata.File, error) {
	return nil, errTODO
}
func (b backend) RemoveServer(ctx context.Context, table string, p uuid.UUID, req api.ServerChangeRequest) (*metadata.File, error) {
	return nil, errTODO
}

var _ = tsdbhttp.InsertOptions{}
