package membership

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// maintain keeps session s alive until it is lost, returning why (wrapping
// errLeaseLost), or until ctx ends (returning ctx.Err()). Three things run
// in one select loop, so the session has a single owner:
//
//   - keep-alive: one KeepAliveOnce every TTL/3 (retried sooner after a
//     failure). Its send time plus the returned TTL is a lower bound of the
//     lease's expiry, which is what Valid reports. A "lease not found"
//     answer, or no answer before that bound runs out, loses the session;
//   - summary refresh every RefreshEvery, written only when it changed and
//     only while the key still carries our lease (a Txn on LeaseValue);
//   - a watch on our own key, so a revoke (which deletes the key) or an
//     overwrite by someone else is noticed at once rather than at the next
//     keep-alive. If that watch breaks, the next successful keep-alive
//     re-reads the key and re-opens it.
func (r *Registration) maintain(ctx context.Context, s session) error {
	ka := time.NewTimer(s.ttl / 3)
	defer ka.Stop()
	refresh := time.NewTicker(r.cfg.RefreshEvery)
	defer refresh.Stop()
	kw := r.watchKey(ctx, s.rev+1)
	defer func() { kw.stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ka.C:
			next, confirmed, err := r.keepAlive(ctx, s)
			if err != nil {
				return err
			}
			if kw.ch == nil && confirmed {
				if kw, err = r.rewatch(ctx, s); err != nil {
					return err
				}
			}
			ka.Reset(next)
		case <-refresh.C:
			if err := r.refresh(ctx, &s); err != nil {
				return err
			}
		case wr, ok := <-kw.ch:
			if err := checkKeyEvents(s, wr, ok); err != nil {
				return err
			}
			if !ok || wr.Err() != nil {
				r.log.Debug("membership: own-key watch ended; re-opened after next keep-alive", "err", wr.Err())
				kw.stop()
			}
		}
	}
}

// keepAlive renews the lease once. It returns when to renew next (TTL/3
// after a success, sooner after a transient failure) and whether the lease
// was confirmed. An attempt never runs past the confirmed expiry: when that
// passes without an acknowledgement the session is lost, so Valid turning
// false by itself is always followed by Done closing. The error wraps
// errLeaseLost when the lease is gone or could not be confirmed in time.
func (r *Registration) keepAlive(ctx context.Context, s session) (next time.Duration, confirmed bool, err error) {
	remaining := r.remaining()
	if remaining <= 0 {
		return 0, false, fmt.Errorf("%w: lease %s not confirmed within its TTL", errLeaseLost, leaseHex(s.lease))
	}
	sent := time.Now()
	cctx, cancel := context.WithTimeout(ctx, min(r.cfg.CallTimeout, remaining))
	resp, err := r.keepAliveOnce(cctx, s.lease)
	cancel()
	switch {
	case err == nil && r.remaining() <= 0:
		// Renewed, but Valid already reported false: end the epoch rather
		// than let Valid turn true again within it.
		return 0, false, fmt.Errorf("%w: lease %s acknowledged after its confirmed expiry", errLeaseLost, leaseHex(s.lease))
	case err == nil:
		r.confirm(sent.Add(time.Duration(resp.TTL)*time.Second), s.ttl)
		return s.ttl / 3, true, nil
	case ctx.Err() != nil:
		return 0, false, ctx.Err()
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return 0, false, fmt.Errorf("%w: lease %s not found", errLeaseLost, leaseHex(s.lease))
	case r.remaining() <= 0:
		return 0, false, fmt.Errorf("%w: lease %s not confirmed within its TTL: %w", errLeaseLost, leaseHex(s.lease), err)
	default:
		r.log.Warn("membership: keep-alive failed; retrying", "lease", leaseHex(s.lease), "err", err)
		return max(min(s.ttl/12, r.remaining()), time.Millisecond), false, nil
	}
}

// keepAliveOnce sends one keep-alive through the client, or through the
// test hook when one is set.
func (r *Registration) keepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	if r.cfg.keepAliveOnce != nil {
		return r.cfg.keepAliveOnce(ctx, id)
	}
	return r.cli.KeepAliveOnce(ctx, id)
}

