package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/tsdb/tsdb/http/api"
)

// Server is one server a run sends to.
type Server struct {
	// ID is the server's id, or its host:port when the cluster did not say.
	ID string `json:"id"`
	// URL is the base URL, e.g. http://127.0.0.1:8080.
	URL string `json:"url"`
}

// discover returns the servers to send to: with cfg.Discover, every server
// GET /api/v1/cluster lists (asking the configured servers in turn),
// otherwise the configured ones, named by ids from the listing when one
// answers.
func discover(ctx context.Context, cl *client, cfg *Config) ([]Server, error) {
	var (
		listed  api.ClusterResponse
		lastErr error
		scheme  = "http"
	)
	for _, s := range cfg.Servers {
		if listed, lastErr = cl.cluster(ctx, s); lastErr == nil && len(listed.Servers) > 0 {
			if u, err := url.Parse(s); err == nil {
				scheme = u.Scheme
			}
			break
		}
	}
	if len(listed.Servers) == 0 {
		return nil, fmt.Errorf("%w: GET /api/v1/cluster: %w", ErrNoServers, lastErr)
	}
	ids := make(map[string]string, len(listed.Servers))
	var all []Server
	for _, s := range listed.Servers {
		u := scheme + "://" + s.Addr
		ids[u] = s.ID
		all = append(all, Server{ID: s.ID, URL: u})
	}
	if cfg.Discover {
		return all, nil
	}
	out := make([]Server, len(cfg.Servers))
	for i, s := range cfg.Servers {
		out[i] = Server{ID: ids[s], URL: s}
		if out[i].ID == "" {
			out[i].ID = hostOf(s)
		}
	}
	return out, nil
}

// hostOf returns the host:port of a URL, or the URL itself.
func hostOf(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return u.Host
	}
	return s
}

// TableInfo is the table a load test wrote to, as the cluster reported it.
type TableInfo struct {
	Name string `json:"name"`
	// Created is false when the table existed before the run.
	Created             bool         `json:"created"`
	ReplicationFactor   int          `json:"replication_factor"`
	PartitionSizeTarget int64        `json:"partition_size_target"`
	SmearEnabled        bool         `json:"smear_enabled"`
	MaxDelay            api.Duration `json:"max_delay"`
	KeyrangeThreshold   api.Duration `json:"keyrange_threshold"`
}

// createRetry bounds the retries of a create answered 503 (the cluster has
// fewer than --min-servers live servers yet).
const createRetry = 2 * time.Minute

// prepareTable creates the table (or finds it existing) and reads back its
// settings.
func prepareTable(ctx context.Context, cl *client, cfg *Config, server string) (TableInfo, error) {
	on := true
	maxDelay, threshold := api.Duration(cfg.MaxDelay), api.Duration(cfg.KeyrangeThreshold)
	req := api.CreateTableRequest{
		Name: cfg.Table, ReplicationFactor: cfg.ReplicationFactor, PartitionSizeTarget: cfg.PartitionSizeTarget,
		Smear: &api.SmearRequest{Enabled: &on, MaxDelay: &maxDelay, KeyrangeThreshold: &threshold},
	}
	info := TableInfo{Name: cfg.Table}
	deadline := time.Now().Add(createRetry)
	for {
		r := cl.createTable(ctx, server, req)
		if r.ok() {
			info.Created = true
			break
		}
		if r.status == http.StatusConflict && r.code == api.CodeTableExists {
			cfg.Logger.Warn("the table exists: using it with its own settings", "table", cfg.Table)
			break
		}
		if r.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return info, fmt.Errorf("%w: create %s: %w", ErrTable, cfg.Table, r.err)
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return info, err
		}
	}
	ans, err := cl.table(ctx, server, cfg.Table)
	if err != nil {
		return info, fmt.Errorf("%w: read %s: %w", ErrTable, cfg.Table, err)
	}
	c := ans.Config
	info.ReplicationFactor, info.PartitionSizeTarget = c.ReplicationFactor, c.PartitionSizeTarget
	info.SmearEnabled, info.MaxDelay, info.KeyrangeThreshold = c.Smear.Enabled, c.Smear.MaxDelay, c.Smear.KeyrangeThreshold
	return info, nil
}

// waitNarrow waits, in hot mode with smearing on for the table, until the
// partition at now is narrower than the table's threshold and not
// splitting: the master's pre-split makes them, and
// until then the present is in a wide partition no insert is smeared into
// (a comparison would measure nothing). It gives up with a warning after
// cfg.NarrowWait; zero does not wait.
func waitNarrow(ctx context.Context, cl *client, cfg *Config, server string, info TableInfo) error {
	if cfg.NarrowWait <= 0 || cfg.rangeMode() || !info.SmearEnabled || (!cfg.Smear && !cfg.Compare) {
		return nil
	}
	threshold := int64(info.KeyrangeThreshold)
	narrowAt := func(ans api.TableResponse, t int64) bool {
		for _, p := range ans.Partitions {
			if (p.Begin == nil || *p.Begin <= t) && (p.End == nil || t < *p.End) {
				return p.Begin != nil && p.End != nil && *p.End-*p.Begin < threshold && p.Split == nil
			}
		}
		return false
	}
	deadline := time.Now().Add(cfg.NarrowWait)
	cfg.Logger.Info("waiting for the master's pre-split to make narrow partitions at now", "table", cfg.Table)
	for {
		ans, err := cl.table(ctx, server, cfg.Table)
		now := time.Now()
		if err == nil && narrowAt(ans, now.UnixNano()) {
			return nil
		}
		if now.After(deadline) {
			cfg.Logger.Warn("no narrow partitions at now yet: inserts may not be smeared", "waited", cfg.NarrowWait, "err", err)
			return nil
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}
