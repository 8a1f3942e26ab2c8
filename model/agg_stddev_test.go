package model

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

func TestAggStateStddevKnown(t *testing.T) {
	var s AggState
	if _, ok := s.Result(AggStddev); ok {
		t.Fatal("stddev of nothing has a value")
	}
	s.Add(0, "a", Float(2))
	s.Add(1, "a", String("x")) // counted, not numeric
	if _, ok := s.Result(AggStddev); ok {
		t.Fatal("stddev of one value has a value (InfluxDB 1.8 gives none)")
	}
	for i, v := range []float64{4, 4, 4, 5, 5, 7, 9} {
		s.Add(int64(i+2), "a", Float(v))
	}
	got, ok := s.Result(AggStddev)
	if want := math.Sqrt(32.0 / 7); !ok || math.Abs(got-want) > 1e-12 {
		t.Fatalf("stddev = %v, %v; want %v (sample, n-1)", got, ok, want)
	}
	if sp, ok := s.Result(AggSpread); !ok || sp != 7 {
		t.Fatalf("spread = %v, %v; want 7", sp, ok)
	}
	var same AggState
	for i := 0; i < 3; i++ {
		same.Add(int64(i), "a", Int(5))
	}
	if sd, ok := same.Result(AggStddev); !ok || sd != 0 {
		t.Fatalf("stddev of equal values = %v, %v", sd, ok)
	}
}

// twoPass is the reference sample standard deviation.
func twoPass(vs []float64) float64 {
	var mean float64
	for _, v := range vs {
		mean += v
	}
	mean /= float64(len(vs))
	var m2 float64
	for _, v := range vs {
		m2 += (v - mean) * (v - mean)
	}
	return math.Sqrt(m2 / float64(len(vs)-1))
}

// TestAggStateStddevMergeOrder splits random values (large offset, small
// spread: where a naive sum of squares loses everything) into random
// parts, merges them in random tree shapes and orders, and compares with
// the two-pass reference.
func TestAggStateStddevMergeOrder(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for iter := 0; iter < 2000; iter++ {
		n := 2 + rng.Intn(60)
		base := []float64{0, 1e9, -1e12, 3.5}[rng.Intn(4)]
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = base + rng.NormFloat64()*[]float64{1e-3, 1, 1e4}[rng.Intn(3)]
		}
		want := twoPass(vs)
		k := 1 + rng.Intn(6)
		states := make([]AggState, k)
		for i, v := range vs {
			states[rng.Intn(k)].Add(int64(i), "s", Float(v))
		}
		got := mergeTree(rng, states)
		sd, ok := got.Result(AggStddev)
		if !ok || math.Abs(sd-want) > 1e-6*math.Max(want, 1e-9*math.Abs(base)) {
			t.Fatalf("iter %d: stddev %v (%v), want %v; values %v", iter, sd, ok, want, vs)
		}
		// Merging a into b and b into a agree up to rounding.
		a, b := states[0], mergeTree(rng, append([]AggState(nil), states[1:]...))
		ab, ba := a, b
		ab.Merge(&b)
		ba.Merge(&a)
		if ab.N != ba.N || math.Abs(ab.M2-ba.M2) > 1e-9*math.Max(1, math.Abs(ab.M2)) || math.Abs(ab.Mean-ba.Mean) > 1e-9*math.Max(1, math.Abs(ab.Mean)) {
			t.Fatalf("iter %d: merge order: %+v vs %+v", iter, ab, ba)
		}
	}
}

func TestParseAggSpreadStddev(t *testing.T) {
	for name, want := range map[string]Agg{"spread": AggSpread, "stddev": AggStddev} {
		if a, err := ParseAgg(name); err != nil || a != want || a.String() != name {
			t.Fatalf("ParseAgg(%q) = %v, %v", name, a, err)
		}
	}
}
