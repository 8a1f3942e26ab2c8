package presplit

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// span returns the multiples of step from from to to, both included, as
// offsets from t0.
func span(from, to, step time.Duration) []int64 {
	var out []int64
	for d := from; d <= to; d += step {
		out = append(out, at(d))
	}
	return out
}

func TestPlan(t *testing.T) {
	now := at(20 * time.Second) // t0 is a multiple of every width below
	def := DefaultConfig()      // horizon 10m, refill 5m: fill to now+15m, i.e. t0+15m20s
	tail := tailPart
	for _, tc := range []struct {
		name  string
		tail  metadata.Partition
		ahead int
		now   int64
		width time.Duration
		cfg   Config
		want  []int64
		skip  Skip
	}{
		{
			name: "tail begins in the past", tail: tail(i64(at(-5 * time.Minute))), width: time.Minute, cfg: def,
			want: span(time.Minute, 16*time.Minute, time.Minute),
		},
		{
			name: "open begin", tail: tail(nil), width: time.Minute, cfg: def,
			want: span(time.Minute, 16*time.Minute, time.Minute),
		},
		{
			name: "zero config takes defaults", tail: tail(nil), width: time.Minute, cfg: Config{},
			want: span(time.Minute, 16*time.Minute, time.Minute),
		},
		{
			name: "now on a boundary", tail: tail(nil), now: t0, width: time.Minute, cfg: def,
			want: span(0, 15*time.Minute, time.Minute),
		},
		{
			name: "tail begins ahead, inside the horizon", tail: tail(i64(at(5 * time.Minute))), ahead: 4, width: time.Minute, cfg: def,
			want: span(6*time.Minute, 16*time.Minute, time.Minute),
		},
		{
			name: "already pre-split", tail: tail(i64(at(11 * time.Minute))), ahead: 10, width: time.Minute, cfg: def,
			skip: SkipCovered,
		},
		{
			name: "tail exactly at the horizon", tail: tail(i64(now + int64(10*time.Minute))), ahead: 3, width: time.Minute, cfg: def,
			skip: SkipCovered,
		},
		{
			// The horizon is covered by 1 partition + the tail's first
			// child; MinAhead 3 needs more, and the fill goes to the refill
			// mark.
			name: "horizon covered but too few ahead", tail: tail(i64(at(12 * time.Minute))), ahead: 1, width: time.Minute, cfg: def,
			want: span(13*time.Minute, 16*time.Minute, time.Minute),
		},
		{
			name: "beyond the refill mark, too few ahead", tail: tail(i64(at(time.Hour))), ahead: 0, width: time.Minute, cfg: def,
			want: span(61*time.Minute, 63*time.Minute, time.Minute),
		},
		{
			// 5m50s would make a 10s first child: the first point moves on.
			name: "sliver first child skipped", tail: tail(i64(at(5*time.Minute + 50*time.Second))), ahead: 4, width: time.Minute, cfg: def,
			want: span(7*time.Minute, 16*time.Minute, time.Minute),
		},
		{
			name: "first child of exactly half a width kept", tail: tail(i64(at(5*time.Minute + 30*time.Second))), ahead: 4, width: time.Minute, cfg: def,
			want: span(6*time.Minute, 16*time.Minute, time.Minute),
		},
		{
			name: "sliver skipped when begin is just before now", tail: tail(i64(at(50 * time.Second))), now: at(55 * time.Second), width: time.Minute, cfg: def,
			want: span(2*time.Minute, 16*time.Minute, time.Minute),
		},
		{
			// The old partitions were 1m wide; the tail is cut at 2m from
			// its begin on.
			name: "rate change: new width for the new points", tail: tail(i64(at(5 * time.Minute))), ahead: 4, width: 2 * time.Minute, cfg: def,
			want: span(6*time.Minute, 16*time.Minute, 2*time.Minute),
		},
		{
			// MaxWidth with a 10m horizon: MinAhead still asks for three
			// bounded day partitions after the one holding now.
			name: "new table at MaxWidth", tail: tail(nil), width: 24 * time.Hour, cfg: def,
			want: []int64{dayStart + int64(day), dayStart + 2*int64(day), dayStart + 3*int64(day), dayStart + 4*int64(day)},
		},
		{
			name: "cap on points", tail: tail(nil), width: time.Second, cfg: Config{MaxPoints: 5},
			want: span(20*time.Second, 24*time.Second, time.Second), // now is a multiple of 1s
		},
		{
			name: "MinAhead larger than the horizon needs", tail: tail(nil), width: time.Minute, cfg: Config{MinAhead: 20},
			want: span(time.Minute, 21*time.Minute, time.Minute),
		},
		{
			name: "refill 1ns", tail: tail(nil), width: time.Minute, cfg: Config{Refill: 1},
			want: span(time.Minute, 11*time.Minute, time.Minute),
		},
		{name: "splitting", tail: splitting(tail(nil)), width: time.Minute, cfg: def, skip: SkipSplitting},
		{name: "joining", tail: joining(tail(nil)), width: time.Minute, cfg: def, skip: SkipJoining},
		{name: "no servers", tail: metadata.Partition{ID: testID("tail")}, width: time.Minute, cfg: def, skip: SkipNoServers},
		{name: "offline", tail: offline(tail(nil)), width: time.Minute, cfg: def, skip: SkipOffline},
		{name: "not a tail", tail: closed(tail(nil)), width: time.Minute, cfg: def, skip: SkipNotTail},
		{name: "zero width", tail: tail(nil), width: 0, cfg: def, skip: SkipBadWidth},
		{name: "end of the axis", tail: tail(nil), now: math.MaxInt64 - 10, width: time.Minute, cfg: def, skip: SkipAxisEnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.now
			if n == 0 {
				n = now
			}
			got, skip := plan(tc.tail, tc.ahead, n, tc.width, tc.cfg.withDefaults())
			if skip != tc.skip || !slices.Equal(got, tc.want) {
				t.Fatalf("got %s %v,\nwant %s %v", skip, rel(got), tc.skip, rel(tc.want))
			}
			pts, ok := Plan(tc.tail, tc.ahead, n, tc.width, tc.cfg)
			if ok != (tc.skip == SkipNone) || !slices.Equal(pts, got) {
				t.Fatalf("Plan = %v %v, plan = %v %s", pts, ok, got, skip)
			}
			if ok {
				checkPoints(t, tc.tail, pts, tc.width, tc.cfg)
			}
		})
	}
}

