package block

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// The benchmarks run on one harness series (2,000 points of 3 float
// fields, one version per row) and report ns per point (a point is one
// row of 3 fields) with b.ReportMetric.

func harnessBlock(b *testing.B) ([]model.Row, []byte) {
	rows := harnessRows(rand.New(rand.NewPCG(6, 17)), harnessPoints, 1)
	blk, err := Encode(nil, rows)
	if err != nil {
		b.Fatal(err)
	}
	return rows, blk
}

func perPoint(b *testing.B, points int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(points), "ns/point")
}

// BenchmarkEncode seals one series' block: the harness's 2,000 points,
// and the 11 of a series at 100,000 series (the harness at 10 M points),
// where the per-block costs show.
func BenchmarkEncode(b *testing.B) {
	for _, c := range []struct {
		n         int
		noPredict bool
	}{{harnessPoints, false}, {harnessPoints, true}, {bucketPoints, false}, {bucketPoints, true}, {11, false}} {
		name := fmt.Sprintf("rows=%d", c.n)
		if c.noPredict {
			name += "/no_prediction"
		}
		b.Run(name, func(b *testing.B) {
			rows := harnessRows(rand.New(rand.NewPCG(6, 17)), c.n, 1)
			buf := benchEncode(b, rows, c.noPredict)
			perPoint(b, len(rows))
			b.ReportMetric(float64(len(buf))/float64(len(rows)), "bytes/point")
		})
	}
}

// benchEncode encodes rows once per loop with one Encoder (prediction on
// unless noPredict) and returns the last block.
func benchEncode(b *testing.B, rows []model.Row, noPredict bool) []byte {
	e := Encoder{noPredict: noPredict}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = e.Encode(buf[:0], rows); err != nil {
			b.Fatal(err)
		}
	}
	return buf
}

// BenchmarkRows decodes every row of the harness block, with usage_idle
// predicted from the other two fields (predict.go) and without.
func BenchmarkRows(b *testing.B) {
	for _, noPredict := range []bool{false, true} {
		name := "predicted"
		if noPredict {
			name = "no_prediction"
		}
		b.Run(name, func(b *testing.B) {
			rows := harnessRows(rand.New(rand.NewPCG(6, 17)), harnessPoints, 1)
			blk, err := (&Encoder{noPredict: noPredict}).Encode(nil, rows)
			if err != nil {
				b.Fatal(err)
			}
			rd, err := Open(blk)
			if err != nil {
				b.Fatal(err)
			}
			var got []model.Row
			b.ReportAllocs()
			for b.Loop() {
				if got, err = rd.Rows(got, testSeries); err != nil {
					b.Fatal(err)
				}
			}
			perPoint(b, len(rows))
		})
	}
}

// BenchmarkColumn decodes one field (the aggregate path).
func BenchmarkColumn(b *testing.B) { benchColumn(b, (*Reader).Column) }

// BenchmarkColumnValues decodes one field without its versions.
func BenchmarkColumnValues(b *testing.B) { benchColumn(b, (*Reader).ColumnValues) }

// BenchmarkColumnAggregate decodes one field as an aggregate does.
func BenchmarkColumnAggregate(b *testing.B) { benchColumn(b, (*Reader).ColumnAggregate) }

// benchColumn measures decode, one field of the harness block per loop:
// usage_user, a column of its own, and usage_idle, predicted from the
// other two (predict.go).
func benchColumn(b *testing.B, decode func(*Reader, string, *Column) (bool, error)) {
	rows, blk := harnessBlock(b)
	for _, field := range []string{"usage_user", "usage_idle"} {
		b.Run(field, func(b *testing.B) {
			var rd Reader
			var col Column
			b.ReportAllocs()
			for b.Loop() {
				if err := rd.Reset(blk); err != nil {
					b.Fatal(err)
				}
				if ok, err := decode(&rd, field, &col); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			perPoint(b, len(rows))
		})
	}
}

// BenchmarkOpenSummary opens a block and reads one field's summary (the
// path of a block wholly inside one aggregation bucket).
func BenchmarkOpenSummary(b *testing.B) {
	_, blk := harnessBlock(b)
	var rd Reader
	b.ReportAllocs()
	for b.Loop() {
		if err := rd.Reset(blk); err != nil {
			b.Fatal(err)
		}
		if _, ok := rd.Summary("usage_user", testSeries); !ok {
			b.Fatal("no summary")
		}
	}
}

// BenchmarkSummary reads a summary from an open block.
func BenchmarkSummary(b *testing.B) {
	_, blk := harnessBlock(b)
	rd, err := Open(blk)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := rd.Summary("usage_user", testSeries); !ok {
			b.Fatal("no summary")
		}
	}
}

// BenchmarkSmallBlockAggregate is an aggregate's work on one block of 11
// rows (a series at 100,000 series in the harness at 10 M points): open
// it, decode its times and one float field. Reported per block.
func BenchmarkSmallBlockAggregate(b *testing.B) {
	rows := harnessRows(rand.New(rand.NewPCG(6, 17)), 11, 1)
	blk, err := Encode(nil, rows)
	if err != nil {
		b.Fatal(err)
	}
	var (
		rd    Reader
		col   Column
		times []int64
	)
	b.ReportAllocs()
	for b.Loop() {
		if err := rd.Reset(blk); err != nil {
			b.Fatal(err)
		}
		if times, err = rd.Times(times[:0]); err != nil {
			b.Fatal(err)
		}
		if _, err := rd.ColumnAggregate("usage_user", &col); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeWide seals a block of 16 unrelated 2-decimal walks, the
// prediction search's worst case (every field weighed against every other,
// none predicted), with and without it; ns/point is per value here.
func BenchmarkEncodeWide(b *testing.B) {
	rows := unrelatedWalks(rand.New(rand.NewPCG(8, 17)), harnessPoints, maxPredictFields)
	for _, noPredict := range []bool{false, true} {
		name := "search"
		if noPredict {
			name = "no_prediction"
		}
		b.Run(name, func(b *testing.B) {
			benchEncode(b, rows, noPredict)
			perPoint(b, len(rows)*maxPredictFields)
		})
	}
}
