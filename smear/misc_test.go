package smear

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tsdb/tsdb/model"
)

// TestKick: with a poll interval of an hour, Run still forwards an entry
// enqueued already due (Enqueue wakes it) and one that fell due later
// when kicked.
func TestKick(t *testing.T) {
	clk, opts := clockedOptions(t)
	q := openQueue(t, t.TempDir(), opts)
	sender := newRecorder()
	fopts := fastForwarder()
	fopts.PollInterval = time.Hour
	f := NewForwarder(q, sender, fopts)
	stop := runForwarder(t, f)
	now := makeRows(0, 2)
	later := makeRows(1, 3)
	if err := q.Enqueue(context.Background(), "cpu", later, clk.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(context.Background(), "cpu", now, clk.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the due entry", func() bool { return sender.accepted() == 2 })
	clk.ns.Add(int64(time.Second))
	f.Kick()
	eventually(t, "the kicked entry", func() bool { return sender.accepted() == 5 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	sender.checkDelivered(t, map[string][]model.Row{"cpu": append(now, later...)})
}

func TestMetricsRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.delay.Observe(1) // histograms and counters show up once touched or always
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 24 { // 21, the due lead's lateness and lead, and the direct rate
		t.Fatalf("%d metric families registered, want 24", len(fams))
	}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "tsdb_smear_") {
			t.Fatalf("metric %s lacks the tsdb_smear_ prefix", f.GetName())
		}
	}
	_ = NewMetrics(nil) // no registry: must not panic
}

func TestThrottle(t *testing.T) {
	th := throttle{interval: time.Minute}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at         time.Duration
		ok         bool
		suppressed int
	}{
		{0, true, 0},
		{time.Second, false, 0},
		{59 * time.Second, false, 0},
		{time.Minute, true, 2},
		{time.Minute + 1, false, 0},
		{3 * time.Minute, true, 1},
	}
	for _, s := range steps {
		ok, n := th.allow(t0.Add(s.at))
		if ok != s.ok || n != s.suppressed {
			t.Fatalf("allow at +%v = %v, %d; want %v, %d", s.at, ok, n, s.ok, s.suppressed)
		}
	}
}
