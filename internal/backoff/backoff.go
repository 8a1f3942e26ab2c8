// Package backoff is the one retry-delay policy of the module: exponential
// growth from a base to a cap, with jitter, and a sleep that never outlives
// its context.
//
// Every retry loop of the module (rpc calls, membership re-registration and
// watching, METADATA commits and table watching, replication pushes, smear
// forwards, the load test, replica's change retries) draws its waits here,
// each with its own Base and Max, so that they all grow, cap and spread the
// same way and stop promptly when their context ends.
//
// Why not github.com/cenkalti/backoff (already in the module graph): its
// ExponentialBackOff randomizes around the interval (interval·(1±factor),
// multiplier 1.5 by default) with a package-level random source, while the
// callers here rely on exactly "equal jitter" in [d/2, d] (or "full jitter"
// in [0, d)) of a doubling ceiling, and their tests inject the random draw
// to check the bounds exactly. A 100-line package keeps every caller's
// schedule bit for bit and stays stdlib-only, so that leaf packages
// (metadata, loadtest) can use it without new dependencies.
//
// Invariants: Ceiling(n) = min(Base·2^(n−1), Max) for n >= 1, computed
// without overflow; Delay(n) lies in [Ceiling(n)/2, Ceiling(n)] (equal
// jitter) or [0, Ceiling(n)) (full jitter); Sleep returns false exactly
// when ctx ended before the wait did.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy is an exponential backoff schedule: the ceiling after the n-th
// consecutive failure is Base·2^(n−1), capped at Max, and the wait is a
// random draw under that ceiling.
type Policy struct {
	// Base is the ceiling after the first failure.
	Base time.Duration
	// Max caps the ceiling. A Max below Base caps Base too.
	Max time.Duration
	// Full selects "full jitter", a draw in [0, ceiling), which spreads
	// clients that failed together the most. The default, "equal jitter",
	// draws from [ceiling/2, ceiling], so a retry never comes back sooner
	// than half the nominal delay.
	Full bool
	// Rand returns a uniform integer in [0, n) for n > 0. Nil means
	// math/rand/v2.Int64N. Tests inject one to pin the draw.
	Rand func(n int64) int64
}

// Ceiling returns the ceiling after the n-th consecutive failure (n < 1
// counts as 1): min(Base·2^(n−1), Max).
func (p Policy) Ceiling(n int) time.Duration {
	shift := max(n, 1) - 1
	if shift < 63 && p.Base <= p.Max>>shift {
		return p.Base << shift // cannot overflow: at most Max
	}
	return p.Max
}

// Delay returns the wait after the n-th consecutive failure (n >= 1): a
// draw in [c/2, c], or in [0, c) when Full, where c = Ceiling(n).
func (p Policy) Delay(n int) time.Duration {
	c := p.Ceiling(n)
	if c <= 0 {
		return 0
	}
	randN := p.Rand
	if randN == nil {
		randN = rand.Int64N
	}
	if p.Full {
		return time.Duration(randN(int64(c)))
	}
	half := c / 2
	return half + time.Duration(randN(int64(c-half)+1))
}

// Backoff walks a Policy: each Next is the wait after one more consecutive
// failure, and Reset, after progress, starts over from Base. The zero
// Backoff of a Policy is ready. Not safe for concurrent use.
type Backoff struct {
	Policy
	failures int
}

// Next counts one more failure and returns the wait after it.
func (b *Backoff) Next() time.Duration {
	if b.failures < 64 {
		b.failures++
	}
	return b.Delay(b.failures)
}

// Reset forgets the failures: the next wait is drawn under Base again.
func (b *Backoff) Reset() { b.failures = 0 }

// Wait sleeps for Next; false if ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool { return Sleep(ctx, b.Next()) }

// Sleep waits d, or until ctx ends; it reports whether the wait ran out
// (false: ctx ended first). A d <= 0 does not wait: it reports whether ctx
// is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	return SleepOrWake(ctx, d, nil)
}

// SleepOrWake is Sleep that also ends early, reporting true, when wake
// delivers or is closed (nil: never).
func SleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-wake:
		return true
	}
}