// rel prints points as offsets from t0, for messages.
func rel(points []int64) []time.Duration {
	out := make([]time.Duration, len(points))
	for i, p := range points {
		out[i] = time.Duration(p - t0)
	}
	return out
}

func splitting(p metadata.Partition) metadata.Partition {
	p.Split = &metadata.Split{Points: []int64{at(time.Minute)}}
	return p
}

func joining(p metadata.Partition) metadata.Partition {
	p.Joining = []metadata.Placement{{ServerID: "s9", PlacementID: testID("j")}}
	return p
}

func offline(p metadata.Partition) metadata.Partition {
	p.Offline = true
	return p
}

func closed(p metadata.Partition) metadata.Partition {
	p.End = i64(at(time.Hour))
	return p
}

// TestPlanNearAxisEnd checks that points stop before int64 overflows and
// stay valid.
func TestPlanNearAxisEnd(t *testing.T) {
	w := time.Minute
	last := math.MaxInt64 / int64(w) * int64(w) // the last multiple that fits
	now := last - 3*int64(w)
	got, ok := Plan(tailPart(nil), 0, now, w, DefaultConfig())
	want := []int64{last - 3*int64(w), last - 2*int64(w), last - int64(w), last}
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("got %v %v, want %v", got, ok, want)
	}
}

func TestSkipString(t *testing.T) {
	seen := map[string]bool{}
	for s := SkipNone; s <= SkipAxisEnd; s++ {
		name := s.String()
		if name == "unknown" || seen[name] {
			t.Errorf("Skip(%d).String() = %q", s, name)
		}
		seen[name] = true
	}
	if got := Skip(200).String(); got != "unknown" {
		t.Errorf("Skip(200) = %q", got)
	}
}
