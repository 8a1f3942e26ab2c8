package influx

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/influx/influxtest"
	"github.com/tsdb/tsdb/model"
)

// TestAggregatesDifferential runs random aggregate statements over random
// data and checks every answer against a direct computation over the
// rows, written without the executor's code (nor model's matcher).
func TestAggregatesDifferential(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	for iter := 0; iter < 40; iter++ {
		rows := randomRows(rng)
		f := influxtest.New()
		f.Add("db", rows...)
		for qi := 0; qi < 25; qi++ {
			dq := randomQuery(rng)
			checkDifferential(t, f, rows, dq, fmt.Sprintf("seed %d iter %d query %d", seed, iter, qi))
		}
	}
}

type diffQuery struct {
	fn      string
	n       float64 // percentile
	groupBy string  // "", "host", "region", "*"
	step    int64   // seconds, 0: none
	offset  int64   // seconds
	from    int64   // seconds from t0
	to      int64
	cond    string
	keep    func(tags map[string]string) bool
}

func (d diffQuery) String() string {
	arg := ""
	if d.fn == "percentile" {
		arg = fmt.Sprintf(", %g", d.n)
	}
	q := fmt.Sprintf("SELECT %s(v%s) FROM m WHERE time >= %ds AND time < %ds", d.fn, arg, 1_700_000_000+d.from, 1_700_000_000+d.to)
	if d.cond != "" {
		q += " AND (" + d.cond + ")"
	}
	var dims []string
	if d.step > 0 {
		dims = append(dims, fmt.Sprintf("time(%ds, %ds)", d.step, d.offset))
	}
	if d.groupBy != "" {
		dims = append(dims, d.groupBy)
	}
	if len(dims) > 0 {
		q += " GROUP BY " + strings.Join(dims, ", ")
	}
	return q + " fill(none)"
}

