package membership

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// RegisterAfterRestart is Register for a server that may have just
// restarted after a crash: it finds its id still held by its previous
// incarnation's lease, which lapses within one TTL. It waits for that,
// retrying every second up to two TTLs, and then gives up with the
// ErrDuplicateID error (another live server keeps its lease alive).
func RegisterAfterRestart(ctx context.Context, cfg Config) (*Registration, error) {
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	deadline := time.Now().Add(2*ttl + time.Second)
	for {
		reg, err := Register(ctx, cfg)
		if !errors.Is(err, ErrDuplicateID) || time.Now().After(deadline) {
			return reg, err
		}
		log.Warn("server id still held in etcd, by a previous incarnation's lease if it crashed; waiting for it to lapse", "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Second):
		}
	}
}
