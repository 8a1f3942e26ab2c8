package master

import "time"

// slowPass is how long a master pass may take before it is logged: the
// pre-split runs inside the pass, so a slow pass lets "now" run closer to
// the open tail than the horizon intends.
const slowPass = 3 * time.Second

// passTimer measures the phases of one master pass, for the slow-pass log.
type passTimer struct {
	start, last time.Time
	// The phases, in the order the pass runs them.
	view, partitions, other, sizes, presplit time.Duration
}

// newPassTimer starts timing a pass now.
func newPassTimer() passTimer {
	now := time.Now()
	return passTimer{start: now, last: now}
}

// lap adds the time since the previous lap (or the start) to *phase.
func (t *passTimer) lap(phase *time.Duration) {
	now := time.Now()
	*phase += now.Sub(t.last)
	t.last = now
}

// report logs the pass's phases when it took longer than slowPass.
func (t *passTimer) report(m *Master) {
	took := time.Since(t.start)
	if took < slowPass {
		return
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	m.log.Warn("master: slow pass; pre-split and repairs wait for it", "took", r(took),
		"read_view", r(t.view), "partitions", r(t.partitions), "retention_rebalance", r(t.other),
		"presplit_sizes", r(t.sizes), "presplit_plan_commit", r(t.presplit))
}
