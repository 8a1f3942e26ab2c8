package smear

import (
	"math"
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

func ptr(v int64) *int64 { return &v }

func TestDecide(t *testing.T) {
	const sec = int64(time.Second)
	table := metadata.DefaultSmear() // on, 120 s, 60 s
	narrow := func(in PolicyInput) PolicyInput {
		in.Begin, in.End = ptr(1000*sec), ptr(1030*sec)
		return in
	}
	on := PolicyInput{Enabled: true, Table: table}
	cases := []struct {
		name string
		in   PolicyInput
		want bool
	}{
		{"narrow partition is smeared", narrow(on), true},
		{"width one ns below threshold", PolicyInput{Enabled: true, Table: table, Begin: ptr(0), End: ptr(60*sec - 1)}, true},
		{"width equal to threshold is not smeared", PolicyInput{Enabled: true, Table: table, Begin: ptr(0), End: ptr(60 * sec)}, false},
		{"width above threshold", PolicyInput{Enabled: true, Table: table, Begin: ptr(0), End: ptr(60*sec + 1)}, false},
		{"negative times", PolicyInput{Enabled: true, Table: table, Begin: ptr(-10 * sec), End: ptr(10 * sec)}, true},
		{"open begin", PolicyInput{Enabled: true, Table: table, End: ptr(10 * sec)}, false},
		{"open end", PolicyInput{Enabled: true, Table: table, Begin: ptr(0)}, false},
		{"both ends open", on, false},
		{"whole int64 axis does not overflow", PolicyInput{Enabled: true, Table: table, Begin: ptr(math.MinInt64), End: ptr(math.MaxInt64)}, false},
		{"empty range", PolicyInput{Enabled: true, Table: table, Begin: ptr(5), End: ptr(5)}, false},
		{"inverted range", PolicyInput{Enabled: true, Table: table, Begin: ptr(6), End: ptr(5)}, false},
		{"global switch off", narrow(PolicyInput{Table: table}), false},
		{"table switch off", narrow(PolicyInput{Enabled: true, Table: metadata.SmearConfig{MaxDelay: table.MaxDelay, KeyrangeThreshold: table.KeyrangeThreshold}}), false},
		{"request opted out", narrow(PolicyInput{Enabled: true, Table: table, OptedOut: true}), false},
		{"zero max delay", narrow(PolicyInput{Enabled: true, Table: metadata.SmearConfig{Enabled: true, KeyrangeThreshold: table.KeyrangeThreshold}}), false},
		{"zero threshold", narrow(PolicyInput{Enabled: true, Table: metadata.SmearConfig{Enabled: true, MaxDelay: table.MaxDelay}}), false},
		{"custom threshold", PolicyInput{Enabled: true, Table: metadata.SmearConfig{Enabled: true, MaxDelay: table.MaxDelay,
			KeyrangeThreshold: metadata.Duration(time.Hour)}, Begin: ptr(0), End: ptr(3599 * sec)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Decide(c.in); got != c.want {
				t.Fatalf("Decide(%+v) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

func TestDueTime(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	const maxDelay = 120 * time.Second
	fixed := func(v int64, gotN *int64) func(int64) int64 {
		return func(n int64) int64 { *gotN = n; return v }
	}
	var n int64
	cases := []struct {
		name string
		max  time.Duration
		rnd  func(int64) int64
		want time.Time
	}{
		{"lowest draw is now", maxDelay, fixed(0, &n), now},
		{"highest draw is now+max", maxDelay, fixed(int64(maxDelay), &n), now.Add(maxDelay)},
		{"middle", maxDelay, fixed(int64(time.Second), &n), now.Add(time.Second)},
		{"too high a draw is clamped", maxDelay, fixed(int64(maxDelay)*2, &n), now.Add(maxDelay)},
		{"negative draw is clamped", maxDelay, fixed(-5, &n), now},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n = 0
			if got := DueTime(now, c.max, c.rnd); !got.Equal(c.want) {
				t.Fatalf("DueTime = %v, want %v", got, c.want)
			}
			if n != int64(c.max)+1 {
				t.Fatalf("rnd called with %d, want %d (max delay inclusive)", n, int64(c.max)+1)
			}
		})
	}
	t.Run("zero max delay", func(t *testing.T) {
		called := false
		rnd := func(int64) int64 { called = true; return 0 }
		for _, d := range []time.Duration{0, -time.Second} {
			if got := DueTime(now, d, rnd); !got.Equal(now) || called {
				t.Fatalf("DueTime(max %v) = %v (rnd called %v), want now without a draw", d, got, called)
			}
		}
	})
	t.Run("default source stays in range", func(t *testing.T) {
		for range 1000 {
			got := DueTime(now, time.Millisecond, nil)
			if got.Before(now) || got.After(now.Add(time.Millisecond)) {
				t.Fatalf("DueTime = %v outside [now, now+1ms]", got)
			}
		}
	})
	t.Run("max int64 delay does not overflow", func(t *testing.T) {
		got := DueTime(time.Unix(0, 0), math.MaxInt64, fixed(math.MaxInt64-1, &n))
		if n != math.MaxInt64 || got.UnixNano() != math.MaxInt64-1 {
			t.Fatalf("got %d with n %d", got.UnixNano(), n)
		}
	})
}
