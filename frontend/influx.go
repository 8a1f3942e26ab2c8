package frontend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// InfluxBackend is the front end as the InfluxQL executor's backend: it
// implements influx.Backend (declared by its consumer, package influx). A
// database is a table. It is a type of its own, not *Frontend, because
// influx.Backend's CreateTable (a name and a retention, idempotent like
// CREATE DATABASE) is not the public API's (a full table definition).
// Errors wrap errcode's kinds as the public API's do.
type InfluxBackend struct{ fe *Frontend }

// Influx returns the front end as the InfluxQL executor's backend.
func (fe *Frontend) Influx() *InfluxBackend { return &InfluxBackend{fe: fe} }

// ListTables returns every table's config (influx.Backend).
func (b *InfluxBackend) ListTables(ctx context.Context) ([]model.TableConfig, error) {
	return b.fe.ListTables(ctx)
}

// CreateTable creates a table with the public API's defaults (replication
// factor min(3, live servers), the default partition size and smear
// settings) and the given retention (0: keep forever). A table that
// already exists is no error, whatever its settings, as InfluxDB's CREATE
// DATABASE (influx.Backend).
func (b *InfluxBackend) CreateTable(ctx context.Context, name string, retention time.Duration) error {
	if retention < 0 {
		return fmt.Errorf("%w: retention %v is negative", metadata.ErrInvalidConfig, retention)
	}
	if err := model.ValidateTableName(name); err != nil {
		return errcode.Mark(err, errcode.ErrInvalidTableName)
	}
	if _, _, err := b.fe.router.Table(ctx, name); err == nil {
		return nil // exists: nothing to do, and no live-server count needed
	} else if !errors.Is(err, metadata.ErrTableNotFound) {
		return publicError(err)
	}
	req := api.CreateTableRequest{Name: name}
	if retention > 0 {
		d := api.Duration(retention)
		req.Retention = &d
	}
	_, err := b.fe.CreateTable(ctx, req)
	if errors.Is(err, metadata.ErrTableExists) {
		return nil // created meanwhile by another request
	}
	return err
}

// DropTable drops a table and all its data (influx.Backend).
func (b *InfluxBackend) DropTable(ctx context.Context, name string) error {
	return publicError(b.fe.dropTable(ctx, name, false))
}

// SetRetention changes a table's retention, as PATCH /api/v1/tables/{t}
// (influx.Backend: ALTER RETENTION POLICY autogen ON db DURATION d).
func (b *InfluxBackend) SetRetention(ctx context.Context, name string, retention time.Duration) error {
	d := api.Duration(retention)
	_, err := b.fe.PatchTable(ctx, name, api.PatchTableRequest{Retention: &d})
	return publicError(err)
}

// Query answers a raw query, as Frontend.Query (influx.Backend).
func (b *InfluxBackend) Query(ctx context.Context, table string, q model.Query) ([]model.Row, bool, error) {
	if err := checkSelection(&q); err != nil {
		return nil, false, err
	}
	return b.fe.Query(ctx, table, q)
}

// Aggregate answers an aggregate query, as Frontend.Aggregate
// (influx.Backend).
func (b *InfluxBackend) Aggregate(ctx context.Context, table string, q model.Query) ([]model.SeriesAgg, error) {
	if err := checkSelection(&q); err != nil {
		return nil, err
	}
	return b.fe.Aggregate(ctx, table, q)
}

// SeriesKeys returns the keys of the table's series matching q's
// Series/Prefix, Measurement and Tags (its time range is ignored), sorted,
// at most limit (<= 0: all), the union over every partition
// (influx.Backend).
func (b *InfluxBackend) SeriesKeys(ctx context.Context, table string, q model.Query, limit int) ([]string, error) {
	return b.fe.SeriesKeys(ctx, table, q, limit)
}

// FieldKeys returns the field names and kinds of a measurement's rows (""
// = every measurement), sorted by measurement then name, the union over
// every partition (influx.Backend).
func (b *InfluxBackend) FieldKeys(ctx context.Context, table, measurement string) ([]model.FieldKey, error) {
	return b.fe.FieldKeys(ctx, table, measurement, "")
}

// Delete deletes the rows of the series selected by q's Measurement and
// Tags in [q.From, q.To) (influx.Backend).
func (b *InfluxBackend) Delete(ctx context.Context, table string, q model.Query) error {
	if err := checkSelection(&q); err != nil {
		return err
	}
	return publicError(b.fe.deleteRows(ctx, table, q))
}

// SeriesKeys returns the keys of the table's series matching q (router's
// SeriesKeys); q.Consistency is the read's consistency.
func (fe *Frontend) SeriesKeys(ctx context.Context, table string, q model.Query, limit int) ([]string, error) {
	if err := checkSelection(&q); err != nil {
		return nil, err
	}
	keys, err := fe.router.SeriesKeys(ctx, table, q, limit)
	return keys, publicError(err)
}

// FieldKeys returns the field keys of a measurement's rows ("" = all) at
// a read consistency ("" = one) (router's FieldKeys).
func (fe *Frontend) FieldKeys(ctx context.Context, table, measurement, consistency string) ([]model.FieldKey, error) {
	keys, err := fe.router.FieldKeys(ctx, table, measurement, consistency)
	return keys, publicError(err)
}

// errInvalidQuery is a query the front end refuses before routing it.
var errInvalidQuery = errcode.New(errcode.ErrInvalidQuery, "frontend: invalid query")

// checkSelection refuses a query whose tag predicate does not compile.
func checkSelection(q *model.Query) error {
	if _, err := q.Matcher(); err != nil {
		return fmt.Errorf("%w: %w", errInvalidQuery, err)
	}
	return nil
}
