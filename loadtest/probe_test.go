package loadtest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestProbeRecheck: probes that time out are looked for again after the
// drain and counted as seen late or missing, the missing ones named.
func TestProbeRecheck(t *testing.T) {
	f := newFakeCluster(t, 2)
	var servers []Server
	for i, u := range f.urls() {
		servers = append(servers, Server{ID: fmt.Sprintf("s%d", i+1), URL: u})
	}
	p := &prober{
		cl: newClient("", nil, 5*time.Second, 2), servers: servers, table: "lt", smear: true,
		runID: "r", every: time.Second, timeout: 300 * time.Millisecond,
	}
	series := func(id int) string { return fmt.Sprintf("%s,id=%d,run=r", ProbeMeasurement, id) }
	f.mu.Lock()
	for id := 1; id <= 3; id++ {
		f.hidden[series(id)] = true
	}
	f.mu.Unlock()
	ctx := context.Background()
	for range 3 {
		p.probe(ctx)
	}
	f.mu.Lock()
	delete(f.hidden, series(2)) // becomes visible after its timeout
	f.mu.Unlock()
	p.probe(ctx) // id 4: visible at once
	p.recheck(ctx)
	v := p.result()
	if v.Probes != 4 || v.Visible != 1 || v.TimedOut != 3 || v.SeenLate != 1 || v.Missing != 2 || v.Errors != 0 {
		t.Fatalf("visibility %+v, want 4 probes, 1 visible, 3 timed out (1 seen late, 2 missing)", v)
	}
	if want := []string{series(1), series(3)}; !slices.Equal(v.MissingSeries, want) {
		t.Fatalf("missing %q, want %q", v.MissingSeries, want)
	}
}
