package presplit

import (
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// rateSeg is a constant write rate from an instant on.
type rateSeg struct {
	from int64
	rate float64 // bytes per second of the time axis
}

// sim is a table written at a piecewise constant rate at the present (no
// late rows), planned every tick and with every plan applied at once. It
// does not simulate size splits.
type sim struct {
	t     *testing.T
	cfg   Config
	f     *metadata.File
	segs  []rateSeg // ascending from; writes begin at segs[0].from
	now   int64
	plans []Decision
}

func newSim(t *testing.T, cfg Config, segs ...rateSeg) *sim {
	return &sim{t: t, cfg: cfg.withDefaults(), f: fileWithBounds(t), segs: segs, now: segs[0].from}
}

// written returns the bytes written in [lo, hi) up to now.
func (s *sim) written(lo, hi int64) float64 {
	hi = min(hi, s.now)
	var total float64
	for i, seg := range s.segs {
		end := int64(1<<62 - 1)
		if i+1 < len(s.segs) {
			end = s.segs[i+1].from
		}
		a, b := max(lo, seg.from), min(hi, end)
		if b > a {
			total += seg.rate * time.Duration(b-a).Seconds()
		}
	}
	return total
}

func (s *sim) stats() []PartitionStats {
	out := make([]PartitionStats, len(s.f.Partitions))
	for i, p := range s.f.Partitions {
		lo, hi := int64(-1<<62), int64(1<<62)
		if p.Begin != nil {
			lo = *p.Begin
		}
		if p.End != nil {
			hi = *p.End
		}
		out[i] = PartitionStats{ID: p.ID, Begin: p.Begin, End: p.End, Bytes: uint64(s.written(lo, hi))}
	}
	return out
}

// run advances time by tick until the end, planning and applying each tick
// and checking that the horizon stays covered.
func (s *sim) run(tick time.Duration, until int64) {
	for ; s.now < until; s.now += int64(tick) {
		d, ok, err := PlanTable(s.f, s.stats(), gb, s.now, s.cfg)
		if err != nil {
			s.t.Fatal(err)
		}
		if ok {
			checkPoints(s.t, s.f.Partitions[len(s.f.Partitions)-1], d.Points, d.Width, s.cfg)
			s.f = applyDecision(s.t, s.f, d)
			s.plans = append(s.plans, d)
		}
		ahead, begin := partitionsAhead(s.f, s.now)
		if begin == nil || *begin < s.now+int64(s.cfg.Horizon) || ahead < s.cfg.MinAhead {
			s.t.Fatalf("at %s: tail %v, %d ahead: horizon not covered", time.Duration(s.now-t0), begin, ahead)
		}
	}
}

// widthsFrom returns the widths of the bounded partitions beginning in
// [from, to).
func (s *sim) widthsFrom(from, to int64) map[time.Duration]int {
	out := map[time.Duration]int{}
	for _, p := range s.f.Partitions {
		if p.Begin != nil && p.End != nil && *p.Begin >= from && *p.Begin < to {
			out[time.Duration(*p.End-*p.Begin)]++
		}
	}
	return out
}

// TestSimSteady: a new table at 1 MiB/s starts at UnknownWidth (1h),
// learns the rate once its first bounded partition [t0+1h, t0+2h) closes,
// and from then on plans 15m partitions (1 GiB / 1 MiB/s = 1024s, nice
// 15m), batched by the refill hysteresis.
func TestSimSteady(t *testing.T) {
	s := newSim(t, Config{}, rateSeg{from: t0, rate: mb})
	s.run(time.Minute, at(2*24*time.Hour))
	first, last := s.plans[0], s.plans[len(s.plans)-1]
	if first.RateKnown || first.Width != time.Hour {
		t.Fatalf("first plan %+v", first)
	}
	if !last.RateKnown || last.Rate != mb || last.Width != 15*time.Minute {
		t.Fatalf("last plan %+v", last)
	}
	if w := s.widthsFrom(at(4*time.Hour), s.now); len(w) != 1 || w[15*time.Minute] == 0 {
		t.Fatalf("widths after the rate was learnt: %v", w)
	}
	// Blind: [t0, t0+3h) planned at creation, [t0+3h, t0+4h) as soon as
	// now passed t0 (fewer than MinAhead ahead), before the rate was known.
	if w := s.widthsFrom(t0, at(4*time.Hour)); len(w) != 1 || w[time.Hour] != 4 {
		t.Fatalf("blind widths: %v, want four 1h partitions", w)
	}
	// One plan per refill (5m) of time, not one per tick.
	if n, most := len(s.plans), 2*24*12+5; n > most {
		t.Fatalf("%d plans, want at most %d", n, most)
	}
}

// TestSimBursty: a steady 1 MiB/s table takes a 10-minute burst at 64
// MiB/s; the width never collapses (the burst is under half the window).
func TestSimBursty(t *testing.T) {
	s := newSim(t, Config{},
		rateSeg{from: t0 - int64(day), rate: mb},
		rateSeg{from: t0, rate: 64 * mb},
		rateSeg{from: at(10 * time.Minute), rate: mb})
	s.run(time.Minute, t0) // warm up: widths settle at 15m
	n := len(s.plans)
	s.run(time.Minute, at(6*time.Hour))
	seen := false
	for _, d := range s.plans[n:] {
		if d.Width != 15*time.Minute {
			t.Fatalf("plan at width %s (rate %g) during or after the burst", d.Width, d.Rate)
		}
	}
	for _, st := range s.stats() {
		if st.End != nil && *st.End <= at(time.Hour) && st.Bytes > 20*gb {
			seen = true // the burst sat in a closed partition of the window
		}
	}
	if !seen || len(s.plans) == n {
		t.Fatal("the burst never reached the estimator")
	}
}

// TestSimRateChange: the rate rises from 1 to 8 MiB/s; within a window and
// a refill the plans use the new width (128s, nice 2m).
func TestSimRateChange(t *testing.T) {
	s := newSim(t, Config{}, rateSeg{from: t0 - int64(day), rate: mb}, rateSeg{from: t0, rate: 8 * mb})
	s.run(time.Minute, at(2*time.Hour))
	last := s.plans[len(s.plans)-1]
	if last.Width != 2*time.Minute || last.Rate != 8*mb {
		t.Fatalf("last plan %+v", last)
	}
	if w := s.widthsFrom(at(time.Hour+30*time.Minute), s.now+int64(time.Hour)); len(w) != 1 || w[2*time.Minute] == 0 {
		t.Fatalf("widths after the change: %v", w)
	}
}

// TestSimIdle: a table that never receives rows gets a few 1h partitions
// while its rate is unknown, one transition partition (between half and
// one and a half days, up to the next day boundary), then only 1-day
// partitions.
func TestSimIdle(t *testing.T) {
	s := newSim(t, Config{}, rateSeg{from: t0, rate: 0})
	s.run(10*time.Minute, at(10*24*time.Hour))
	other := 0
	for w, n := range s.widthsFrom(t0, s.now+4*int64(day)) {
		switch {
		case w == day:
		case w == time.Hour && n <= 4:
		case w >= day/2 && w < 3*day/2 && n == 1:
			other++
		default:
			t.Fatalf("idle table has %d partitions of %s", n, w)
		}
	}
	if other > 1 {
		t.Fatalf("%d transition partitions", other)
	}
	if last := s.plans[len(s.plans)-1]; !last.RateKnown || last.Rate != 0 {
		t.Fatalf("last plan %+v", last)
	}
}
