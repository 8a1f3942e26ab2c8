package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// MetaSource loads a table's current TableConfig and METADATA file.
// metadata.Committer implements it.
type MetaSource interface {
	Load(ctx context.Context, table string) (metadata.TableConfig, *metadata.File, error)
}

// Config assembles a Router.
type Config struct {
	// Self is this server's id.
	Self string
	// Meta is where METADATA comes from.
	Meta MetaSource
	// Store holds the local partition replicas.
	Store *partition.Store
	// Clock assigns versions to accepted rows.
	Clock *model.Clock
	// Replicas reaches the partition replicas, local and remote; nil means
	// local replicas only (writes stamped with Clock and applied to Store).
	Replicas Replicas
	// Logger receives state changes; nil discards.
	Logger *slog.Logger
}

// Target names one replica of a partition under a METADATA file.
type Target struct {
	File      *metadata.File
	Partition *metadata.Partition
	// Server holds the replica; Placement is its placement id.
	Server    string
	Placement uuid.UUID
}

// Replicas reaches partition replicas for the router. Errors matching
// ErrMoved make the router refresh the table's METADATA and route again;
// ErrUnavailable makes it try the partition's next replica; any other error
// is the answer.
type Replicas interface {
	// Insert has the replica coordinate rows of its partition: stamp their
	// versions (unless opts.Versioned), write them durably, and return once
	// as many replicas as opts.Consistency asks hold them.
	Insert(ctx context.Context, t Target, rows []model.Row, opts model.InsertOptions) error
	// Scan reads rows of the replica: q is the query clipped to the
	// partition (model.Query.Clip); q.Consistency "quorum" or "all" makes
	// the replica catch up from that many of its peers first ("" or
	// "one": as it is).
	Scan(ctx context.Context, t Target, q model.Query) ([]model.Row, bool, error)
	// Aggregate computes partial aggregates on the replica (q as for Scan).
	Aggregate(ctx context.Context, t Target, q model.Query) ([]model.SeriesAgg, error)
	// SeriesKeys lists the keys of the replica's series matching q
	// (partition.Replica.SeriesKeys: its time range is ignored), sorted,
	// at most limit (<= 0: all); q.Consistency as for Scan.
	SeriesKeys(ctx context.Context, t Target, q model.Query, limit int) ([]string, error)
	// FieldKeys lists the field keys of the replica's rows of
	// q.Measurement ("" = all) (partition.Replica.FieldKeys);
	// q.Consistency as for Scan, its other fields are not read.
	FieldKeys(ctx context.Context, t Target, q model.Query) ([]model.FieldKey, error)
}

// Router routes inserts and queries of one server's front end.
type Router struct {
	cfg Config
	log *slog.Logger

	mu struct {
		sync.Mutex
		tables map[string]*tableEntry // cached METADATA by table name
	}
}

// tableEntry is one cached table: immutable once published.
type tableEntry struct {
	cfg  metadata.TableConfig
	file *metadata.File
}

// New returns a Router.
func New(cfg Config) *Router {
	r := &Router{cfg: cfg, log: cfg.Logger}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.mu.tables = make(map[string]*tableEntry)
	if r.cfg.Replicas == nil {
		r.cfg.Replicas = localReplicas{r}
	}
	return r
}

// Table returns the cached TableConfig and METADATA of a table, loading them
// on first use. It fails with metadata.ErrTableNotFound for an unknown table.
func (r *Router) Table(ctx context.Context, table string) (metadata.TableConfig, *metadata.File, error) {
	e, err := r.entry(ctx, table)
	if err != nil {
		return metadata.TableConfig{}, nil, err
	}
	return e.cfg, e.file, nil
}

func (r *Router) entry(ctx context.Context, table string) (*tableEntry, error) {
	r.mu.Lock()
	e := r.mu.tables[table]
	r.mu.Unlock()
	if e != nil {
		return e, nil
	}
	cfg, file, err := r.cfg.Meta.Load(ctx, table)
	if err != nil {
		return nil, err
	}
	return r.Update(cfg, file), nil
}

