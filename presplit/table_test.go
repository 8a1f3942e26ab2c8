package presplit

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// table builds a file from closed partitions (any order, contiguous) and an
// open tail after them, and returns it with stats naming its partitions.
// The first partition (open begin) ends at the first closed begin.
func table(t *testing.T, closed []PartitionStats) (*metadata.File, []PartitionStats) {
	t.Helper()
	closed = slices.Clone(closed)
	slices.SortFunc(closed, func(a, b PartitionStats) int { return cmp.Compare(*a.Begin, *b.Begin) })
	bounds := make([]int64, 0, len(closed)+1)
	for _, s := range closed {
		bounds = append(bounds, *s.Begin)
	}
	bounds = append(bounds, *closed[len(closed)-1].End)
	f := fileWithBounds(t, bounds...)
	for i := range closed {
		closed[i].ID = f.Partitions[i+1].ID
	}
	return f, closed
}

// checkApplied checks that after applying d at now the horizon is covered,
// enough partitions lie ahead, and planning again does nothing.
func checkApplied(t *testing.T, f *metadata.File, stats []PartitionStats, now int64, cfg Config) {
	t.Helper()
	cfg = cfg.withDefaults()
	ahead, begin := partitionsAhead(f, now)
	if begin == nil || *begin < now+int64(cfg.Horizon) {
		t.Fatalf("tail begins at %v, before now+horizon", begin)
	}
	if ahead < cfg.MinAhead {
		t.Fatalf("%d partitions ahead, want >= %d", ahead, cfg.MinAhead)
	}
	d, ok, err := PlanTable(f, stats, gb, now, cfg)
	if err != nil || ok || d.Skip != SkipCovered {
		t.Fatalf("re-plan: %+v %v %v, want SkipCovered", d, ok, err)
	}
}

func TestPlanTable(t *testing.T) {
	now := at(20 * time.Second)
	cfg := DefaultConfig()
	steady := steadyStats(t0, 15*time.Minute, 4, mb) // 1 GiB at 1 MiB/s: 1024s, nice 15m
	for _, tc := range []struct {
		name      string
		closed    []PartitionStats // nil: a new table of one partition
		want      []int64
		width     time.Duration
		rate      float64
		rateKnown bool
	}{
		{
			name: "steady", closed: steady, width: 15 * time.Minute, rate: mb, rateKnown: true,
			want: span(15*time.Minute, time.Hour, 15*time.Minute),
		},
		{
			// A 15m partition size-split into 30 children of 1 GiB each
			// covers a quarter of the window: the median ignores it. (The
			// time-weighted mean would be 9 MiB/s and the width 1m.)
			name:   "bursty",
			closed: burst(steady, 1, 2, 30*time.Second, gb),
			width:  15 * time.Minute, rate: mb, rateKnown: true,
			want: span(15*time.Minute, time.Hour, 15*time.Minute),
		},
		{
			// Rate unknown: UnknownWidth (1h), still MinAhead bounded
			// partitions ahead.
			name: "new table", width: time.Hour,
			want: span(time.Hour, 4*time.Hour, time.Hour),
		},
		{
			name: "idle", closed: steadyStats(t0, time.Hour, 3, 0), width: 24 * time.Hour, rateKnown: true,
			want: []int64{dayStart + int64(day), dayStart + 2*int64(day), dayStart + 3*int64(day), dayStart + 4*int64(day)},
		},
		{
			name: "fast table clamps to MinWidth", closed: steadyStats(t0, time.Second, 3600, 2*gb),
			width: time.Second, rate: 2 * gb, rateKnown: true,
			want: span(20*time.Second, 15*time.Minute+20*time.Second, time.Second),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *metadata.File
			var stats []PartitionStats
			if tc.closed == nil {
				f = fileWithBounds(t)
				stats = []PartitionStats{{ID: f.Partitions[0].ID, Bytes: 123 * mb}}
			} else {
				f, stats = table(t, tc.closed)
			}
			d, ok, err := PlanTable(f, stats, gb, now, cfg)
			if err != nil || !ok {
				t.Fatalf("PlanTable: %+v %v %v", d, ok, err)
			}
			if d.Width != tc.width || d.RateKnown != tc.rateKnown || math.Abs(d.Rate-tc.rate) > 1e-6*max(1, tc.rate) {
				t.Fatalf("width %s rate %g known %v, want %s %g %v", d.Width, d.Rate, d.RateKnown, tc.width, tc.rate, tc.rateKnown)
			}
			if !slices.Equal(d.Points, tc.want) || d.Skip != SkipNone || d.PartitionID != f.Partitions[len(f.Partitions)-1].ID {
				t.Fatalf("got %+v,\nwant points %v", d, rel(tc.want))
			}
			checkPoints(t, f.Partitions[len(f.Partitions)-1], d.Points, d.Width, cfg)
			checkApplied(t, applyDecision(t, f, d), stats, now, cfg)
		})
	}
}

