package replication

import (
	"context"
	"fmt"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// The replication quota is flow control between a coordinator and its
// slowest copy (docs/replication.md, "The replication quota"). An insert
// is acknowledged once a quorum holds it, so a load that the third copy
// cannot keep up with is acknowledged anyway: that copy falls further
// behind for as long as the load lasts, reads at consistency one through
// it miss ever older rows, and the quorum itself is one failure away from
// waiting for it. Like the proposal quota of a Raft leader, a coordinator
// therefore waits, before it writes an insert, until every replica target
// that keeps up has confirmed all but Quota of the replica's synced rows.
// A target that is failing, or that has not completed a push within the
// stall time while behind, is not waited for (a down server must not stop
// its partition's writes); it counts again once it has caught up to
// within the quota.

// DefaultQuotaStall is Config.QuotaStall when unset: how long a replica
// target behind by more than the quota may go without a successful push
// before inserts stop waiting for it.
const DefaultQuotaStall = 5 * time.Second

// WaitQuota blocks until no replica target that keeps up lags more than
// Config.Quota rows behind the replica's synced watermark (see the comment
// above; a quota of 0 returns at once). A target keeps up from the moment
// its lag is within the quota until a push to it fails or none succeeds
// for Config.QuotaStall while it is behind. It returns how long it waited
// (0: not at all), and when ctx ends first an error naming the target
// waited for, wrapping ctx's error.
func (p *Pusher) WaitQuota(ctx context.Context) (time.Duration, error) {
	if p.cfg.Quota == 0 {
		return 0, nil
	}
	var start time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		over, ok := p.overQuotaLocked(time.Now())
		changed := p.mu.changed
		p.mu.Unlock()
		if !ok {
			if start.IsZero() {
				return 0, nil
			}
			return time.Since(start), nil
		}
		if start.IsZero() {
			start = time.Now()
		}
		// Woken by every confirmation; the timer re-checks the stall.
		if timer == nil {
			timer = time.NewTimer(p.cfg.QuotaStall / 4)
		} else {
			timer.Reset(p.cfg.QuotaStall / 4)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("replication: server %s's copy is %d rows behind, over the quota of %d: %w", over.Server, over.Lag, p.cfg.Quota, ctx.Err())
		case <-changed:
		case <-timer.C:
		}
	}
}

// quotaLag describes a target an insert waits for: its server and how
// far behind the synced watermark it is.
type quotaLag struct {
	Server string
	Lag    uint64
}

// overQuotaLocked returns the replica target that keeps up and lags most,
// by more than the quota, if any, updating each target's standing (see
// WaitQuota).
func (p *Pusher) overQuotaLocked(now time.Time) (quotaLag, bool) {
	synced := p.cfg.Log.SyncedSeq()
	var worst quotaLag
	found := false
	for _, t := range p.mu.view {
		if lag, behind := p.quotaStandingLocked(t, synced, now); behind && (!found || lag > worst.Lag) {
			worst, found = quotaLag{Server: t.spec.ServerID, Lag: lag}, true
		}
	}
	return worst, found
}

// quotaStandingLocked updates t's standing for the quota and reports
// whether inserts must wait for it, with its lag: it is a replica target
// that keeps up and is more than the quota behind synced. now is
// time.Now, the clock of t.lastPush.
func (p *Pusher) quotaStandingLocked(t *target, synced uint64, now time.Time) (uint64, bool) {
	if p.cfg.Quota == 0 || t.spec.Kind != metadata.TargetReplica {
		return 0, false
	}
	c := p.confirmedLocked(t)
	if c >= synced || synced-c <= p.cfg.Quota {
		t.keepsUp, t.behindSince = true, time.Time{}
		return 0, false
	}
	if !t.keepsUp {
		return 0, false
	}
	if t.behindSince.IsZero() {
		t.behindSince = now
	}
	progress := t.lastPush
	if progress.Before(t.behindSince) {
		progress = t.behindSince // an idle target is not stuck
	}
	if t.failingSince.Load() != 0 || now.Sub(progress) > p.cfg.QuotaStall {
		t.keepsUp = false // down or stuck: writes go on without it
		return 0, false
	}
	return synced - c, true
}
