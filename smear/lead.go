package smear

import (
	"sync"
	"time"
)

// leadWindow is how far back the due lead looks for late forwards.
const leadWindow = 30 * time.Second

// maxLeadShare bounds the due lead to this share of max_delay, so that a
// forwarder that falls far behind (a partition that cannot be written, a
// restart) still spreads its rows over three quarters of the window.
const maxLeadShare = 4 // lead ≤ max_delay / 4

// lateness remembers, per second of the last leadWindow, the largest
// lateness of a forwarded row: the time from its due time to the end of
// the call that delivered it. It is what a row due now may expect to wait
// before it becomes visible, and so how much earlier than max_delay the
// last rows must fall due for the visibility bound (max_delay + 5 s) to
// hold (docs/smearing.md, "Due lead").
type lateness struct {
	mu    sync.Mutex
	slots [int(leadWindow / time.Second)]lateSlot
}

// lateSlot is one second of lateness: the second (unix) and the largest
// lateness recorded in it, in nanoseconds.
type lateSlot struct {
	sec  int64
	late int64
}

// note records a forwarded row's lateness late (ns) at time now.
func (l *lateness) note(now time.Time, late int64) {
	if late <= 0 {
		return
	}
	sec := now.Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &l.slots[uint64(sec)%uint64(len(l.slots))]
	if s.sec != sec {
		*s = lateSlot{sec: sec}
	}
	s.late = max(s.late, late)
}

// recent returns the largest lateness recorded within leadWindow of now.
func (l *lateness) recent(now time.Time) time.Duration {
	from := now.Add(-leadWindow).Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	var m int64
	for _, s := range l.slots {
		if s.sec > from && s.sec <= now.Unix() {
			m = max(m, s.late)
		}
	}
	return time.Duration(m)
}

// DueLead returns how much shorter than maxDelay the window of a smeared
// insert's due time is drawn from: the largest lateness of the rows this
// queue's forwarder delivered in the last 30 s, at most maxDelay/4. At a
// load the forwarder delivers on time it is zero, and due times spread
// over the whole [0, maxDelay]; when forwards take seconds (calls waiting
// for a slot, replicas slow to confirm), new rows fall due that much
// earlier, so that they are visible by maxDelay plus the bound's 5 s
// rather than by maxDelay plus the forwarding time.
func (q *Queue) DueLead(maxDelay time.Duration) time.Duration {
	lead := max(min(q.late.recent(q.now()), maxDelay/maxLeadShare), 0)
	q.metrics.dueLead.Set(lead.Seconds())
	return lead
}
