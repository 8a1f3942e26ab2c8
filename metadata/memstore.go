package metadata

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// MemStore is an in-memory Store with etcd's semantics (a global revision,
// per-key create and mod revisions, values kept as JSON). It is for fast unit
// tests of pure logic; coordination behaviour is tested against real etcd.
type MemStore struct {
	mu struct {
		sync.Mutex
		rev    int64               // last revision handed out
		tables map[string]memEntry // by table name
	}
}

type memEntry struct {
	value     []byte
	createRev int64
	modRev    int64
}

// NewMemStore returns an empty in-memory Store.
func NewMemStore() Store {
	s := &MemStore{}
	s.mu.tables = make(map[string]memEntry)
	return s
}

// GetTable implements Store.
func (s *MemStore) GetTable(ctx context.Context, name string) (TableConfig, int64, error) {
	if err := ctx.Err(); err != nil {
		return TableConfig{}, 0, err
	}
	if err := checkLookupName(name); err != nil {
		return TableConfig{}, 0, err
	}
	s.mu.Lock()
	e, ok := s.mu.tables[name]
	s.mu.Unlock()
	if !ok {
		return TableConfig{}, 0, fmt.Errorf("%w: %q", ErrTableNotFound, name)
	}
	cfg, err := DecodeTableConfig(e.value)
	return cfg, e.modRev, err
}

// ListTables implements Store.
func (s *MemStore) ListTables(ctx context.Context) ([]TableConfig, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	values := make([][]byte, 0, len(s.mu.tables))
	for _, e := range s.mu.tables {
		values = append(values, e.value)
	}
	s.mu.Unlock()
	out := make([]TableConfig, 0, len(values))
	for _, v := range values {
		cfg, err := DecodeTableConfig(v)
		if err != nil {
			return nil, err
		}
		out = append(out, cfg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CreateTable implements Store.
func (s *MemStore) CreateTable(ctx context.Context, cfg TableConfig) error {
	value, err := checkedValue(ctx, cfg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mu.tables[cfg.Name]; ok {
		return fmt.Errorf("%w: %q", ErrTableExists, cfg.Name)
	}
	s.mu.rev++
	s.mu.tables[cfg.Name] = memEntry{value: value, createRev: s.mu.rev, modRev: s.mu.rev}
	return nil
}

// UpdateTable implements Store.
func (s *MemStore) UpdateTable(ctx context.Context, cfg TableConfig, modRevision int64) error {
	value, err := checkedValue(ctx, cfg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.mu.tables[cfg.Name]
	if !ok || e.modRev != modRevision {
		return fmt.Errorf("%w: table %q changed since revision %d", ErrConflict, cfg.Name, modRevision)
	}
	s.mu.rev++
	e.value, e.modRev = value, s.mu.rev
	s.mu.tables[cfg.Name] = e
	return nil
}

// checkedValue validates cfg and encodes it, after checking ctx.
func checkedValue(ctx context.Context, cfg TableConfig) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return encodeConfig(cfg)
}

// DeleteTable implements Store.
func (s *MemStore) DeleteTable(ctx context.Context, name string, modRevision int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.mu.tables[name]
	if !ok || e.modRev != modRevision {
		return fmt.Errorf("%w: table %q changed since revision %d", ErrConflict, name, modRevision)
	}
	s.mu.rev++
	delete(s.mu.tables, name)
	return nil
}
