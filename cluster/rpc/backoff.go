package rpc

import (
	"context"
	"crypto/tls"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tsdb/tsdb/internal/backoff"
)

// Defaults of Config.
const (
	DefaultTimeout          = 5 * time.Second
	DefaultMaxAttempts      = 4
	DefaultBaseBackoff      = 50 * time.Millisecond
	DefaultMaxBackoff       = 2 * time.Second
	DefaultMaxResponseBytes = 64 << 20
)

// Config configures a Client. The zero value is valid: every field has a
// default, applied by EnsureDefaults.
type Config struct {
	// Secret is sent as the SecretHeader header when non-empty.
	Secret string
	// TLS configures calls to https addresses (see Client.Call): the CAs
	// peers' certificates must chain to (RootCAs) and a client certificate
	// if any. Nil: the system's roots.
	TLS *tls.Config
	// Timeout bounds one attempt (connect, send, wait, read); the context's
	// deadline, when earlier, bounds it too. Default 5s.
	Timeout time.Duration
	// MaxAttempts is the number of attempts of one call, the first included;
	// 1 disables retries. Default 4.
	MaxAttempts int
	// BaseBackoff is the backoff ceiling after the first failed attempt; it
	// doubles after each further one, up to MaxBackoff. Default 50ms.
	BaseBackoff time.Duration
	// MaxBackoff caps the backoff ceiling and a server's Retry-After.
	// Default 2s; raised to BaseBackoff if smaller.
	MaxBackoff time.Duration
	// MaxResponseBytes limits an answer's body, as sent and once
	// decompressed. Default 64 MiB.
	MaxResponseBytes int
	// Rand returns the jitter in [0, 1). Default math/rand/v2.Float64.
	Rand func() float64
	// Sleep waits d or until ctx is done, returning ctx.Err() in that case.
	// Default: a timer that honours ctx. Tests inject one that records.
	Sleep func(ctx context.Context, d time.Duration) error
	// Clock, when set, stamps every request with this server's clock
	// (ClockHeader) and receives the stamp of every answer.
	Clock *PeerClock
}

// EnsureDefaults fills every unset (zero or negative) field with its default.
func (c *Config) EnsureDefaults() {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.BaseBackoff <= 0 {
		c.BaseBackoff = DefaultBaseBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxBackoff < c.BaseBackoff {
		c.MaxBackoff = c.BaseBackoff
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	if c.Sleep == nil {
		c.Sleep = sleep
	}
}

// backoff is the wait after failed attempt n (1-based): "full jitter"
// (internal/backoff), a uniform draw in [0, ceiling(n)) where ceiling(n) =
// min(MaxBackoff, BaseBackoff * 2^(n-1)), so that clients that failed
// together do not retry together. A server's Retry-After (retryAfter >= 0)
// is a lower bound, itself capped by MaxBackoff so that a confused server
// cannot stall the caller beyond the policy.
func (c *Config) backoff(n int, retryAfter time.Duration) time.Duration {
	p := backoff.Policy{Base: c.BaseBackoff, Max: c.MaxBackoff, Full: true,
		Rand: func(n int64) int64 { return int64(c.Rand() * float64(n)) }}
	d := p.Delay(n)
	if retryAfter >= 0 {
		d = max(d, min(retryAfter, c.MaxBackoff))
	}
	return d
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP-date
// (RFC 9110 section 10.2.3). It returns -1 when the value is absent or
// invalid, and 0 for a date in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return -1
		}
		if secs > int64(365*24*time.Hour/time.Second) {
			secs = int64(365 * 24 * time.Hour / time.Second) // no overflow; capped later anyway
		}
		return time.Duration(secs) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return -1
	}
	return max(t.Sub(now), 0)
}

// sleep is the default Config.Sleep: it waits d, or returns ctx.Err() as soon
// as ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if !backoff.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}
