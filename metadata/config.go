package metadata

import (
	"encoding/json"
	"fmt"

	"github.com/tsdb/tsdb/model"
)

// A table's config and its defaults are model's (model.TableConfig);
// metadata names them for its users and keeps the config's etcd encoding.
type (
	// TableConfig is the per-table record stored at <prefix>tables/<name>
	// in etcd (model.TableConfig).
	TableConfig = model.TableConfig
	// SmearConfig holds a table's insert-smearing settings
	// (model.SmearConfig).
	SmearConfig = model.SmearConfig
	// Duration is a time.Duration written in JSON as "120s"
	// (model.Duration).
	Duration = model.Duration
)

// Defaults and limits of a TableConfig (model's).
const (
	DefaultReplicationFactor      = model.DefaultReplicationFactor
	MaxReplicationFactor          = model.MaxReplicationFactor
	DefaultPartitionSizeTarget    = model.DefaultPartitionSizeTarget
	MinPartitionSizeTarget        = model.MinPartitionSizeTarget
	DefaultSmearMaxDelay          = model.DefaultSmearMaxDelay
	DefaultSmearKeyrangeThreshold = model.DefaultSmearKeyrangeThreshold
)

// DefaultSmear returns the default smear settings (model.DefaultSmear).
func DefaultSmear() SmearConfig { return model.DefaultSmear() }

// NewTableConfig returns a config for name with every default filled in
// (model.NewTableConfig).
func NewTableConfig(name string) TableConfig { return model.NewTableConfig(name) }

// encodeConfig marshals a TableConfig the way the stores keep it: compact
// JSON, with a nil metadata_servers written as [] rather than null.
func encodeConfig(c TableConfig) ([]byte, error) {
	if c.MetadataServers == nil {
		c.MetadataServers = []string{}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("metadata: encode table config %q: %w", c.Name, err)
	}
	return b, nil
}

// DecodeTableConfig parses a TableConfig from the JSON stored in etcd. A
// watcher of <prefix>tables/ uses it on the values it receives.
func DecodeTableConfig(b []byte) (TableConfig, error) {
	var c TableConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return TableConfig{}, fmt.Errorf("metadata: decode table config: %w", err)
	}
	return c, nil
}
