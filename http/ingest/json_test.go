package ingest

import (
	"math"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/model"
)

type jsonCase struct {
	name string
	in   string
	want []model.Row
}

// okRow is a valid row object for building bodies.
const okRow = `{"time":1,"series":"cpu","fields":{"v":1}}`

var jsonValid = []jsonCase{
	{name: "basic", in: `[{"time": 100, "series": "cpu,host=a", "fields": {"v": 1.5}}]`,
		want: []model.Row{row(100, "cpu,host=a", "v", 1.5)}},
	{name: "all kinds", in: `[{"time":1,"series":"m","fields":{"f":1.5,"n":3,"neg":-7,"ok":true,"no":false,"s":"x","e":1e3,"z":0,"nz":-0.0}}]`,
		want: []model.Row{row(1, "m", "e", 1000.0, "f", 1.5, "n", 3, "neg", -7, "no", false, "nz", math.Copysign(0, -1), "ok", true, "s", "x", "z", 0)}},
	{name: "int limits and beyond", in: `[{"time":1,"series":"m","fields":{"a":-9223372036854775808,"b":9223372036854775807,"c":9223372036854775808,"d":3.0}}]`,
		want: []model.Row{row(1, "m", "a", int64(math.MinInt64), "b", int64(math.MaxInt64), "c", 9223372036854775808.0, "d", 3.0)}},
	{name: "time forms", in: `[
		{"time": "2024-05-01T12:00:00Z", "series": "m", "fields": {"v": 1}},
		{"time": "2024-05-01T14:00:00.123456789+02:00", "series": "m", "fields": {"v": 2}},
		{"time": "1714564800000000000", "series": "m", "fields": {"v": 3}},
		{"time": -5, "series": "m", "fields": {"v": 4}},
		{"time": 1.7e18, "series": "m", "fields": {"v": 5}},
		{"time": 12.50e1, "series": "m", "fields": {"v": 6}},
		{"time": "1970-01-01T00:00:00.5Z", "series": "m", "fields": {"v": 7}}]`,
		want: []model.Row{
			row(1714564800000000000, "m", "v", 1), row(1714564800123456789, "m", "v", 2),
			row(1714564800000000000, "m", "v", 3), row(-5, "m", "v", 4), row(1.7e18, "m", "v", 5),
			row(125, "m", "v", 6), row(5e8, "m", "v", 7)}},
	{name: "key order free", in: `[{"fields":{"v":1},"series":"m","time":2}]`,
		want: []model.Row{row(2, "m", "v", 1)}},
	{name: "string escapes", in: `[{"time":1,"series":"cpu,host=\u0061\"b","fields":{"a\"b":"l1\nl2\t\\ \/ \u00e9 \ud83d\ude00 \ud800x \u00E9\uD83D\uDE00 \ud83d\u0041"}}]`,
		want: []model.Row{row(1, `cpu,host=a"b`, `a"b`, "l1\nl2\t\\ / é 😀 \uFFFDx é😀 \uFFFDA")}},
	{name: "tags in any order", in: `[{"time":1,"series":"cpu,region=eu,host=a","fields":{"v":1}}]`,
		want: []model.Row{row(1, "cpu,host=a,region=eu", "v", 1)}},
	{name: "escaped series kept", in: `[{"time":1,"series":"my\\ cpu,b=x\\,y,a\\ k=1","fields":{"v":1}}]`,
		want: []model.Row{row(1, `my\ cpu,a\ k=1,b=x\,y`, "v", 1)}},
	{name: "repeated field orders", in: `[{"time":1,"series":"m","fields":{"b":1,"a":2}},{"time":2,"series":"m","fields":{"b":3,"a":4}},` +
		`{"time":3,"series":"m","fields":{"c":1,"a":2}}]`,
		want: []model.Row{row(1, "m", "a", 2, "b", 1), row(2, "m", "a", 4, "b", 3), row(3, "m", "a", 2, "c", 1)}},
	{name: "duplicate fields last wins", in: `[{"time":1,"series":"m","fields":{"v":1,"a":2,"v":"s"}}]`,
		want: []model.Row{row(1, "m", "a", 2, "v", "s")}},
	{name: "single object", in: ` {"time":1,"series":"m","fields":{"v":1}} `,
		want: []model.Row{row(1, "m", "v", 1)}},
	{name: "whitespace everywhere", in: "\n[ \t{ \"time\" : 1 ,\r\n \"series\" : \"m\" , \"fields\" : { \"v\" : true } } ,\n" + okRow + " ]\n",
		want: []model.Row{row(1, "m", "v", true), row(1, "cpu", "v", 1)}},
	{name: "many fields", in: `[{"time":1,"series":"m","fields":{` + jsonFields(20) + `}}]`,
		want: []model.Row{manyFieldsRow(20)}},
}