// Update installs a newer METADATA for a table (after a local commit or a
// change notification). An older txnseq than the cached one is ignored.
func (r *Router) Update(cfg metadata.TableConfig, file *metadata.File) *tableEntry {
	e := &tableEntry{cfg: cfg, file: file}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.mu.tables[cfg.Name]; old != nil && old.file.TxnSeq > file.TxnSeq {
		return old
	}
	r.mu.tables[cfg.Name] = e
	return e
}

// Cached returns the cached TableConfig and METADATA of a table without
// loading them; ok is false when the table is not cached.
func (r *Router) Cached(table string) (metadata.TableConfig, *metadata.File, bool) {
	r.mu.Lock()
	e := r.mu.tables[table]
	r.mu.Unlock()
	if e == nil {
		return metadata.TableConfig{}, nil, false
	}
	return e.cfg, e.file, true
}

// Forget drops a table from the cache; the next use reloads it.
func (r *Router) Forget(table string) {
	r.mu.Lock()
	delete(r.mu.tables, table)
	r.mu.Unlock()
}

// EnsureLocalReplicas creates the local replica of every partition of file
// that lists this server in servers[] or joining[], and of every child of a
// split in progress that lists it (DESIGN.md rule 4: only placements the
// METADATA assigns; a child's replica is LOAD until SPLIT_FINALIZE), except
// the placements the store marked lost (a wiped disk: never created). It
// returns the number created.
func (r *Router) EnsureLocalReplicas(file *metadata.File) (int, error) {
	created := 0
	var generation time.Time // the table's CreatedAt, from the cached config
	r.mu.Lock()
	if e := r.mu.tables[file.Table]; e != nil {
		generation = e.cfg.CreatedAt.UTC()
	}
	r.mu.Unlock()
	ensure := func(pl uuid.UUID, id uuid.UUID, begin, end *int64) error {
		if _, ok := r.cfg.Store.Replica(pl); ok {
			return nil
		}
		_, err := r.cfg.Store.CreateReplica(partition.ReplicaInfo{
			Placement: pl, Table: file.Table, PartitionID: id, Begin: begin, End: end, CreatedAt: time.Now().UTC(),
			TableCreatedAt: generation,
		})
		if errors.Is(err, partition.ErrLost) {
			return nil // its data is gone: never created here (DESIGN.md section 5)
		}
		if err != nil {
			return fmt.Errorf("create replica of partition %s of table %s: %w", id, file.Table, err)
		}
		created++
		return nil
	}
	for i := range file.Partitions {
		p := &file.Partitions[i]
		if pl, ok := localPlacement(p, r.cfg.Self); ok {
			if err := ensure(pl, p.ID, p.Begin, p.End); err != nil {
				return created, err
			}
		}
		if p.Split == nil {
			continue
		}
		for _, c := range p.Split.Children {
			for _, s := range c.Servers {
				if s.ServerID != r.cfg.Self {
					continue
				}
				if err := ensure(s.PlacementID, c.ID, c.Begin, c.End); err != nil {
					return created, err
				}
			}
		}
	}
	return created, nil
}

func localPlacement(p *metadata.Partition, self string) (uuid.UUID, bool) {
	for _, s := range p.Servers {
		if s.ServerID == self {
			return s.PlacementID, true
		}
	}
	for _, s := range p.Joining {
		if s.ServerID == self {
			return s.PlacementID, true
		}
	}
	return uuid.UUID{}, false
}

