package replica

import (
	"context"
	"fmt"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
)

// Peers is the metadata package's transport to the other metadata servers,
// over the internal API (metadata.Peers; the node gives it to the
// committer, the front end fetches named files through it).
type Peers struct {
	Dir *membership.Directory
	RPC *rpc.Client
}

var _ metadata.Peers = Peers{}

// StoreFile stores a proposed file on a peer; it returns once the peer has
// it durably.
func (p Peers) StoreFile(ctx context.Context, serverID, table, txnID string, encoded []byte) error {
	addr, err := p.Dir.Addr(ctx, serverID)
	if err != nil {
		return err
	}
	req := wire.StoreMetadataRequest{Table: table, TxnID: txnID, Encoded: encoded}
	if err := p.RPC.Call(ctx, addr, wire.PathMetadataStore, req, nil); err != nil {
		return metadata.FromPeer(err)
	}
	return nil
}

// FetchFile fetches a file a peer holds locally. The caller verifies it.
func (p Peers) FetchFile(ctx context.Context, serverID, table, txnID string) ([]byte, error) {
	addr, err := p.Dir.Addr(ctx, serverID)
	if err != nil {
		return nil, err
	}
	var resp wire.FetchMetadataResponse
	req := wire.FetchMetadataRequest{Table: table, TxnID: txnID}
	if err := p.RPC.Call(ctx, addr, wire.PathMetadataFetch, req, &resp); err != nil {
		return nil, metadata.FromPeer(err)
	}
	if resp.TxnID != txnID {
		return nil, fmt.Errorf("%w: asked %s for %s/%s, got txn %s", metadata.ErrCorruptFile, serverID, table, txnID, resp.TxnID)
	}
	return resp.Encoded, nil
}