// jsonFields writes n int fields f00..f(n-1) in reverse order.
func jsonFields(n int) string {
	parts := make([]string, n)
	for i := range parts {
		j := n - 1 - i
		parts[i] = `"` + fieldName(j) + `":` + itoa(j)
	}
	return strings.Join(parts, ",")
}

func TestParseJSON(t *testing.T) {
	for _, tc := range jsonValid {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := ParseJSON([]byte(tc.in), nil)
			if err != nil {
				t.Fatalf("ParseJSON(%q): %v", tc.in, err)
			}
			checkRows(t, rows)
			if d := diffRows(rows, tc.want); d != "" {
				t.Fatalf("ParseJSON(%q): %s", tc.in, d)
			}
		})
	}
}

type jsonBadCase struct {
	name string
	in   string // one row object; the tests place it as row 2 / line 3
	err  error
	msg  string
}

// jsonBadRows are row objects that must fail, whatever the framing.
var jsonBadRows = []jsonBadCase{
	{name: "malformed", in: `{"time":1,"series":"m","fields":{"v":1}`, err: ErrSyntax, msg: "invalid JSON"},
	{name: "missing colon", in: `{"time" 1}`, err: ErrSyntax, msg: "expected ':'"},
	{name: "unquoted key", in: `{time:1}`, err: ErrSyntax, msg: "expected a string"},
	{name: "trailing comma", in: `{"time":1,"series":"m","fields":{"v":1},}`, err: ErrSyntax, msg: "expected a string"},
	{name: "bad literal", in: `{"time":1,"series":"m","fields":{"v":tru}}`, err: ErrSyntax, msg: "invalid literal"},
	{name: "bad number", in: `{"time":1,"series":"m","fields":{"v":01}}`, err: ErrSyntax, msg: "expected ','"},
	{name: "bad fraction", in: `{"time":1,"series":"m","fields":{"v":1.}}`, err: ErrSyntax, msg: "digit after '.'"},
	{name: "bad exponent", in: `{"time":1,"series":"m","fields":{"v":1e}}`, err: ErrSyntax, msg: "digit in the exponent"},
	{name: "plus number", in: `{"time":1,"series":"m","fields":{"v":+1}}`, err: ErrSyntax, msg: "expected a value"},
	{name: "invalid escape", in: `{"time":1,"series":"m\q","fields":{"v":1}}`, err: ErrSyntax, msg: `invalid escape "\\q"`},
	{name: "bad unicode escape", in: `{"time":1,"series":"m\u12","fields":{"v":1}}`, err: ErrSyntax, msg: `invalid \u escape`},
	{name: "control character", in: "{\"time\":1,\"series\":\"m\tx\",\"fields\":{\"v\":1}}", err: ErrSyntax, msg: "control character"},
	{name: "unterminated string", in: `{"time":1,"series":"m`, err: ErrSyntax, msg: "invalid JSON"},
	{name: "not an object", in: `[1]`, err: ErrSyntax, msg: "expected '{' to start a row object"},
	{name: "missing time", in: `{"series":"m","fields":{"v":1}}`, err: ErrMissingTime, msg: `missing "time"`},
	{name: "empty object", in: `{}`, err: model.ErrInvalidTime, msg: `missing "time"`},
	{name: "unparsable time", in: `{"time":"yesterday","series":"m","fields":{"v":1}}`, err: ErrTimeFormat, msg: `invalid "time": "yesterday"`},
	{name: "time not integer", in: `{"time":1.5,"series":"m","fields":{"v":1}}`, err: ErrTimeFormat, msg: "not an integer"},
	{name: "time bool", in: `{"time":true,"series":"m","fields":{"v":1}}`, err: ErrTimeFormat, msg: "RFC 3339"},
	{name: "time null", in: `{"time":null,"series":"m","fields":{"v":1}}`, err: ErrTimeFormat, msg: "RFC 3339"},
	{name: "time after 2262", in: `{"time":"2500-01-01T00:00:00Z","series":"m","fields":{"v":1}}`, err: ErrTimeRange, msg: "outside int64"},
	{name: "time 1e19", in: `{"time":1e19,"series":"m","fields":{"v":1}}`, err: ErrTimeRange, msg: "outside int64"},
	{name: "time integer beyond int64", in: `{"time":9223372036854775808,"series":"m","fields":{"v":1}}`, err: ErrTimeRange, msg: "outside int64"},
	{name: "time string beyond int64", in: `{"time":"-9223372036854775809","series":"m","fields":{"v":1}}`, err: model.ErrInvalidTime, msg: "outside int64"},
	{name: "empty series", in: `{"time":1,"series":"","fields":{"v":1}}`, err: model.ErrEmptySeries, msg: "empty series"},
	{name: "missing series", in: `{"time":1,"fields":{"v":1}}`, err: model.ErrEmptySeries, msg: `missing "series"`},
	{name: "series not a string", in: `{"time":1,"series":5,"fields":{"v":1}}`, err: model.ErrInvalidSeries, msg: "must be a string"},
	{name: "empty measurement", in: `{"time":1,"series":",a=b","fields":{"v":1}}`, err: model.ErrInvalidSeries, msg: "empty measurement"},
	{name: "duplicate tag", in: `{"time":1,"series":"m,a=1,a=2","fields":{"v":1}}`, err: model.ErrInvalidSeries, msg: "twice"},
	{name: "series with an unescaped '=' in a tag value", in: `{"time":1,"series":"m,a=x=y","fields":{"v":1}}`, err: model.ErrInvalidSeries, msg: "'='"},
	{name: "series too long", in: `{"time":1,"series":"` + longSeries + `","fields":{"v":1}}`, err: model.ErrSeriesTooLong, msg: "series too long"},
	{name: "NUL in series", in: `{"time":1,"series":"m\u0000","fields":{"v":1}}`, err: model.ErrInvalidSeries, msg: "NUL"},
	{name: "missing fields", in: `{"time":1,"series":"m"}`, err: model.ErrNoFields, msg: `missing "fields"`},
	{name: "empty fields", in: `{"time":1,"series":"m","fields":{}}`, err: model.ErrNoFields, msg: "no fields"},
	{name: "fields not an object", in: `{"time":1,"series":"m","fields":[1]}`, err: ErrSyntax, msg: "must be an object"},
	{name: "null field", in: `{"time":1,"series":"m","fields":{"v":null}}`, err: model.ErrUnsupportedType, msg: `field "v" is null: unsupported type`},
	{name: "object field", in: `{"time":1,"series":"m","fields":{"w":{"a":1}}}`, err: model.ErrUnsupportedType, msg: `field "w" is an object`},
	{name: "array field", in: `{"time":1,"series":"m","fields":{"x":[1]}}`, err: model.ErrUnsupportedType, msg: `field "x" is an array`},
	{name: "float overflow", in: `{"time":1,"series":"m","fields":{"v":1e400}}`, err: ErrValueRange, msg: "out of range"},
	{name: "empty field name", in: `{"time":1,"series":"m","fields":{"":1}}`, err: model.ErrInvalidField, msg: "empty field name"},
	{name: "too many fields", in: `{"time":1,"series":"m","fields":{` + jsonFields(model.MaxFields+1) + `}}`, err: model.ErrTooManyFields, msg: "too many fields"},
	{name: "string too long", in: `{"time":1,"series":"m","fields":{"s":"` + longString + `"}}`, err: model.ErrStringTooLong, msg: "string field too long"},
	{name: "unknown key", in: `{"tme":1,"series":"m","fields":{"v":1}}`, err: ErrUnknownKey, msg: `unknown key "tme"`},
	{name: "repeated key", in: `{"time":1,"time":2,"series":"m","fields":{"v":1}}`, err: ErrUnknownKey, msg: `"time" given twice`},
}

