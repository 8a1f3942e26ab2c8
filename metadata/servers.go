package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// This file holds metadata server join and leave (DESIGN.md section 4 and
// rule 5): the committed file is always on a majority of the current
// metadata servers. A server joins only once it holds the current file, and
// a server leaves only once a majority of the remaining list holds it. Both
// changes are CASes of TableConfig on the revision read, so they conflict
// with commits and with each other, and each starts over from a fresh read
// when it loses. "Add before remove" is the caller's policy.

// JoinMetadataServer makes Self a metadata server of table. It runs on the
// joining server. Each round reads TableConfig; if Self is already listed
// it makes sure the current file is stored here (fetching it) and returns
// the config. Otherwise it fetches the current file from a listed metadata
// server, verifies it, stores it durably, and CASes TableConfig with Self
// appended to metadata_servers. If the CAS loses because the revision moved
// (a commit or another list change), the round starts over from the read;
// after an ambiguous CAS error it re-reads to learn the outcome. Rounds are
// separated by backoff with jitter and bounded by ListChangeAttempts and
// ctx. It returns the config that lists Self.
func (c *Committer) JoinMetadataServer(ctx context.Context, table string) (TableConfig, error) {
	if err := c.check(); err != nil {
		return TableConfig{}, err
	}
	what := fmt.Sprintf("join %s as a metadata server of %q", c.Self, table)
	return c.changeList(ctx, what, func(ctx context.Context) (TableConfig, bool, error) {
		return c.joinRound(ctx, table)
	})
}

// joinRound is one read → fetch → CAS round of JoinMetadataServer. The
// bool says whether the join is over (joined, or failed for good).
func (c *Committer) joinRound(ctx context.Context, table string) (TableConfig, bool, error) {
	cfg, rev, err := c.Store.GetTable(ctx, table)
	if err != nil {
		return TableConfig{}, errors.Is(err, ErrTableNotFound), err
	}
	if _, _, err := c.currentFile(ctx, cfg, true); err != nil {
		return TableConfig{}, false, err
	}
	if c.isMetadataServer(cfg) {
		return cfg, true, nil
	}
	next := cfg
	next.MetadataServers = append(slices.Clone(cfg.MetadataServers), c.Self)
	casErr := c.Store.UpdateTable(ctx, next, rev)
	if casErr == nil {
		c.logger().Info("metadata: joined as a metadata server", "table", table, "server", c.Self,
			"metadata_servers", next.MetadataServers, "txnid", cfg.MetadataTxnID)
		return next, true, nil
	}
	return c.resolveListChange(ctx, cfg, casErr, func(got TableConfig) bool {
		return c.isMetadataServer(got) && got.MetadataTxnID == cfg.MetadataTxnID
	})
}

// RemoveMetadataServer removes server from table's metadata servers. It may
// run on any server. Each round reads TableConfig; if server is not listed
// it returns the config (removal is idempotent). The remaining list must
// not be empty (ErrInvalidOp). Before the CAS it makes sure a majority of
// the remaining servers hold the current file: it loads it (from Files or
// fetched, verified) and stores it on the remaining servers as a commit
// does (Self counts only if it remains). If the CAS loses because the
// revision moved, the round starts over; after an ambiguous CAS error it
// re-reads to learn the outcome. Rounds are bounded as in
// JoinMetadataServer. It returns the config without server.
func (c *Committer) RemoveMetadataServer(ctx context.Context, table, server string) (TableConfig, error) {
	if err := c.check(); err != nil {
		return TableConfig{}, err
	}
	what := fmt.Sprintf("remove %s from the metadata servers of %q", server, table)
	return c.changeList(ctx, what, func(ctx context.Context) (TableConfig, bool, error) {
		return c.removeRound(ctx, table, server)
	})
}

