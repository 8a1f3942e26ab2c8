package ingest

import (
	"strconv"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/tsdb/tsdb/model"
)

const benchRows = 1000

const benchStart = 1_700_000_000_000_000_000

// benchLP is 1000 lines of
// cpu,host=host_N,region=eu-west usage_user=1.5,usage_system=2.5,usage_idle=96 <ts>.
func benchLP() []byte {
	var b []byte
	for i := 0; i < benchRows; i++ {
		b = append(b, "cpu,host=host_"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ",region=eu-west usage_user=1.5,usage_system=2.5,usage_idle=96 "...)
		b = strconv.AppendInt(b, benchStart+int64(i)*1e9, 10)
		b = append(b, '\n')
	}
	return b
}

// benchJSONRow writes the JSON object equivalent to line i of benchLP.
func benchJSONRow(b []byte, i int) []byte {
	b = append(b, `{"time":`...)
	b = strconv.AppendInt(b, benchStart+int64(i)*1e9, 10)
	b = append(b, `,"series":"cpu,host=host_`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,region=eu-west","fields":{"usage_user":1.5,"usage_system":2.5,"usage_idle":96.0}}`...)
	return b
}

func benchJSON() []byte {
	b := []byte{'['}
	for i := 0; i < benchRows; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = benchJSONRow(b, i)
	}
	return append(b, ']')
}

func benchNDJSON() []byte {
	var b []byte
	for i := 0; i < benchRows; i++ {
		b = append(benchJSONRow(b, i), '\n')
	}
	return b
}

// runParse benchmarks one parser over body, reusing the rows slice as the
// HTTP server does.
func runParse(b *testing.B, body []byte, parse func([]byte, []model.Row) ([]model.Row, error)) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	rows, err := parse(body, nil)
	if err != nil || len(rows) != benchRows {
		b.Fatalf("parse: %d rows, %v", len(rows), err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rows, err = parse(body, rows[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkParseLineProtocol(b *testing.B) {
	runParse(b, benchLP(), func(body []byte, rows []model.Row) ([]model.Row, error) {
		return ParseLineProtocol(body, Nanosecond, 0, rows)
	})
}

func BenchmarkParseJSON(b *testing.B) {
	runParse(b, benchJSON(), ParseJSON)
}

func BenchmarkParseNDJSON(b *testing.B) {
	runParse(b, benchNDJSON(), ParseNDJSON)
}

// BenchmarkFastjsonBaseline is the measurement behind the hand-written JSON
// scanner: fastjson (pooled parser) only parsing the same body and reading
// the values, without building rows and without copying the strings out of
// its reused buffer (which using it for real would require), is only about
// as fast as ParseJSON doing all of it (best of 6 on the development
// machine: 2.6 against 2.4 M rows/s). Building the rows on top of fastjson
// would cost what ParseJSON spends on them, plus the copies; the scanner
// also gives zero-copy strings, exact error offsets and no recursion.
func BenchmarkFastjsonBaseline(b *testing.B) {
	body := benchJSON()
	var pool fastjson.ParserPool
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		p := pool.Get()
		v, err := p.ParseBytes(body)
		if err != nil {
			b.Fatal(err)
		}
		arr, _ := v.Array()
		n := 0
		for _, r := range arr {
			_ = r.GetInt64("time")
			n += len(r.GetStringBytes("series"))
			r.GetObject("fields").Visit(func(k []byte, v *fastjson.Value) { n += len(k); _, _ = v.Float64() })
		}
		pool.Put(p)
		if n == 0 {
			b.Fatal("nothing read")
		}
	}
	b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "rows/s")
}
