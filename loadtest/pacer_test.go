package loadtest

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestPacer: the first batch goes at once, each later one a batch's worth
// of rows later, so n batches take (n-1)·batch/rate; a nil pacer never
// waits; an ended ctx stops a wait.
func TestPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPacer(1000, 100)
		start := time.Now()
		for range 10 {
			if err := p.wait(t.Context(), 100); err != nil {
				t.Fatal(err)
			}
		}
		if got := time.Since(start); got != 900*time.Millisecond {
			t.Fatalf("10 batches of 100 rows at 1000 rows/s took %v, want 900ms", got)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := p.wait(ctx, 100); err == nil {
			t.Fatal("wait on an ended ctx returned nil")
		}
	})
	if p := newPacer(0, 100); p != nil || p.wait(t.Context(), 100) != nil {
		t.Fatal("rate 0 must give a nil pacer that never waits")
	}
}
