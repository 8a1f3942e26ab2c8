package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
)

// ReplicaStatus is what partition discovery last answered for one local
// replica, and under which transaction.
type ReplicaStatus struct {
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

// onTableEvent handles one change of a TableConfig seen by the watch: the
// table's METADATA is fetched once, the router's cache refreshed, and every
// local replica of the table re-discovered (DESIGN.md section 4, change
// notification). A failure is logged and retried by the reconciliation.
func (n *Node) onTableEvent(ctx context.Context, ev metadata.TableEvent) {
	if n.cfg.missEvent != nil && n.cfg.missEvent(ev) {
		return
	}
	if ev.Deleted {
		n.router.Forget(ev.Name)
		n.mu.Lock()
		delete(n.mu.synced, ev.Name)
		n.mu.Unlock()
		n.log.Info("table deleted from etcd", "table", ev.Name)
		return
	}
	if err := n.syncTableAt(ctx, ev.Config); err != nil && ctx.Err() == nil {
		n.log.Warn("table change not applied; retried by reconciliation", "table", ev.Name, "txnseq", ev.Config.MetadataTxnSeq, "err", err)
	}
}

// syncTable loads the table's current METADATA (fetching it from a metadata
// server if this server lacks it; a metadata server also stores it),
// refreshes the router, creates the local replicas the file assigns here
// (rule 4) and runs partition discovery for every local replica of the table.
func (n *Node) syncTable(ctx context.Context, table string) error {
	lctx, cancel := context.WithTimeout(ctx, n.cfg.SyncTimeout)
	defer cancel()
	cfg, file, err := n.committer.Load(lctx, table)
	if err != nil {
		return fmt.Errorf("load METADATA of %q: %w", table, err)
	}
	return n.install(cfg, file)
}

// syncTableAt is syncTable for a TableConfig already read (a watch event):
// it costs no etcd read, and no file read either when the router already
// holds the file cfg names (the config may still have changed, e.g. its
// metadata servers).
func (n *Node) syncTableAt(ctx context.Context, cfg metadata.TableConfig) error {
	if _, file, ok := n.router.Cached(cfg.Name); ok && file.TxnID == cfg.MetadataTxnID {
		return n.install(cfg, file)
	}
	lctx, cancel := context.WithTimeout(ctx, n.cfg.SyncTimeout)
	defer cancel()
	file, err := n.committer.LoadFile(lctx, cfg)
	if err != nil {
		return fmt.Errorf("load METADATA %s of %q: %w", cfg.MetadataTxnID, cfg.Name, err)
	}
	return n.install(cfg, file)
}

// install makes file the table's METADATA on this server. The first file
// of a table pending since the partition store's birth settles it first
// (its placements here are lost, node/lost.go).
func (n *Node) install(cfg metadata.TableConfig, file *metadata.File) error {
	table := cfg.Name
	n.router.Update(cfg, file)
	if err := n.settleLost(file); err != nil {
		return err
	}
	if _, err := n.router.EnsureLocalReplicas(file); err != nil {
		return err
	}
	n.discoverLocal(file)
	n.mu.Lock()
	if file.TxnSeq > n.mu.synced[table] {
		n.mu.synced[table] = file.TxnSeq
	}
	n.mu.Unlock()
	if n.cfg.onTableSynced != nil {
		n.cfg.onTableSynced(table, file.TxnSeq)
	}
	return nil
}

// discoverLocal evaluates partition discovery for each local replica of
// file's table and records the answers. Acting on them (pushing, dropping)
// belongs to replication; here the answers are kept for it and logged when
// they change.
func (n *Node) discoverLocal(file *metadata.File) {
	n.discoverMu.Lock()
	defer n.discoverMu.Unlock()
	for _, rep := range n.store.Replicas() {
		info := rep.Info()
		if info.Table != file.Table {
			continue
		}
		d := metadata.Discover(file, n.cfg.ID, metadata.ReplicaRef{
			PartitionID: info.PartitionID, PlacementID: info.Placement, Begin: info.Begin, End: info.End,
		})
		st := ReplicaStatus{Table: info.Table, Placement: info.Placement, PartitionID: info.PartitionID, TxnSeq: file.TxnSeq, Discovery: d}
		n.mu.Lock()
		old, had := n.mu.replicas[info.Placement]
		if had && old.TxnSeq > st.TxnSeq {
			n.mu.Unlock()
			continue
		}
		n.mu.replicas[info.Placement] = st
		n.mu.Unlock()
		n.applyDiscovery(rep, st)
		if !had || old.Discovery.Status != d.Status {
			n.log.Info("replica status", "table", info.Table, "partition", info.PartitionID,
				"placement", info.Placement, "status", d.Status, "txnseq", file.TxnSeq, "targets", len(d.Targets))
		}
	}
}

// ReplicaStatuses returns the last discovery answer of every local replica,
// sorted by table and placement.
func (n *Node) ReplicaStatuses() []ReplicaStatus {
	n.mu.Lock()
	out := make([]ReplicaStatus, 0, len(n.mu.replicas))
	for _, st := range n.mu.replicas {
		out = append(out, st)
	}
	n.mu.Unlock()
	slices.SortFunc(out, func(a, b ReplicaStatus) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), slices.Compare(a.Placement[:], b.Placement[:]))
	})
	return out
}

// reconcile checks every table against etcd (rule 10: a missed or failed
// notification delays but never strands; it runs every ReconcileInterval): a table whose txn this server
// has not processed is synced; for the others discovery runs again on the
// cached file, so local replicas created or re-opened since are covered.
func (n *Node) reconcile(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, n.cfg.SyncTimeout)
	tables, err := n.meta.ListTables(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	var errs []error
	for _, t := range tables {
		n.mu.Lock()
		done := n.mu.synced[t.Name] >= t.MetadataTxnSeq
		n.mu.Unlock()
		if done {
			if _, file, err := n.router.Table(ctx, t.Name); err == nil && file.TxnSeq >= t.MetadataTxnSeq {
				n.discoverLocal(file)
				continue
			}
		}
		if err := n.syncTable(ctx, t.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resyncLoop re-syncs the tables it is asked to (a push refused as stale
// means this server's view may be behind) until ctx ends.
func (n *Node) resyncLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case table := <-n.resync:
			if err := n.syncTable(ctx, table); err != nil && ctx.Err() == nil {
				n.log.Warn("resync failed", "table", table, "err", err)
			}
		}
	}
}

// sessionLoop re-confirms this server's assignments after each lost etcd
// session: once re-registered, every table is reconciled against etcd
// before the server may rely on its view again (DESIGN.md section 9).
func (n *Node) sessionLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.reg.Done():
		}
		lost := n.reg.Epoch()
		n.log.Warn("etcd session lost; assignments are re-confirmed once re-registered", "epoch", lost)
		for n.reg.Epoch() == lost || !n.reg.Valid() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
		if err := n.reconcile(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("re-confirming assignments after re-registration", "err", err)
		} else {
			n.log.Info("re-registered; assignments re-confirmed", "epoch", n.reg.Epoch())
		}
	}
}
