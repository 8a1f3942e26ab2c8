package router

import (
	"context"
	"fmt"
	"log/slog"
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
	// Logger receives state changes; nil discards.
	Logger *slog.Logger
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
// that lists this server in servers[] or joining[] (DESIGN.md rule 4: only
// placements the METADATA assigns). It returns the number created.
func (r *Router) EnsureLocalReplicas(file *metadata.File) (int, error) {
	created := 0
	for i := range file.Partitions {
		p := &file.Partitions[i]
		pl, ok := localPlacement(p, r.cfg.Self)
		if !ok {
			continue
		}
		if _, ok := r.cfg.Store.Replica(pl); ok {
			continue
		}
		if _, err := r.cfg.Store.CreateReplica(partition.ReplicaInfo{
			Placement:   pl,
			Table:       file.Table,
			PartitionID: p.ID,
			Begin:       p.Begin,
			End:         p.End,
			CreatedAt:   time.Now().UTC(),
		}); err != nil {
			return created, fmt.Errorf("create replica of partition %s of table %s: %w", p.ID, file.Table, err)
		}
		created++
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

// InsertResult reports what an insert stored.
type InsertResult struct {
	// Rows is the number of rows accepted.
	Rows int
	// Changed is the number of rows whose stored value changed (replays and
	// older versions change nothing).
	Changed int
}

// Insert stamps rows with one fresh version, routes each to its partition and
// writes them. It returns once every row is durable (synced) on its replica.
// rows must be validated; Insert may reorder them.
func (r *Router) Insert(ctx context.Context, table string, rows []model.Row) (InsertResult, error) {
	e, err := r.entry(ctx, table)
	if err != nil {
		return InsertResult{}, err
	}
	v := r.cfg.Clock.Now()
	for i := range rows {
		rows[i].SetVersion(v)
	}
	groups, err := groupByPartition(e.file, rows)
	if err != nil {
		return InsertResult{}, err
	}
	res := InsertResult{Rows: len(rows)}
	if len(groups) == 1 {
		changed, err := r.write(e.file, groups[0])
		res.Changed = changed
		return res, err
	}
	// Several partitions: write them concurrently so they share fsyncs.
	var wg sync.WaitGroup
	errs := make([]error, len(groups))
	changed := make([]int, len(groups))
	for i := range groups {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			changed[i], errs[i] = r.write(e.file, groups[i])
		}(i)
	}
	wg.Wait()
	for i := range groups {
		if errs[i] != nil {
			return res, errs[i]
		}
		res.Changed += changed[i]
	}
	return res, nil
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

func (r *Router) write(file *metadata.File, g partitionRows) (int, error) {
	rep, err := r.replicaFor(file, g.p)
	if err != nil {
		return 0, err
	}
	res, err := rep.Apply(g.rows)
	if err != nil {
		return 0, fmt.Errorf("write %d rows to partition %s: %w", len(g.rows), g.p.ID, err)
	}
	return res.Changed, nil
}

// RawQuery selects rows.
type RawQuery struct {
	From, To int64 // [From, To)
	Series   string
	Prefix   bool
	Fields   []string
	Limit    int // > 0
}

// Query answers a raw query: rows sorted by (time, series), at most Limit,
// truncated when more matched.
func (r *Router) Query(ctx context.Context, table string, q RawQuery) ([]model.Row, bool, error) {
	e, err := r.entry(ctx, table)
	if err != nil {
		return nil, false, err
	}
	var out []model.Row
	// Partitions are disjoint and sorted by begin, so answers concatenate in
	// time order.
	for _, p := range e.file.Overlapping(q.From, q.To) {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		rep, err := r.replicaFor(e.file, p)
		if err != nil {
			return nil, false, err
		}
		from, to := clip(p, q.From, q.To)
		rows, truncated, err := rep.Scan(partition.ScanQuery{
			From: from, To: to, Series: q.Series, Prefix: q.Prefix, Fields: q.Fields,
			Limit: q.Limit - len(out),
		})
		if err != nil {
			return nil, false, fmt.Errorf("scan partition %s: %w", p.ID, err)
		}
		out = append(out, rows...)
		if truncated || len(out) >= q.Limit {
			return out, true, nil
		}
	}
	return out, false, nil
}

// AggQuery selects aggregates per step bucket.
type AggQuery struct {
	From, To int64
	Series   string
	Prefix   bool
	Fields   []string
	// Step is the bucket width; 0 means one bucket starting at From.
	Step int64
	// GroupAll merges all series into one result "*".
	GroupAll bool
}

// Aggregate answers an aggregate query with the merged partial states of
// every overlapping partition, each clipped to its range.
func (r *Router) Aggregate(ctx context.Context, table string, q AggQuery) ([]model.SeriesAgg, error) {
	e, err := r.entry(ctx, table)
	if err != nil {
		return nil, err
	}
	var out []model.SeriesAgg
	for _, p := range e.file.Overlapping(q.From, q.To) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rep, err := r.replicaFor(e.file, p)
		if err != nil {
			return nil, err
		}
		from, to := clip(p, q.From, q.To)
		part, err := rep.Aggregate(partition.AggQuery{
			From: from, To: to, Series: q.Series, Prefix: q.Prefix, Fields: q.Fields,
			Step: q.Step, Origin: q.From, GroupAll: q.GroupAll,
		})
		if err != nil {
			return nil, fmt.Errorf("aggregate partition %s: %w", p.ID, err)
		}
		out = model.MergeSeriesAggs(out, part)
	}
	return out, nil
}

// clip intersects [from, to) with the partition's range.
func clip(p *metadata.Partition, from, to int64) (int64, int64) {
	if p.Begin != nil && *p.Begin > from {
		from = *p.Begin
	}
	if p.End != nil && *p.End < to {
		to = *p.End
	}
	return from, to
}