// removeRound is one read → store → CAS round of RemoveMetadataServer. The
// bool says whether the removal is over.
func (c *Committer) removeRound(ctx context.Context, table, server string) (TableConfig, bool, error) {
	cfg, rev, err := c.Store.GetTable(ctx, table)
	if err != nil {
		return TableConfig{}, errors.Is(err, ErrTableNotFound), err
	}
	if !slices.Contains(cfg.MetadataServers, server) {
		return cfg, true, nil
	}
	remaining := slices.DeleteFunc(slices.Clone(cfg.MetadataServers), func(s string) bool { return s == server })
	if len(remaining) == 0 {
		return TableConfig{}, true, fmt.Errorf("%w: %q is the only metadata server of %q; add another before removing it",
			ErrInvalidOp, server, table)
	}
	_, enc, err := c.currentFile(ctx, cfg, c.isMetadataServer(cfg))
	if err != nil {
		return TableConfig{}, false, err
	}
	if err := c.storeOnMajority(ctx, remaining, table, cfg.MetadataTxnID, enc); err != nil {
		return TableConfig{}, false, err
	}
	next := cfg
	next.MetadataServers = remaining
	casErr := c.Store.UpdateTable(ctx, next, rev)
	if casErr == nil {
		c.logger().Info("metadata: removed a metadata server", "table", table, "server", server,
			"metadata_servers", remaining, "txnid", cfg.MetadataTxnID)
		return next, true, nil
	}
	return c.resolveListChange(ctx, cfg, casErr, func(got TableConfig) bool {
		return !slices.Contains(got.MetadataServers, server)
	})
}

// resolveListChange handles a failed CAS of a list change read as cfg. A
// lost compare (ErrConflict) starts the next round. An invalid config is
// final. Any other error is ambiguous: the CAS may have landed, so
// TableConfig is re-read (on a context that outlives an expired ctx, as in
// resolveChange) and the change is done if landed says so; otherwise the
// next round reads again and decides.
func (c *Committer) resolveListChange(ctx context.Context, cfg TableConfig, casErr error, landed func(TableConfig) bool) (TableConfig, bool, error) {
	switch {
	case errors.Is(casErr, ErrConflict):
		return TableConfig{}, false, casErr
	case errors.Is(casErr, ErrInvalidConfig):
		return TableConfig{}, true, casErr
	}
	rctx, cancel := c.resolveContext(ctx)
	defer cancel()
	got, _, err := c.Store.GetTable(rctx, cfg.Name)
	if err != nil {
		return TableConfig{}, false, fmt.Errorf("%w: metadata_servers of %q: %w (re-read: %w)", ErrOutcomeUnknown, cfg.Name, casErr, err)
	}
	if landed(got) {
		c.logger().Warn("metadata: metadata server list change confirmed by re-reading", "table", cfg.Name,
			"metadata_servers", got.MetadataServers, "cas_err", casErr)
		return got, true, nil
	}
	return TableConfig{}, false, casErr
}

// changeList runs round until it reports done, at most ListChangeAttempts
// times, with backoff and jitter between rounds, while ctx lasts. The error
// after the last round wraps that round's error (ErrConflict if it kept
// losing the CAS).
func (c *Committer) changeList(ctx context.Context, what string, round func(context.Context) (TableConfig, bool, error)) (TableConfig, error) {
	attempts := c.ListChangeAttempts
	if attempts <= 0 {
		attempts = DefaultListChangeAttempts
	}
	var last error
	for i := range attempts {
		if i > 0 && !sleepBackoff(ctx, i-1) {
			return TableConfig{}, fmt.Errorf("metadata: %s: %w after %d rounds (last: %w)", what, ctx.Err(), i, last)
		}
		cfg, done, err := round(ctx)
		if done {
			return cfg, err
		}
		last = err
		c.logger().Debug("metadata: metadata server list change retries", "change", what, "round", i+1, "err", err)
	}
	return TableConfig{}, fmt.Errorf("metadata: %s: gave up after %d rounds: %w", what, attempts, last)
}