func TestParseJSONErrors(t *testing.T) {
	for _, tc := range jsonBadRows {
		t.Run(tc.name, func(t *testing.T) {
			in := "[" + okRow + ",\n" + tc.in + "," + okRow + "]"
			prev := []model.Row{row(9, "keep", "v", 1.0)}
			rows, err := ParseJSON([]byte(in), prev)
			if err == nil {
				t.Fatalf("ParseJSON(%q) = %s, want an error", in, fmtRows(rows))
			}
			checkErr(t, err, 0, 2, tc.err, "row 2: ")
			checkErr(t, err, 0, 2, tc.err, tc.msg)
			if len(rows) != 1 || rows[0].Series != "keep" {
				t.Errorf("on error the rows were not truncated to their original length: %s", fmtRows(rows))
			}
		})
	}
}

// TestParseJSONFraming covers faults outside the row objects.
func TestParseJSONFraming(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		row  int
		err  error
		msg  string
	}{
		{name: "empty body", in: "", err: ErrNoRows, msg: "no rows"},
		{name: "blank body", in: " \n\t", err: ErrNoRows, msg: "no rows"},
		{name: "empty array", in: " [ ] ", err: ErrNoRows, msg: "no rows"},
		{name: "not an array", in: `"x"`, err: ErrSyntax, msg: `invalid JSON at offset 0: expected '[' or '{', found "\""`},
		{name: "missing comma after row 2", in: "[" + okRow + "," + okRow + " " + okRow + "]", row: 2, err: ErrSyntax,
			msg: "row 2: invalid JSON at offset 87: expected ',' or ']' after the row"},
		{name: "unterminated array", in: "[" + okRow, row: 1, err: ErrSyntax, msg: "unexpected end of input"},
		{name: "leading comma", in: "[," + okRow + "]", row: 1, err: ErrSyntax, msg: "expected '{'"},
		{name: "trailing comma", in: "[" + okRow + ",]", row: 2, err: ErrSyntax, msg: "expected '{'"},
		{name: "data after the array", in: "[" + okRow + "] x", err: ErrSyntax, msg: "unexpected \"x\" after the array"},
		{name: "data after the object", in: okRow + okRow, row: 1, err: ErrSyntax, msg: "after the row object"},
		{name: "data after empty array", in: "[]]", err: ErrSyntax, msg: "after the array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := ParseJSON([]byte(tc.in), nil)
			if err == nil {
				t.Fatalf("ParseJSON(%q) = %s, want an error", tc.in, fmtRows(rows))
			}
			checkErr(t, err, 0, tc.row, tc.err, tc.msg)
		})
	}
}

