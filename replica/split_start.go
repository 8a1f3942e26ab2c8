package replica

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
	"github.com/tsdb/tsdb/cluster/operator"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/internal/backoff"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
)

// Starting a split (DESIGN.md section 6): the size trigger, the choice of
// the split point and of the children's servers, and SPLIT_BEGIN. What
// follows SPLIT_BEGIN (data movement, finalize) is in split.go and the
// replication lifecycle.

// cannotSplitRetry is how long a replica found unsplittable (every row at
// one time) is left alone before its split point is looked for again, and
// then only if it received rows meanwhile.
const cannotSplitRetry = 5 * time.Minute

// splitKickRows is the row count of an insert large enough to ask for a
// size check before the next SplitCheckInterval.
const splitKickRows = 4096

// errSplitDeferred: the partition cannot start a split now (a join is in
// progress); the trigger tries again later.
var errSplitDeferred = errors.New("node: split deferred")

// unsplittable remembers a replica whose rows were all at one time.
type unsplittable struct {
	at      time.Time
	highSeq uint64
}

// SplitTick compares each SERVE replica that is not already splitting with
// its table's size target and starts a split of those above it. Several
// replicas of a partition may do so at once; the CAS makes one win and the
// others follow its split.
func (s *Server) SplitTick(ctx context.Context) error {
	var errs []error
	for _, st := range s.Statuses() {
		if ctx.Err() != nil {
			break
		}
		if err := s.maybeSplit(ctx, st); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// kickSplitCheck asks for a size check soon (a large insert arrived).
func (s *Server) kickSplitCheck() {
	select {
	case s.splitKick <- struct{}{}:
	default:
	}
}

// RunSplits runs SplitTick every SplitCheckInterval, and sooner after a
// large insert (but at most ten times per interval), until ctx ends.
func (s *Server) RunSplits(ctx context.Context) {
	t := time.NewTicker(s.cfg.SplitCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.splitKick:
		}
		if err := s.SplitTick(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("split check failed", "err", err)
		}
		if !backoff.Sleep(ctx, s.cfg.SplitCheckInterval/10) {
			return
		}
	}
}

// smearSplitMargin is how long past its last rows' max delay a smeared
// partition is still taken to receive forwards (the visibility bound's
// slack, docs/smearing.md).
const smearSplitMargin = 5 * time.Second

// splitThreshold is the size past which the size trigger splits partition
// p of a table configured as cfg, at now: the table's target, or twice it
// while p still receives smeared rows (the table smears inserts into it,
// and its end is less than max_delay and smearSplitMargin ago). A split's
// children must hold a row before an insert of it into the parent is
// acknowledged (DESIGN.md section 6), so a split of a partition the smear
// queues forward into holds up their forward calls, and the rows behind
// them, for as long as it lasts; in the smear load test, once the rate took
// the one-second partitions at "now" over their target, every one of them
// split while it took forwards. Such a partition is split once its
// forwards are over, unless it grows past twice the target meanwhile: the
// load test delivered 1.07-1.18 times as much in five rounds (its
// visibility bound is missed as often as before: docs/performance.md,
// "What admission's own series show in the load test").
func splitThreshold(cfg metadata.TableConfig, p *metadata.Partition, now time.Time) uint64 {
	target := uint64(cfg.PartitionSizeTarget)
	if !cfg.Smear.Smears(p.Begin, p.End) {
		return target
	}
	if forwarded := now.UnixNano() - int64(cfg.Smear.MaxDelay) - int64(smearSplitMargin); forwarded >= *p.End {
		return target // its last rows were due long enough ago
	}
	return 2 * target
}

// maybeSplit starts a split of st's partition if its replica is above the
// table's target (splitThreshold).
func (s *Server) maybeSplit(ctx context.Context, st Status) error {
	if st.Discovery.Status != metadata.StatusServe {
		return nil
	}
	cfg, file, ok := s.router.Cached(st.Table)
	if !ok || cfg.PartitionSizeTarget <= 0 {
		return nil
	}
	p, ok := file.Partition(st.PartitionID)
	if !ok || p.Split != nil || len(p.Joining) > 0 || p.Offline {
		return nil
	}
	rep, ok := s.store.Replica(st.Placement)
	if !ok {
		return nil
	}
	s.mu.Lock()
	u, blocked := s.mu.unsplittable[st.Placement]
	s.mu.Unlock()
	if blocked && (time.Since(u.at) < cannotSplitRetry || rep.HighSeq() == u.highSeq) {
		return nil
	}
	over, size, err := rep.SizeOver(splitThreshold(cfg, p, time.Now()))
	if err != nil || !over {
		return err
	}
	at, err := rep.SplitPoint()
	if errors.Is(err, partition.ErrCannotSplit) {
		s.mu.Lock()
		s.mu.unsplittable[st.Placement] = unsplittable{at: time.Now(), highSeq: rep.HighSeq()}
		s.mu.Unlock()
		s.metrics.SplitsImpossible.Inc()
		s.log.Warn("partition above its size target cannot split: every row is at one time; retried later if it receives rows",
			"table", st.Table, "partition", st.PartitionID, "bytes", size, "target", cfg.PartitionSizeTarget, "retry_after", cannotSplitRetry)
		return nil
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.mu.unsplittable, st.Placement)
	s.mu.Unlock()
	f, err := s.beginSplit(ctx, st.Table, p.ID, at, true)
	switch {
	case errors.Is(err, errSplitSettled):
		s.metrics.SplitsFollowed.Inc()
		s.log.Info("split already started by another replica; following it", "table", st.Table, "partition", p.ID)
		return nil
	case errors.Is(err, errSplitDeferred):
		return nil
	case err != nil:
		return fmt.Errorf("split partition %s of %q: %w", p.ID, st.Table, err)
	}
	s.log.Info("split started: partition above its size target", "table", st.Table, "partition", p.ID,
		"bytes", size, "target", cfg.PartitionSizeTarget, "at", at, "txnseq", f.TxnSeq)
	return nil
}

// beginSplit commits SPLIT_BEGIN of partition pid at time at, with fresh
// children on the least-loaded live servers. With follow (the size
// trigger), a partition already splitting, split, or with a join in
// progress is not an error: errSplitSettled or errSplitDeferred tell the
// caller to follow or retry; otherwise the op's own validation answers
// (a manual split of such a partition is refused with the reason).
func (s *Server) beginSplit(ctx context.Context, table string, pid uuid.UUID, at int64, follow bool) (*metadata.File, error) {
	// Draining servers get no children; if the marks cannot be read the
	// split goes ahead (the drain moves a child off later).
	draining, err := operator.Draining(ctx, s.etcd, s.cfg.EtcdPrefix)
	if err != nil {
		s.log.Warn("split: drain marks unreadable; children may land on a draining server", "err", err)
	}
	f, err := s.RequestChange(ctx, table, func(cfg metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		if follow {
			cur, ok := f.Partition(pid)
			switch {
			case !ok || cur.Split != nil:
				return metadata.Op{}, errSplitSettled
			case len(cur.Joining) > 0:
				return metadata.Op{}, errSplitDeferred
			}
		}
		if s.cfg.Knobs.BeforeSplitBegin != nil {
			s.cfg.Knobs.BeforeSplitBegin()
		}
		live := slices.DeleteFunc(s.dir.Live(), func(i membership.Info) bool { _, d := draining[i.ID]; return d })
		if len(live) == 0 {
			return metadata.Op{}, fmt.Errorf("%w: no live servers to hold the children", wire.ErrUnavailable)
		}
		sets := PickChildServers(live, 2, cfg.ReplicationFactor, rand.IntN)
		children := make([]metadata.SplitChild, len(sets))
		for i, set := range sets {
			children[i].ID = uuid.New()
			for _, srv := range set {
				children[i].Servers = append(children[i].Servers, metadata.Placement{ServerID: srv.ID, PlacementID: uuid.New()})
			}
		}
		return metadata.Op{Type: metadata.OpSplitBegin, SplitBegin: &metadata.SplitBeginOp{
			PartitionID: pid, Points: []int64{at}, Children: children,
		}}, nil
	})
	if err == nil {
		s.metrics.SplitsStarted.Inc()
	}
	return f, err
}

// PickChildServers chooses k servers for each of children new partitions:
// the least loaded live servers (by partition count, counting what this
// choice adds), a server already chosen for another child coming after
// every server not chosen yet, so the children land on different sets when
// there are servers enough. Ties are broken at random.
func PickChildServers(live []membership.Info, children, k int, rnd func(int) int) [][]membership.Info {
	k = min(k, len(live))
	type cand struct {
		info   membership.Info
		load   int // partitions, plus children given here
		chosen int // children given here
	}
	cands := make([]*cand, len(live))
	for i, s := range live {
		cands[i] = &cand{info: s, load: s.Summary.Partitions}
	}
	out := make([][]membership.Info, children)
	for c := range out {
		for i := len(cands) - 1; i > 0; i-- {
			j := rnd(i + 1)
			cands[i], cands[j] = cands[j], cands[i]
		}
		slices.SortStableFunc(cands, func(a, b *cand) int {
			return cmp.Or(cmp.Compare(a.chosen, b.chosen), cmp.Compare(a.load, b.load))
		})
		for _, s := range cands[:k] {
			out[c] = append(out[c], s.info)
			s.load++
			s.chosen++
		}
	}
	return out
}

// SplitPartition starts a split of a current partition by hand (tsdb
// admin split): at a given time, or, with at nil, at the split point of a
// replica's data (this server's if it holds one, else asked of a server of
// the partition). It returns the METADATA holding SPLIT_BEGIN; the split
// then proceeds and finalizes like a size-triggered one.
func (s *Server) SplitPartition(ctx context.Context, table string, pid uuid.UUID, at *int64) (*metadata.File, error) {
	// The current METADATA, not a cached one: the partition may be a
	// child that finalized a moment ago.
	if err := s.router.Refresh(ctx, table); err != nil {
		return nil, err
	}
	_, file, err := s.router.Table(ctx, table)
	if err != nil {
		return nil, err
	}
	p, ok := file.Partition(pid)
	if !ok {
		return nil, fmt.Errorf("%w: partition %s is not a current partition of table %q", metadata.ErrInvalidOp, pid, table)
	}
	if p.Split != nil {
		return nil, fmt.Errorf("%w: partition %s is already splitting at %v", metadata.ErrInvalidOp, pid, p.Split.Points)
	}
	if at == nil {
		t, err := s.splitPointOf(ctx, table, file.TxnSeq, p)
		if err != nil {
			return nil, err
		}
		at = &t
	}
	return s.beginSplit(ctx, table, pid, *at, false)
}

// splitPointOf asks p's servers, this one first, for their replica's split
// point; the first answer wins. A replica whose rows are all at one time
// answers ErrCannotSplit, which is returned unless another answers.
func (s *Server) splitPointOf(ctx context.Context, table string, txnSeq uint64, p *metadata.Partition) (int64, error) {
	order := slices.Clone(p.Servers)
	if i := slices.IndexFunc(order, func(pl metadata.Placement) bool { return pl.ServerID == s.cfg.Self }); i > 0 {
		order[0], order[i] = order[i], order[0]
	}
	var errs []error
	for _, pl := range order {
		req := wire.SplitPointRequest{Table: table, PartitionID: p.ID, Placement: pl.PlacementID, TxnSeq: txnSeq}
		var resp wire.SplitPointResponse
		var err error
		if pl.ServerID == s.cfg.Self {
			resp, err = s.SplitPoint(ctx, req)
		} else {
			var addr string
			if addr, err = s.dir.Addr(ctx, pl.ServerID); err == nil {
				err = s.rpc.Call(ctx, addr, wire.PathSplitPoint, req, &resp)
			}
			err = errcode.Translate(err, partition.ErrCannotSplit)
		}
		if err == nil {
			return resp.At, nil
		}
		errs = append(errs, fmt.Errorf("server %s: %w", pl.ServerID, err))
	}
	err := errors.Join(errs...)
	if errors.Is(err, partition.ErrCannotSplit) {
		return 0, fmt.Errorf("partition %s: %w", p.ID, err)
	}
	return 0, fmt.Errorf("%w: no server of partition %s answered its split point: %w", wire.ErrUnavailable, p.ID, err)
}

// SplitPoint answers the split point of a local replica (DESIGN.md section
// 6): a time near the middle of its data by bytes with rows on both sides.
func (s *Server) SplitPoint(_ context.Context, req wire.SplitPointRequest) (wire.SplitPointResponse, error) {
	rep, ok := s.store.Replica(req.Placement)
	if !ok || rep.Info().PartitionID != req.PartitionID {
		return wire.SplitPointResponse{}, fmt.Errorf("%w: no replica %s of partition %s here", wire.ErrStalePlacement, req.Placement, req.PartitionID)
	}
	at, err := rep.SplitPoint()
	if err != nil {
		return wire.SplitPointResponse{}, err
	}
	return wire.SplitPointResponse{At: at}, nil
}
