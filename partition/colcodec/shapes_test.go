package colcodec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/tsdb/tsdb/internal/harnessdata"
	"github.com/tsdb/tsdb/model"
)

// The value shapes of the tests and benchmarks. Each generator is
// deterministic for a given rng.

type int64Shape struct {
	name string
	gen  func(r *rand.Rand, n int) []int64
}

// harnessStep is the spacing of one series' points in the peer harness:
// 2,000 points per series over 10 minutes.
const harnessStep = int64(300 * 1e6)

var t0 = int64(1_790_000_000) * 1e9 // a 2026 time in ns

var timestampShapes = []int64Shape{
	{"harness", func(r *rand.Rand, n int) []int64 { return regular(n, t0, harnessStep) }},
	{"regular10s", func(r *rand.Rand, n int) []int64 { return regular(n, t0, 10e9) }},
	{"constant", func(r *rand.Rand, n int) []int64 { return regular(n, t0, 0) }},
	{"jitter-ns", func(r *rand.Rand, n int) []int64 {
		v := regular(n, t0, 10e9)
		for i := range v {
			v[i] += r.Int64N(10e6) - 5e6 // ±5 ms in ns
		}
		return v
	}},
	{"jitter-ms", func(r *rand.Rand, n int) []int64 {
		v := regular(n, t0, 10e9)
		for i := range v {
			v[i] += (r.Int64N(10) - 5) * 1e6 // ±5 ms, ms precision
		}
		return v
	}},
	{"gaps", func(r *rand.Rand, n int) []int64 {
		v := make([]int64, n)
		t := t0
		for i := range v {
			t += harnessStep
			if r.IntN(100) == 0 {
				t += r.Int64N(3600e9) // a gap of up to an hour
			}
			v[i] = t
		}
		return v
	}},
	{"random", func(r *rand.Rand, n int) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(r.Uint64())
		}
		return v
	}},
	{"extremes", func(r *rand.Rand, n int) []int64 {
		ext := []int64{math.MinInt64, math.MaxInt64, 0, -1, 1, math.MinInt64 + 1, math.MaxInt64 - 1}
		v := make([]int64, n)
		for i := range v {
			v[i] = ext[r.IntN(len(ext))]
		}
		return v
	}},
	{"overflow-deltas", func(r *rand.Rand, n int) []int64 {
		v := make([]int64, n)
		for i := range v {
			if i%2 == 0 {
				v[i] = math.MinInt64 + r.Int64N(1000)*1e6
			} else {
				v[i] = math.MaxInt64 - r.Int64N(1000)*1e6
			}
		}
		return v
	}},
}

var intShapes = append([]int64Shape{
	{"counter", func(r *rand.Rand, n int) []int64 {
		v := make([]int64, n)
		c := int64(0)
		for i := range v {
			c += 1000 + r.Int64N(50)
			v[i] = c
		}
		return v
	}},
	{"small", func(r *rand.Rand, n int) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = r.Int64N(200) - 100
		}
		return v
	}},
	{"thousands", func(r *rand.Rand, n int) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = r.Int64N(1000) * 1000
		}
		return v
	}},
}, timestampShapes...)

func regular(n int, start, step int64) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = start + int64(i)*step
	}
	return v
}

type floatShape struct {
	name string
	gen  func(r *rand.Rand, n int) []float64
}

var floatShapes = []floatShape{
	{"harness-user", func(r *rand.Rand, n int) []float64 { u, _, _ := harnessdata.Walk(r, n); return u }},
	{"harness-system", func(r *rand.Rand, n int) []float64 { _, s, _ := harnessdata.Walk(r, n); return s }},
	{"harness-idle", func(r *rand.Rand, n int) []float64 { _, _, i := harnessdata.Walk(r, n); return i }},
	{"constant", func(r *rand.Rand, n int) []float64 { return fill(n, func(int) float64 { return 42.5 }) }},
	{"integers", func(r *rand.Rand, n int) []float64 {
		return fill(n, func(int) float64 { return float64(r.IntN(1e6)) })
	}},
	{"walk-nodecimals", func(r *rand.Rand, n int) []float64 {
		x := 50.0
		return fill(n, func(int) float64 { x += r.NormFloat64(); return x })
	}},
	{"random-bits", func(r *rand.Rand, n int) []float64 {
		return fill(n, func(int) float64 { return math.Float64frombits(r.Uint64()) })
	}},
	{"specials", func(r *rand.Rand, n int) []float64 {
		sp := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0,
			math.Float64frombits(0x7ff8000000000001), math.SmallestNonzeroFloat64, math.MaxFloat64, 1.5}
		return fill(n, func(int) float64 { return sp[r.IntN(len(sp))] })
	}},
	{"decimals-then-nan", func(r *rand.Rand, n int) []float64 {
		v := fill(n, func(i int) float64 { return float64(i) / 100 })
		if n > 0 {
			v[r.IntN(n)] = math.NaN()
		}
		return v
	}},
	{"negzero-only", func(r *rand.Rand, n int) []float64 {
		return fill(n, func(int) float64 { return math.Copysign(0, -1) })
	}},
	{"big-mantissas", func(r *rand.Rand, n int) []float64 {
		return fill(n, func(int) float64 { return float64(1<<53-r.Int64N(100)) / 1e3 })
	}},
	{"huge", func(r *rand.Rand, n int) []float64 {
		return fill(n, func(int) float64 { return (r.Float64() - 0.5) * 1e300 })
	}},
}

