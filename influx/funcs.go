package influx

import (
	"math"
	"slices"

	"github.com/influxdata/influxql"
)

// median is InfluxDB's: the middle value, or the mean of the two middle
// values of an even count.
func median(vals []float64) (float64, bool) {
	n := len(vals)
	if n == 0 {
		return 0, false
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2], true
	}
	lo, hi := s[n/2-1], s[n/2]
	return lo + (hi-lo)/2, true
}

// percentile is InfluxDB's nearest-rank rule: the value at index
// floor(len*N/100 + 0.5) - 1 of the sorted values; no value when that
// index is outside them (N too small for the count, or over 100).
func percentile(vals []float64, n float64) (float64, bool) {
	i := int(math.Floor(float64(len(vals))*n/100+0.5)) - 1
	if i < 0 || i >= len(vals) {
		return 0, false
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	return s[i], true
}

// fillRows fills the null values of an aggregate's rows (times ascending)
// per fill(): null keeps them, except count's, which are 0 (InfluxDB
// answers count 0 for an empty interval); a number replaces them;
// previous repeats the column's last value; linear interpolates between
// the column's values on both sides. fill(none) rows were left out already.
func (p *selectPlan) fillRows(times []int64, rows [][]any) {
	for ci, c := range p.calls {
		col := ci + 1
		switch p.fill {
		case influxql.NullFill:
			if c.name == "count" {
				for _, r := range rows {
					if r[col] == nil {
						r[col] = int64(0)
					}
				}
			}
		case influxql.NumberFill:
			for _, r := range rows {
				if r[col] == nil {
					r[col] = p.fillValue
				}
			}
		case influxql.PreviousFill:
			var prev any
			for _, r := range rows {
				if r[col] == nil {
					r[col] = prev
				} else {
					prev = r[col]
				}
			}
		case influxql.LinearFill:
			linearFill(times, rows, col)
		}
	}
}

func linearFill(times []int64, rows [][]any, col int) {
	prev := -1
	for i, r := range rows {
		if r[col] == nil {
			continue
		}
		if prev >= 0 && i-prev > 1 {
			v0, v1 := toFloat(rows[prev][col]), toFloat(r[col])
			t0, t1 := float64(times[prev]), float64(times[i])
			for j := prev + 1; j < i; j++ {
				rows[j][col] = v0 + (v1-v0)*(float64(times[j])-t0)/(t1-t0)
			}
		}
		prev = i
	}
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	}
	return 0
}
