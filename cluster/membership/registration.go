package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/internal/backoff"
)

// Registration is this server's entry in the membership list: a key at
// <prefix>servers/<id> attached to an etcd lease that a goroutine keeps
// alive. When the lease is lost it re-registers under a new lease (a new
// epoch) until Close. All methods are safe for concurrent use.
type Registration struct {
	cfg Config
	cli *clientv3.Client
	key string
	log *slog.Logger

	// base is the monotonic origin of validUntil.
	base time.Time
	// validUntil is the time (ns since base, already reduced by a safety
	// margin) until which the current lease is known to be alive; 0 while
	// there is no confirmed lease. Written only by the run goroutine (and by
	// Close after run has stopped).
	validUntil atomic.Int64
	// closing is set first thing in Close: Valid turns false at once.
	closing atomic.Bool

	cancel    context.CancelFunc // stops run
	stopped   chan struct{}      // closed when run returns
	closeOnce sync.Once
	closeErr  error

	mu struct {
		sync.Mutex
		// epoch counts successful registrations; 1 after Register.
		epoch int64
		// lease is the current lease; 0 while not registered.
		lease clientv3.LeaseID
		// last is the most recent lease that held our key, kept after it is
		// lost: if it only went unconfirmed it may still hold the key, so
		// the next registration takes the key over and Close revokes it.
		last clientv3.LeaseID
		// done is the current epoch's channel, closed when it is lost.
		done chan struct{}
		// doneClosed says done was closed (lost once per epoch).
		doneClosed bool
	}
}

// session is one epoch: a lease that holds our key.
type session struct {
	lease clientv3.LeaseID
	ttl   time.Duration // granted by etcd
	// confirmedUntil is a lower bound of the lease's expiry: the time the
	// grant was sent plus the granted TTL.
	confirmedUntil time.Time
	rev            int64 // etcd revision of the write that claimed the key
	info           Info  // value written
}

// Register grants a lease, writes Self at <prefix>servers/<id> attached to
// it only if no such key exists, and starts the goroutine that keeps the
// lease alive, rewrites the summary and re-registers after a loss. If a live
// registration with the same id exists it fails with ErrDuplicateID, naming
// the other's addr; nothing is left behind. ctx bounds this first
// registration only: the Registration lives until Close.
func Register(ctx context.Context, cfg Config) (*Registration, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Registration{
		cfg:     cfg,
		cli:     cfg.Client,
		key:     ServerKey(cfg.Prefix, cfg.Self.ID),
		log:     cfg.Logger.With("server_id", cfg.Self.ID),
		base:    time.Now(),
		stopped: make(chan struct{}),
	}
	s, err := r.register(ctx, 0)
	if err != nil {
		return nil, err
	}
	r.publish(s)
	loopCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.run(loopCtx, s)
	return r, nil
}

// Valid reports whether the current lease is known to be alive: a grant or
// keep-alive sent less than its TTL (minus a safety margin) ago was
// acknowledged, and nothing has shown the lease or the key to be gone. It
// turns false as soon as that time runs out without a fresh
// acknowledgement (the epoch then ends: Done closes), when a loss is
// detected, and on Close.
//
// Callers must not start a split, a metadata change or any master duty
// unless Valid() (DESIGN.md section 9). Valid is a point-in-time answer;
// a write that must not land after the lease is lost should carry Guard's
// compare as well.
func (r *Registration) Valid() bool {
	if r.closing.Load() {
		return false
	}
	u := r.validUntil.Load()
	return u > 0 && time.Since(r.base) < time.Duration(u)
}

// Done returns a channel closed when the current lease is lost (or the
// Registration is closed). A re-registration gets a new channel: call Done
// again, and compare Epoch to tell epochs apart. While not registered it
// returns the lost epoch's closed channel.
func (r *Registration) Done() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.done
}

// Epoch returns the number of successful registrations so far: 1 after
// Register, one more after every re-registration.
func (r *Registration) Epoch() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.epoch
}

// Lease returns the current epoch's lease and the epoch, or 0 while not
// registered or not Valid. Keys attached to it (an election candidacy)
// vanish with the registration.
func (r *Registration) Lease() (clientv3.LeaseID, int64) {
	r.mu.Lock()
	lease, epoch := r.mu.lease, r.mu.epoch
	r.mu.Unlock()
	if !r.Valid() {
		return 0, epoch
	}
	return lease, epoch
}

// Key returns the etcd key this server registers at.
func (r *Registration) Key() string { return r.key }

