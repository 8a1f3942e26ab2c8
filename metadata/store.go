package metadata

import (
	"context"
	"fmt"
	"strings"

	"github.com/tsdb/tsdb/model"
)

// DefaultPrefix is the default etcd key prefix of a cluster.
const DefaultPrefix = "/tsdb/"

// Store is the coordination store of TableConfigs (etcd in production, memory
// in unit tests). Every method is bounded by its ctx. Updates are
// compare-and-swaps on the key's ModRevision.
type Store interface {
	// GetTable returns the table's config and the ModRevision to pass to
	// UpdateTable. It fails with ErrTableNotFound.
	GetTable(ctx context.Context, name string) (TableConfig, int64, error)
	// ListTables returns every table's config, sorted by name.
	ListTables(ctx context.Context) ([]TableConfig, error)
	// CreateTable stores a new, valid config; ErrTableExists if the name is
	// taken.
	CreateTable(ctx context.Context, cfg TableConfig) error
	// UpdateTable replaces the config if its ModRevision is still
	// modRevision; otherwise (including if it was deleted) ErrConflict.
	UpdateTable(ctx context.Context, cfg TableConfig, modRevision int64) error
	// DeleteTable removes the config if its ModRevision is still
	// modRevision (DELETE /api/v1/tables/{t}); otherwise ErrConflict.
	DeleteTable(ctx context.Context, name string, modRevision int64) error
}

// NormalizePrefix returns prefix with a trailing "/", or DefaultPrefix when
// it is empty.
func NormalizePrefix(prefix string) string {
	if prefix == "" {
		return DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix
}

// TablesPrefix returns the key prefix under which TableConfigs live, e.g.
// "/tsdb/tables/". Watchers watch it.
func TablesPrefix(prefix string) string {
	return NormalizePrefix(prefix) + "tables/"
}

// TableKey returns the etcd key of a table's config, e.g. "/tsdb/tables/cpu".
func TableKey(prefix, name string) string {
	return TablesPrefix(prefix) + name
}

// checkLookupName refuses names that cannot be tables, as not found, so a
// malformed name never becomes a strange key.
func checkLookupName(name string) error {
	if err := model.ValidateTableName(name); err != nil {
		return fmt.Errorf("%w: %w", ErrTableNotFound, err)
	}
	return nil
}
