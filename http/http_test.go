package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// TestAppendStringMatchesEncodingJSON checks the hand-written JSON string
// encoder against encoding/json: both decode to the same string (invalid
// UTF-8 becoming U+FFFD in both) on random bytes.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	cases := []string{"", "plain", `q"uote`, `back\slash`, "ctl\x00\x1f\n\r\t", "é ü 中", "\xff\xfe", "\u2028\u2029", "<&>"}
	for i := 0; i < 5000; i++ {
		b := make([]byte, rng.Intn(20))
		for j := range b {
			b[j] = byte(rng.Intn(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		enc := appendString(nil, s)
		var got string
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("%q encodes to invalid JSON %s: %v", s, enc, err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if !utf8.ValidString(s) {
			// encoding/json replaces each invalid byte; compare with it.
			ref, _ := json.Marshal(s)
			json.Unmarshal(ref, &want)
		}
		if got != want {
			t.Fatalf("%q: decoded %q, want %q", s, got, want)
		}
	}
}

func TestAppendRawAnswer(t *testing.T) {
	rows := []model.Row{{Time: -1, Series: `cpu,host=a\ b`, Fields: []model.Field{
		{Name: "f", Value: model.Float(1.5)}, {Name: "i", Value: model.Int(math.MinInt64)},
		{Name: "b", Value: model.Bool(true)}, {Name: "s", Value: model.String("x\"y")},
		{Name: "n", Value: model.Float(math.NaN())}, {Name: "big", Value: model.Float(1e300)},
	}}}
	var got struct {
		Rows []struct {
			Time   int64
			Series string
			Fields map[string]any
		}
		Truncated bool
	}
	out := appendRawAnswer(nil, rows, true)
	d := json.NewDecoder(strings.NewReader(string(out)))
	d.UseNumber()
	if err := d.Decode(&got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	f := got.Rows[0].Fields
	if !got.Truncated || got.Rows[0].Time != -1 || got.Rows[0].Series != `cpu,host=a\ b` ||
		f["f"].(json.Number) != "1.5" || f["i"].(json.Number) != "-9223372036854775808" ||
		f["b"] != true || f["s"] != "x\"y" || f["n"] != nil || f["big"].(json.Number) != "1e+300" {
		t.Fatalf("decoded %+v from %s", got, out)
	}
}

func args(q string) *fasthttp.Args {
	var a fasthttp.Args
	a.Parse(q)
	return &a
}

func TestParseQuery(t *testing.T) {
	q, err := parseQuery(args("from=2026-01-01T00:00:00Z&to=1767225660000000000&series=cpu,region=eu,host=a&fields=a,,b&agg=avg&step=10s&group=none&limit=5"), DefaultMaxQueryBuckets)
	if err != nil {
		t.Fatal(err)
	}
	if q.From != 1767225600000000000 || q.To != 1767225660000000000 || q.Series != "cpu,host=a,region=eu" ||
		q.Prefix || len(q.Fields) != 2 || q.agg != model.AggAvg || q.Step != int64(10*time.Second) ||
		!q.GroupAll || q.Limit != 5 {
		t.Fatalf("%+v", q)
	}
	q, err = parseQuery(args("series=cpu*"), DefaultMaxQueryBuckets)
	if err != nil || q.Series != "cpu" || !q.Prefix || q.From != math.MinInt64 || q.To != math.MaxInt64 ||
		q.Limit != DefaultQueryLimit || q.agg != 0 {
		t.Fatalf("%+v %v", q, err)
	}
	for _, bad := range []string{
		"from=10&to=5", "from=x", "to=x", "agg=median", "agg=sum&step=0&from=0&to=1", "agg=sum&step=-5&from=0&to=1",
		"agg=sum&step=1s", "step=1s&from=0&to=1", "limit=0", "limit=1000001",
		"limit=x", "group=host", "series=cpu,h", "agg=sum&step=soon&from=0&to=1",
	} {
		if _, err := parseQuery(args(bad), DefaultMaxQueryBuckets); !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("%s: %v, want ErrInvalidQuery", bad, err)
		}
	}
	// A step making more buckets for one series than the cap allows for
	// all of them is refused before anything is read.
	if _, err := parseQuery(args("agg=sum&step=1ns&from=0&to=1001"), 1000); !errors.Is(err, partition.ErrTooManyBuckets) {
		t.Errorf("1001 buckets under a cap of 1000: %v, want ErrTooManyBuckets", err)
	}
	if _, err := parseQuery(args("agg=sum&step=1ns&from=0&to=1000"), 1000); err != nil {
		t.Errorf("1000 buckets under a cap of 1000: %v", err)
	}
}

func TestBucketCount(t *testing.T) {
	for _, tc := range []struct {
		from, to, step int64
		want           uint64
	}{
		{0, 10, 10, 1}, {0, 11, 10, 2}, {5, 15, 10, 2}, {-5, 5, 10, 2}, {-10, 0, 10, 1}, {3, 3, 10, 0},
		{math.MinInt64, math.MaxInt64, math.MaxInt64, 3},
	} {
		if got := bucketCount(tc.from, tc.to, tc.step); got != tc.want {
			t.Errorf("bucketCount(%d, %d, %d) = %d, want %d", tc.from, tc.to, tc.step, got, tc.want)
		}
	}
}

// TestAppendFloatMatchesStrconv checks appendFloat's decimal fast path
// against strconv's shortest form (what encoding/json and appendFloat's
// general path print) on values of up to 6 decimals, random floats and
// the edges of the fast path's range.
func TestAppendFloatMatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	check := func(f float64) {
		t.Helper()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return
		}
		want := strconv.FormatFloat(f, 'g', -1, 64)
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			want = strconv.FormatFloat(f, 'f', -1, 64)
		}
		if got := string(appendFloat(nil, f)); got != want {
			t.Fatalf("appendFloat(%v) = %s, strconv says %s", f, got, want)
		}
	}
	for _, f := range []float64{0.0001, -0.0001, 0.00011, 0.00009999, 999999.9999, -999999.9999, 999999.99995,
		1e6 - 0.5, 1e6 + 0.5, 0.1, 0.5, 61.42, -61.42, 12345.6789, 0.3, 1.0 / 3, 2.675, 1e-5, 5e-324} {
		check(f)
	}
	for range 200_000 {
		decimals := rng.Intn(7)
		x := rng.Int63n(2e10) - 1e10
		check(float64(x) / math.Pow(10, float64(decimals)))
		check(math.Float64frombits(rng.Uint64()))
		check((rng.Float64() - 0.5) * math.Pow(10, float64(rng.Intn(12)-4)))
	}
}

