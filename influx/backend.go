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
	ListTables(ctx context.Context) ([]model.TableConfig, error)
	CreateTable(ctx context.Context, name string, retention time.Duration) error // exists: no error
	DropTable(ctx context.Context, name string) error
	// SetRetention changes a table's retention (0 keeps data forever).
	SetRetention(ctx context.Context, name string, retention time.Duration) error
	Query(ctx context.Context, table string, q model.Query) ([]model.Row, bool, error) // raw, as frontend.Query
	Aggregate(ctx context.Context, table string, q model.Query) ([]model.SeriesAgg, error)
	SeriesKeys(ctx context.Context, table string, q model.Query, limit int) ([]string, error)
	FieldKeys(ctx context.Context, table, measurement string) ([]model.FieldKey, error)
	Delete(ctx context.Context, table string, q model.Query) error // q: From/To, Measurement, Tags
}
