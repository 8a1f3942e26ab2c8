package frontend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/presplit"
)

// CreateTable creates a table on the cluster (DESIGN.md section 4): the
// replication factor (default min(3, live servers)) picks that many live
// servers, least loaded first, for the first partition; the metadata servers
// are as many, this server (the coordinator) and the partition's servers.
func (fe *Frontend) CreateTable(ctx context.Context, req api.CreateTableRequest) (metadata.TableConfig, error) {
	live, err := fe.servers.Refresh(ctx)
	if err != nil {
		return metadata.TableConfig{}, fmt.Errorf("%w: read the live servers: %w", errUnavailable, err)
	}
	if !slices.ContainsFunc(live, func(i membership.Info) bool { return i.ID == fe.cfg.Self }) {
		return metadata.TableConfig{}, fmt.Errorf("%w: this server's own registration is not live", errUnavailable)
	}
	if len(live) < fe.cfg.MinServers {
		return metadata.TableConfig{}, fmt.Errorf("%w: %d server(s) live, fewer than the cluster's minimum of %d (--min-servers); no table is created until they are",
			errUnavailable, len(live), fe.cfg.MinServers)
	}
	cfg, err := tableConfigFromRequest(req, len(live))
	if err != nil {
		return metadata.TableConfig{}, err
	}
	chosen := pickServers(live, cfg.ReplicationFactor, rand.IntN)
	op := metadata.CreateOp{Table: cfg.Name, PartitionID: uuid.New()}
	cfg.MetadataServers = []string{fe.cfg.Self}
	for _, s := range chosen {
		op.Servers = append(op.Servers, metadata.Placement{ServerID: s.ID, PlacementID: uuid.New()})
		if s.ID != fe.cfg.Self && len(cfg.MetadataServers) < cfg.ReplicationFactor {
			cfg.MetadataServers = append(cfg.MetadataServers, s.ID)
		}
	}
	if fe.cfg.Presplit != nil {
		fe.planBornSplit(&op, cfg, live, chosen, time.Now().UnixNano())
	}
	cfg, file, err := fe.committer.Create(ctx, cfg, op)
	if err != nil {
		return metadata.TableConfig{}, err
	}
	if err := fe.installer.Install(cfg, file); err != nil {
		return metadata.TableConfig{}, err
	}
	fe.log.Info("table created", "table", cfg.Name, "txnid", cfg.MetadataTxnID,
		"servers", op.Servers, "metadata_servers", cfg.MetadataServers, "partitions", len(file.Partitions))
	return cfg, nil
}

// planBornSplit adds to op the partitions the master's first pre-split of
// the new table would make (docs/master.md, "A new table is born
// pre-split"): presplit.PlanTable on the one-partition file at now, with
// no rate known yet. Each partition after the first gets
// ReplicationFactor servers, the least loaded counting those already
// given, so the future partitions spread over the cluster. A plan that
// fails leaves op with one partition: the master pre-splits it later.
func (fe *Frontend) planBornSplit(op *metadata.CreateOp, cfg metadata.TableConfig, live, first []membership.Info, now int64) {
	one := &metadata.File{Table: cfg.Name, Partitions: []metadata.Partition{{ID: op.PartitionID, Servers: op.Servers}}}
	d, ok, err := presplit.PlanTable(one, nil, uint64(cfg.PartitionSizeTarget), now, *fe.cfg.Presplit)
	if err != nil || !ok {
		fe.log.Warn("new table not born pre-split; the master pre-splits it", "table", cfg.Name, "skip", d.Skip, "err", err)
		return
	}
	load := make(map[string]int, len(live))
	for _, s := range live {
		load[s.ID] = s.Summary.Partitions
	}
	for _, s := range first {
		load[s.ID]++
	}
	counted := slices.Clone(live)
	op.Points = d.Points
	op.Rest = make([]metadata.SplitChild, 0, len(d.Points))
	for range d.Points {
		for i := range counted {
			counted[i].Summary.Partitions = load[counted[i].ID]
		}
		child := metadata.SplitChild{ID: uuid.New()}
		for _, s := range pickServers(counted, cfg.ReplicationFactor, rand.IntN) {
			child.Servers = append(child.Servers, metadata.Placement{ServerID: s.ID, PlacementID: uuid.New()})
			load[s.ID]++
		}
		op.Rest = append(op.Rest, child)
	}
}