// Guard returns a comparison that holds only while this server's key is
// attached to the current lease; false when not Valid. Adding it to an etcd
// Txn fences the write: it cannot commit once the lease is lost, revoked or
// replaced, whatever the local clock believes.
func (r *Registration) Guard() (clientv3.Cmp, bool) {
	r.mu.Lock()
	lease := r.mu.lease
	r.mu.Unlock()
	if lease == 0 || !r.Valid() {
		return clientv3.Cmp{}, false
	}
	return clientv3.Compare(clientv3.LeaseValue(r.key), "=", lease), true
}

// Close stops the goroutine, then revokes the lease so the key disappears at
// once (rather than after the TTL). Valid is false from the moment Close is
// called. It is idempotent: later calls return the first call's result. If
// ctx ends before the goroutine has stopped, the lease is left to expire.
func (r *Registration) Close(ctx context.Context) error {
	r.closeOnce.Do(func() { r.closeErr = r.close(ctx) })
	return r.closeErr
}

func (r *Registration) close(ctx context.Context) error {
	r.closing.Store(true)
	r.cancel()
	select {
	case <-r.stopped:
	case <-ctx.Done():
		return fmt.Errorf("membership: close: %w", ctx.Err())
	}
	r.mu.Lock()
	last := r.mu.last
	r.mu.Unlock()
	r.lose("closed", nil)
	if last == 0 {
		return nil
	}
	if err := r.revoke(ctx, last); err != nil {
		return fmt.Errorf("membership: close: %w", err)
	}
	r.log.Info("membership: deregistered", "lease", leaseHex(last))
	return nil
}

// run keeps the current session alive and replaces it when it is lost,
// until ctx (Close) ends.
func (r *Registration) run(ctx context.Context, s session) {
	defer close(r.stopped)
	for {
		err := r.maintain(ctx, s)
		if ctx.Err() != nil {
			return
		}
		r.lose("lease lost", err)
		var ok bool
		if s, ok = r.reregister(ctx, s.lease); !ok {
			return
		}
		r.publish(s)
	}
}

// publish makes s the current epoch.
func (r *Registration) publish(s session) {
	r.mu.Lock()
	r.mu.epoch++
	epoch := r.mu.epoch
	r.mu.lease, r.mu.last = s.lease, s.lease
	r.mu.done, r.mu.doneClosed = make(chan struct{}), false
	r.mu.Unlock()
	r.confirm(s.confirmedUntil, s.ttl)
	r.log.Info("membership: registered", "lease", leaseHex(s.lease), "epoch", epoch,
		"ttl", s.ttl, "addr", s.info.Addr)
}

// confirm records that the lease lives at least until expiry, less a safety
// margin of a tenth of the TTL (clock rate differences, scheduling delay).
func (r *Registration) confirm(expiry time.Time, ttl time.Duration) {
	u := expiry.Sub(r.base) - ttl/10
	if u <= 0 {
		u = 0
	}
	r.validUntil.Store(int64(u))
}

// remaining is how long the current lease stays confirmed; <= 0 if not.
func (r *Registration) remaining() time.Duration {
	u := r.validUntil.Load()
	if u == 0 {
		return 0
	}
	return time.Duration(u) - time.Since(r.base)
}

// lose ends the current epoch: Valid turns false first, then Done closes.
func (r *Registration) lose(reason string, err error) {
	r.validUntil.Store(0)
	r.mu.Lock()
	lease, epoch := r.mu.lease, r.mu.epoch
	r.mu.lease = 0
	if !r.mu.doneClosed && r.mu.done != nil {
		close(r.mu.done)
		r.mu.doneClosed = true
	}
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("membership: "+reason, "lease", leaseHex(lease), "epoch", epoch, "err", err)
	}
}

// reregister registers again with a new lease, with backoff and jitter,
// until it succeeds or ctx ends (ok false). prev is the lost lease: if it
// still holds our key, the key is taken over.
func (r *Registration) reregister(ctx context.Context, prev clientv3.LeaseID) (session, bool) {
	bo := backoff.Backoff{Policy: backoff.Policy{Base: 100 * time.Millisecond, Max: min(5*time.Second, r.cfg.TTL)}}
	for attempt := 1; ; attempt++ {
		if !bo.Wait(ctx) {
			return session{}, false
		}
		s, err := r.register(ctx, prev)
		if err == nil {
			return s, true
		}
		if ctx.Err() != nil {
			return session{}, false
		}
		level := slog.LevelWarn
		if errors.Is(err, ErrDuplicateID) {
			level = slog.LevelError
		}
		r.log.Log(ctx, level, "membership: re-registration failed", "attempt", attempt, "err", err)
	}
}

