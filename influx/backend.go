package influx

import (
	"context"
	"time"

	"github.com/tsdb/tsdb/model"
)

// Backend is what the executor needs from the cluster; package frontend
// implements it. A database is a table. Errors wrap the kinds of package
// errcode (errcode.ErrTableNotFound for a missing table, ...).
type Backend interface {
	// ListTables returns every table's config (SHOW DATABASES, SHOW
	// RETENTION POLICIES).
	ListTables(ctx context.Context) ([]model.TableConfig, error)
	// CreateTable creates a table with the given retention (0 keeps data
	// forever). A table that already exists is no error, as CREATE
	// DATABASE of an existing database.
	CreateTable(ctx context.Context, name string, retention time.Duration) error
	// DropTable drops a table and all its data; a missing table is
	// errcode.ErrTableNotFound.
	DropTable(ctx context.Context, name string) error
	// SetRetention changes a table's retention (0 keeps data forever).
	SetRetention(ctx context.Context, name string, retention time.Duration) error
	// Query answers a raw query as frontend.Query: the rows of q, sorted
	// by (time, series), at most q.Limit of them (<= 0: no limit), and
	// whether the answer was truncated at that limit.
	Query(ctx context.Context, table string, q model.Query) ([]model.Row, bool, error)
	// Aggregate answers an aggregate query (q.Agg, q.Step, ...), one
	// model.SeriesAgg per series or group of series, as
	// frontend.Aggregate.
	Aggregate(ctx context.Context, table string, q model.Query) ([]model.SeriesAgg, error)
	// SeriesKeys returns the keys of the series matching q's
	// Measurement and Tags (its time range is ignored), sorted, at most
	// limit of them (<= 0: all).
	SeriesKeys(ctx context.Context, table string, q model.Query, limit int) ([]string, error)
	// FieldKeys returns the field names and kinds of a measurement (""
	// = every measurement), sorted by measurement then name.
	FieldKeys(ctx context.Context, table, measurement string) ([]model.FieldKey, error)
	// Delete deletes the rows of the series selected by q's Measurement
	// and Tags in [q.From, q.To); q.To == math.MaxInt64 is an open end.
	Delete(ctx context.Context, table string, q model.Query) error
}