var ndjsonValid = []jsonCase{
	{name: "three rows, blank lines, CRLF", in: "\n" + okRow + "\r\n  \r\n" + `{"time":"2","series":"b,y=1,x=2","fields":{"v":2.5}}` + "\n\n" + okRow,
		want: []model.Row{row(1, "cpu", "v", 1), row(2, "b,x=2,y=1", "v", 2.5), row(1, "cpu", "v", 1)}},
	{name: "trailing newline", in: okRow + "\n",
		want: []model.Row{row(1, "cpu", "v", 1)}},
	{name: "escaped newline in string", in: `{"time":1,"series":"m","fields":{"s":"a\nb"}}`,
		want: []model.Row{row(1, "m", "s", "a\nb")}},
}

func TestParseNDJSON(t *testing.T) {
	for _, tc := range ndjsonValid {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := ParseNDJSON([]byte(tc.in), nil)
			if err != nil {
				t.Fatalf("ParseNDJSON(%q): %v", tc.in, err)
			}
			checkRows(t, rows)
			if d := diffRows(rows, tc.want); d != "" {
				t.Fatalf("ParseNDJSON(%q): %s", tc.in, d)
			}
		})
	}
}

func TestParseNDJSONErrors(t *testing.T) {
	for _, tc := range jsonBadRows {
		if strings.HasPrefix(tc.in, "[") {
			continue // an array is not a row line; covered below
		}
		t.Run(tc.name, func(t *testing.T) {
			in := okRow + "\n\n" + tc.in + "\n" + okRow
			prev := []model.Row{row(9, "keep", "v", 1.0)}
			rows, err := ParseNDJSON([]byte(in), prev)
			if err == nil {
				t.Fatalf("ParseNDJSON(%q) = %s, want an error", in, fmtRows(rows))
			}
			checkErr(t, err, 3, 0, tc.err, "line 3: ")
			checkErr(t, err, 3, 0, tc.err, tc.msg)
			if len(rows) != 1 || rows[0].Series != "keep" {
				t.Errorf("on error the rows were not truncated to their original length: %s", fmtRows(rows))
			}
		})
	}
	for _, tc := range []struct {
		name string
		in   string
		line int
		err  error
		msg  string
	}{
		{name: "empty body", in: "", err: ErrNoRows, msg: "no rows"},
		{name: "blank lines only", in: "\n \r\n\t\n", err: ErrNoRows, msg: "no rows"},
		{name: "array line", in: okRow + "\n[" + okRow + "]", line: 2, err: ErrSyntax, msg: "line 2: invalid JSON at column 1: expected '{'"},
		{name: "two objects on a line", in: okRow + "\n" + okRow + "\n" + okRow + " " + okRow, line: 3, err: ErrSyntax,
			msg: "line 3: invalid JSON at column 44: unexpected \"{\" after the row object"},
		{name: "object split over lines", in: "{\"time\":1,\n\"series\":\"m\",\"fields\":{\"v\":1}}", line: 1, err: ErrSyntax, msg: "expected a string"},
		{name: "raw newline in string", in: "{\"time\":1,\"series\":\"m\",\"fields\":{\"s\":\"a\nb\"}}", line: 1, err: ErrSyntax, msg: "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := ParseNDJSON([]byte(tc.in), nil)
			if err == nil {
				t.Fatalf("ParseNDJSON(%q) = %s, want an error", tc.in, fmtRows(rows))
			}
			checkErr(t, err, tc.line, 0, tc.err, tc.msg)
		})
	}
}

// TestParseJSONManyRows crosses several field slab chunks and checks that
// strings with and without escapes come out right.
func TestParseJSONManyRows(t *testing.T) {
	var arr, nd strings.Builder
	var want []model.Row
	arr.WriteByte('[')
	for i := 0; i < 3000; i++ {
		n := 1 + i%5
		obj := `{"time":` + itoa(i) + `,"series":"m\u0021","fields":{` + jsonFields(n) + `}}`
		if i > 0 {
			arr.WriteByte(',')
		}
		arr.WriteString(obj)
		nd.WriteString(obj + "\n")
		r := manyFieldsRow(n)
		r.Time, r.Series = int64(i), "m!"
		want = append(want, r)
	}
	arr.WriteByte(']')
	for name, parse := range map[string]func([]byte, []model.Row) ([]model.Row, error){"array": ParseJSON, "ndjson": ParseNDJSON} {
		body := arr.String()
		if name == "ndjson" {
			body = nd.String()
		}
		rows, err := parse([]byte(body), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkRows(t, rows)
		if d := diffRows(rows, want); d != "" {
			t.Fatalf("%s: %s", name, d)
		}
	}
}
