package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// directory is this server's view of the live servers: the membership list
// as the watch last delivered it, with a direct etcd read for an id it does
// not know yet (a server that registered a moment ago).
type directory struct {
	cli    *clientv3.Client
	prefix string

	mu struct {
		sync.Mutex
		servers map[string]membership.Info
	}
}

func newDirectory(cli *clientv3.Client, prefix string) *directory {
	d := &directory{cli: cli, prefix: prefix}
	d.mu.servers = make(map[string]membership.Info)
	return d
}

// set replaces the list (the membership watch's callback).
func (d *directory) set(infos []membership.Info) {
	m := make(map[string]membership.Info, len(infos))
	for _, i := range infos {
		m[i.ID] = i
	}
	d.mu.Lock()
	d.mu.servers = m
	d.mu.Unlock()
}

// refresh reads the list from etcd now.
func (d *directory) refresh(ctx context.Context) ([]membership.Info, error) {
	infos, _, err := membership.List(ctx, d.cli, d.prefix)
	if err != nil {
		return nil, err
	}
	d.set(infos)
	return infos, nil
}

// addr resolves a live server's address for rpc.Client.Call: host:port, or
// https://host:port for a server serving TLS.
func (d *directory) addr(ctx context.Context, id string) (string, error) {
	d.mu.Lock()
	info, ok := d.mu.servers[id]
	d.mu.Unlock()
	if !ok {
		if _, err := d.refresh(ctx); err != nil {
			return "", fmt.Errorf("resolve server %s: %w", id, err)
		}
		d.mu.Lock()
		info, ok = d.mu.servers[id]
		d.mu.Unlock()
	}
	if !ok || info.Addr == "" {
		return "", fmt.Errorf("%w: server %s is not live", errServerDown, id)
	}
	if info.TLS {
		return "https://" + info.Addr, nil // rpc.Client.Call's form of a TLS peer
	}
	return info.Addr, nil
}

// known reports whether id is in the live list as last delivered (no etcd
// read).
func (d *directory) known(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.mu.servers[id]
	return ok
}

// count returns how many servers are live (cheap: no copy).
func (d *directory) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.mu.servers)
}

// live returns the live servers, sorted by id.
func (d *directory) live() []membership.Info {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]membership.Info, 0, len(d.mu.servers))
	for _, i := range d.mu.servers {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b membership.Info) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// errServerDown: a server is not in the membership list.
var errServerDown = errors.New("node: server down")

// peers is the metadata package's transport to the other metadata servers,
// over the internal API.
type peers struct {
	dir *directory
	rpc *rpc.Client
}

var _ metadata.Peers = peers{}

// StoreFile stores a proposed file on a peer; it returns once the peer has
// it durably.
func (p peers) StoreFile(ctx context.Context, serverID, table, txnID string, encoded []byte) error {
	addr, err := p.dir.addr(ctx, serverID)
	if err != nil {
		return err
	}
	req := wire.StoreMetadataRequest{Table: table, TxnID: txnID, Encoded: encoded}
	if err := p.rpc.Call(ctx, addr, wire.PathMetadataStore, req, nil); err != nil {
		return mapRPCError(err)
	}
	return nil
}

// FetchFile fetches a file a peer holds locally. The caller verifies it.
func (p peers) FetchFile(ctx context.Context, serverID, table, txnID string) ([]byte, error) {
	addr, err := p.dir.addr(ctx, serverID)
	if err != nil {
		return nil, err
	}
	var resp wire.FetchMetadataResponse
	req := wire.FetchMetadataRequest{Table: table, TxnID: txnID}
	if err := p.rpc.Call(ctx, addr, wire.PathMetadataFetch, req, &resp); err != nil {
		return nil, mapRPCError(err)
	}
	if resp.TxnID != txnID {
		return nil, fmt.Errorf("%w: asked %s for %s/%s, got txn %s", metadata.ErrCorruptFile, serverID, table, txnID, resp.TxnID)
	}
	return resp.Encoded, nil
}

// mapRPCError turns the internal API's error answers back into the metadata
// package's sentinels, so callers test one set of errors whether the call
// was local or remote.
func mapRPCError(err error) error {
	var se *rpc.StatusError
	if !errors.As(err, &se) {
		return err
	}
	var sentinel error
	switch se.Code {
	case api.CodeConflict:
		sentinel = metadata.ErrConflict
	case api.CodeTxnMismatch:
		sentinel = metadata.ErrTxnMismatch
	case api.CodeStale:
		sentinel = metadata.ErrStale
	case api.CodeInvalidOp:
		sentinel = metadata.ErrInvalidOp
	case api.CodeNotMetadataServer:
		sentinel = metadata.ErrNotMetadataServer
	case api.CodeNoQuorum:
		sentinel = metadata.ErrNoQuorum
	case api.CodeOutcomeUnknown:
		sentinel = metadata.ErrOutcomeUnknown
	case api.CodeTableNotFound:
		sentinel = metadata.ErrTableNotFound
	case api.CodeTableExists:
		sentinel = metadata.ErrTableExists
	case api.CodeNotFound:
		if se.Status == http.StatusNotFound {
			sentinel = metadata.ErrFileNotFound
		}
	}
	if sentinel == nil {
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}
