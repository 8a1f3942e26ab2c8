package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// LostMark is a server's request to the master about one of its placements
// whose data is gone (a wiped disk, DESIGN.md section 5): remove the
// server from the partition and join it again under a new placement. It is
// stored at LostPrefix + placement id, put and cleared by the server that
// lost the placement (cleared once the METADATA no longer lists it).
type LostMark struct {
	// Server is the server that lost the placement.
	Server string `json:"server_id"`
	// Table is the placement's table.
	Table string `json:"table"`
	// PartitionID is the partition the placement is a replica of.
	PartitionID uuid.UUID `json:"partition_id"`
	// Placement is the lost placement.
	Placement uuid.UUID `json:"placement_id"`
	// Since is when the server marked it.
	Since time.Time `json:"since"`
}

// LostPrefix is the etcd prefix of the lost-placement marks under prefix
// ("" means "/tsdb/").
func LostPrefix(prefix string) string { return normalize(prefix) + "lost/" }

// MarkLost stores m (replacing an older mark of the same placement).
func MarkLost(ctx context.Context, cli *clientv3.Client, prefix string, m LostMark) error {
	if m.Server == "" || m.Placement == uuid.Nil {
		return fmt.Errorf("operator: lost mark without a server or placement: %+v", m)
	}
	val, err := json.Marshal(m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := cli.Put(ctx, LostPrefix(prefix)+m.Placement.String(), string(val)); err != nil {
		return fmt.Errorf("operator: mark placement %s lost: %w", m.Placement, err)
	}
	return nil
}

// ClearLost deletes the mark of placement, if any.
func ClearLost(ctx context.Context, cli *clientv3.Client, prefix string, placement uuid.UUID) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := cli.Delete(ctx, LostPrefix(prefix)+placement.String()); err != nil {
		return fmt.Errorf("operator: clear the lost mark of placement %s: %w", placement, err)
	}
	return nil
}

// Lost returns the lost-placement marks by placement. Unreadable marks are
// skipped (their server re-puts them).
func Lost(ctx context.Context, cli *clientv3.Client, prefix string) (map[uuid.UUID]LostMark, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	p := LostPrefix(prefix)
	resp, err := cli.Get(ctx, p, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("operator: read the lost-placement marks: %w", err)
	}
	out := make(map[uuid.UUID]LostMark, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var m LostMark
		if err := json.Unmarshal(kv.Value, &m); err != nil || m.Placement.String() != strings.TrimPrefix(string(kv.Key), p) {
			continue
		}
		out[m.Placement] = m
	}
	return out, nil
}