// refresh rewrites our key with a fresh summary if it changed, only while
// the key still carries our lease; a failed compare loses the session. A
// transport error is logged and retried at the next tick.
func (r *Registration) refresh(ctx context.Context, s *session) error {
	info := r.sample()
	if info.equal(s.info) {
		return nil
	}
	val, err := encodeInfo(info)
	if err != nil {
		r.log.Warn("membership: summary not written", "err", err)
		return nil
	}
	// Bounded by TTL/3 too, so a slow etcd does not hold up the keep-alive.
	cctx, cancel := context.WithTimeout(ctx, min(r.cfg.CallTimeout, s.ttl/3))
	defer cancel()
	resp, err := r.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.LeaseValue(r.key), "=", s.lease)).
		Then(clientv3.OpPut(r.key, val, clientv3.WithLease(s.lease))).
		Commit()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		r.log.Warn("membership: summary refresh failed; retrying", "err", err)
		return nil
	case !resp.Succeeded:
		return fmt.Errorf("%w: %s no longer carries lease %s", errLeaseLost, r.key, leaseHex(s.lease))
	}
	s.info = info
	return nil
}

// keyWatch is the watch on our own key; ch is nil while it is down.
type keyWatch struct {
	ch     <-chan clientv3.WatchResponse
	cancel context.CancelFunc
	done   <-chan struct{} // closed when the forwarding goroutine exits
}

// stop cancels the watch and waits for its goroutine; ch becomes nil
// (blocks forever in a select).
func (kw *keyWatch) stop() {
	if kw.cancel != nil {
		kw.cancel()
		<-kw.done
	}
	*kw = keyWatch{}
}

// watchKey opens the watch on our key from revision rev. clientv3's Watch
// blocks while etcd is unreachable (it opens the stream before taking the
// request), so it runs on a goroutine of its own that forwards responses;
// the keep-alive loop is never held up by it. stop ends that goroutine.
func (r *Registration) watchKey(ctx context.Context, rev int64) keyWatch {
	wctx, cancel := context.WithCancel(ctx)
	ch, done := make(chan clientv3.WatchResponse), make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for wr := range r.cli.Watch(wctx, r.key, clientv3.WithRev(rev)) {
			select {
			case ch <- wr:
			case <-wctx.Done():
				return
			}
		}
	}()
	return keyWatch{ch: ch, cancel: cancel, done: done}
}

// rewatch re-reads our key after the own-key watch broke: if it is gone or
// carries another lease the session is lost; otherwise the watch re-opens
// right after the read. A failed read leaves the watch down for the next
// keep-alive to retry.
func (r *Registration) rewatch(ctx context.Context, s session) (keyWatch, error) {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	resp, err := r.cli.Get(cctx, r.key)
	cancel()
	if err != nil {
		r.log.Debug("membership: re-reading own key failed", "err", err)
		return keyWatch{}, nil
	}
	if len(resp.Kvs) == 0 {
		return keyWatch{}, fmt.Errorf("%w: %s is gone", errLeaseLost, r.key)
	}
	if got := clientv3.LeaseID(resp.Kvs[0].Lease); got != s.lease {
		return keyWatch{}, fmt.Errorf("%w: %s carries lease %s, not %s", errLeaseLost, r.key, leaseHex(got), leaseHex(s.lease))
	}
	return r.watchKey(ctx, resp.Header.Revision+1), nil
}

// checkKeyEvents loses the session if our key was deleted (a revoke or an
// expiry deletes it) or rewritten under another lease.
func checkKeyEvents(s session, wr clientv3.WatchResponse, ok bool) error {
	if !ok {
		return nil
	}
	for _, ev := range wr.Events {
		switch {
		case ev.Type == clientv3.EventTypeDelete:
			return fmt.Errorf("%w: %s deleted at revision %d", errLeaseLost, ev.Kv.Key, ev.Kv.ModRevision)
		case clientv3.LeaseID(ev.Kv.Lease) != s.lease:
			return fmt.Errorf("%w: %s rewritten under lease %s at revision %d", errLeaseLost,
				ev.Kv.Key, leaseHex(clientv3.LeaseID(ev.Kv.Lease)), ev.Kv.ModRevision)
		}
	}
	return nil
}
