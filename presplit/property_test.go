package presplit

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// seed returns the seed of a randomized test: $PRESPLIT_SEED when set, else
// the clock. It is logged so a failure can be replayed.
func seed(t *testing.T) uint64 {
	t.Helper()
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("PRESPLIT_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (replay with PRESPLIT_SEED=%d)", s, s)
	return s
}

// randDuration returns a duration between lo and hi, log-uniform.
func randDuration(r *rand.Rand, lo, hi time.Duration) time.Duration {
	l, h := math.Log(float64(lo)), math.Log(float64(hi))
	return time.Duration(math.Exp(l + r.Float64()*(h-l)))
}

type planInput struct {
	begin *int64
	ahead int
	now   int64
	width time.Duration
	cfg   Config
}

func randPlanInput(r *rand.Rand) planInput {
	in := planInput{ahead: r.IntN(6)}
	in.cfg = Config{
		Horizon:   randDuration(r, time.Millisecond, 2*time.Hour),
		Refill:    randDuration(r, time.Nanosecond, time.Hour),
		MinAhead:  1 + r.IntN(5),
		MaxPoints: 1 + r.IntN(1500),
	}
	if r.IntN(2) == 0 {
		in.width = niceWidths[r.IntN(len(niceWidths))]
	} else {
		in.width = randDuration(r, time.Nanosecond, 3*day)
	}
	switch r.IntN(10) {
	case 0:
		in.now = math.MaxInt64 - r.Int64N(int64(10*day))
	case 1:
		in.now = -r.Int64N(math.MaxInt64 / 2)
	default:
		in.now = t0 + r.Int64N(int64(365*day))
	}
	if r.IntN(4) > 0 {
		off := r.Int64N(int64(3*in.width)+int64(3*in.cfg.Horizon)) - int64(3*in.width)
		b := in.now + off
		if off > 0 && b < in.now { // wrapped
			b = math.MaxInt64 - 1
		}
		if r.IntN(2) == 0 {
			b = b / int64(in.width) * int64(in.width) // aligned, as a previous plan leaves it
		}
		in.begin = &b
	}
	return in
}

// TestPlanProperties checks Plan's invariants on random inputs: points
// strictly increasing, strictly inside the tail, aligned, bounded in count,
// no sliver first child, a complete plan covers the horizon and MinAhead,
// re-planning after it does nothing, and SPLIT_BEGIN accepts it.
func TestPlanProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 0))
	outcomes := map[string]int{}
	for i := range 3000 {
		in := randPlanInput(r)
		tail := tailPart(in.begin)
		pts, skip := plan(tail, in.ahead, in.now, in.width, in.cfg.withDefaults())
		if t.Failed() {
			return
		}
		checkPlanProperties(t, i, in, tail, pts, skip)
		outcome := skip.String()
		if skip == SkipNone && len(pts) == in.cfg.withDefaults().MaxPoints {
			outcome = "capped"
		}
		outcomes[outcome]++
	}
	t.Logf("outcomes %v", outcomes)
	for _, o := range []string{"none", "covered", "capped"} {
		if outcomes[o] < 20 {
			t.Errorf("only %d %q outcomes in %v: the generator misses a case", outcomes[o], o, outcomes)
		}
	}
}

func checkPlanProperties(t *testing.T, i int, in planInput, tail metadata.Partition, pts []int64, skip Skip) {
	t.Helper()
	cfg, w := in.cfg.withDefaults(), int64(in.width)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("case %d %+v begin %v: points %v: "+format, append([]any{i, in, in.begin, pts}, args...)...)
	}
	covered := in.begin != nil && *in.begin >= addSat(in.now, int64(cfg.Horizon)) && in.ahead >= cfg.MinAhead
	switch skip {
	case SkipCovered:
		if !covered {
			fail("skipped as covered")
		}
		return
	case SkipAxisEnd:
		if in.now < math.MaxInt64-2*w && (in.begin == nil || *in.begin < math.MaxInt64-2*w) {
			fail("axis end far from the end")
		}
		return
	case SkipNone:
	default:
		fail("unexpected skip %s", skip)
		return
	}
	if covered {
		fail("planned although covered")
	}
	checkPoints(t, tail, pts, in.width, cfg)
	if p1 := pts[0]; p1 < in.now || (in.begin != nil && p1 < addSat(*in.begin, w/2)) {
		fail("first point %d before now or a sliver after begin", p1)
	}
	future := in.ahead + len(pts) - 1
	if in.begin != nil && *in.begin >= in.now {
		future++
	}
	last := pts[len(pts)-1]
	complete := last >= addSat(addSat(in.now, int64(cfg.Horizon)), int64(cfg.Refill)) && future >= cfg.MinAhead
	if !complete && len(pts) < cfg.MaxPoints && canAdd(last, w) {
		fail("incomplete plan stopped early")
	}
	if complete && len(pts) > 1 {
		// The plan without its last point was not complete: no extra points.
		prev := pts[len(pts)-2]
		if prev >= addSat(addSat(in.now, int64(cfg.Horizon)), int64(cfg.Refill)) && future-1 >= cfg.MinAhead {
			fail("plan went past completeness")
		}
	}
	if complete {
		// Re-planning on the result at the same now does nothing.
		after := tailPart(&last)
		if _, skip := plan(after, future, in.now, in.width, cfg); skip != SkipCovered {
			fail("re-plan gave %s", skip)
		}
	}
	if len(pts) <= 64 {
		checkApplies(t, in.begin, pts)
	}
}

