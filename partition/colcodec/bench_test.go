package colcodec

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// benchPoints is one harness series' block: 2,000 points over 10 minutes.
const benchPoints = 2000

// benchCodec runs the encode and decode benchmarks of one column shape and
// reports ns/point and bytes/point (the encoded size).
func benchCodec[T any](b *testing.B, vals []T,
	enc func([]byte, []T) ([]byte, error),
	dec func([]T, []byte) ([]T, error)) {
	col, err := enc(nil, vals)
	if err != nil {
		b.Fatal(err)
	}
	n := float64(len(vals))
	// The loop runs on one locked OS thread, whose CPU time is reported
	// beside the wall time: on a shared machine the wall time includes
	// the waits for a core.
	run := func(b *testing.B, body func()) {
		b.ReportAllocs()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0, cpuOK := threadCPU()
		for b.Loop() {
			body()
		}
		c1, _ := threadCPU()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/point")
		if cpuOK {
			b.ReportMetric(float64((c1-c0).Nanoseconds())/float64(b.N)/n, "cpu-ns/point")
		}
		b.ReportMetric(float64(len(col))/n, "B/point")
	}
	b.Run("op=encode", func(b *testing.B) {
		dst := make([]byte, 0, 2*len(col)+64)
		run(b, func() { dst, _ = enc(dst[:0], vals) })
	})
	b.Run("op=decode", func(b *testing.B) {
		dst := make([]T, 0, len(vals))
		run(b, func() { dst, _ = dec(dst[:0], col) })
	})
}

func findShape[S any](shapes []S, name func(S) string, want string) S {
	i := slices.IndexFunc(shapes, func(s S) bool { return name(s) == want })
	return shapes[i]
}

func BenchmarkTimestamps(b *testing.B) {
	for _, name := range []string{"harness", "jitter-ms", "jitter-ns", "gaps"} {
		sh := findShape(timestampShapes, func(s int64Shape) string { return s.name }, name)
		vals := sh.gen(rand.New(rand.NewPCG(1, 1)), benchPoints)
		b.Run("shape="+name, func(b *testing.B) { benchCodec(b, vals, EncodeTimestamps, DecodeTimestamps) })
	}
}

func BenchmarkFloats(b *testing.B) {
	for _, name := range []string{"harness-user", "harness-system", "harness-idle", "walk-nodecimals", "constant"} {
		sh := findShape(floatShapes, func(s floatShape) string { return s.name }, name)
		vals := sh.gen(rand.New(rand.NewPCG(1, 1)), benchPoints)
		b.Run("shape="+name, func(b *testing.B) { benchCodec(b, vals, EncodeFloats, DecodeFloats) })
	}
}

func BenchmarkInts(b *testing.B) {
	for _, name := range []string{"counter", "small"} {
		sh := findShape(intShapes, func(s int64Shape) string { return s.name }, name)
		vals := sh.gen(rand.New(rand.NewPCG(1, 1)), benchPoints)
		b.Run("shape="+name, func(b *testing.B) { benchCodec(b, vals, EncodeInts, DecodeInts) })
	}
}

func BenchmarkBools(b *testing.B) {
	vals := randBools(rand.New(rand.NewPCG(1, 1)), benchPoints, 0.5)
	b.Run("shape=random", func(b *testing.B) { benchCodec(b, vals, EncodeBools, DecodeBools) })
}

func BenchmarkStrings(b *testing.B) {
	for _, name := range []string{"hosts", "unique", "log-lines"} {
		sh := findShape(stringShapes, func(s stringShape) string { return s.name }, name)
		vals := sh.gen(rand.New(rand.NewPCG(1, 1)), benchPoints)
		b.Run("shape="+name, func(b *testing.B) { benchCodec(b, vals, EncodeStrings, DecodeStrings) })
	}
}

func BenchmarkVersions(b *testing.B) {
	for _, name := range []string{"one-batch", "harness-1node", "harness-3nodes"} {
		sh := findShape(versionShapes, func(s versionShape) string { return s.name }, name)
		vals := sh.gen(rand.New(rand.NewPCG(1, 1)), benchPoints)
		b.Run("shape="+name, func(b *testing.B) {
			benchCodec(b, vals, EncodeVersions, func(d []model.Version, s []byte) ([]model.Version, error) { return DecodeVersions(d, s) })
		})
	}
}

// BenchmarkDecodeDecimals is the decode of the harness's float columns as
// an aggregate reads them (DecodeDecimals: mantissas, no division per
// value).
func BenchmarkDecodeDecimals(b *testing.B) {
	for _, name := range []string{"harness-user", "harness-system", "harness-idle"} {
		sh := findShape(floatShapes, func(s floatShape) string { return s.name }, name)
		vals := sh.gen(rand.New(rand.NewPCG(1, 1)), benchPoints)
		col, err := EncodeFloats(nil, vals)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("shape="+name, func(b *testing.B) {
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			dst := make([]int64, 0, len(vals))
			c0, cpuOK := threadCPU()
			for b.Loop() {
				var ok bool
				if dst, _, ok, err = DecodeDecimals(dst[:0], col); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			c1, _ := threadCPU()
			if cpuOK {
				b.ReportMetric(float64((c1-c0).Nanoseconds())/float64(b.N)/float64(len(vals)), "cpu-ns/point")
			}
		})
	}
}
