// Package harnessdata generates the value shapes of the peer harness
// (../shared/peers/loadgen/main.go, genBatches) for the size tests and
// benchmarks of the column codecs and the series blocks: random-walk CPU
// percentages printed with 2 decimals, and the versions a millisecond
// model.Clock hands out as the harness's writes arrive. Only tests use
// it.
package harnessdata

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/tsdb/tsdb/model"
)

// Walk returns the three fields of one series as the harness writes them
// and the server parses them: CPU user, system and idle percentages,
// random walks printed with 2 decimals.
func Walk(r *rand.Rand, n int) (user, sys, idle []float64) {
	clamp := func(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }
	parse2 := func(f float64) float64 {
		v, err := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 2, 64), 64)
		if err != nil {
			panic(err)
		}
		return v
	}
	u, s := 10+r.Float64()*50, 1+r.Float64()*20
	for range n {
		u = clamp(u+r.NormFloat64()*2, 0, 90)
		s = clamp(s+r.NormFloat64(), 0, 100-u)
		user = append(user, parse2(u))
		sys = append(sys, parse2(s))
		idle = append(idle, parse2(100-u-s))
	}
	return user, sys, idle
}

// ClockVersions are the versions of n writes arriving 1–3 ms apart from
// t0 (ns) at servers (model.Clock readings), each at one of them drawn at
// random.
func ClockVersions(r *rand.Rand, t0 int64, n, servers int) []model.Version {
	arrival := t0
	clocks := make([]*model.Clock, servers)
	for i := range clocks {
		clocks[i] = model.NewClock(fmt.Sprint("s", i), func() int64 { return arrival })
	}
	out := make([]model.Version, n)
	for i := range out {
		arrival += 1e6 + r.Int64N(2e6)
		out[i] = clocks[r.IntN(servers)].Now()
	}
	return out
}

// SharedClockVersions are the versions of n points of one series written
// through one server's clock as the harness writes them: 4 clients send
// batches of many series, so the points arrive out of time order (±10 ms
// around 2.5 ms apart from t0), and other requests read the clock in the
// same millisecond (the nanosecond digits count them).
func SharedClockVersions(r *rand.Rand, t0 int64, n int) []model.Version {
	type arrival struct {
		at    int64
		point int
	}
	arrivals := make([]arrival, n)
	for i := range arrivals {
		arrivals[i] = arrival{at: t0 + int64(i)*25e5 + r.Int64N(20e6) - 10e6, point: i}
	}
	slices.SortFunc(arrivals, func(a, b arrival) int { return cmp.Compare(a.at, b.at) })
	var now int64
	clock := model.NewClock("s0", func() int64 { return now })
	out := make([]model.Version, n)
	for _, a := range arrivals {
		now = a.at
		for range r.IntN(3) {
			clock.Now() // another request in the same millisecond
		}
		out[a.point] = clock.Now()
	}
	return out
}
