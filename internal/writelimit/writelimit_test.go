package writelimit

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestWriteLimit: the write limiter never lets more than the limit (plus
// its burst) through per second, and counts every byte.
func TestWriteLimit(t *testing.T) {
	const limit = 1 << 20
	w := New(limit)
	start := time.Now()
	for range 48 { // 3 MiB in 64 KiB writes
		if err := w.Wait(context.Background(), 64<<10); err != nil {
			t.Fatal(err)
		}
	}
	// A token bucket never runs early: 3 MiB at 1 MiB/s with a burst of a
	// tenth of that takes at least 2.9 s (checked: 2 s).
	if d := time.Since(start); d < 2*time.Second-50*time.Millisecond {
		t.Errorf("3 MiB passed a 1 MiB/s limit in %v", d)
	}
	if got := counterValue(w.bytes); got != 3<<20 {
		t.Errorf("counted %v bytes, want %d", got, 3<<20)
	}
	// A write larger than the burst waits in parts instead of failing.
	if err := New(1000).Wait(context.Background(), 1500); err != nil {
		t.Errorf("a write over the burst: %v", err)
	}
	// No limit: counted, never waits.
	free := New(0)
	if err := free.Wait(context.Background(), 1<<30); err != nil || counterValue(free.bytes) != 1<<30 {
		t.Errorf("unlimited: %v, counted %v", err, counterValue(free.bytes))
	}
}

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil || m.Counter == nil {
		return 0
	}
	return m.Counter.GetValue()
}
