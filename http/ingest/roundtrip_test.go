package ingest

import (
	"encoding/json"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tsdb/tsdb/model"
)

func TestAppendLineProtocol(t *testing.T) {
	rows := []model.Row{
		row(1, `my\ cpu,host=a\,b`, "f", 1.5, "i", -3, "b", true, "c", false, `n a,m=e\`, `say "hi" \ now`),
		row(-2, "json,host=a b", "v", 1e6),
		{Time: 3, Series: "bad", Fields: []model.Field{{Name: "x"}, {Name: "v", Value: model.Float(2)}}},
	}
	got := string(AppendLineProtocol([]byte("# head\n"), rows))
	want := "# head\n" +
		`my\ cpu,host=a\,b f=1.5,i=-3i,b=true,c=false,n\ a\,m\=e\\="say \"hi\" \\ now" 1` + "\n" +
		`json,host=a\ b v=1e+06 -2` + "\n" +
		"bad v=2 3\n"
	if got != want {
		t.Fatalf("AppendLineProtocol:\n got  %q\n want %q", got, want)
	}
}

// seriesRunes are the bytes series components are drawn from: plain
// letters and everything line protocol escapes.
var seriesRunes = []rune{'a', 'b', 'c', 'z', 'A', '0', '9', '_', '-', '.', ',', '=', ' ', '\\', '"', '\'', '#', 'é', '😀', '\t', '\r'}

// nameRunes adds nothing that a field name cannot hold in line protocol (a
// line end).
var nameRunes = seriesRunes

// stringRunes may hold anything, line ends included.
var stringRunes = append(slices.Clone(seriesRunes), '\n', '\x00', '}', '{')

func randString(rng *rand.Rand, alphabet []rune, minLen, maxLen int) string {
	n := minLen + rng.Intn(maxLen-minLen+1)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteRune(alphabet[rng.Intn(len(alphabet))])
	}
	return b.String()
}

// randComponent returns a measurement, tag key or tag value that
// model.BuildSeries escapes faithfully. BuildSeries does not escape
// backslashes, so a backslash before ',', '=' or ' ' (or at the end) would
// read back differently; those become '_'. A leading '#', tab or CR would
// make the line a comment or be skipped as blank.
func randComponent(rng *rand.Rand) string {
	b := []byte(randString(rng, seriesRunes, 1, 8))
	for i := range b {
		if b[i] == '\\' && (i+1 == len(b) || strings.IndexByte(",= \\", b[i+1]) >= 0) {
			b[i] = '_'
		}
	}
	if b[0] == '#' || b[0] == '\t' || b[0] == '\r' {
		b[0] = 'm'
	}
	return string(b)
}

func randValue(rng *rand.Rand) model.Value {
	switch rng.Intn(4) {
	case 0:
		for {
			var f float64
			switch rng.Intn(4) {
			case 0:
				f = math.Float64frombits(rng.Uint64())
			case 1:
				f = float64(rng.Intn(2000) - 1000)
			case 2:
				f = []float64{0, math.Copysign(0, -1), math.MaxFloat64, -math.SmallestNonzeroFloat64, 1e-310}[rng.Intn(5)]
			default:
				f = rng.NormFloat64() * 1e3
			}
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return model.Float(f)
			}
		}
	case 1:
		switch rng.Intn(3) {
		case 0:
			return model.Int(int64(rng.Uint64()))
		case 1:
			return model.Int([]int64{math.MinInt64, math.MaxInt64, 0, -1}[rng.Intn(4)])
		}
		return model.Int(int64(rng.Intn(200) - 100))
	case 2:
		return model.Bool(rng.Intn(2) == 1)
	}
	return model.String(randString(rng, stringRunes, 0, 20))
}

// randRows returns n random valid rows, canonical and normalized, whose
// series, field names and floats line protocol can represent.
func randRows(t *testing.T, rng *rand.Rand, n int) []model.Row {
	rows := make([]model.Row, 0, n)
	for len(rows) < n {
		var tags []model.Tag
		for i := rng.Intn(5); i > 0; i-- {
			tags = append(tags, model.Tag{Key: randComponent(rng), Value: randComponent(rng)})
		}
		series, err := model.BuildSeries(randComponent(rng), tags)
		if err != nil {
			continue // a tag key drawn twice
		}
		if c, err := model.CanonicalSeries(series); err != nil || c != series {
			t.Fatalf("model.BuildSeries(%v) = %q is not canonical: %q, %v", tags, series, c, err)
		}
		r := model.Row{Time: int64(rng.Uint64()), Series: series}
		if rng.Intn(4) == 0 {
			r.Time = int64(rng.Intn(1000) - 500)
		}
		for i := 1 + rng.Intn(6); i > 0; i-- {
			r.Fields = append(r.Fields, model.Field{Name: randString(rng, nameRunes, 1, 6), Value: randValue(rng)})
		}
		r.Normalize()
		if err := r.Validate(); err != nil {
			t.Fatalf("generated row does not validate: %v", err)
		}
		rows = append(rows, r)
	}
	return rows
}

func seed(t *testing.T) int64 {
	s := time.Now().UnixNano()
	if v := testingSeed(); v != 0 {
		s = v
	}
	t.Logf("seed %d (rerun with INGEST_SEED=%d)", s, s)
	return s
}

// TestLineProtocolRoundTrip: random rows → AppendLineProtocol →
// ParseLineProtocol gives the same rows.
func TestLineProtocolRoundTrip(t *testing.T) {
	s := seed(t)
	rng := rand.New(rand.NewSource(s))
	for iter := 0; iter < 200; iter++ {
		want := randRows(t, rng, 1+rng.Intn(20))
		body := AppendLineProtocol(nil, want)
		got, err := ParseLineProtocol(body, Nanosecond, 0, nil)
		if err != nil {
			t.Fatalf("seed %d: ParseLineProtocol(%q): %v", s, body, err)
		}
		checkRows(t, got)
		if d := diffRows(got, want); d != "" {
			t.Fatalf("seed %d: round trip of %q: %s", s, body, d)
		}
	}
}

// appendJSONRows writes rows as JSON row objects, one per line, floats
// always with a '.' or exponent so that they stay floats.
func appendJSONRows(dst []byte, rows []model.Row) []byte {
	for _, r := range rows {
		dst = append(dst, `{"time":`...)
		dst = strconv.AppendInt(dst, r.Time, 10)
		dst = append(dst, `,"series":`...)
		dst = appendJSONString(dst, r.Series)
		dst = append(dst, `,"fields":{`...)
		for i, f := range r.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, f.Name)
			dst = append(dst, ':')
			switch f.Value.Kind {
			case model.KindFloat:
				n := len(dst)
				dst = strconv.AppendFloat(dst, f.Value.F, 'g', -1, 64)
				if !strings.ContainsAny(string(dst[n:]), ".e") {
					dst = append(dst, ".0"...)
				}
			case model.KindInt:
				dst = strconv.AppendInt(dst, f.Value.I, 10)
			case model.KindBool:
				dst = strconv.AppendBool(dst, f.Value.I != 0)
			case model.KindString:
				dst = appendJSONString(dst, f.Value.S)
			}
		}
		dst = append(dst, "}}\n"...)
	}
	return dst
}

func appendJSONString(dst []byte, s string) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return append(dst, b...)
}

// TestJSONRoundTrip: random rows → JSON array and NDJSON → ParseJSON and
// ParseNDJSON give the same rows.
func TestJSONRoundTrip(t *testing.T) {
	s := seed(t)
	rng := rand.New(rand.NewSource(s))
	for iter := 0; iter < 200; iter++ {
		want := randRows(t, rng, 1+rng.Intn(20))
		for _, r := range want {
			for _, f := range r.Fields {
				if !utf8.ValidString(f.Name) || !utf8.ValidString(f.Value.S) {
					t.Fatal("generator made invalid UTF-8")
				}
			}
		}
		nd := appendJSONRows(nil, want)
		got, err := ParseNDJSON(nd, nil)
		if err != nil {
			t.Fatalf("seed %d: ParseNDJSON(%q): %v", s, nd, err)
		}
		checkRows(t, got)
		if d := diffRows(got, want); d != "" {
			t.Fatalf("seed %d: NDJSON round trip of %q: %s", s, nd, d)
		}
		arr := "[" + strings.ReplaceAll(strings.TrimSuffix(string(nd), "\n"), "\n", ",") + "]"
		got, err = ParseJSON([]byte(arr), nil)
		if err != nil {
			t.Fatalf("seed %d: ParseJSON(%q): %v", s, arr, err)
		}
		if d := diffRows(got, want); d != "" {
			t.Fatalf("seed %d: JSON round trip of %q: %s", s, arr, d)
		}
	}
}
