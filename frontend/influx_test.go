package frontend

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// influxBackend is a copy of influx.Backend as the issue 18 brief declares
// it (package influx is written at the same time): InfluxBackend must
// implement it. At merge this becomes `var _ influx.Backend = (*InfluxBackend)(nil)`.
type influxBackend interface {
	ListTables(ctx context.Context) ([]model.TableConfig, error)
	CreateTable(ctx context.Context, name string, retention time.Duration) error
	DropTable(ctx context.Context, name string) error
	Query(ctx context.Context, table string, q model.Query) ([]model.Row, bool, error)
	Aggregate(ctx context.Context, table string, q model.Query) ([]model.SeriesAgg, error)
	SeriesKeys(ctx context.Context, table string, q model.Query, limit int) ([]string, error)
	FieldKeys(ctx context.Context, table, measurement string) ([]model.FieldKey, error)
	Delete(ctx context.Context, table string, q model.Query) error
}

var _ influxBackend = (*InfluxBackend)(nil)

// metaRouter is a Router answering the metadata queries and recording them.
type metaRouter struct {
	Router
	tables map[string]bool
	got    []model.Query
	err    error
}

func (r *metaRouter) Table(_ context.Context, table string) (metadata.TableConfig, *metadata.File, error) {
	if !r.tables[table] {
		return metadata.TableConfig{}, nil, metadata.ErrTableNotFound
	}
	return metadata.TableConfig{Name: table}, &metadata.File{Table: table}, nil
}

func (r *metaRouter) SeriesKeys(_ context.Context, _ string, q model.Query, _ int) ([]string, error) {
	r.got = append(r.got, q)
	return []string{"cpu,host=a"}, r.err
}

func (r *metaRouter) FieldKeys(_ context.Context, _, m, _ string) ([]model.FieldKey, error) {
	r.got = append(r.got, model.Query{Measurement: m})
	return []model.FieldKey{{Measurement: "cpu", Name: "usage", Kind: model.KindFloat}}, r.err
}

func (r *metaRouter) Query(context.Context, string, model.Query) ([]model.Row, bool, error) {
	return nil, false, r.err
}

// TestInfluxBackend: the metadata queries go to the router, a tag
// predicate that does not compile is an invalid query before any routing,
// the router's routing failures are unavailable, an existing table is
// created again without error (and without asking for live servers), and
// the delete fails when the router does (the drop: droptable_test.go).
func TestInfluxBackend(t *testing.T) {
	ctx := context.Background()
	r := &metaRouter{tables: map[string]bool{"db": true}}
	b := (&Frontend{router: r}).Influx()
	keys, err := b.SeriesKeys(ctx, "db", model.Query{Measurement: "cpu"}, 3)
	if err != nil || !slices.Equal(keys, []string{"cpu,host=a"}) || r.got[0].Measurement != "cpu" {
		t.Fatalf("series keys %v, %v (router got %+v)", keys, err, r.got)
	}
	fks, err := b.FieldKeys(ctx, "db", "cpu")
	if err != nil || len(fks) != 1 || r.got[1].Measurement != "cpu" {
		t.Fatalf("field keys %v, %v", fks, err)
	}
	bad := model.Query{Tags: &model.TagExpr{Op: model.TagMatch, Key: "host", Value: "("}}
	n := len(r.got)
	if _, err := b.SeriesKeys(ctx, "db", bad, 0); !errors.Is(err, errcode.ErrInvalidQuery) || !errors.Is(err, model.ErrInvalidTagExpr) {
		t.Errorf("bad regular expression: %v, want an invalid query", err)
	}
	if _, _, err := b.Query(ctx, "db", bad); !errors.Is(err, errcode.ErrInvalidQuery) {
		t.Errorf("raw query, bad regular expression: %v", err)
	}
	if _, err := b.Aggregate(ctx, "db", bad); !errors.Is(err, errcode.ErrInvalidQuery) {
		t.Errorf("aggregate, bad regular expression: %v", err)
	}
	if len(r.got) != n {
		t.Errorf("an invalid query reached the router")
	}
	r.err = errors.Join(errors.New("x"), errUnavailable)
	if _, err := b.SeriesKeys(ctx, "db", model.Query{}, 0); !errors.Is(err, errcode.ErrUnavailable) {
		t.Errorf("router failure: %v", err)
	}
	// The table exists: no error, and nothing else is asked (the front
	// end has no servers directory here: a call would panic).
	if err := b.CreateTable(ctx, "db", time.Hour); err != nil {
		t.Errorf("create an existing table: %v", err)
	}
	if err := b.CreateTable(ctx, "Bad Name", 0); !errors.Is(err, errcode.ErrInvalidTableName) {
		t.Errorf("create a bad name: %v", err)
	}
	if err := b.CreateTable(ctx, "db2", -time.Hour); !errors.Is(err, errcode.ErrInvalidConfig) {
		t.Errorf("negative retention: %v", err)
	}
	// The delete reads through the router, which fails (r.err).
	if err := b.Delete(ctx, "db", model.Query{From: 0, To: 100}); !errors.Is(err, errcode.ErrUnavailable) {
		t.Errorf("delete while the router fails: %v", err)
	}
}
