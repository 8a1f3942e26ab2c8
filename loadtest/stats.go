package loadtest

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// stats collects the outcomes of the load requests of one run. Only
// requests completing while measuring count in the run's totals; every
// request counts in the progress line's interval figures.
type stats struct {
	measuring atomic.Bool
	rows      atomic.Int64 // measured acknowledged rows
	requests  atomic.Int64 // measured acknowledged requests
	tickRows  atomic.Int64 // acknowledged rows since the last tick
	mu        struct {
		sync.Mutex
		total      Histogram        // guarded by mu: measured latencies of acknowledged requests
		tick       Histogram        // guarded by mu: latencies since the last tick
		errors     map[string]int64 // guarded by mu: measured failures by errorKey
		tickErrors int64            // guarded by mu: failures since the last tick
	}
}

func newStats() *stats {
	s := &stats{}
	s.mu.errors = make(map[string]int64)
	return s
}

// record counts one request of rows rows that took lat.
func (s *stats) record(r result, lat time.Duration, rows int) {
	measuring := s.measuring.Load()
	if r.ok() {
		s.tickRows.Add(int64(rows))
		if measuring {
			s.rows.Add(int64(rows))
			s.requests.Add(1)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !r.ok() {
		s.mu.tickErrors++
		if measuring {
			s.mu.errors[r.errorKey()]++
		}
		return
	}
	s.mu.tick.Record(lat)
	if measuring {
		s.mu.total.Record(lat)
	}
}

// tickStats are the progress line's figures since the previous tick.
type tickStats struct {
	rows     int64
	p50, p99 time.Duration
	errors   int64
}

// tick returns the figures since the previous call and starts anew.
func (s *stats) tick() tickStats {
	t := tickStats{rows: s.tickRows.Swap(0)}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.p50, t.p99, t.errors = s.mu.tick.Quantile(0.5), s.mu.tick.Quantile(0.99), s.mu.tickErrors
	s.mu.tick, s.mu.tickErrors = Histogram{}, 0
	return t
}

// totals returns the measured latency histogram and error counts.
func (s *stats) totals() (*Histogram, map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.mu.total
	return &h, maps.Clone(s.mu.errors)
}
