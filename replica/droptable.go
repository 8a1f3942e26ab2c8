package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
)

// Dropping a table (DELETE /api/v1/tables/{t}, docs/api.md): the front end
// deletes the TableConfig from etcd; every server then drops its local
// replicas of the table (each with a tombstone, rule 4) and forgets it. A
// server learns it from the watch's deletion event, from the periodic
// reconciliation (a local replica whose table etcd no longer lists), or,
// for a server that was down while the table was dropped and re-created
// under the same name, from Install: a replica of the table that the new
// METADATA does not list and that is older than the table itself belongs
// to the dropped table, and is dropped rather than discovered (discovery
// would make it UNLOAD and push its rows into the new table). The
// METADATA files of a dropped table are deleted by the sweep (rule 6:
// files are only deleted by the sweep; a table etcd does not list has no
// current file to keep).

// forgetDroppedTable drops every local replica of a table that etcd no
// longer holds. It runs under installMu and re-reads etcd first, so a
// table re-created meanwhile is never touched: its replicas are created by
// Install, which waits for installMu, and once the config is back the
// generation rule of Install decides.
func (s *Server) forgetDroppedTable(ctx context.Context, table string) error {
	s.installMu.Lock()
	defer s.installMu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, s.cfg.SyncTimeout)
	_, _, err := s.meta.GetTable(lctx, table)
	cancel()
	switch {
	case err == nil:
		return nil // re-created: Install's generation rule decides
	case !errors.Is(err, metadata.ErrTableNotFound):
		return fmt.Errorf("re-read dropped table %q: %w", table, err)
	}
	s.router.Forget(table)
	s.mu.Lock()
	delete(s.mu.synced, table)
	s.mu.Unlock()
	return s.dropReplicasOf(table, func(partition.ReplicaInfo) bool { return true }, "table dropped")
}

// generationMargin is how much older than its table's CreatedAt a replica
// must be to belong to a dropped table of the same name: a replica of a
// table is created after the table, give or take the servers' clock
// offset. A minute at least: dropping a live table's replica by mistake
// (a server whose clock is far behind) would lose rows, while missing an
// old one needs a server that was away while the name was dropped and
// created again within that minute.
func (s *Server) generationMargin() time.Duration {
	if s.cfg.Knobs.GenerationMargin > 0 {
		return s.cfg.Knobs.GenerationMargin
	}
	return max(s.cfg.MaxClockOffset, time.Minute)
}

// dropOldGeneration drops the local replicas of cfg's table that file
// does not list (no placement, no partition or child id) and that belong
// to an older table of the same name: their recorded table generation
// (ReplicaInfo.TableCreatedAt) is older than cfg's, or, for a replica
// created before the generation was recorded, it was created more than
// generationMargin before the table. It runs under installMu.
func (s *Server) dropOldGeneration(cfg metadata.TableConfig, file *metadata.File) error {
	if cfg.CreatedAt.IsZero() {
		return nil
	}
	ids := make(map[uuid.UUID]bool)
	for i := range file.Partitions {
		p := &file.Partitions[i]
		ids[p.ID] = true
		for _, pl := range slices.Concat(p.Servers, p.Joining) {
			ids[pl.PlacementID] = true
		}
		if p.Split != nil {
			for _, c := range p.Split.Children {
				ids[c.ID] = true
				for _, pl := range c.Servers {
					ids[pl.PlacementID] = true
				}
			}
		}
	}
	before := cfg.CreatedAt.Add(-s.generationMargin())
	return s.dropReplicasOf(cfg.Name, func(info partition.ReplicaInfo) bool {
		if ids[info.Placement] || ids[info.PartitionID] {
			return false
		}
		if !info.TableCreatedAt.IsZero() {
			return info.TableCreatedAt.Before(cfg.CreatedAt)
		}
		return info.CreatedAt.Before(before)
	}, "replica of a dropped table of the same name")
}

// dropReplicasOf drops the local replicas of table that match, with a
// tombstone each (rule 4), stopping their pushers first.
func (s *Server) dropReplicasOf(table string, match func(partition.ReplicaInfo) bool, why string) error {
	var errs []error
	for _, rep := range s.store.Replicas() {
		info := rep.Info()
		if info.Table != table || !match(info) {
			continue
		}
		st := Status{Table: table, Placement: info.Placement, PartitionID: info.PartitionID}
		if rt := s.runtime(info.Placement); rt != nil {
			s.forgetDropped(rt, st)
		} else {
			s.mu.Lock()
			delete(s.mu.replicas, info.Placement)
			delete(s.mu.unsplittable, info.Placement)
			s.mu.Unlock()
		}
		if err := s.store.DropReplica(info.Placement); err != nil {
			errs = append(errs, fmt.Errorf("drop replica %s of %q: %w", info.Placement, table, err))
			continue
		}
		s.log.Info("replica dropped: "+why, "table", table, "partition", info.PartitionID, "placement", info.Placement)
	}
	return errors.Join(errs...)
}

// localTables returns the tables this server holds a local replica of.
func (s *Server) localTables() map[string]bool {
	out := make(map[string]bool)
	for _, rep := range s.store.Replicas() {
		out[rep.Info().Table] = true
	}
	return out
}

// newerGeneration handles a file of a table whose cached config has a
// different CreatedAt: the name was dropped and created again. A config
// of the newer table replaces the cached state (the new table's txnseqs
// start again at 1); one of the older table is skipped (a late event).
// It runs under installMu and reports whether to skip cfg.
func (s *Server) newerGeneration(cfg metadata.TableConfig) (skip bool) {
	cached, _, ok := s.router.Cached(cfg.Name)
	switch {
	case !ok || cached.CreatedAt.Equal(cfg.CreatedAt):
		return false
	case cfg.CreatedAt.Before(cached.CreatedAt):
		return true
	}
	s.router.Forget(cfg.Name)
	s.mu.Lock()
	delete(s.mu.synced, cfg.Name)
	s.mu.Unlock()
	s.log.Info("table re-created under the same name", "table", cfg.Name, "created_at", cfg.CreatedAt)
	return false
}