func randomRows(rng *rand.Rand) []model.Row {
	var rows []model.Row
	nSeries := 1 + rng.IntN(6)
	for s := 0; s < nSeries; s++ {
		key := fmt.Sprintf("m,host=h%d", rng.IntN(4))
		if rng.IntN(3) > 0 {
			key += fmt.Sprintf(",region=r%d", rng.IntN(3))
		}
		seen := map[int64]bool{}
		for i := rng.IntN(30); i > 0; i-- {
			ts := sec(int64(rng.IntN(120)))
			if seen[ts] {
				continue
			}
			seen[ts] = true
			var v model.Value
			if rng.IntN(4) == 0 {
				v = model.Int(int64(rng.IntN(1000) - 500))
			} else {
				v = model.Float(math.Round(rng.NormFloat64()*1000) / 8)
			}
			rows = append(rows, model.Row{Series: key, Time: ts, Fields: []model.Field{{Name: "v", Value: v}}})
		}
	}
	// Two random series may be the same key: dedupe (series, time).
	seen := map[string]bool{}
	out := rows[:0]
	for _, r := range rows {
		k := fmt.Sprintf("%s@%d", r.Series, r.Time)
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

func randomQuery(rng *rand.Rand) diffQuery {
	fns := []string{"count", "sum", "mean", "min", "max", "first", "last", "spread", "stddev", "median", "percentile"}
	d := diffQuery{fn: fns[rng.IntN(len(fns))], n: float64(rng.IntN(101))}
	d.groupBy = []string{"", "host", "region", "*"}[rng.IntN(4)]
	if rng.IntN(3) > 0 {
		d.step = int64(1 + rng.IntN(40))
		d.offset = int64(rng.IntN(int(d.step)))
	}
	d.from = int64(rng.IntN(60)) - 10
	d.to = d.from + int64(rng.IntN(120))
	conds := []struct {
		s    string
		keep func(map[string]string) bool
	}{
		{"", func(map[string]string) bool { return true }},
		{"host = 'h1'", func(t map[string]string) bool { return t["host"] == "h1" }},
		{"host != 'h1'", func(t map[string]string) bool { return t["host"] != "h1" }},
		{"region =~ /^r[01]$/", func(t map[string]string) bool { return regexp.MustCompile(`^r[01]$`).MatchString(t["region"]) }},
		{"region !~ /r2/", func(t map[string]string) bool { return !strings.Contains(t["region"], "r2") }},
		{"host = 'h0' OR region = 'r1'", func(t map[string]string) bool { return t["host"] == "h0" || t["region"] == "r1" }},
		{"(host = 'h2' OR host = 'h3') AND region != ''", func(t map[string]string) bool {
			return (t["host"] == "h2" || t["host"] == "h3") && t["region"] != ""
		}},
	}
	c := conds[rng.IntN(len(conds))]
	d.cond, d.keep = c.s, c.keep
	return d
}

// point is one value the brute force aggregates.
type point struct {
	t      int64
	series string
	v      float64
}

func bruteForce(rows []model.Row, d diffQuery) map[string]map[int64]float64 {
	from, to := sec(d.from), sec(d.to)
	groups := map[string]map[int64][]point{}
	for _, r := range rows {
		if r.Time < from || r.Time >= to {
			continue
		}
		_, tl, _ := model.SplitSeries(r.Series)
		tags := map[string]string{}
		for _, tg := range tl {
			tags[tg.Key] = tg.Value
		}
		if !d.keep(tags) {
			continue
		}
		key := ""
		switch d.groupBy {
		case "*":
			key = r.Series
		case "host", "region":
			key = d.groupBy + "=" + tags[d.groupBy]
		}
		start := from
		if d.step > 0 {
			st, off := d.step*int64(time.Second), d.offset*int64(time.Second)
			start = int64(math.Floor(float64(r.Time-off)/float64(st)))*st + off
		}
		f, _ := r.Fields[0].Value.Numeric()
		if groups[key] == nil {
			groups[key] = map[int64][]point{}
		}
		groups[key][start] = append(groups[key][start], point{r.Time, r.Series, f})
	}
	out := map[string]map[int64]float64{}
	for k, bs := range groups {
		for start, ps := range bs {
			v, ok := bruteValue(d, ps)
			if !ok {
				continue
			}
			if out[k] == nil {
				out[k] = map[int64]float64{}
			}
			if d.step == 0 && len(ps) > 0 {
				switch d.fn {
				case "first":
					start = firstOf(ps).t
				case "last":
					start = lastOf(ps).t
				}
			}
			out[k][start] = v
		}
	}
	return out
}

func firstOf(ps []point) point {
	return slices.MinFunc(ps, func(a, b point) int {
		if a.t != b.t {
			return cmpInt(a.t, b.t)
		}
		return strings.Compare(a.series, b.series)
	})
}

func lastOf(ps []point) point {
	return slices.MaxFunc(ps, func(a, b point) int {
		if a.t != b.t {
			return cmpInt(a.t, b.t)
		}
		return strings.Compare(a.series, b.series)
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func bruteValue(d diffQuery, ps []point) (float64, bool) {
	vs := make([]float64, len(ps))
	sum := 0.0
	for i, p := range ps {
		vs[i] = p.v
		sum += p.v
	}
	sort.Float64s(vs)
	n := len(vs)
	switch d.fn {
	case "count":
		return float64(n), true
	case "sum":
		return sum, true
	case "mean":
		return sum / float64(n), true
	case "min":
		return vs[0], true
	case "max":
		return vs[n-1], true
	case "spread":
		return vs[n-1] - vs[0], true
	case "first":
		return firstOf(ps).v, true
	case "last":
		return lastOf(ps).v, true
	case "median":
		if n%2 == 1 {
			return vs[n/2], true
		}
		return (vs[n/2-1] + vs[n/2]) / 2, true
	case "percentile":
		i := int(math.Floor(float64(n)*d.n/100+0.5)) - 1
		if i < 0 || i >= n {
			return 0, false
		}
		return vs[i], true
	case "stddev":
		if n < 2 {
			return 0, false
		}
		mean := sum / float64(n)
		ss := 0.0
		for _, v := range vs {
			ss += (v - mean) * (v - mean)
		}
		return math.Sqrt(ss / float64(n-1)), true
	}
	panic(d.fn)
}

func checkDifferential(t *testing.T, be Backend, rows []model.Row, d diffQuery, where string) {
	t.Helper()
	q := d.String()
	e := NewExecutor(be, Config{})
	resp, err := e.Execute(context.Background(), q, Options{DB: "db", Epoch: "ns"})
	if err != nil {
		t.Fatalf("%s: %s: %v", where, q, err)
	}
	res := resp.Results[0]
	if res.Err != "" {
		t.Fatalf("%s: %s: %s", where, q, res.Err)
	}
	got := map[string]map[int64]float64{}
	for _, s := range res.Series {
		key := ""
		switch d.groupBy {
		case "*":
			tags := []model.Tag{}
			for k, v := range s.Tags {
				tags = append(tags, model.Tag{Key: k, Value: v})
			}
			key, _ = model.BuildSeries("m", tags)
		case "host", "region":
			key = d.groupBy + "=" + s.Tags[d.groupBy]
		}
		if got[key] != nil {
			t.Fatalf("%s: %s: group %q twice", where, q, key)
		}
		got[key] = map[int64]float64{}
		for _, row := range s.Values {
			ts := row[0].(int64)
			switch v := row[1].(type) {
			case float64:
				got[key][ts] = v
			case int64:
				got[key][ts] = float64(v)
			case nil:
				// fill(none) leaves out rows without a value; a null here
				// is a bucket of the group without one.
			default:
				t.Fatalf("%s: %s: value %T", where, q, v)
			}
		}
		if len(got[key]) == 0 {
			delete(got, key)
		}
	}
	want := bruteForce(rows, d)
	if len(got) != len(want) {
		t.Fatalf("%s: %s:\n got %v\nwant %v", where, q, got, want)
	}
	for k, wb := range want {
		gb := got[k]
		if len(gb) != len(wb) {
			t.Fatalf("%s: %s: group %q:\n got %v\nwant %v", where, q, k, gb, wb)
		}
		for ts, wv := range wb {
			gv, ok := gb[ts]
			if !ok || math.Abs(gv-wv) > 1e-9*math.Max(1, math.Abs(wv)) {
				t.Fatalf("%s: %s: group %q at %d: got %v (present %v), want %v", where, q, k, ts, gv, ok, wv)
			}
		}
	}
}
