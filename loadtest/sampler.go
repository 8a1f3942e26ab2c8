package loadtest

import (
	"context"
	"sync"
	"time"
)

// sample is one scrape of one server's /metrics.
type sample struct {
	at       time.Time
	ok       bool    // the scrape succeeded
	hasWrite bool    // the server exports MetricStoreWriteBytes
	write    float64 // MetricStoreWriteBytes
	queue    float64 // MetricSmearQueueRows (0 when absent)
	overdue  float64 // MetricSmearOverdueRows (0 when absent)
	late     float64 // MetricSmearLateInFlightRows (0 when absent)
	closed   float64 // MetricSmearAdmissionClosed (0 when absent)
	retried  float64 // MetricSmearRetriedRows (0 when absent)
	lag      float64 // MetricReplicationMaxLag (0 when absent)
	lead     float64 // MetricSmearDueLead (0 when absent)
	capacity float64 // MetricSmearCapacity (0 when absent)
	accept   float64 // MetricSmearAcceptRate (0 when absent)
	forward  float64 // MetricSmearForwardRate (0 when absent)
	direct   float64 // MetricSmearDirectRate (0 when absent)
	refused  float64 // MetricSmearRefusals (0 when absent)
	sealed   float64 // MetricSealRows (0 when absent)
	splits   float64 // MetricSplitsStarted (0 when absent)
}

// sampler scrapes every server's /metrics each interval and keeps, per
// server, the time series of stored write bytes/s and smear queue rows.
type sampler struct {
	cl      *client
	servers []Server
	every   time.Duration
	origin  time.Time // time zero of the points (the measurement start)
	mu      struct {
		sync.Mutex
		last   []sample  // guarded by mu: the latest successful scrape per server
		points [][]Point // guarded by mu: per server
	}
}

func newSampler(cl *client, servers []Server, every time.Duration, origin time.Time) *sampler {
	s := &sampler{cl: cl, servers: servers, every: every, origin: origin}
	s.mu.last = make([]sample, len(servers))
	s.mu.points = make([][]Point, len(servers))
	return s
}

// scrapeAll scrapes every server at once.
func (s *sampler) scrapeAll(ctx context.Context) []sample {
	out := make([]sample, len(s.servers))
	var wg sync.WaitGroup
	for i, srv := range s.servers {
		wg.Go(func() {
			m, err := s.cl.scrape(ctx, srv.URL)
			w, hasWrite := m[MetricStoreWriteBytes]
			out[i] = sample{
				at: time.Now(), ok: err == nil, hasWrite: hasWrite, write: w, queue: m[MetricSmearQueueRows],
				overdue: m[MetricSmearOverdueRows], late: m[MetricSmearLateInFlightRows], closed: m[MetricSmearAdmissionClosed],
				retried: m[MetricSmearRetriedRows], lag: m[MetricReplicationMaxLag], lead: m[MetricSmearDueLead],
				capacity: m[MetricSmearCapacity], accept: m[MetricSmearAcceptRate], forward: m[MetricSmearForwardRate],
				direct: m[MetricSmearDirectRate], refused: m[MetricSmearRefusals], sealed: m[MetricSealRows], splits: m[MetricSplitsStarted],
			}
		})
	}
	wg.Wait()
	return out
}

// run scrapes every interval until ctx ends (the first scrape one
// interval after the call: the caller takes the baseline).
func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.add(s.scrapeAll(ctx))
		}
	}
}

// add appends the points between the previous scrape and cur.
func (s *sampler) add(cur []sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range cur {
		if !c.ok {
			continue
		}
		prev := s.mu.last[i]
		if prev.ok && prev.hasWrite && c.hasWrite {
			s.mu.points[i] = append(s.mu.points[i], Point{
				T:                  c.at.Sub(s.origin).Seconds(),
				WriteBytesPerSec:   counterRate(prev, c, func(x sample) float64 { return x.write }),
				QueueRows:          c.queue,
				OverdueRows:        c.overdue,
				LateInFlightRows:   c.late,
				AdmissionClosed:    c.closed > 0,
				RetriedRowsPerSec:  counterRate(prev, c, func(x sample) float64 { return x.retried }),
				ReplicationLagSeqs: c.lag,
				DueLeadSeconds:     c.lead,
				CapacityRowsPerSec: c.capacity,
				AcceptRowsPerSec:   c.accept,
				ForwardRowsPerSec:  c.forward,
				DirectRowsPerSec:   c.direct,
				RefusalsPerSec:     counterRate(prev, c, func(x sample) float64 { return x.refused }),
				SealedRowsPerSec:   counterRate(prev, c, func(x sample) float64 { return x.sealed }),
				SplitsStarted:      counterDelta(prev.splits, c.splits),
			})
		}
		s.mu.last[i] = c
	}
}

// counterRate is the rate from a to b of the counter that value reads; a
// restart (the counter went down) counts from zero.
func counterRate(a, b sample, value func(sample) float64) float64 {
	dt := b.at.Sub(a.at).Seconds()
	if dt <= 0 {
		return 0
	}
	return counterDelta(value(a), value(b)) / dt
}

// counterDelta is b-a, or b when the counter was reset in between.
func counterDelta(a, b float64) float64 {
	if b < a {
		return b
	}
	return b - a
}

// latest returns the latest successful scrape of every server.
func (s *sampler) latest() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.mu.last...)
}

// series returns the time series of every server.
func (s *sampler) series() []ServerSeries {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ServerSeries, len(s.servers))
	for i, srv := range s.servers {
		out[i] = ServerSeries{ID: srv.ID, Points: append([]Point(nil), s.mu.points[i]...)}
	}
	return out
}

// storedShares computes the stored write figures between two scrapes of
// every server; Available is false unless every server exported the
// counter both times.
func storedShares(servers []Server, base, end []sample) StoredWrites {
	sw := StoredWrites{FairShare: 1 / float64(len(servers)), Available: true}
	deltas := make([]float64, len(servers))
	var total float64
	for i := range servers {
		if !base[i].hasWrite || !end[i].hasWrite {
			sw.Available = false
			continue
		}
		deltas[i] = counterDelta(base[i].write, end[i].write)
		total += deltas[i]
	}
	for i, srv := range servers {
		ss := ServerShare{ID: srv.ID, URL: srv.URL}
		if sw.Available {
			ss.Bytes = int64(deltas[i])
			if total > 0 {
				ss.Share = deltas[i] / total
			}
			if ss.Share > sw.BusiestShare || sw.BusiestID == "" {
				sw.BusiestID, sw.BusiestShare = srv.ID, ss.Share
			}
		}
		sw.Servers = append(sw.Servers, ss)
	}
	if !sw.Available {
		sw.BusiestID = ""
		return sw
	}
	sw.TotalBytes = int64(total)
	sw.BusiestOverFair = sw.BusiestShare / sw.FairShare
	if dt := end[0].at.Sub(base[0].at).Seconds(); dt > 0 {
		sw.BytesPerSec = total / dt
	}
	return sw
}
