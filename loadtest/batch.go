package loadtest

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// Measurement is the measurement of every load row; series are
// "loadtest,s=N" for N in [0, Series).
const Measurement = "loadtest"

// batchBuilder builds line-protocol bodies of one worker. It is not safe
// for concurrent use; each worker owns one.
type batchBuilder struct {
	series, rows int
	from, to     int64 // range mode when to > from (ns, [from, to))
	next         int   // next series number
	rng          *rand.Rand
	buf          []byte
}

// newBatchBuilder returns a builder of rows-row batches over series series
// starting at series first; from/to (ns) select range mode when to > from.
func newBatchBuilder(series, rows, first int, from, to int64, seed uint64) *batchBuilder {
	return &batchBuilder{
		series: series, rows: rows, from: from, to: to, next: first % series,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// build returns the body of the next batch, valid until the next call. In
// hot mode row i is timed now+i ns, so rows of one batch never share a
// (series, time) even when the batch is larger than the series count; in
// range mode times are uniform in [from, to).
func (b *batchBuilder) build(now time.Time) []byte {
	b.buf = b.buf[:0]
	base := now.UnixNano()
	for i := range b.rows {
		t := base + int64(i)
		if b.to > b.from {
			t = b.from + b.rng.Int64N(b.to-b.from)
		}
		b.buf = appendRow(b.buf, b.next, b.rng.Float64()*100, t)
		b.next = (b.next + 1) % b.series
	}
	return b.buf
}

// appendRow appends `loadtest,s=N v=V T\n`.
func appendRow(buf []byte, series int, v float64, t int64) []byte {
	buf = append(buf, Measurement+",s="...)
	buf = strconv.AppendInt(buf, int64(series), 10)
	buf = append(buf, " v="...)
	buf = strconv.AppendFloat(buf, v, 'f', 3, 64)
	buf = append(buf, ' ')
	buf = strconv.AppendInt(buf, t, 10)
	return append(buf, '\n')
}
