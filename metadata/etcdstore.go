package metadata

import (
	"context"
	"fmt"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdKV is the part of the etcd client this package uses: reads and
// transactions on keys. *clientv3.Client satisfies it; fakes stay small.
type etcdKV interface {
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
	Txn(ctx context.Context) clientv3.Txn
}

// defaultEtcdTimeout bounds an etcd call whose ctx has no deadline, so a
// caller that forgot one does not hang forever on a partitioned etcd.
const defaultEtcdTimeout = 10 * time.Second

// EtcdStore is the Store on etcd: each TableConfig is compact JSON at
// <prefix>tables/<name>; creates are Txns on CreateRevision == 0 and updates
// Txns on ModRevision == the revision read.
type EtcdStore struct {
	kv     etcdKV
	prefix string // normalized, ends in "/"
}

// NewEtcdStore returns the Store on etcd under prefix ("" means "/tsdb/").
// The caller owns cli and closes it.
func NewEtcdStore(cli *clientv3.Client, prefix string) Store {
	return newEtcdStore(cli, prefix)
}

func newEtcdStore(kv etcdKV, prefix string) *EtcdStore {
	return &EtcdStore{kv: kv, prefix: NormalizePrefix(prefix)}
}

func (s *EtcdStore) key(name string) string { return TableKey(s.prefix, name) }

// bounded bounds one etcd call by defaultEtcdTimeout, or by ctx's own
// deadline when it is earlier: a long request deadline must not turn an
// etcd outage into a long hang.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, defaultEtcdTimeout)
}

// GetTable implements Store.
func (s *EtcdStore) GetTable(ctx context.Context, name string) (TableConfig, int64, error) {
	if err := checkLookupName(name); err != nil {
		return TableConfig{}, 0, err
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := s.kv.Get(ctx, s.key(name))
	if err != nil {
		return TableConfig{}, 0, fmt.Errorf("metadata: etcd get %s: %w", s.key(name), err)
	}
	if len(resp.Kvs) == 0 {
		return TableConfig{}, 0, fmt.Errorf("%w: %q", ErrTableNotFound, name)
	}
	kv := resp.Kvs[0]
	cfg, err := DecodeTableConfig(kv.Value)
	if err != nil {
		return TableConfig{}, 0, fmt.Errorf("%s: %w", kv.Key, err)
	}
	return cfg, kv.ModRevision, nil
}

// ListTables implements Store.
func (s *EtcdStore) ListTables(ctx context.Context) ([]TableConfig, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	prefix := TablesPrefix(s.prefix)
	resp, err := s.kv.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("metadata: etcd list %s: %w", prefix, err)
	}
	out := make([]TableConfig, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		cfg, err := DecodeTableConfig(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
		out = append(out, cfg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CreateTable implements Store.
func (s *EtcdStore) CreateTable(ctx context.Context, cfg TableConfig) error {
	value, err := checkedValue(ctx, cfg)
	if err != nil {
		return err
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	key := s.key(cfg.Name)
	resp, err := s.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return fmt.Errorf("metadata: etcd create %s: %w", key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: %q", ErrTableExists, cfg.Name)
	}
	return nil
}

// UpdateTable implements Store.
func (s *EtcdStore) UpdateTable(ctx context.Context, cfg TableConfig, modRevision int64) error {
	value, err := checkedValue(ctx, cfg)
	if err != nil {
		return err
	}
	if modRevision <= 0 {
		// ModRevision == 0 would match a missing key and create it.
		return fmt.Errorf("%w: table %q: no revision to compare with", ErrConflict, cfg.Name)
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	key := s.key(cfg.Name)
	resp, err := s.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", modRevision)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return fmt.Errorf("metadata: etcd update %s: %w", key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: table %q changed since revision %d", ErrConflict, cfg.Name, modRevision)
	}
	return nil
}

// DeleteTable implements Store.
func (s *EtcdStore) DeleteTable(ctx context.Context, name string, modRevision int64) error {
	if err := checkLookupName(name); err != nil {
		return err
	}
	if modRevision <= 0 {
		return fmt.Errorf("%w: table %q: no revision to compare with", ErrConflict, name)
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	key := s.key(name)
	resp, err := s.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", modRevision)).
		Then(clientv3.OpDelete(key)).
		Commit()
	if err != nil {
		return fmt.Errorf("metadata: etcd delete %s: %w", key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: table %q changed since revision %d", ErrConflict, name, modRevision)
	}
	return nil
}
