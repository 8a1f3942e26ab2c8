package frontend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/internal/backoff"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// Retention, PATCH and DELETE of a table (docs/api.md, docs/master.md).

// changeAttempts bounds the read → CAS rounds of a TableConfig change
// that loses to concurrent METADATA commits.
const changeAttempts = 20

// dropWait bounds how long DELETE waits for the live servers to drop
// their replicas once the TableConfig is gone (they finish on their own).
const dropWait = 30 * time.Second

// DropTable drops a table (DELETE /api/v1/tables/{t}); see dropTable.
func (fe *Frontend) DropTable(ctx context.Context, name string, force bool) error {
	return fe.dropTable(ctx, name, force)
}

// dropTable drops a table: its TableConfig, then, on every server, its
// local replicas (with tombstones, rule 4) and, by the sweep, its METADATA
// files. It fails with metadata.ErrTableNotFound for an unknown table,
// and with metadata.ErrConflict (409) while a partition splits unless
// force is set.
//
// The order makes a crash harmless at every step: the only step that
// changes anything shared is the deletion of the TableConfig from etcd (a
// compare-and-swap on the revision read, so a change committed meanwhile
// is seen and re-checked). Before it, nothing changed and a retry starts
// over; after it, the table does not exist, its name can be created
// again at once, and every server drops what it holds of the old table on
// its own (watch event, reconciliation, or the generation check of a
// re-created name: replica.Server), whether or not this call returns.
// A retry after the deletion answers 404. The call then waits, up to
// dropWait, for every live server to hold no replica of the table, so
// that its disk space is free when it returns.
func (fe *Frontend) dropTable(ctx context.Context, name string, force bool) error {
	if err := model.ValidateTableName(name); err != nil {
		return err
	}
	var last error
	for attempt := range changeAttempts {
		if attempt > 0 && !backoff.Sleep(ctx, time.Duration(attempt)*20*time.Millisecond) {
			return ctx.Err()
		}
		cfg, rev, err := fe.tables.GetTable(ctx, name)
		if err != nil {
			return err
		}
		if !force {
			if err := fe.refuseSplitting(ctx, cfg); err != nil {
				return err
			}
		}
		err = fe.tables.DeleteTable(ctx, name, rev)
		if err == nil {
			fe.log.Info("table dropped", "table", name, "force", force, "txnid", cfg.MetadataTxnID)
			fe.waitDropped(ctx, name)
			return nil
		}
		last = err
		if !errors.Is(err, metadata.ErrConflict) {
			// The delete may have landed: a re-read answers.
			if _, _, gerr := fe.tables.GetTable(ctx, name); errors.Is(gerr, metadata.ErrTableNotFound) {
				fe.waitDropped(ctx, name)
				return nil
			}
		}
	}
	return fmt.Errorf("drop table %q: %w", name, last)
}

// refuseSplitting fails with a conflict when a partition of the table's
// current METADATA is splitting.
func (fe *Frontend) refuseSplitting(ctx context.Context, cfg metadata.TableConfig) error {
	_, file, err := fe.committer.Load(ctx, cfg.Name)
	if err != nil {
		return err
	}
	for i := range file.Partitions {
		if p := &file.Partitions[i]; p.Split != nil {
			return fmt.Errorf("%w: table %q: partition %s is splitting; retry once the split has finished, or drop anyway with ?force=true",
				metadata.ErrConflict, cfg.Name, p.ID)
		}
	}
	return nil
}

// waitDropped waits, up to dropWait, until no live server reports a
// replica of the table. A server that does not answer is skipped: it
// drops its replicas when it next reconciles.
func (fe *Frontend) waitDropped(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(ctx, dropWait)
	defer cancel()
	for attempt := 0; ; attempt++ {
		left := 0
		for _, s := range fe.servers.Live() {
			resp, err := fe.replicas.ReplicasOn(ctx, s.ID, wire.ReplicasRequest{Table: name, NoBytes: true})
			if err == nil {
				left += len(resp.Replicas)
			}
		}
		if left == 0 {
			return
		}
		if !backoff.Sleep(ctx, 100*time.Millisecond) {
			fe.log.Warn("table dropped; some servers still hold replicas of it and drop them on their own", "table", name, "replicas", left)
			return
		}
	}
}

// PatchTable changes a table's retention (PATCH /api/v1/tables/{t}): a
// compare-and-swap of its TableConfig, retried when a METADATA commit
// moved the revision. The master's next tick drops what the new retention
// expires; queries are clipped to it as soon as each server sees the new
// config.
func (fe *Frontend) PatchTable(ctx context.Context, name string, req api.PatchTableRequest) (metadata.TableConfig, error) {
	if err := model.ValidateTableName(name); err != nil {
		return metadata.TableConfig{}, err
	}
	if req.Retention == nil {
		return metadata.TableConfig{}, fmt.Errorf("%w: nothing to change; the patchable field is retention", metadata.ErrInvalidConfig)
	}
	var last error
	for attempt := range changeAttempts {
		if attempt > 0 && !backoff.Sleep(ctx, time.Duration(attempt)*20*time.Millisecond) {
			return metadata.TableConfig{}, ctx.Err()
		}
		cfg, rev, err := fe.tables.GetTable(ctx, name)
		if err != nil {
			return metadata.TableConfig{}, err
		}
		next := cfg
		next.Retention = metadata.Duration(*req.Retention)
		if err := next.Validate(); err != nil {
			return metadata.TableConfig{}, err
		}
		if err = fe.tables.UpdateTable(ctx, next, rev); err == nil {
			fe.log.Info("table retention changed", "table", name, "retention", next.Retention, "was", cfg.Retention)
			if _, file, err := fe.router.Table(ctx, name); err == nil && file.TxnID == next.MetadataTxnID {
				_ = fe.installer.Install(next, file) // this server sees it now; the watch tells the others
			}
			return next, nil
		}
		last = err
		if !errors.Is(err, metadata.ErrConflict) {
			return metadata.TableConfig{}, err
		}
	}
	return metadata.TableConfig{}, fmt.Errorf("patch table %q: %w", name, last)
}

// clipRetention raises q.From to the table's retention floor: now -
// retention, and the METADATA's retention horizon (rows before it were
// deleted). Queries never answer a row older than the retention, also
// while it is still on disk before the master's next tick. empty says the
// clipped range holds nothing.
func (fe *Frontend) clipRetention(ctx context.Context, table string, q model.Query) (model.Query, bool, error) {
	cfg, file, err := fe.router.Table(ctx, table)
	if err != nil {
		return q, false, err
	}
	floor := retentionFloor(cfg, file, time.Now())
	if q.From < floor {
		q.From = floor
	}
	return q, q.From >= q.To, nil
}

// retentionFloor is the oldest time a query of the table may answer.
func retentionFloor(cfg metadata.TableConfig, file *metadata.File, now time.Time) int64 {
	floor := int64(math.MinInt64)
	if r := time.Duration(cfg.Retention); r > 0 {
		floor = now.Add(-r).UnixNano()
	}
	if file != nil && file.DroppedBefore != nil && *file.DroppedBefore > floor {
		floor = *file.DroppedBefore
	}
	return floor
}