func TestPlanTableTailSplitting(t *testing.T) {
	f, stats := table(t, steadyStats(t0, 15*time.Minute, 4, mb))
	d, _, _ := PlanTable(f, stats, gb, at(20*time.Second), Config{})
	children := make([]metadata.SplitChild, d.Children())
	for i := range children {
		children[i] = metadata.SplitChild{ID: testID(fmt.Sprint("c", i)), Servers: twoServers(fmt.Sprint("c", i))}
	}
	body := d.SplitBegin(children)
	begun, err := metadata.Apply(f, txnID(2), metadata.Op{Type: metadata.OpSplitBegin, SplitBegin: &body})
	if err != nil {
		t.Fatal(err)
	}
	d, ok, err := PlanTable(begun, stats, gb, at(20*time.Second), Config{})
	if err != nil || ok || d.Skip != SkipSplitting || d.Points != nil {
		t.Fatalf("got %+v %v %v, want SkipSplitting", d, ok, err)
	}
}

// TestPlanTableRateChange: a table pre-split at 1m sees its rate halve for
// more than half of the window; the partitions ahead keep their 1m width
// and the tail is cut at the new width, 2m.
func TestPlanTableRateChange(t *testing.T) {
	now := at(20 * time.Second)
	// 40 minutes at 16 MiB/s (1 GiB per 64s: 1m), then 40 at 8 MiB/s
	// (128s: 2m) up to t0, and 1m partitions ahead up to t0+5m.
	old := steadyStats(at(-40*time.Minute), time.Minute, 40, 16*mb)
	recent := steadyStats(t0, time.Minute, 40, 8*mb)
	ahead := steadyStats(at(5*time.Minute), time.Minute, 5, 0)
	f, stats := table(t, slices.Concat(old, recent, ahead))
	d, ok, err := PlanTable(f, stats, gb, now, Config{})
	if err != nil || !ok {
		t.Fatalf("%+v %v %v", d, ok, err)
	}
	if d.Width != 2*time.Minute || d.Rate != 8*mb || d.Ahead != 4 {
		t.Fatalf("width %s rate %g ahead %d, want 2m 8MiB/s 4", d.Width, d.Rate, d.Ahead)
	}
	if want := span(6*time.Minute, 16*time.Minute, 2*time.Minute); !slices.Equal(d.Points, want) {
		t.Fatalf("points %v, want %v", rel(d.Points), rel(want))
	}
	g := applyDecision(t, f, d)
	for _, p := range g.Partitions {
		if p.Begin != nil && p.End != nil && *p.Begin >= now && *p.End <= at(5*time.Minute) && *p.End-*p.Begin != int64(time.Minute) {
			t.Fatalf("existing future partition re-cut: [%d, %d)", *p.Begin, *p.End)
		}
	}
	checkApplied(t, g, stats, now, Config{})
}

// TestPlanTableUnknownWidthClamped: UnknownWidth outside [MinWidth,
// MaxWidth] is clamped.
func TestPlanTableUnknownWidthClamped(t *testing.T) {
	f := fileWithBounds(t)
	for _, tc := range []struct {
		cfg  Config
		want time.Duration
	}{
		{Config{MaxWidth: 30 * time.Minute}, 30 * time.Minute},
		{Config{MinWidth: 2 * time.Hour}, 2 * time.Hour},
		{Config{UnknownWidth: 24 * time.Hour}, 24 * time.Hour},
	} {
		d, ok, err := PlanTable(f, nil, gb, t0, tc.cfg)
		if err != nil || !ok || d.Width != tc.want || d.RateKnown {
			t.Errorf("%+v: got %+v %v %v, want width %s", tc.cfg, d, ok, err, tc.want)
		}
	}
}

func TestPlanTableErrors(t *testing.T) {
	good := fileWithBounds(t, t0)
	closedTail := good.Clone()
	closedTail.Partitions[1].End = i64(at(time.Hour))
	for _, tc := range []struct {
		name   string
		f      *metadata.File
		target uint64
		cfg    Config
		err    error
	}{
		{"nil file", nil, gb, Config{}, ErrInvalidInput},
		{"no partitions", &metadata.File{Table: "cpu"}, gb, Config{}, ErrInvalidInput},
		{"closed tail", closedTail, gb, Config{}, ErrInvalidInput},
		{"zero target", good, 0, Config{}, ErrInvalidInput},
		{"bad config", good, gb, Config{MinWidth: time.Hour, MaxWidth: time.Minute}, ErrInvalidConfig},
		{"negative unknown width", good, gb, Config{UnknownWidth: -1}, ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok, err := PlanTable(tc.f, nil, tc.target, t0, tc.cfg)
			if !errors.Is(err, tc.err) || ok || d.Points != nil {
				t.Fatalf("got %+v %v %v, want %v", d, ok, err, tc.err)
			}
		})
	}
}

func TestDecisionSplitBegin(t *testing.T) {
	d := Decision{PartitionID: testID("tail"), Points: []int64{1, 2}}
	children := []metadata.SplitChild{{ID: testID("a")}, {ID: testID("b")}, {ID: testID("c")}}
	op := d.SplitBegin(children)
	if op.PartitionID != d.PartitionID || !op.Presplit || !slices.Equal(op.Points, d.Points) || len(op.Children) != 3 {
		t.Fatalf("got %+v", op)
	}
	op.Points[0] = 99
	if d.Points[0] != 1 {
		t.Fatal("SplitBegin shares the decision's points")
	}
	if n := d.Children(); n != 3 {
		t.Fatalf("Children() = %d", n)
	}
	if n := (Decision{}).Children(); n != 0 {
		t.Fatalf("empty Children() = %d", n)
	}
}
