package router

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// The metadata queries (InfluxQL's SHOW SERIES, SHOW MEASUREMENTS, SHOW TAG
// KEYS/VALUES, SHOW FIELD KEYS): every partition of the table answers from
// one of its replicas, chosen, failed over and re-routed after "moved" as
// for Query, and the answers are merged here.

// SeriesKeys returns the keys of the table's series matching q's
// Series/Prefix, Measurement and Tags, sorted and without duplicates, at
// most limit of them (the smallest; limit <= 0: all). Every partition of
// the table is asked, whatever q's time range (a series is listed if any
// partition holds a row of it). q.Consistency is honoured as by Query.
func (r *Router) SeriesKeys(ctx context.Context, table string, q model.Query, limit int) ([]string, error) {
	if _, err := q.Matcher(); err != nil {
		return nil, err // refused before any replica is asked
	}
	var out []string
	err := r.everyPartition(ctx, table, q, func(file *metadata.File, p *metadata.Partition, part model.Query) error {
		var keys []string
		err := r.onReplica(ctx, file, p, func(t Target) error {
			var err error
			keys, err = r.cfg.Replicas.SeriesKeys(ctx, t, part, limit)
			return err
		})
		if err != nil {
			return fmt.Errorf("series keys of partition %s: %w", p.ID, err)
		}
		out = MergeSorted(out, keys, limit)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FieldKeys returns the field names and kinds of the table's rows of a
// measurement ("" = every measurement), sorted by measurement, name and
// kind, without duplicates: the union over every partition. consistency
// is a read consistency as for Query ("" = one).
func (r *Router) FieldKeys(ctx context.Context, table, measurement, consistency string) ([]model.FieldKey, error) {
	q := model.Query{Measurement: measurement, Consistency: consistency}
	var out []model.FieldKey
	err := r.everyPartition(ctx, table, q, func(file *metadata.File, p *metadata.Partition, part model.Query) error {
		var keys []model.FieldKey
		err := r.onReplica(ctx, file, p, func(t Target) error {
			var err error
			keys, err = r.cfg.Replicas.FieldKeys(ctx, t, part)
			return err
		})
		if err != nil {
			return fmt.Errorf("field keys of partition %s: %w", p.ID, err)
		}
		out = MergeFieldKeys(out, keys)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// everyPartition calls f for every partition of the table (eachPartition
// over all time, so a "moved" answer re-routes only the range not yet
// answered).
func (r *Router) everyPartition(ctx context.Context, table string, q model.Query,
	f func(file *metadata.File, p *metadata.Partition, part model.Query) error) error {
	q.From, q.To = math.MinInt64, math.MaxInt64
	return r.eachPartition(ctx, table, q, func(file *metadata.File, p *metadata.Partition, part model.Query) (bool, error) {
		return false, f(file, p, part)
	})
}

// MergeSorted merges two sorted lists of strings into one sorted list
// without duplicates, keeping at most limit (the smallest; <= 0: all). a
// may be reused.
func MergeSorted(a, b []string, limit int) []string {
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for (i < len(a) || j < len(b)) && (limit <= 0 || len(out) < limit) {
		var s string
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			s, i = a[i], i+1
		case i >= len(a) || b[j] < a[i]:
			s, j = b[j], j+1
		default: // equal
			s, i, j = a[i], i+1, j+1
		}
		if n := len(out); n > 0 && out[n-1] == s {
			continue // a duplicate inside one list
		}
		out = append(out, s)
	}
	return out
}

// compareFieldKeys orders field keys by measurement, name, then kind.
func compareFieldKeys(a, b model.FieldKey) int {
	return cmp.Or(cmp.Compare(a.Measurement, b.Measurement), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
}

// MergeFieldKeys returns the union of two lists of field keys, sorted by
// measurement, name and kind, without duplicates.
func MergeFieldKeys(a, b []model.FieldKey) []model.FieldKey {
	out := append(slices.Clip(a), b...)
	slices.SortFunc(out, compareFieldKeys)
	return slices.Compact(out)
}
