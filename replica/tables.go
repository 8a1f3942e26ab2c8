package replica

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/internal/backoff"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
)

// Status is what partition discovery last answered for one local
// replica, and under which transaction.
type Status struct {
	// Table is the replica's table.
	Table string
	// Placement is the replica's placement id.
	Placement uuid.UUID
	// PartitionID is the replica's partition id.
	PartitionID uuid.UUID
	// TxnSeq is the txnseq of the METADATA the answer was computed from.
	TxnSeq uint64
	// Discovery is the answer.
	Discovery metadata.Discovery
}

// OnTableEvent handles one change of a TableConfig seen by the watch: the
// table's METADATA is fetched once, the router's cache refreshed, and every
// local replica of the table re-discovered (DESIGN.md section 4, change
// notification). A failure is logged and retried by the reconciliation.
func (s *Server) OnTableEvent(ctx context.Context, ev metadata.TableEvent) {
	if s.cfg.Knobs.MissEvent != nil && s.cfg.Knobs.MissEvent(ev) {
		return
	}
	if ev.Deleted {
		s.log.Info("table deleted from etcd", "table", ev.Name)
		if err := s.forgetDroppedTable(ctx, ev.Name); err != nil && ctx.Err() == nil {
			s.log.Warn("dropped table not cleaned up; retried by reconciliation", "table", ev.Name, "err", err)
		}
		return
	}
	if err := s.syncTableAt(ctx, ev.Config); err != nil && ctx.Err() == nil {
		s.log.Warn("table change not applied; retried by reconciliation", "table", ev.Name, "txnseq", ev.Config.MetadataTxnSeq, "err", err)
	}
}

// syncTableAt is syncTable for a TableConfig already read (a watch event):
// it costs no etcd read, and no file read either when the router already
// holds the file cfg names (the config may still have changed, e.g. its
// metadata servers).
func (s *Server) syncTableAt(ctx context.Context, cfg metadata.TableConfig) error {
	if _, file, ok := s.router.Cached(cfg.Name); ok && file.TxnID == cfg.MetadataTxnID {
		return s.Install(cfg, file)
	}
	lctx, cancel := context.WithTimeout(ctx, s.cfg.SyncTimeout)
	defer cancel()
	file, err := s.committer.LoadFile(lctx, cfg)
	if err != nil {
		return fmt.Errorf("load METADATA %s of %q: %w", cfg.MetadataTxnID, cfg.Name, err)
	}
	return s.Install(cfg, file)
}

// Install makes file the table's METADATA on this server. The first file
// of a table pending since the partition store's birth settles it first
// (its placements here are lost, lost.go).
//
// Installs are serialized, and a file older than the table's last
// installed one is skipped: the router keeps the newer one anyway, and
// its local replicas and discovery answers already follow it.
func (s *Server) Install(cfg metadata.TableConfig, file *metadata.File) error {
	table := cfg.Name
	s.installMu.Lock()
	defer s.installMu.Unlock()
	if s.newerGeneration(cfg) {
		s.log.Debug("skipping a METADATA of a dropped table of the same name", "table", table, "txnseq", file.TxnSeq)
		return nil
	}
	s.mu.Lock()
	newest := s.mu.synced[table]
	s.mu.Unlock()
	if file.TxnSeq < newest {
		s.log.Debug("skipping an older METADATA", "table", table, "txnseq", file.TxnSeq, "installed", newest)
		return nil
	}
	if err := s.dropOldGeneration(cfg, file); err != nil {
		return err
	}
	s.router.Update(cfg, file)
	if err := s.settleLost(file); err != nil {
		return err
	}
	if _, err := s.router.EnsureLocalReplicas(file); err != nil {
		return err
	}
	s.discoverLocal(file)
	s.mu.Lock()
	if file.TxnSeq > s.mu.synced[table] {
		s.mu.synced[table] = file.TxnSeq
	}
	s.mu.Unlock()
	if s.cfg.Knobs.OnTableSynced != nil {
		s.cfg.Knobs.OnTableSynced(table, file.TxnSeq)
	}
	return nil
}

// discoverLocal evaluates partition discovery for each local replica of
// file's table and records the answers. Acting on them (pushing, dropping)
// belongs to replication; here the answers are kept for it and logged when
// they change.
func (s *Server) discoverLocal(file *metadata.File) {
	s.discoverMu.Lock()
	defer s.discoverMu.Unlock()
	for _, rep := range s.store.Replicas() {
		info := rep.Info()
		if info.Table != file.Table {
			continue
		}
		d := metadata.Discover(file, s.cfg.Self, metadata.ReplicaRef{
			PartitionID: info.PartitionID, PlacementID: info.Placement, Begin: info.Begin, End: info.End,
		})
		st := Status{Table: info.Table, Placement: info.Placement, PartitionID: info.PartitionID, TxnSeq: file.TxnSeq, Discovery: d}
		old, had, ok := s.recordStatus(rep, st)
		if !ok {
			continue
		}
		s.applyDiscovery(rep, st)
		if !had || old.Discovery.Status != d.Status {
			s.log.Info("replica status", "table", info.Table, "partition", info.PartitionID,
				"placement", info.Placement, "status", d.Status, "txnseq", file.TxnSeq, "targets", len(d.Targets))
		}
	}
}

