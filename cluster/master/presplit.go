package master

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/presplit"
)

// Pre-split (DESIGN.md section 8): every PresplitInterval the master
// measures the recent partitions of every table, asks presplit.PlanTable
// for the split of the open tail that keeps the future up to the horizon
// (and at least MinAhead partitions) split at the width that reaches the
// table's size target, and commits it as a SPLIT_BEGIN with Presplit set.
// The tail's replicas then finalize it like any split (rule 7): at once
// when the tail is empty, after moving them when future-dated rows
// arrived.

// presplitSizeScan bounds the key scan that measures a replica of a server
// without a memory head whose disk estimate is smaller (rows still in the
// memtable): at most this many bytes are read per replica per pass, and
// only for replicas of the partitions that closed within the settle time
// (presplitSettleMargin).
const presplitSizeScan = 4 << 20

// presplitSettleMargin is how long after its end, beyond its table's smear
// max delay, a partition is still measured by a key scan on every pass:
// smeared rows and replication's stragglers land in it until then. Older
// partitions keep the largest size measured (masterState.sizes), or their
// disk estimate when larger.
const presplitSettleMargin = 30 * time.Second

// presplitPass plans and commits the pre-split of every table that needs
// one. The plans use the time after the measurement, which may take
// seconds on a busy cluster.
func (m *Master) presplitPass(ctx context.Context, st *masterState, v *clusterView, pt *passTimer) error {
	elig := v.eligibleServers()
	if len(elig) == 0 || len(v.tables) == 0 {
		return nil
	}
	cfg := m.cfg.Presplit
	st.sizes = m.partitionSizes(ctx, v, st.sizes, time.Now())
	pt.lap(&pt.sizes)
	defer pt.lap(&pt.presplit)
	now := time.Now()
	counts, _ := v.placementCounts()
	var errs []error
	for _, t := range v.tables {
		if t.file == nil || len(t.file.Partitions) == 0 {
			continue
		}
		tail := t.file.Partitions[len(t.file.Partitions)-1]
		if tail.Split != nil || tail.Offline {
			continue
		}
		stats := make([]presplit.PartitionStats, 0, len(t.file.Partitions))
		for _, p := range t.file.Partitions {
			if b, ok := st.sizes[p.ID]; ok {
				stats = append(stats, presplit.PartitionStats{ID: p.ID, Begin: p.Begin, End: p.End, Bytes: b})
			}
		}
		d, ok, err := presplit.PlanTable(t.file, stats, uint64(t.cfg.PartitionSizeTarget), now.UnixNano(), cfg)
		if err != nil {
			errs = append(errs, fmt.Errorf("table %q: pre-split plan: %w", t.cfg.Name, err))
			continue
		}
		m.log.Debug("master: pre-split plan", "table", t.cfg.Name, "skip", d.Skip, "ahead", d.Ahead, "width", d.Width)
		if !ok {
			continue
		}
		if err := m.commitPresplit(ctx, t, d, elig, counts); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// commitPresplit commits the SPLIT_BEGIN of a pre-split decision, its
// children on the least-loaded eligible servers, spread across sets.
func (m *Master) commitPresplit(ctx context.Context, t tableView, d presplit.Decision, elig []membership.Info, counts map[string]int) error {
	// The load is first each server's placements among the table's recent
	// and future partitions — those a smeared insert may still reach, the
	// ones ending after now - max_delay — then its placements in every
	// METADATA (the counts servers publish lag by up to 10 s). Least
	// loaded first rotates the present's partitions over every server, so
	// that the partitions smearing spreads one moment's writes over sit on
	// different servers.
	recent := recentPlacements(t, time.Now().Add(-time.Duration(t.cfg.Smear.MaxDelay)))
	cands := slices.Clone(elig)
	for i := range cands {
		cands[i].Summary.Partitions = recent[cands[i].ID]<<20 + counts[cands[i].ID]
	}
	sets := m.cfg.PickChildServers(cands, len(d.Points)+1, t.cfg.ReplicationFactor, rand.IntN)
	for _, set := range sets {
		for _, s := range set {
			counts[s.ID]++
		}
	}
	children := make([]metadata.SplitChild, len(sets))
	for i, set := range sets {
		children[i].ID = uuid.New()
		for _, s := range set {
			children[i].Servers = append(children[i].Servers, metadata.Placement{ServerID: s.ID, PlacementID: uuid.New()})
		}
	}
	op := d.SplitBegin(children)
	_, err := m.cfg.Changes.RequestChange(ctx, t.cfg.Name, func(_ metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		last := f.Partitions[len(f.Partitions)-1]
		if last.ID != d.PartitionID || last.Split != nil {
			return metadata.Op{}, errRepairSettled
		}
		return metadata.Op{Type: metadata.OpSplitBegin, SplitBegin: &op}, nil
	})
	if errors.Is(err, errRepairSettled) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("table %q: pre-split of %s into %d: %w", t.cfg.Name, d.PartitionID, len(children), err)
	}
	m.cfg.Metrics.Presplits.Inc()
	m.log.Info("master: pre-split", "table", t.cfg.Name, "partition", d.PartitionID, "children", len(children),
		"width", d.Width, "rate_bytes_per_sec", int64(d.Rate), "rate_known", d.RateKnown, "ahead", d.Ahead)
	return nil
}

// partitionSizes asks every live server, all at once, for the size of its
// replicas and keeps the largest replica of each partition, or the size
// known from an earlier pass when that is larger: a partition's rows
// shrink severalfold when they are sealed into blocks, while the split
// checker judges a partition at "now" by its unsealed rows, the size a
// pre-split's width must keep under the target. Only the replicas of the
// partitions that ended within the settle time before now may be measured
// by a key scan (on a server without a memory head, whose estimate misses
// the rows not yet in any sstable); the others, and every replica of a
// server with a memory head, by their estimate, which reads no row. A
// server that does not answer is skipped: its partitions are measured by
// their other replicas, or keep their known size. Partitions no table
// lists any more are forgotten.
func (m *Master) partitionSizes(ctx context.Context, v *clusterView, known map[uuid.UUID]uint64, now time.Time) map[uuid.UUID]uint64 {
	settle := presplitSettleMargin
	for _, t := range v.tables {
		settle = max(settle, time.Duration(t.cfg.Smear.MaxDelay)+presplitSettleMargin)
	}
	req := wire.ReplicasRequest{
		SizeScan:       presplitSizeScan,
		SizeScanAfter:  now.Add(-settle).UnixNano(),
		SizeScanBefore: now.UnixNano(),
	}
	answers := make([][]wire.ReplicaStatus, len(v.live))
	var wg sync.WaitGroup
	for i, s := range v.live {
		wg.Go(func() {
			resp, err := m.cfg.Replicas.ReplicasOn(ctx, s.ID, req)
			if err != nil {
				m.log.Debug("master: replica sizes of a server unavailable", "server", s.ID, "err", err)
				return
			}
			answers[i] = resp.Replicas
		})
	}
	wg.Wait()
	out := map[uuid.UUID]uint64{}
	for _, t := range v.tables {
		if t.file == nil {
			continue
		}
		for _, p := range t.file.Partitions {
			if b, ok := known[p.ID]; ok {
				out[p.ID] = b
			}
		}
	}
	for _, replicas := range answers {
		for _, r := range replicas {
			if r.Status != string(metadata.StatusServe) && r.Status != string(metadata.StatusLoad) {
				continue
			}
			out[r.PartitionID] = max(out[r.PartitionID], r.Bytes)
		}
	}
	return out
}

// recentPlacements counts each server's placements among the partitions
// (and split children) of a table that end after since or not at all.
func recentPlacements(t tableView, since time.Time) map[string]int {
	out := map[string]int{}
	after := func(end *int64) bool { return end == nil || *end > since.UnixNano() }
	for _, p := range t.file.Partitions {
		if after(p.End) {
			for _, pl := range slices.Concat(p.Servers, p.Joining) {
				out[pl.ServerID]++
			}
		}
		if p.Split == nil {
			continue
		}
		for _, c := range p.Split.Children {
			if after(c.End) {
				for _, pl := range c.Servers {
					out[pl.ServerID]++
				}
			}
		}
	}
	return out
}