// TestAppendRawAnswerRepeatsSeries checks the copies of the escaped series
// and field names from the row before against escaping each row's, over
// rows whose series, field names and field counts change from row to row.
func TestAppendRawAnswerRepeatsSeries(t *testing.T) {
	series := []string{`cpu,host=a\ b`, "m\"q\n\xff", "plain", "plain"}
	names := []string{"v", "w\"x", "\xfey", "z"}
	rng := rand.New(rand.NewSource(5))
	var rows []model.Row
	for i := range 400 {
		var fields []model.Field
		for j := range names[:1+rng.Intn(len(names))] {
			name := names[j]
			if rng.Intn(5) == 0 {
				name = names[rng.Intn(len(names))] + "_"
			}
			fields = append(fields, model.Field{Name: name, Value: model.Float(float64(i) / 8)})
		}
		rows = append(rows, model.Row{Time: int64(i), Series: series[i/3%len(series)], Fields: fields})
	}
	var got struct {
		Rows []struct {
			Series string
			Fields map[string]float64
		}
	}
	out := appendRawAnswer(nil, rows, false)
	if err := json.Unmarshal(out, &got); err != nil || len(got.Rows) != len(rows) {
		t.Fatalf("%s: %v", out, err)
	}
	for i := range rows {
		want := strings.ToValidUTF8(rows[i].Series, "\ufffd")
		if got.Rows[i].Series != want {
			t.Fatalf("row %d: series %q, want %q", i, got.Rows[i].Series, want)
		}
		wantFields := map[string]float64{}
		for _, f := range rows[i].Fields {
			wantFields[strings.ToValidUTF8(f.Name, "\ufffd")] = f.Value.F
		}
		if !maps.Equal(got.Rows[i].Fields, wantFields) {
			t.Fatalf("row %d: fields %v, want %v", i, got.Rows[i].Fields, wantFields)
		}
	}
}

