package rpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestEnsureDefaults(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	if c.Timeout != DefaultTimeout || c.MaxAttempts != DefaultMaxAttempts || c.BaseBackoff != DefaultBaseBackoff ||
		c.MaxBackoff != DefaultMaxBackoff || c.MaxResponseBytes != DefaultMaxResponseBytes || c.Rand == nil || c.Sleep == nil {
		t.Fatalf("defaults not applied: %+v", c)
	}
	c = Config{BaseBackoff: time.Second, MaxBackoff: time.Millisecond, MaxAttempts: 1}
	c.EnsureDefaults()
	if c.MaxBackoff != time.Second || c.MaxAttempts != 1 {
		t.Fatalf("got MaxBackoff %v MaxAttempts %d", c.MaxBackoff, c.MaxAttempts)
	}
}

func TestBackoff(t *testing.T) {
	const ms = time.Millisecond
	cfg := Config{BaseBackoff: 50 * ms, MaxBackoff: 2 * time.Second}
	for _, tc := range []struct {
		name       string
		failed     int
		rand       float64
		retryAfter time.Duration
		want       time.Duration
	}{
		{"first, no jitter", 1, 0, -1, 0},
		{"first, half", 1, 0.5, -1, 25 * ms},
		{"second doubles", 2, 0.5, -1, 50 * ms},
		{"sixth", 6, 0.5, -1, 800 * ms},
		{"seventh capped", 7, 0.5, -1, time.Second},
		{"hundredth capped, no overflow", 100, 0.5, -1, time.Second},
		{"near one", 7, 0.999, -1, time.Duration(0.999 * float64(2*time.Second))},
		{"retry-after raises", 1, 0.5, 300 * ms, 300 * ms},
		{"retry-after below jitter", 7, 0.5, 300 * ms, time.Second},
		{"retry-after capped", 1, 0.5, time.Minute, 2 * time.Second},
		{"retry-after zero", 1, 0.5, 0, 25 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.Rand = func() float64 { return tc.rand }
			if got := c.backoff(tc.failed, tc.retryAfter); got != tc.want {
				t.Fatalf("backoff = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", -1},
		{"  ", -1},
		{"0", 0},
		{"3", 3 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"-1", -1},
		{"1.5", -1},
		{"soon", -1},
		{"99999999999999999", 365 * 24 * time.Hour},
		{"Fri, 02 Jan 2026 15:04:15 GMT", 10 * time.Second},
		{"Fri, 02 Jan 2026 15:04:00 GMT", 0},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := parseRetryAfter(tc.in, now); got != tc.want {
				t.Fatalf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if err := sleep(t.Context(), 0); err != nil {
		t.Fatalf("zero sleep: %v", err)
	}
	if err := sleep(t.Context(), time.Microsecond); err != nil {
		t.Fatalf("short sleep: %v", err)
	}
}

func TestDecoderClasses(t *testing.T) {
	for _, tc := range []struct{ a, b int }{{1, minDecoderLimit}, {minDecoderLimit + 1, 2 * minDecoderLimit}, {3 << 20, 4 << 20}} {
		if decoderFor(tc.a) != decoderFor(tc.b) {
			t.Fatalf("limits %d and %d use different decoders", tc.a, tc.b)
		}
	}
	if decoderFor(1<<20) == decoderFor(1<<20+1) {
		t.Fatal("1 MiB and 1 MiB+1 share a decoder")
	}
}
