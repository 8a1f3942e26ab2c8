package backoff

import (
	"context"
	"testing"
	"time"
)

func lowest(int64) int64    { return 0 }
func highest(n int64) int64 { return n - 1 }

func TestCeiling(t *testing.T) {
	p := Policy{Base: 100 * time.Millisecond, Max: time.Second}
	for n, want := range map[int]time.Duration{
		-1: 100 * time.Millisecond, 0: 100 * time.Millisecond, 1: 100 * time.Millisecond,
		2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second,
		62: time.Second, 63: time.Second, 64: time.Second, 1 << 30: time.Second,
	} {
		if got := p.Ceiling(n); got != want {
			t.Errorf("Ceiling(%d) = %v, want %v", n, got, want)
		}
	}
	// A Max below Base caps Base too.
	if got := (Policy{Base: time.Second, Max: time.Millisecond}).Ceiling(1); got != time.Millisecond {
		t.Errorf("Ceiling with Max < Base = %v", got)
	}
	// No overflow near the top of the range.
	big := Policy{Base: 1, Max: 1<<63 - 1}
	if got := big.Ceiling(63); got != 1<<62 {
		t.Errorf("Ceiling(63) = %v", got)
	}
	if got := big.Ceiling(64); got != big.Max {
		t.Errorf("Ceiling(64) = %v", got)
	}
}

func TestDelayBounds(t *testing.T) {
	for _, full := range []bool{false, true} {
		for n := 1; n <= 8; n++ {
			p := Policy{Base: 100 * time.Millisecond, Max: time.Second, Full: full}
			c := p.Ceiling(n)
			p.Rand = lowest
			lo := p.Delay(n)
			p.Rand = highest
			hi := p.Delay(n)
			wantLo, wantHi := c/2, c
			if full {
				wantLo, wantHi = 0, c-1
			}
			if lo != wantLo || hi != wantHi {
				t.Errorf("full=%v n=%d: delays [%v, %v], want [%v, %v]", full, n, lo, hi, wantLo, wantHi)
			}
			p.Rand = nil
			for range 100 {
				if d := p.Delay(n); d < wantLo || d > wantHi {
					t.Fatalf("full=%v n=%d: delay %v outside [%v, %v]", full, n, d, wantLo, wantHi)
				}
			}
		}
	}
	if got := (Policy{}).Delay(1); got != 0 {
		t.Errorf("zero policy delay %v", got)
	}
}

// TestBackoff (moved from cluster/membership): each wait lies in [c/2, c]
// of a ceiling doubling from Base to Max; Reset starts over.
func TestBackoff(t *testing.T) {
	b := Backoff{Policy: Policy{Base: 100 * time.Millisecond, Max: 400 * time.Millisecond}}
	for i, ceil := range []time.Duration{100, 200, 400, 400} {
		ceil *= time.Millisecond
		if d := b.Next(); d < ceil/2 || d > ceil {
			t.Fatalf("step %d: %v outside [%v, %v]", i, d, ceil/2, ceil)
		}
	}
	b.Reset()
	if d := b.Next(); d > 100*time.Millisecond {
		t.Fatalf("after reset: %v", d)
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on an ended ctx reported a full wait")
	}
	if Sleep(ctx, 0) {
		t.Fatal("Sleep(0) on an ended ctx reported a live ctx")
	}
	if !Sleep(t.Context(), 0) || !Sleep(t.Context(), time.Microsecond) {
		t.Fatal("Sleep on a live ctx reported it ended")
	}
	b := Backoff{Policy: Policy{Base: time.Hour, Max: time.Hour}}
	if b.Wait(ctx) {
		t.Fatal("Wait on an ended ctx reported a full wait")
	}
	wake := make(chan struct{})
	close(wake)
	if !SleepOrWake(t.Context(), time.Hour, wake) {
		t.Fatal("SleepOrWake did not end on wake")
	}
}
