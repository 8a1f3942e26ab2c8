package http

import (
	"context"

	"github.com/tsdb/tsdb/http/api"
)

// Internal is what the internal API (/internal/…, DESIGN.md section 10)
// needs from the rest of the server. Errors are classified like the public
// API's, plus the metadata package's sentinels (conflict, invalid op, not a
// metadata server, stale, no quorum, outcome unknown).
type Internal interface {
	// FetchMetadata returns an encoded METADATA file this server holds.
	FetchMetadata(ctx context.Context, req api.FetchMetadataRequest) (api.FetchMetadataResponse, error)
	// StoreMetadata stores a proposed file durably.
	StoreMetadata(ctx context.Context, req api.StoreMetadataRequest) error
	// ChangeMetadata coordinates one METADATA change.
	ChangeMetadata(ctx context.Context, req api.ChangeMetadataRequest) (api.ChangeMetadataResponse, error)
	// JoinMetadata makes this server a metadata server of a table.
	JoinMetadata(ctx context.Context, req api.JoinMetadataRequest) (api.JoinMetadataResponse, error)
	// Discover runs partition discovery for another server's replicas.
	Discover(ctx context.Context, req api.DiscoveryRequest) (api.DiscoveryResponse, error)
}