func fill(n int, f func(int) float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

type stringShape struct {
	name string
	gen  func(r *rand.Rand, n int) []string
}

var stringShapes = []stringShape{
	{"hosts", func(r *rand.Rand, n int) []string {
		return fillS(n, func(int) string { return fmt.Sprintf("host%03d", r.IntN(5)) })
	}},
	{"one", func(r *rand.Rand, n int) []string { return fillS(n, func(int) string { return "ok" }) }},
	{"unique", func(r *rand.Rand, n int) []string {
		return fillS(n, func(int) string { return fmt.Sprintf("%x", r.Uint64()) })
	}},
	{"log-lines", func(r *rand.Rand, n int) []string {
		return fillS(n, func(i int) string {
			return fmt.Sprintf("GET /api/v1/items/%d 200 %dms user-agent=curl/8.5", r.IntN(50), r.IntN(900))
		})
	}},
	{"binary", func(r *rand.Rand, n int) []string {
		return fillS(n, func(int) string {
			b := make([]byte, r.IntN(20))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return string(b)
		})
	}},
	{"empty", func(r *rand.Rand, n int) []string { return fillS(n, func(int) string { return "" }) }},
	{"long-repeat", func(r *rand.Rand, n int) []string {
		s := strings.Repeat("abc", 400)
		return fillS(n, func(i int) string { return s[:r.IntN(len(s))] })
	}},
}

func fillS(n int, f func(int) string) []string {
	v := make([]string, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

type versionShape struct {
	name string
	gen  func(r *rand.Rand, n int) []model.Version
}

var nodes = []uint64{model.NodeID("a"), model.NodeID("b"), model.NodeID("c")}

var versionShapes = []versionShape{
	{"one-batch", func(r *rand.Rand, n int) []model.Version {
		return fillV(n, func(int) model.Version { return model.Version{Wall: t0 + 5e9, Node: nodes[0]} })
	}},
	// The harness: each point of a series in its own batch, a few ms
	// apart (2 M points ingested in a few seconds), through one server.
	{"harness-1node", func(r *rand.Rand, n int) []model.Version {
		w := t0
		return fillV(n, func(int) model.Version { w += 1e6 + r.Int64N(2e6); return model.Version{Wall: w, Node: nodes[0]} })
	}},
	{"harness-3nodes", func(r *rand.Rand, n int) []model.Version {
		w := t0
		return fillV(n, func(int) model.Version {
			w += 1e6 + r.Int64N(2e6)
			return model.Version{Wall: w, Node: nodes[r.IntN(3)]}
		})
	}},
	// The same arrivals versioned by the millisecond clock of today's
	// servers (model.Clock): walls are whole milliseconds, plus a count
	// when two readings fall in one millisecond.
	{"harness-ms-1node", func(r *rand.Rand, n int) []model.Version {
		return harnessdata.ClockVersions(r, t0, n, 1)
	}},
	{"harness-ms-3nodes", func(r *rand.Rand, n int) []model.Version {
		return harnessdata.ClockVersions(r, t0, n, 3)
	}},
	// As the peer harness writes: 4 clients send batches of many series,
	// so a series' points arrive out of time order (±10 ms around 2.5 ms
	// apart) and other requests read the clock in the same millisecond
	// (the nanosecond digits count them).
	{"harness-ms-shared", func(r *rand.Rand, n int) []model.Version {
		return harnessdata.SharedClockVersions(r, t0, n)
	}},
	{"random", func(r *rand.Rand, n int) []model.Version {
		return fillV(n, func(int) model.Version { return model.Version{Wall: int64(r.Uint64()), Node: r.Uint64()} })
	}},
	{"many-nodes", func(r *rand.Rand, n int) []model.Version {
		return fillV(n, func(int) model.Version { return model.Version{Wall: t0, Node: uint64(r.IntN(40))} })
	}},
}

func fillV(n int, f func(int) model.Version) []model.Version {
	v := make([]model.Version, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

var testSizes = []int{0, 1, 2, 3, 7, 8, 9, 64, 2000}

func randBools(r *rand.Rand, n int, p float64) []bool {
	v := make([]bool, n)
	for i := range v {
		v[i] = r.Float64() < p
	}
	return v
}
