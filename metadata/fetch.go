package metadata

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// This file holds fetch-on-missing (DESIGN.md section 4, "a metadata server
// that lacks the current txn fetches it before it answers anything"): a
// server that lacks a file it needs asks the table's other metadata servers
// for their local copy, verifies the answer against TableConfig, and keeps
// it if it is itself a metadata server of the table.

// LocalFile returns the encoded file of (table, txnID) as stored on this
// server, or an error wrapping ErrFileNotFound. It never fetches from other
// servers: it is what the internal "fetch" endpoint serves to peers, so two
// servers that both lack a file never ask each other in a loop. The bytes
// are not verified; callers verify them (VerifyFile or CheckEncoded).
func (c *Committer) LocalFile(table, txnID string) ([]byte, error) {
	if c.Files == nil {
		return nil, errors.New("metadata: committer needs Files")
	}
	return c.Files.Get(table, txnID)
}

// Current re-reads the table's TableConfig, makes sure this server holds
// the current file (fetching and, on a metadata server of the table,
// storing it as Load does), and returns the config with the verified
// encoded file. If the config names a txnseq below minTxnSeq it fails with
// ErrStale (DESIGN.md rule 8): this server never hands out a view older
// than the requester's.
func (c *Committer) Current(ctx context.Context, table string, minTxnSeq uint64) (TableConfig, []byte, error) {
	if err := c.check(); err != nil {
		return TableConfig{}, nil, err
	}
	cfg, _, err := c.Store.GetTable(ctx, table)
	if err != nil {
		return TableConfig{}, nil, err
	}
	if cfg.MetadataTxnSeq < minTxnSeq {
		return TableConfig{}, nil, fmt.Errorf("%w: %q is at txnseq %d (txn %s), txnseq %d asked",
			ErrStale, table, cfg.MetadataTxnSeq, cfg.MetadataTxnID, minTxnSeq)
	}
	_, enc, err := c.currentFile(ctx, cfg, c.isMetadataServer(cfg))
	if err != nil {
		return TableConfig{}, nil, err
	}
	return cfg, enc, nil
}

// isMetadataServer reports whether Self is listed in cfg.MetadataServers.
func (c *Committer) isMetadataServer(cfg TableConfig) bool {
	return slices.Contains(cfg.MetadataServers, c.Self)
}

// currentFile returns the file cfg names and its encoding, verified against
// cfg: from Files if it is there, else fetched from the other metadata
// servers of cfg. A fetched file is stored durably in Files when keep is
// set, before currentFile returns. A local copy that fails verification is
// an error, not a reason to fetch: it means this store is damaged.
func (c *Committer) currentFile(ctx context.Context, cfg TableConfig, keep bool) (*File, []byte, error) {
	enc, err := c.Files.Get(cfg.Name, cfg.MetadataTxnID)
	if err == nil {
		f, err := VerifyFile(cfg, enc)
		return f, enc, err
	}
	if !errors.Is(err, ErrFileNotFound) {
		return nil, nil, err
	}
	f, enc, from, err := c.fetchVerified(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if keep {
		if err := c.Files.Put(cfg.Name, cfg.MetadataTxnID, enc); err != nil {
			return nil, nil, fmt.Errorf("metadata: store %s/%s fetched from %s: %w", cfg.Name, cfg.MetadataTxnID, from, err)
		}
	}
	c.logger().Info("metadata: fetched a missing file", "table", cfg.Name, "txnid", cfg.MetadataTxnID,
		"txnseq", cfg.MetadataTxnSeq, "from", from, "stored", keep)
	return f, enc, nil
}

// fetchVerified asks the metadata servers of cfg other than Self, in random
// order and each bounded by FetchTimeout, for the file cfg names, and
// returns the first answer VerifyFile accepts and the server that gave it.
// If none does, the error wraps ErrFileNotFound and lists each server's
// error; if ctx ends first, it wraps ctx's error instead.
func (c *Committer) fetchVerified(ctx context.Context, cfg TableConfig) (*File, []byte, string, error) {
	servers := slices.DeleteFunc(slices.Clone(cfg.MetadataServers), func(s string) bool { return s == c.Self })
	rand.Shuffle(len(servers), func(i, j int) { servers[i], servers[j] = servers[j], servers[i] })
	if c.Peers == nil {
		servers = nil // no transport: nobody to ask
	}
	var errs []error
	for _, id := range servers {
		if ctx.Err() != nil {
			break
		}
		f, enc, err := c.fetchFrom(ctx, id, cfg)
		if err == nil {
			return f, enc, id, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", id, err))
	}
	what := fmt.Sprintf("%s/%s (txnseq %d)", cfg.Name, cfg.MetadataTxnID, cfg.MetadataTxnSeq)
	if err := ctx.Err(); err != nil {
		return nil, nil, "", fmt.Errorf("metadata: fetch %s: %w%s", what, err, tried(errs))
	}
	return nil, nil, "", fmt.Errorf("%w: %s: not stored here, and no other metadata server of %v supplied a verified copy%s",
		ErrFileNotFound, what, cfg.MetadataServers, tried(errs))
}

// tried formats the errors of the servers asked, for a message. They are
// not wrapped: a peer's checksum error must not make the whole fetch look
// like a local checksum error to errors.Is.
func tried(errs []error) string {
	if len(errs) == 0 {
		return ""
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return " (" + strings.Join(msgs, "; ") + ")"
}

// fetchFrom fetches the file cfg names from one server and verifies it.
func (c *Committer) fetchFrom(ctx context.Context, id string, cfg TableConfig) (*File, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.fetchTimeout())
	defer cancel()
	enc, err := c.Peers.FetchFile(ctx, id, cfg.Name, cfg.MetadataTxnID)
	if err != nil {
		return nil, nil, err
	}
	f, err := VerifyFile(cfg, enc)
	if err != nil {
		return nil, nil, err
	}
	return f, enc, nil
}

func (c *Committer) fetchTimeout() time.Duration {
	if c.FetchTimeout <= 0 {
		return DefaultFetchTimeout
	}
	return c.FetchTimeout
}
