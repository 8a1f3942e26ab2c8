package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/internal/backoff"
	"github.com/tsdb/tsdb/metadata"
)

// maxChangeAttempts bounds how often RequestChange re-plans after a
// conflict.
const maxChangeAttempts = 8

// changeRetry is RequestChange's wait before re-planning after a conflict:
// 50 ms doubling to 1 s, equal jitter.
var changeRetry = backoff.Policy{Base: 50 * time.Millisecond, Max: time.Second}

// Planner plans one change of a table from its current config and METADATA.
// It is an alias of the func type, so that *Server satisfies the Changes
// interfaces of cluster/master and frontend, which name the func type.
type Planner = func(cfg metadata.TableConfig, file *metadata.File) (metadata.Op, error)

// RequestChange commits one METADATA change planned by plan (DESIGN.md
// section 4): it reads the current transaction, asks a metadata server of
// the table (this one when it is one) to commit {base, new txnid, op}, and
// when another change won it re-reads and re-plans, up to a bound. A
// metadata server that cannot be reached is replaced by the next one with
// the same request, so the change commits at most once. It returns the
// committed file; this server's caches are refreshed before it returns.
func (s *Server) RequestChange(ctx context.Context, table string, plan Planner) (*metadata.File, error) {
	if !s.reg.Valid() {
		// DESIGN.md section 9: a server that lost its etcd session
		// re-registers before it starts a metadata change again.
		return nil, fmt.Errorf("%w: %s's etcd session is not valid (re-registering); no metadata change until it is",
			wire.ErrUnavailable, s.cfg.Self)
	}
	var last error
	for attempt := range maxChangeAttempts {
		if attempt > 0 && !backoff.Sleep(ctx, changeRetry.Delay(attempt)) {
			break
		}
		cfg, file, err := s.committer.Load(ctx, table)
		if err != nil {
			return nil, err
		}
		op, err := plan(cfg, file)
		if err != nil {
			return nil, err
		}
		req := wire.ChangeMetadataRequest{Table: table, BaseTxnID: cfg.MetadataTxnID, NewTxnID: metadata.NewTxnID(), Op: op}
		f, err := s.sendChange(ctx, cfg, req)
		if err == nil {
			// The CAS changed exactly these three fields of cfg.
			next := cfg
			next.MetadataTxnID, next.MetadataTxnSeq = f.TxnID, f.TxnSeq
			if err := s.installCommitted(next, f); err != nil {
				s.log.Warn("committed change not yet visible locally", "table", table, "txnid", f.TxnID, "err", err)
			}
			return f, nil
		}
		if !errors.Is(err, metadata.ErrConflict) {
			return nil, err
		}
		last = err
	}
	if last == nil {
		last = ctx.Err()
	}
	return nil, fmt.Errorf("change of %q not committed after %d attempts: %w", table, maxChangeAttempts, last)
}

// installCommitted installs a file this server's change committed, so the
// requester reads its own write before the watch brings it.
func (s *Server) installCommitted(cfg metadata.TableConfig, f *metadata.File) error {
	enc, err := metadata.Encode(f)
	if err != nil {
		return err
	}
	cfg.MetadataChecksum = metadata.Checksum(enc)
	if _, err := metadata.VerifyFile(cfg, enc); err != nil {
		return err
	}
	return s.Install(cfg, f)
}

// sendChange sends req to the table's metadata servers, this one first, the
// others in random order, until one gives a definitive answer.
func (s *Server) sendChange(ctx context.Context, cfg metadata.TableConfig, req wire.ChangeMetadataRequest) (*metadata.File, error) {
	order := slices.Clone(cfg.MetadataServers)
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	if i := slices.Index(order, s.cfg.Self); i > 0 {
		order[0], order[i] = order[i], order[0]
	}
	var errs []error
	for _, id := range order {
		f, err := s.changeOn(ctx, id, req)
		if err == nil {
			return f, nil
		}
		if definitive(err) {
			return nil, err
		}
		errs = append(errs, fmt.Errorf("%s: %w", id, err))
		if errors.Is(err, metadata.ErrOutcomeUnknown) {
			if f, ok := s.committedAs(ctx, req); ok {
				return f, nil
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: no metadata server of %q committed the change: %w", metadata.ErrNoQuorum, req.Table, errors.Join(errs...))
}

// changeOn asks metadata server id to coordinate req.
func (s *Server) changeOn(ctx context.Context, id string, req wire.ChangeMetadataRequest) (*metadata.File, error) {
	if id == s.cfg.Self {
		return s.committer.Change(ctx, req.Table, req.BaseTxnID, req.NewTxnID, req.Op)
	}
	addr, err := s.dir.Addr(ctx, id)
	if err != nil {
		return nil, err
	}
	var resp wire.ChangeMetadataResponse
	if err := s.rpc.Call(ctx, addr, wire.PathMetadataChange, req, &resp); err != nil {
		return nil, metadata.FromPeer(err)
	}
	f, err := metadata.CheckEncoded(req.Table, resp.TxnID, resp.Encoded)
	if err != nil {
		return nil, fmt.Errorf("change answer of %s: %w", id, err)
	}
	return f, nil
}

// committedAs learns by re-reading TableConfig whether req committed.
func (s *Server) committedAs(ctx context.Context, req wire.ChangeMetadataRequest) (*metadata.File, bool) {
	cfg, file, err := s.committer.Load(ctx, req.Table)
	if err != nil || cfg.MetadataTxnID != req.NewTxnID {
		return nil, false
	}
	return file, true
}

// definitive reports whether a change error is an answer about the change
// itself (it conflicts, is invalid, or the table is gone) rather than about
// the coordinator that was asked.
func definitive(err error) bool {
	switch {
	case errors.Is(err, metadata.ErrConflict), errors.Is(err, metadata.ErrInvalidOp),
		errors.Is(err, metadata.ErrTableNotFound), errors.Is(err, metadata.ErrInvalidFile):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	var se *rpc.StatusError
	return errors.As(err, &se) && se.Status >= 400 && se.Status < 500 && se.Status != 421
}