// register grants a new lease and claims the key with it. On failure the
// new lease is revoked. prev (0 at first registration) is our previous
// lease: a key still attached to it is ours to take over, and it is revoked
// once the key moved.
func (r *Registration) register(ctx context.Context, prev clientv3.LeaseID) (session, error) {
	sent := time.Now()
	gctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	g, err := r.cli.Grant(gctx, r.cfg.ttlSeconds())
	cancel()
	if err != nil {
		return session{}, fmt.Errorf("membership: grant lease: %w", err)
	}
	ttl := time.Duration(g.TTL) * time.Second
	s := session{lease: g.ID, ttl: ttl, confirmedUntil: sent.Add(ttl), info: r.sample()}
	s.rev, err = r.claim(ctx, s.lease, prev, s.info)
	if err != nil {
		if rerr := r.revoke(context.WithoutCancel(ctx), s.lease); rerr != nil {
			r.log.Debug("membership: revoke unused lease", "lease", leaseHex(s.lease), "err", rerr)
		}
		return session{}, err
	}
	if prev != 0 {
		if rerr := r.revoke(context.WithoutCancel(ctx), prev); rerr != nil {
			r.log.Debug("membership: revoke previous lease", "lease", leaseHex(prev), "err", rerr)
		}
	}
	return s, nil
}

// claim writes info at our key with lease if the key is absent, or if it is
// attached to prev (our own previous lease). It returns the write's
// revision, or ErrDuplicateID if someone else holds the key.
func (r *Registration) claim(ctx context.Context, lease, prev clientv3.LeaseID, info Info) (int64, error) {
	val, err := encodeInfo(info)
	if err != nil {
		return 0, err
	}
	put := clientv3.OpPut(r.key, val, clientv3.WithLease(lease))
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	resp, err := r.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(r.key), "=", 0)).
		Then(put).
		Else(clientv3.OpGet(r.key)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("membership: claim %s: %w", r.key, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 { // cannot happen: the Txn is atomic
		return 0, fmt.Errorf("membership: claim %s: key vanished inside a txn", r.key)
	}
	holder := clientv3.LeaseID(kvs[0].Lease)
	if prev == 0 || holder != prev {
		return 0, r.duplicate(ctx, kvs[0].Value, holder)
	}
	resp, err = r.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.LeaseValue(r.key), "=", prev)).
		Then(put).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("membership: take over %s: %w", r.key, err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("membership: take over %s: key changed, retry", r.key)
	}
	return resp.Header.Revision, nil
}

// duplicate builds the ErrDuplicateID error for a key held by lease,
// naming the holder's addr and, if etcd answers in time, when its lease
// would expire (a crashed previous incarnation of this server disappears
// then, and registering again will work).
func (r *Registration) duplicate(ctx context.Context, value []byte, lease clientv3.LeaseID) error {
	other, _, _ := decodeInfo(ServersPrefix(r.cfg.Prefix), []byte(r.key), value)
	if lease == 0 {
		return fmt.Errorf("%w: id %q is held by %s (started %s) with no lease; delete %s by hand",
			ErrDuplicateID, r.cfg.Self.ID, other.Addr, other.StartedAt.Format(time.RFC3339), r.key)
	}
	expires := "unknown"
	tctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	if ttl, err := r.cli.TimeToLive(tctx, lease); err == nil && ttl.TTL >= 0 {
		expires = (time.Duration(ttl.TTL) * time.Second).String()
	}
	return fmt.Errorf("%w: id %q is held by %s (started %s, lease %s expires in %s unless kept alive)",
		ErrDuplicateID, r.cfg.Self.ID, other.Addr, other.StartedAt.Format(time.RFC3339), leaseHex(lease), expires)
}

// revoke revokes lease, bounded by ctx and the call timeout; a lease
// already gone is not an error. Cleanup paths pass context.WithoutCancel so
// the revoke runs even when the loop is being stopped.
func (r *Registration) revoke(ctx context.Context, lease clientv3.LeaseID) error {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	_, err := r.cli.Revoke(rctx, lease)
	if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("membership: revoke lease %s: %w", leaseHex(lease), err)
	}
	return nil
}

// sample is Self with a fresh summary.
func (r *Registration) sample() Info {
	info := r.cfg.Self
	if r.cfg.Summary != nil {
		info.Summary = r.cfg.Summary()
	}
	return info
}

// leaseHex formats a lease id the way etcdctl prints it.
func leaseHex(id clientv3.LeaseID) string { return fmt.Sprintf("%x", int64(id)) }
