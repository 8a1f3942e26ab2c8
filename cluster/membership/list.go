package membership

import (
	"context"
	"fmt"
	"sort"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// listTimeout bounds a List (a ctx deadline, when earlier, bounds it too).
const listTimeout = DefaultCallTimeout

// List returns the live servers under prefix ("" means "/tsdb/"), sorted by
// id, and the etcd revision they were read at: a watch that starts at
// revision+1 misses nothing. A value that does not decode still counts (the
// key's presence is the liveness signal): it is returned with only its ID
// set. The call is bounded by DefaultCallTimeout, or ctx's deadline when
// earlier.
func List(ctx context.Context, cli *clientv3.Client, prefix string) ([]Info, int64, error) {
	infos, rev, _, err := list(ctx, cli, ServersPrefix(prefix))
	return infos, rev, err
}

// list is List with the decode problems returned for the caller to log.
func list(ctx context.Context, cli *clientv3.Client, serversPrefix string) ([]Info, int64, []error, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, serversPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, nil, fmt.Errorf("membership: list %s: %w", serversPrefix, err)
	}
	infos, problems := decodeList(serversPrefix, resp.Kvs)
	return infos, resp.Header.Revision, problems, nil
}

// decodeList decodes the entries of a read of serversPrefix, sorted by id,
// and returns the decode problems for the caller to log.
func decodeList(serversPrefix string, kvs []*mvccpb.KeyValue) ([]Info, []error) {
	infos := make([]Info, 0, len(kvs))
	var problems []error
	for _, kv := range kvs {
		info, ok, derr := decodeInfo(serversPrefix, kv.Key, kv.Value)
		if derr != nil {
			problems = append(problems, derr)
		}
		if ok {
			infos = append(infos, info)
		}
	}
	sortInfos(infos)
	return infos, problems
}

// sortInfos sorts by id.
func sortInfos(infos []Info) {
	sort.Slice(infos, func(i, j int) bool { return infos[i].ID < infos[j].ID })
}