// BenchmarkAppendRawAnswer encodes the peer harness's series_select answer:
// 2,000 rows of one series and one field, values of two decimals.
func BenchmarkAppendRawAnswer(b *testing.B) {
	rows := make([]model.Row, 2000)
	rng := rand.New(rand.NewSource(1))
	v := 50.0
	for i := range rows {
		v = math.Round((v+rng.Float64()-0.5)*100) / 100
		rows[i] = model.Row{Time: 1796021159700000000 + int64(i)*330_000_000, Series: "cpu,host=host042,region=r2",
			Fields: []model.Field{{Name: "usage_user", Value: model.Float(v)}}}
	}
	buf := appendRawAnswer(nil, rows, false)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = appendRawAnswer(buf[:0], rows, false)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
}

// TestAppendRawAnswerTimes checks the rows' times, whose leading digits
// are copied from the row before when in the same second, against
// strconv over runs within a second, across seconds, and the edges.
func TestAppendRawAnswerTimes(t *testing.T) {
	times := []int64{math.MinInt64, -1e9, -1, 0, 1, 999_999_999, 1e9, 1e9 + 1, 1_999_999_999, 2e9,
		1796021159700000000, 1796021159700000001, 1796021159999999999, 1796021160000000000,
		math.MaxInt64 - 1, math.MaxInt64, 5, math.MaxInt64,
		// Seconds whose digits carry, grow by one, or jump by up to 999.
		9_999_999_999, 10_000_000_000, 99_999_999_999, 100_000_000_001, 1_099_000_000_000, 1_100_000_000_000,
		1_999_990_000_000_000_000, 2_000_000_998_000_000_000, 2_000_001_997_000_000_000, 2_000_002_996_999_999_999}
	rng := rand.New(rand.NewSource(9))
	at := int64(1796021159700000000)
	for range 5000 {
		at += rng.Int63n(700_000_000) // mostly under a second apart
		switch rng.Intn(50) {
		case 0:
			at = rng.Int63()
		case 1:
			at += rng.Int63n(1_200_000_000_000) // up to 1,200 s on
		}
		times = append(times, at)
	}
	rows := make([]model.Row, len(times))
	for i, tm := range times {
		rows[i] = model.Row{Time: tm, Series: "s", Fields: []model.Field{{Name: "v", Value: model.Int(1)}}}
	}
	out := appendRawAnswer(nil, rows, false)
	var got struct{ Rows []struct{ Time json.Number } }
	d := json.NewDecoder(bytes.NewReader(out))
	d.UseNumber()
	if err := d.Decode(&got); err != nil || len(got.Rows) != len(times) {
		t.Fatalf("%v: %d rows", err, len(got.Rows))
	}
	for i, tm := range times {
		if want := strconv.FormatInt(tm, 10); string(got.Rows[i].Time) != want {
			t.Fatalf("row %d: time %s, want %s (row before %d)", i, got.Rows[i].Time, want, times[max(i-1, 0)])
		}
	}
}

// FuzzParseQuery feeds parseQuery arbitrary query strings: it never
// panics, refuses what it refuses with an error of this package's kinds
// (a 4xx), and what it accepts is a query the readers can take: from not
// after to, a limit from 1 to MaxQueryLimit, a step only with an
// aggregate and then positive, over at most the cap's buckets. Run it
// beyond its seeds with go test ./http -run '^$' -fuzz FuzzParseQuery.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		"from=2026-01-01T00:00:00Z&to=1767225660000000000&series=cpu,region=eu,host=a&fields=a,,b&agg=avg&step=10s&group=none&limit=5",
		"series=cpu*", "from=10&to=5", "agg=sum&step=1ns&from=0&to=1001", "agg=sum&step=1ns&from=-9223372036854775808&to=9223372036854775807",
		"agg=first&step=9223372036854775807&from=-9223372036854775808&to=9223372036854775807&group=series",
		"series=cpu,host=a\\ b,region=x&fields=%20,x", "limit=1000000&from=1970-01-01T00:00:00.000000001Z",
	} {
		f.Add(s)
	}
	const maxBuckets = 1000
	f.Fuzz(func(t *testing.T, s string) {
		q, err := parseQuery(args(s), maxBuckets)
		if err != nil {
			if !errors.Is(err, ErrInvalidQuery) && !errors.Is(err, partition.ErrTooManyBuckets) {
				t.Fatalf("%q: %v, want ErrInvalidQuery or ErrTooManyBuckets", s, err)
			}
			return
		}
		if q.From > q.To || q.Limit < 1 || q.Limit > MaxQueryLimit || q.Step < 0 ||
			(q.Step > 0 && (q.agg == 0 || bucketCount(q.From, q.To, q.Step) > maxBuckets)) {
			t.Fatalf("%q accepted as %+v", s, q)
		}
	})
}
