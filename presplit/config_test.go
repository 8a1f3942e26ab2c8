package presplit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfig(t *testing.T) {
	got := DefaultConfig()
	want := Config{Horizon: 10 * time.Minute, Refill: 5 * time.Minute, MinWidth: time.Second,
		MaxWidth: 24 * time.Hour, UnknownWidth: time.Hour, MinAhead: 3, MaxPoints: 1000, RateWindow: time.Hour}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureDefaultsKeepsSetFields(t *testing.T) {
	c := Config{Horizon: time.Hour, MinWidth: time.Minute, MinAhead: 5}
	c.EnsureDefaults()
	want := Config{Horizon: time.Hour, Refill: 30 * time.Minute, MinWidth: time.Minute,
		MaxWidth: DefaultMaxWidth, UnknownWidth: DefaultUnknownWidth, MinAhead: 5, MaxPoints: DefaultMaxPoints, RateWindow: RateWindow}
	if c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want []string
	}{
		{"min above max", func(c *Config) { c.MinWidth, c.MaxWidth = time.Hour, time.Minute }, []string{"MinWidth: 1h0m0s is above MaxWidth 1m0s"}},
		{"negative horizon", func(c *Config) { c.Horizon = -time.Second }, []string{"Horizon: must be positive"}},
		{"negative refill", func(c *Config) { c.Refill = -1 }, []string{"Refill: must be positive"}},
		{"negative widths", func(c *Config) { c.MinWidth, c.MaxWidth = -1, -1 }, []string{"MinWidth: must be positive", "MaxWidth: must be positive"}},
		{"negative counts", func(c *Config) { c.MinAhead, c.MaxPoints = -1, -2 }, []string{"MinAhead: must be at least 1, got -1", "MaxPoints: must be at least 1, got -2"}},
		{"zero without defaults", func(c *Config) { *c = Config{} }, []string{"Horizon", "Refill", "MinWidth", "MaxWidth", "UnknownWidth", "MinAhead", "MaxPoints"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("got %v, want ErrInvalidConfig", err)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}