// tableConfigFromRequest builds and validates a new table's config for a
// cluster of live servers.
func tableConfigFromRequest(req api.CreateTableRequest, live int) (metadata.TableConfig, error) {
	cfg := metadata.TableConfig{
		Name:                req.Name,
		ReplicationFactor:   req.ReplicationFactor,
		PartitionSizeTarget: req.PartitionSizeTarget,
		CreatedAt:           time.Now().UTC(),
	}
	if cfg.ReplicationFactor == 0 {
		cfg.ReplicationFactor = min(3, live)
	}
	if req.Retention != nil {
		cfg.Retention = metadata.Duration(*req.Retention)
	}
	cfg.EnsureDefaults()
	if req.Smear != nil {
		if req.Smear.Enabled != nil {
			cfg.Smear.Enabled = *req.Smear.Enabled
		}
		if req.Smear.MaxDelay != nil {
			cfg.Smear.MaxDelay = metadata.Duration(*req.Smear.MaxDelay)
		}
		if req.Smear.KeyrangeThreshold != nil {
			cfg.Smear.KeyrangeThreshold = metadata.Duration(*req.Smear.KeyrangeThreshold)
		}
	}
	if err := cfg.Validate(); err != nil {
		return metadata.TableConfig{}, err
	}
	if cfg.ReplicationFactor > live {
		return metadata.TableConfig{}, fmt.Errorf("%w: replication_factor %d exceeds the %d live server(s)",
			metadata.ErrInvalidConfig, cfg.ReplicationFactor, live)
	}
	return cfg, nil
}

// ListTables returns every table's config, as etcd holds it.
func (fe *Frontend) ListTables(ctx context.Context) ([]metadata.TableConfig, error) {
	return fe.tables.ListTables(ctx)
}

// Table returns a table's config and METADATA from the router's cache.
func (fe *Frontend) Table(ctx context.Context, name string) (metadata.TableConfig, *metadata.File, error) {
	return fe.router.Table(ctx, name)
}

// pickServers chooses k servers among live for a new partition: the least
// loaded by partition count, ties broken at random so that tables created
// together spread out.
func pickServers(live []membership.Info, k int, rnd func(int) int) []membership.Info {
	c := slices.Clone(live)
	for i := len(c) - 1; i > 0; i-- { // shuffle, then a stable sort by load
		j := rnd(i + 1)
		c[i], c[j] = c[j], c[i]
	}
	slices.SortStableFunc(c, func(a, b membership.Info) int {
		return cmp.Compare(a.Summary.Partitions, b.Summary.Partitions)
	})
	return c[:min(k, len(c))]
}

// Metadata returns the current METADATA (re-read from etcd) or, for a
// named txn, the file as held here or by one of the table's metadata
// servers, verified to be the named txn of the table.
func (fe *Frontend) Metadata(ctx context.Context, table, txnID string) (metadata.TableConfig, *metadata.File, error) {
	cfg, cur, err := fe.committer.Load(ctx, table)
	if err != nil || txnID == "" || txnID == cfg.MetadataTxnID {
		return cfg, cur, err
	}
	if enc, err := fe.committer.LocalFile(table, txnID); err == nil {
		f, err := metadata.CheckEncoded(table, txnID, enc)
		return cfg, f, err
	}
	var errs []error
	p := fe.peers
	for _, id := range cfg.MetadataServers {
		if id == fe.cfg.Self {
			continue
		}
		enc, err := p.FetchFile(ctx, id, table, txnID)
		if err == nil {
			f, err := metadata.CheckEncoded(table, txnID, enc)
			return cfg, f, err
		}
		if !errors.Is(err, metadata.ErrFileNotFound) {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		}
	}
	if len(errs) > 0 {
		return cfg, nil, fmt.Errorf("%w: txn %s of %q: %w", errUnavailable, txnID, table, errors.Join(errs...))
	}
	return cfg, nil, fmt.Errorf("%w: txn %s of %q is held by no metadata server (it never existed, or the sweep removed it)", metadata.ErrFileNotFound, txnID, table)
}