// replicaFor returns the local replica of partition p, creating it when the
// METADATA assigns p to this server and it does not exist yet.
func (r *Router) replicaFor(file *metadata.File, p *metadata.Partition) (*partition.Replica, error) {
	pl, ok := localPlacement(p, r.cfg.Self)
	if !ok {
		return nil, fmt.Errorf("%w: partition %s of table %s", ErrNotLocal, p.ID, file.Table)
	}
	if rep, ok := r.cfg.Store.Replica(pl); ok {
		return rep, nil
	}
	if _, err := r.EnsureLocalReplicas(file); err != nil {
		return nil, err
	}
	rep, ok := r.cfg.Store.Replica(pl)
	if !ok {
		return nil, fmt.Errorf("%w: placement %s vanished", ErrNotLocal, pl)
	}
	return rep, nil
}

// maxRouteAttempts bounds how often one request re-routes after a "moved"
// answer (each time with freshly loaded METADATA).
const maxRouteAttempts = 4

// Insert routes each row to the partition covering its time and has one
// replica of each partition coordinate its rows (this server's own replica
// first, else the others in random order, failing over when one is
// unavailable). A "moved" answer reloads the table's METADATA and routes
// the rows not yet written again, invisibly to the caller. It returns once
// every partition's coordinator acknowledged (consistency: one, quorum or
// all; "" is quorum; opts.NoSmear is not read here). rows must be
// validated; Insert may reorder them.
func (r *Router) Insert(ctx context.Context, table string, rows []model.Row, opts model.InsertOptions) error {
	pending := rows
	var last error
	for attempt := range maxRouteAttempts {
		if attempt > 0 {
			if err := r.Refresh(ctx, table); err != nil {
				return err
			}
		}
		e, err := r.entry(ctx, table)
		if err != nil {
			return err
		}
		groups, err := groupByPartition(e.file, pending)
		if err != nil {
			return err
		}
		// All or nothing: no group is written if one partition is offline.
		for _, g := range groups {
			if g.p.Offline {
				return offlineError(e.file, g.p)
			}
		}
		moved, err := r.insertGroups(ctx, e.file, groups, opts)
		if err != nil {
			return err
		}
		if len(moved) == 0 {
			return nil
		}
		pending, last = nil, nil
		for _, m := range moved {
			pending = append(pending, m.rows...)
			last = m.err
		}
	}
	return fmt.Errorf("%w: insert into %q: still routed to moved partitions after %d attempts: %v", ErrUnavailable, table, maxRouteAttempts, last)
}

// movedGroup is a partition's rows that its replica refused as moved.
type movedGroup struct {
	rows []model.Row
	err  error
}

// insertGroups writes each partition's rows, concurrently when there are
// several (they share fsyncs), and returns the groups to route again.
func (r *Router) insertGroups(ctx context.Context, file *metadata.File, groups []partitionRows, opts model.InsertOptions) ([]movedGroup, error) {
	errs := make([]error, len(groups))
	if len(groups) == 1 {
		errs[0] = r.insertPartition(ctx, file, groups[0], opts)
	} else {
		var wg sync.WaitGroup
		for i := range groups {
			wg.Go(func() { errs[i] = r.insertPartition(ctx, file, groups[i], opts) })
		}
		wg.Wait()
	}
	var moved []movedGroup
	for i, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, ErrMoved):
			moved = append(moved, movedGroup{rows: groups[i].rows, err: err})
		default:
			return nil, err
		}
	}
	return moved, nil
}

