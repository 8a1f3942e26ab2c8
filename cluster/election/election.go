// Package election elects the cluster's master (DESIGN.md section 9): one
// server at a time, through etcd's concurrency election over the server's
// membership lease, so the candidacy vanishes with the registration. A
// leader acts only while that lease is known to be alive: its work runs
// under a context cancelled the moment the lease may have lapsed.
package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Lease is the server's membership lease (*membership.Registration).
type Lease interface {
	// Lease returns the current lease and epoch; the lease is 0 while not
	// registered or not Valid.
	Lease() (clientv3.LeaseID, int64)
	// Valid reports whether the current lease is known to be alive.
	Valid() bool
	// Done is closed when the current epoch's lease is lost.
	Done() <-chan struct{}
	// Epoch counts registrations.
	Epoch() int64
}

// Config configures Run.
type Config struct {
	// Client is the etcd client. Required.
	Client *clientv3.Client
	// Prefix is the cluster's etcd prefix ("/tsdb/"); the candidacies are
	// under <Prefix>master/.
	Prefix string
	// Self is this server's id, the candidacy's value. Required.
	Self string
	// Lease is the membership lease the candidacy is attached to. Required.
	Lease Lease
	// Logger receives elections and losses; nil discards.
	Logger *slog.Logger
	// CheckInterval is how often a leader re-checks its lease; default
	// 100 ms.
	CheckInterval time.Duration
	// Retry is the wait before campaigning again after a failure or while
	// the lease is not valid; default 1 s.
	Retry time.Duration
}

func (c *Config) ensureDefaults() error {
	if c.Client == nil || c.Self == "" || c.Lease == nil {
		return errors.New("election: Config needs Client, Self and Lease")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = 100 * time.Millisecond
	}
	if c.Retry <= 0 {
		c.Retry = time.Second
	}
	return nil
}

// keyPrefix is where the candidacies live.
func keyPrefix(prefix string) string {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix + "master/"
}

// Run campaigns until ctx ends. Each time this server is elected it calls
// lead with a context that ends as soon as the lease may have lapsed (not
// Valid, or its epoch ended) or ctx ends; lead must then return promptly.
// When lead returns, Run resigns (while the lease is still valid) and
// campaigns again. Run returns when ctx ends.
func Run(ctx context.Context, cfg Config, lead func(ctx context.Context)) error {
	if err := cfg.ensureDefaults(); err != nil {
		return err
	}
	for ctx.Err() == nil {
		if err := round(ctx, &cfg, lead); err != nil && ctx.Err() == nil {
			cfg.Logger.Warn("master election round failed; campaigning again", "err", err, "retry", cfg.Retry)
		}
		select {
		case <-ctx.Done():
		case <-time.After(cfg.Retry):
		}
	}
	return nil
}

// round campaigns once on the current lease and, if elected, leads until
// the lease or ctx ends.
func round(ctx context.Context, cfg *Config, lead func(ctx context.Context)) error {
	lease, epoch := cfg.Lease.Lease()
	if lease == 0 {
		return nil // not registered: wait for the next epoch
	}
	lost := cfg.Lease.Done()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := concurrency.NewSession(cfg.Client, concurrency.WithLease(lease), concurrency.WithContext(cctx))
	if err != nil {
		return fmt.Errorf("election: session on lease %x: %w", lease, err)
	}
	// Orphan, never Close: Close would revoke the membership lease.
	defer s.Orphan()
	e := concurrency.NewElection(s, keyPrefix(cfg.Prefix))
	stop := make(chan struct{})
	defer close(stop)
	// The lease ending (or being replaced) cancels the campaign and the
	// leadership; a Valid check every CheckInterval catches a lapse before
	// the registration notices it itself.
	go func() {
		t := time.NewTicker(cfg.CheckInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-lost:
				cancel()
				return
			case <-t.C:
				if !cfg.Lease.Valid() || cfg.Lease.Epoch() != epoch {
					cancel()
					return
				}
			}
		}
	}()
	if err := e.Campaign(cctx, cfg.Self); err != nil {
		return fmt.Errorf("election: campaign: %w", err)
	}
	cfg.Logger.Info("elected master", "server", cfg.Self, "epoch", epoch)
	lead(cctx)
	cfg.Logger.Info("master duties stopped", "server", cfg.Self, "lease_valid", cfg.Lease.Valid())
	if cfg.Lease.Valid() && cfg.Lease.Epoch() == epoch {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		if err := e.Resign(rctx); err != nil {
			return fmt.Errorf("election: resign: %w", err)
		}
	}
	return nil
}

// Leader returns the id of the current master, "" if there is none.
func Leader(ctx context.Context, cli *clientv3.Client, prefix string) (string, error) {
	resp, err := cli.Get(ctx, keyPrefix(prefix), clientv3.WithFirstCreate()...)
	if err != nil {
		return "", fmt.Errorf("election: read the master: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}