// recordStatus records st as rep's discovery answer, unless the one
// recorded is of a newer METADATA or rep was dropped since the store
// listed it (ok false). A drop sets the flag before its forgetDropped
// removes the status under mu, so a status recorded after that removal
// would bring a dropped replica back (UNLOAD for ever, its pusher
// failing): the flag is read under mu. It returns the answer recorded
// before, if any.
func (s *Server) recordStatus(rep *partition.Replica, st Status) (old Status, had, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had = s.mu.replicas[st.Placement]
	if had && old.TxnSeq > st.TxnSeq || rep.Dropped() {
		return old, had, false
	}
	s.mu.replicas[st.Placement] = st
	return old, had, true
}

// Statuses returns the last discovery answer of every local replica,
// sorted by table and placement.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	out := make([]Status, 0, len(s.mu.replicas))
	for _, st := range s.mu.replicas {
		out = append(out, st)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Status) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), slices.Compare(a.Placement[:], b.Placement[:]))
	})
	return out
}

// Reconcile checks every table against etcd (rule 10: a missed or failed
// notification delays but never strands; it runs every ReconcileInterval): a table whose txn this server
// has not processed is synced; for the others discovery runs again on the
// cached file, so local replicas created or re-opened since are covered.
func (s *Server) Reconcile(ctx context.Context) error {
	// The local tables are read before etcd's list: a table created after
	// the list was read has no local replica yet in this snapshot.
	local := s.localTables()
	lctx, cancel := context.WithTimeout(ctx, s.cfg.SyncTimeout)
	tables, err := s.meta.ListTables(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	var errs []error
	for _, t := range tables {
		delete(local, t.Name)
	}
	for name := range local { // dropped while this server missed the event
		errs = append(errs, s.forgetDroppedTable(ctx, name))
	}
	for _, t := range tables {
		s.mu.Lock()
		done := s.mu.synced[t.Name] >= t.MetadataTxnSeq
		s.mu.Unlock()
		if done {
			if cfg, file, err := s.router.Table(ctx, t.Name); err == nil && file.TxnSeq >= t.MetadataTxnSeq && cfg.CreatedAt.Equal(t.CreatedAt) {
				s.discoverLocal(file)
				continue
			}
		}
		if err := s.syncTable(ctx, t.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RunResync re-syncs the tables it is asked to (a push refused as stale
// means this server's view may be behind) until ctx ends.
func (s *Server) RunResync(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case table := <-s.resync:
			if err := s.syncTable(ctx, table); err != nil && ctx.Err() == nil {
				s.log.Warn("resync failed", "table", table, "err", err)
			}
		}
	}
}

// RunSession re-confirms this server's assignments after each lost etcd
// session: once re-registered, every table is reconciled against etcd
// before the server may rely on its view again (DESIGN.md section 9).
func (s *Server) RunSession(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.reg.Done():
		}
		lost := s.reg.Epoch()
		s.log.Warn("etcd session lost; assignments are re-confirmed once re-registered", "epoch", lost)
		for s.reg.Epoch() == lost || !s.reg.Valid() {
			if !backoff.Sleep(ctx, 200*time.Millisecond) {
				return
			}
		}
		if err := s.Reconcile(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("re-confirming assignments after re-registration", "err", err)
		} else {
			s.log.Info("re-registered; assignments re-confirmed", "epoch", s.reg.Epoch())
		}
	}
}

// LoadTables loads, before the server serves anything, the METADATA of
// every table of tables (the node listed them) that this server is a
// metadata server of or holds replicas of, fetching from the other
// metadata servers the transactions committed while it was down (DESIGN.md
// section 4: a metadata server that lacks the current txn serves nothing
// until it has fetched it). Local replicas are re-opened from the
// partition store's registry, and placements assigned meanwhile are
// created. On a partition store created empty, the tables that exist now
// are recorded first, so that the placements they list for this server
// are known lost rather than created empty (lost.go), and each of them is
// loaded now. A table that fails to load is logged and retried by the
// watch and the reconciliation, so one bad table does not keep the others
// down.
func (s *Server) LoadTables(ctx context.Context, tables []metadata.TableConfig) error {
	if err := s.recordBirth(tables); err != nil {
		return err
	}
	local := make(map[string]bool)
	for _, rep := range s.store.Replicas() {
		local[rep.Info().Table] = true
	}
	for _, t := range tables {
		if !slices.Contains(t.MetadataServers, s.cfg.Self) && !local[t.Name] && !s.store.Pending(t.Name) {
			continue
		}
		if err := s.syncTable(ctx, t.Name); err != nil {
			s.log.Error("table not loaded at start; retried in the background", "table", t.Name, "err", err)
		}
	}
	return nil
}
