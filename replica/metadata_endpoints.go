package replica

import (
	"context"
	"fmt"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
)

// The METADATA exchange of the internal API (/internal/metadata/…,
// /internal/discover), served from this server's committer and file store.

// FetchMetadata serves a file. A named txnid is answered from the local
// store only (peers fetch named files, so two servers lacking a file never
// ask each other in a loop); the current txn (empty txnid) is first made
// present, fetched from the other metadata servers if need be: a metadata
// server that lacks the current txn serves nothing older in its place.
func (s *Server) FetchMetadata(ctx context.Context, req wire.FetchMetadataRequest) (wire.FetchMetadataResponse, error) {
	c := s.committer
	if req.TxnID != "" {
		enc, err := c.LocalFile(req.Table, req.TxnID)
		if err != nil {
			return wire.FetchMetadataResponse{}, err
		}
		h, err := metadata.CheckEncoded(req.Table, req.TxnID, enc)
		if err != nil {
			return wire.FetchMetadataResponse{}, err
		}
		if h.TxnSeq < req.MinTxnSeq {
			return wire.FetchMetadataResponse{}, fmt.Errorf("%w: %s/%s has txnseq %d, %d asked", metadata.ErrStale, req.Table, req.TxnID, h.TxnSeq, req.MinTxnSeq)
		}
		return wire.FetchMetadataResponse{TxnID: req.TxnID, TxnSeq: h.TxnSeq, Encoded: enc}, nil
	}
	cfg, enc, err := c.Current(ctx, req.Table, req.MinTxnSeq)
	if err != nil {
		return wire.FetchMetadataResponse{}, err
	}
	return wire.FetchMetadataResponse{TxnID: cfg.MetadataTxnID, TxnSeq: cfg.MetadataTxnSeq, Encoded: enc}, nil
}

// StoreMetadata stores a proposed file durably after checking that it
// decodes to a valid file of the named table and txn.
func (s *Server) StoreMetadata(ctx context.Context, req wire.StoreMetadataRequest) error {
	if _, err := metadata.CheckEncoded(req.Table, req.TxnID, req.Encoded); err != nil {
		return err
	}
	return s.files.Put(req.Table, req.TxnID, req.Encoded)
}

// ChangeMetadata coordinates a change. Every server, this one included,
// learns the result from its watch of the TableConfigs.
func (s *Server) ChangeMetadata(ctx context.Context, req wire.ChangeMetadataRequest) (wire.ChangeMetadataResponse, error) {
	f, err := s.committer.Change(ctx, req.Table, req.BaseTxnID, req.NewTxnID, req.Op)
	if err != nil {
		return wire.ChangeMetadataResponse{}, err
	}
	enc, err := metadata.Encode(f)
	if err != nil {
		return wire.ChangeMetadataResponse{}, err
	}
	return wire.ChangeMetadataResponse{TxnID: f.TxnID, TxnSeq: f.TxnSeq, Encoded: enc}, nil
}

// JoinMetadata makes this server a metadata server of the table.
func (s *Server) JoinMetadata(ctx context.Context, req wire.JoinMetadataRequest) (wire.JoinMetadataResponse, error) {
	cfg, err := s.committer.JoinMetadataServer(ctx, req.Table)
	if err != nil {
		return wire.JoinMetadataResponse{}, err
	}
	return wire.JoinMetadataResponse{TxnID: cfg.MetadataTxnID, TxnSeq: cfg.MetadataTxnSeq, MetadataServers: cfg.MetadataServers}, nil
}

// Discover runs partition discovery on the current file for another
// server's replicas.
func (s *Server) Discover(ctx context.Context, req wire.DiscoveryRequest) (wire.DiscoveryResponse, error) {
	cfg, enc, err := s.committer.Current(ctx, req.Table, req.MinTxnSeq)
	if err != nil {
		return wire.DiscoveryResponse{}, err
	}
	f, err := metadata.VerifyFile(cfg, enc)
	if err != nil {
		return wire.DiscoveryResponse{}, err
	}
	resp := wire.DiscoveryResponse{TxnID: f.TxnID, TxnSeq: f.TxnSeq, Results: make([]metadata.Discovery, len(req.Replicas))}
	for j, r := range req.Replicas {
		resp.Results[j] = metadata.Discover(f, req.Server, r)
	}
	return resp, nil
}
