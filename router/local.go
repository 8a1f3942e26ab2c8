package router

import (
	"context"
	"fmt"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// localReplicas reaches only this server's replicas: the Router's default
// when Config.Replicas is nil (a single server, and the router's own tests).
// A partition on another server is ErrNotLocal.
type localReplicas struct{ r *Router }

func (l localReplicas) replica(t Target) (*partition.Replica, error) {
	if t.Server != l.r.cfg.Self {
		return nil, fmt.Errorf("%w: partition %s of table %s", ErrNotLocal, t.Partition.ID, t.File.Table)
	}
	return l.r.replicaFor(t.File, t.Partition)
}

// Insert stamps the rows with one fresh version (unless they carry
// theirs) and applies them.
func (l localReplicas) Insert(_ context.Context, t Target, rows []model.Row, opts model.InsertOptions) error {
	rep, err := l.replica(t)
	if err != nil {
		return err
	}
	if !opts.Versioned {
		v := l.r.cfg.Clock.Now()
		for i := range rows {
			rows[i].SetVersion(v)
		}
	}
	_, err = rep.Apply(rows)
	return err
}

func (l localReplicas) Scan(_ context.Context, t Target, q model.Query) ([]model.Row, bool, error) {
	rep, err := l.replica(t)
	if err != nil {
		return nil, false, err
	}
	return rep.Scan(q)
}

func (l localReplicas) Aggregate(_ context.Context, t Target, q model.Query) ([]model.SeriesAgg, error) {
	rep, err := l.replica(t)
	if err != nil {
		return nil, err
	}
	return rep.Aggregate(q)
}

func (l localReplicas) SeriesKeys(_ context.Context, t Target, q model.Query, limit int) ([]string, error) {
	rep, err := l.replica(t)
	if err != nil {
		return nil, err
	}
	return rep.SeriesKeys(q, limit)
}

func (l localReplicas) FieldKeys(_ context.Context, t Target, q model.Query) ([]model.FieldKey, error) {
	rep, err := l.replica(t)
	if err != nil {
		return nil, err
	}
	return rep.FieldKeys(q.Measurement)
}