// insertPartition has one replica of the partition coordinate its rows.
func (r *Router) insertPartition(ctx context.Context, file *metadata.File, g partitionRows, opts model.InsertOptions) error {
	var errs []error
	for _, t := range r.candidates(file, g.p) {
		err := r.cfg.Replicas.Insert(ctx, t, g.rows, opts)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
			return fmt.Errorf("insert %d rows into partition %s via %s: %w", len(g.rows), g.p.ID, t.Server, err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", t.Server, err))
	}
	return fmt.Errorf("%w: partition %s of %q: no replica took the rows: %w", ErrUnavailable, g.p.ID, file.Table, errors.Join(errs...))
}

// candidates orders the replicas of p to try: this server's first, then the
// others in random order (spreading the load of front ends without one).
func (r *Router) candidates(file *metadata.File, p *metadata.Partition) []Target {
	out := make([]Target, 0, len(p.Servers))
	for _, pl := range p.Servers {
		out = append(out, Target{File: file, Partition: p, Server: pl.ServerID, Placement: pl.PlacementID})
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for i := range out {
		if out[i].Server == r.cfg.Self {
			out[0], out[i] = out[i], out[0]
			break
		}
	}
	return out
}

// Refresh drops the cached METADATA of table and loads the current one.
func (r *Router) Refresh(ctx context.Context, table string) error {
	cfg, file, err := r.cfg.Meta.Load(ctx, table)
	if err != nil {
		return err
	}
	r.Update(cfg, file)
	return nil
}

// partitionRows is the slice of an insert that one partition takes.
type partitionRows struct {
	p    *metadata.Partition
	rows []model.Row
}

// groupByPartition splits rows by the partition covering their time. The
// common case (every row in one partition) allocates nothing but the result.
func groupByPartition(file *metadata.File, rows []model.Row) ([]partitionRows, error) {
	first, ok := file.Find(rows[0].Time)
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrNoPartition, rows[0].Time)
	}
	same := true
	for i := 1; i < len(rows); i++ {
		if !first.Contains(rows[i].Time) {
			same = false
			break
		}
	}
	if same {
		return []partitionRows{{p: first, rows: rows}}, nil
	}
	idx := make(map[uuid.UUID]int)
	var groups []partitionRows
	for _, row := range rows {
		p, ok := file.Find(row.Time)
		if !ok {
			return nil, fmt.Errorf("%w: %d", ErrNoPartition, row.Time)
		}
		i, seen := idx[p.ID]
		if !seen {
			i = len(groups)
			idx[p.ID] = i
			groups = append(groups, partitionRows{p: p})
		}
		groups[i].rows = append(groups[i].rows, row)
	}
	return groups, nil
}

// Query answers a raw query: rows sorted by (time, series), at most
// q.Limit (> 0), truncated when more matched. Each overlapping partition is
// read from one of its replicas (this server's first), failing over on
// error; a "moved" answer reloads the METADATA and routes again only the
// range not yet answered (eachPartition). The aggregate fields of q are
// ignored.
func (r *Router) Query(ctx context.Context, table string, q model.Query) ([]model.Row, bool, error) {
	var out []model.Row
	truncated := false
	err := r.eachPartition(ctx, table, q, func(file *metadata.File, p *metadata.Partition, part model.Query) (bool, error) {
		part.Limit = q.Limit - len(out)
		var rows []model.Row
		var trunc bool
		err := r.onReplica(ctx, file, p, func(t Target) error {
			var err error
			rows, trunc, err = r.cfg.Replicas.Scan(ctx, t, part)
			return err
		})
		if err != nil {
			return false, fmt.Errorf("scan partition %s: %w", p.ID, err)
		}
		// Partitions are disjoint and visited by begin, so answers
		// concatenate in time order. The first is kept as it is.
		if out == nil {
			out = rows
		} else {
			out = append(out, rows...)
		}
		truncated = trunc || len(out) >= q.Limit
		return truncated, nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, truncated, nil
}

// eachPartition calls f, in range order, for the partitions of table
// covering [q.From, q.To), each with q clipped to its range
// (model.Query.Clip). When f
// fails with ErrMoved (the replica's view is newer: the partition split or
// moved), the table's METADATA is reloaded and only the range not yet
// answered is routed again, so no range is ever read from both a parent
// and a child, and a query under many splits still ends. It gives up, as
// unavailable, after maxRouteAttempts "moved" answers in a row with no
// partition answering in between. f returns true to stop early.
func (r *Router) eachPartition(ctx context.Context, table string, q model.Query,
	f func(file *metadata.File, p *metadata.Partition, part model.Query) (bool, error)) error {
	moved := 0
	for {
		e, err := r.entry(ctx, table)
		if err != nil {
			return err
		}
		again := false
		for _, p := range e.file.Overlapping(q.From, q.To) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if p.Offline {
				return offlineError(e.file, p)
			}
			part := q.Clip(p.Begin, p.End)
			stop, err := f(e.file, p, part)
			if errors.Is(err, ErrMoved) {
				if moved++; moved >= maxRouteAttempts {
					return fmt.Errorf("%w: %q: still routed to moved partitions after %d attempts: %v", ErrUnavailable, table, moved, err)
				}
				if err := r.Refresh(ctx, table); err != nil {
					return err
				}
				q.From, again = part.From, true
				break
			}
			if err != nil || stop {
				return err
			}
			moved, q.From = 0, part.To
		}
		if !again {
			return nil
		}
	}
}

// onReplica runs f on one replica of p, trying the next one when a replica
// fails with anything but "moved" (which needs new METADATA, not another
// replica) or an answer over a query limit (overLimit).
func (r *Router) onReplica(ctx context.Context, file *metadata.File, p *metadata.Partition, f func(Target) error) error {
	var errs []error
	for _, t := range r.candidates(file, p) {
		err := f(t)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrMoved) || ctx.Err() != nil || overLimit(err) {
			return err
		}
		errs = append(errs, fmt.Errorf("%s: %w", t.Server, err))
	}
	return fmt.Errorf("%w: no replica of partition %s answered: %w", ErrUnavailable, p.ID, errors.Join(errs...))
}