// checkApplies checks that metadata.Apply accepts a pre-split of a tail
// beginning at begin at points.
func checkApplies(t *testing.T, begin *int64, pts []int64) {
	t.Helper()
	var f *metadata.File
	if begin == nil {
		f = fileWithBounds(t)
	} else {
		f = fileWithBounds(t, *begin)
	}
	tail := f.Partitions[len(f.Partitions)-1]
	d := Decision{PartitionID: tail.ID, Points: pts}
	children := make([]metadata.SplitChild, d.Children())
	for i := range children {
		name := "rand/" + strconv.Itoa(i)
		children[i] = metadata.SplitChild{ID: testID(name), Servers: twoServers(name)}
	}
	body := d.SplitBegin(children)
	if _, err := metadata.Apply(f, txnID(2), metadata.Op{Type: metadata.OpSplitBegin, SplitBegin: &body}); err != nil {
		t.Errorf("begin %v points %v: %v", begin, pts, err)
	}
}

// TestEstimateRateProperties: on random stats the estimate is finite, not
// negative, one of the closed partitions' rates (within the range of all of
// them), and ok exactly when a closed partition exists.
func TestEstimateRateProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 1))
	for i := range 2000 {
		now := t0 + r.Int64N(int64(day))
		var stats []PartitionStats
		lo, hi, closed := math.Inf(1), math.Inf(-1), false
		for range r.IntN(40) {
			b := now - r.Int64N(int64(2*day))
			e := b + int64(randDuration(r, time.Nanosecond, 6*time.Hour))
			s := PartitionStats{Begin: &b, End: &e, Bytes: uint64(r.Int64N(1 << 40))}
			switch r.IntN(8) {
			case 0:
				s.Begin = nil
			case 1:
				s.End = nil
			}
			stats = append(stats, s)
			if s.Begin != nil && s.End != nil && b < e && e <= now {
				closed = true
				rate := float64(s.Bytes) / time.Duration(e-b).Seconds()
				lo, hi = min(lo, rate), max(hi, rate)
			}
		}
		got, ok := EstimateRate(stats, now)
		switch {
		case ok != closed:
			t.Fatalf("case %d: ok %v, closed %v", i, ok, closed)
		case math.IsNaN(got) || math.IsInf(got, 0) || got < 0:
			t.Fatalf("case %d: rate %g", i, got)
		case ok && (got < lo*(1-1e-12) || got > hi*(1+1e-12)):
			t.Fatalf("case %d: rate %g outside [%g, %g]", i, got, lo, hi)
		case !ok && got != 0:
			t.Fatalf("case %d: unknown rate %g", i, got)
		}
	}
}

// TestWidthProperties: Width stays in [MinWidth, MaxWidth] and does not
// grow when the rate grows.
func TestWidthProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 2))
	for i := range 5000 {
		minW := randDuration(r, time.Nanosecond, time.Hour)
		cfg := Config{MinWidth: minW, MaxWidth: minW + randDuration(r, time.Nanosecond, 10*day)}
		target := uint64(r.Int64N(1 << 42))
		r1 := math.Exp(r.Float64()*60 - 30)
		r2 := r1 * (1 + r.Float64()*10)
		w1, w2 := Width(r1, target, cfg), Width(r2, target, cfg)
		if w1 < cfg.MinWidth || w1 > cfg.MaxWidth || w2 < cfg.MinWidth || w2 > cfg.MaxWidth {
			t.Fatalf("case %d %+v: widths %s %s out of bounds", i, cfg, w1, w2)
		}
		if w2 > w1 {
			t.Fatalf("case %d %+v target %d: rate %g -> %s but higher rate %g -> %s", i, cfg, target, r1, w1, r2, w2)
		}
	}
}
