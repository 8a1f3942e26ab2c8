package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// Retention (DESIGN.md section 9): every tick the master drops, in one
// DROP_PARTITIONS per table, the oldest partitions that end at or before
// now - retention (metadata.PlanRetention decides). The op records the
// retention horizon in the METADATA, so the dropped replicas' discovery is
// DROP (deleted where they are), never UNLOAD into the first remaining
// partition, and no push carries a row below the horizon. A table with
// retention 0 keeps everything.

// retentionPass drops the expired partitions of every table.
func (m *Master) retentionPass(ctx context.Context, v *clusterView, now time.Time) error {
	var errs []error
	for _, t := range v.tables {
		if t.err != nil || t.file == nil || t.cfg.Retention <= 0 {
			continue
		}
		if err := m.dropExpired(ctx, t.cfg.Name, time.Duration(t.cfg.Retention), now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dropExpired commits the DROP_PARTITIONS of one table, planned against
// the file current at commit time (a split or another drop may have
// committed since the view was read).
func (m *Master) dropExpired(ctx context.Context, table string, retention time.Duration, now time.Time) error {
	cutoff := now.Add(-retention).UnixNano()
	if _, ok := m.plannedDrop(ctx, table, cutoff); !ok {
		return nil
	}
	var op metadata.DropPartitionsOp
	_, err := m.cfg.Changes.RequestChange(ctx, table, func(cfg metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		if cfg.Retention <= 0 || time.Duration(cfg.Retention) != retention {
			return metadata.Op{}, errRepairSettled // retention changed meanwhile; next tick
		}
		var ok bool
		if op, ok = metadata.PlanRetention(f, cutoff); !ok {
			return metadata.Op{}, errRepairSettled
		}
		return metadata.Op{Type: metadata.OpDropPartitions, DropPartitions: &op}, nil
	})
	if errors.Is(err, errRepairSettled) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("table %q: retention drop: %w", table, err)
	}
	if c := m.cfg.Metrics.RetentionDrops; c != nil {
		c.Add(float64(len(op.PartitionIDs)))
	}
	m.log.Info("master: retention dropped partitions", "table", table, "partitions", len(op.PartitionIDs),
		"before", time.Unix(0, cutoff).UTC(), "retention", retention)
	return nil
}

// plannedDrop plans against the router's cached file, so a table with
// nothing to drop costs no etcd round trip.
func (m *Master) plannedDrop(ctx context.Context, table string, cutoff int64) (metadata.DropPartitionsOp, bool) {
	_, f, err := m.cfg.Cache.Table(ctx, table)
	if err != nil {
		return metadata.DropPartitionsOp{}, true // let RequestChange read the current file
	}
	return metadata.PlanRetention(f, cutoff)
}