// overLimit reports whether err is an answer over a query limit: every
// replica of the partition holds the same rows and would build the same
// answer, so another one is not tried.
func overLimit(err error) bool {
	return errors.Is(err, partition.ErrTooManyBuckets) || errors.Is(err, partition.ErrAnswerTooLarge)
}

// offlineError names the offline partition p and how to bring it back.
func offlineError(file *metadata.File, p *metadata.Partition) error {
	return fmt.Errorf("%w: partition %s of %q (txnseq %d) was taken offline by an operator; 'tsdb admin online %s %s' brings it back",
		ErrOffline, p.ID, file.Table, file.TxnSeq, file.Table, p.ID)
}

// Aggregate answers an aggregate query with the merged partial states of
// every overlapping partition, each clipped to its range and computed on
// one of its replicas (as Query chooses them, re-routing after "moved" as
// Query does). q.Origin is set to q.From, so that with Step 0 every part's
// single bucket starts at the query's start; the raw fields of q (Limit,
// MaxBytes) are ignored. With MaxBuckets set, each partition's part is bounded by
// it (the replica stops early) and so is the merged answer after each
// partition: partitions cover disjoint times, so their buckets mostly add
// up, and a query over many partitions is stopped as soon as the sum is
// over, holding at most about twice the cap.
func (r *Router) Aggregate(ctx context.Context, table string, q model.Query) ([]model.SeriesAgg, error) {
	var out []model.SeriesAgg
	q.Origin = q.From
	err := r.eachPartition(ctx, table, q, func(file *metadata.File, p *metadata.Partition, part model.Query) (bool, error) {
		var aggs []model.SeriesAgg
		err := r.onReplica(ctx, file, p, func(t Target) error {
			var err error
			aggs, err = r.cfg.Replicas.Aggregate(ctx, t, part)
			return err
		})
		if err != nil {
			return false, fmt.Errorf("aggregate partition %s: %w", p.ID, err)
		}
		out = model.MergeSeriesAggs(out, aggs)
		if q.MaxBuckets > 0 && countBuckets(out) > q.MaxBuckets {
			return false, partition.TooManyBuckets(q.MaxBuckets)
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// countBuckets is the number of buckets of aggs summed over its series.
func countBuckets(aggs []model.SeriesAgg) int {
	n := 0
	for i := range aggs {
		n += len(aggs[i].Buckets)
	}
	return n
}
