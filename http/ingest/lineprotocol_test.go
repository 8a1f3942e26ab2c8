package ingest

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/model"
)

const testNow = 1_700_000_000_000_000_000

type lpCase struct {
	name string
	in   string
	prec Precision
	want []model.Row
}

var lpValid = []lpCase{
	{name: "basic", in: "cpu,host=a v=1.5 100\n",
		want: []model.Row{row(100, "cpu,host=a", "v", 1.5)}},
	{name: "measurement only, no newline", in: "cpu v=1 1",
		want: []model.Row{row(1, "cpu", "v", 1.0)}},
	{name: "all kinds", in: `m f=1.5,i=-12i,u=12u,b=t,s="hi" 1`,
		want: []model.Row{row(1, "m", "b", true, "f", 1.5, "i", -12, "s", "hi", "u", 12)}},
	{name: "bools", in: "m a=t,b=T,c=true,d=True,e=TRUE,f=f,g=F,h=false,i=False,j=FALSE 1",
		want: []model.Row{row(1, "m", "a", true, "b", true, "c", true, "d", true, "e", true,
			"f", false, "g", false, "h", false, "i", false, "j", false)}},
	{name: "floats", in: "m a=-3e5,b=.5,c=1.,d=1E+2,e=-0,f=1e-400,g=007 1",
		want: []model.Row{row(1, "m", "a", -3e5, "b", .5, "c", 1.0, "d", 100.0, "e", math.Copysign(0, -1), "f", 0.0, "g", 7.0)}},
	{name: "integer limits", in: "m a=-9223372036854775808i,b=9223372036854775807i,c=9223372036854775807u,d=0u 1",
		want: []model.Row{row(1, "m", "a", int64(math.MinInt64), "b", int64(math.MaxInt64), "c", int64(math.MaxInt64), "d", 0)}},
	{name: "escapes", in: `my\ cpu,ho\,st=a\ b\=c fi\ eld\=x="say \"hi\" \\ \n",b\\=1i 1`,
		want: []model.Row{row(1, `my\ cpu,ho\,st=a\ b\=c`, `b\`, 1, "fi eld=x", `say "hi" \ \n`)}},
	{name: "backslash before other bytes is literal, doubled in the key", in: `c\d,t\x=v\y f\g="a\b" 1`,
		want: []model.Row{row(1, `c\\d,t\\x=v\\y`, `f\g`, `a\b`)}},
	{name: "same series as JSON writes it", in: "cpu,b=1,a=x\\ y v=1 1",
		want: []model.Row{row(1, `cpu,a=x\ y,b=1`, "v", 1.0)}},
	{name: "measurement with equals sign", in: `a=b,t=1 v=1 1`,
		want: []model.Row{row(1, "a=b,t=1", "v", 1.0)}},
	{name: "comma and space in string", in: `m s="a, b=c d",v=1 1`,
		want: []model.Row{row(1, "m", "s", "a, b=c d", "v", 1.0)}},
	{name: "string spanning lines", in: "m s=\"a\nb\" 1\nm v=1 2\n",
		want: []model.Row{row(1, "m", "s", "a\nb"), row(2, "m", "v", 1.0)}},
	{name: "empty string", in: `m s="" 1`,
		want: []model.Row{row(1, "m", "s", "")}},
	{name: "precision s", in: "m v=1 5", prec: Second,
		want: []model.Row{row(5e9, "m", "v", 1.0)}},
	{name: "precision ms", in: "m v=1 5", prec: Millisecond,
		want: []model.Row{row(5e6, "m", "v", 1.0)}},
	{name: "precision us", in: "m v=1 -5", prec: Microsecond,
		want: []model.Row{row(-5e3, "m", "v", 1.0)}},
	{name: "precision s at the int64 edge", in: "m v=1 9223372036\nm v=1 -9223372036", prec: Second,
		want: []model.Row{row(9223372036e9, "m", "v", 1.0), row(-9223372036e9, "m", "v", 1.0)}},
	{name: "missing timestamp takes now", in: "m v=1\nm v=2 \nm v=3\r\n",
		want: []model.Row{row(testNow, "m", "v", 1.0), row(testNow, "m", "v", 2.0), row(testNow, "m", "v", 3.0)}},
	{name: "missing timestamp ignores precision", in: "m v=1", prec: Second,
		want: []model.Row{row(testNow, "m", "v", 1.0)}},
	{name: "comments and blank lines", in: "# a comment\n\n   \n\t\ncpu v=1 1\n  # indented comment\r\n\r\n#last",
		want: []model.Row{row(1, "cpu", "v", 1.0)}},
	{name: "CRLF", in: "cpu v=1 1\r\ncpu v=2i\r\ncpu s=\"x\"\r\n",
		want: []model.Row{row(1, "cpu", "v", 1.0), row(testNow, "cpu", "v", 2), row(testNow, "cpu", "s", "x")}},
	{name: "extra spaces", in: "  cpu,a=1   v=1    2   \n",
		want: []model.Row{row(2, "cpu,a=1", "v", 1.0)}},
	{name: "tags in any order", in: "cpu,region=eu,host=a,az=1 v=1 1",
		want: []model.Row{row(1, "cpu,az=1,host=a,region=eu", "v", 1.0)}},
	{name: "escaped tag keys sorted unescaped", in: `cpu,b\ x=1,a\,y=2 v=1 1`,
		want: []model.Row{row(1, `cpu,a\,y=2,b\ x=1`, "v", 1.0)}},
	{name: "duplicate fields last wins", in: "m v=1,v=2i,a=3,v=\"s\" 1",
		want: []model.Row{row(1, "m", "a", 3.0, "v", "s")}},
	{name: "repeated field orders", in: "m b=1,a=2,b=3 1\nm b=4,a=5,b=6 2\nm c=1,a=2 3\nm b=1,a=2 4\nm b=1,a=2 5\nm a=1,b=2 6",
		want: []model.Row{row(1, "m", "a", 2.0, "b", 3.0), row(2, "m", "a", 5.0, "b", 6.0), row(3, "m", "a", 2.0, "c", 1.0),
			row(4, "m", "a", 2.0, "b", 1.0), row(5, "m", "a", 2.0, "b", 1.0), row(6, "m", "a", 1.0, "b", 2.0)}},
	{name: "many fields unsorted", in: "m " + manyFields(20, true) + " 1",
		want: []model.Row{manyFieldsRow(20)}},
	{name: "several lines", in: "a v=1 1\nb v=2 2\nc v=3 3",
		want: []model.Row{row(1, "a", "v", 1.0), row(2, "b", "v", 2.0), row(3, "c", "v", 3.0)}},
	{name: "unicode", in: "température,ville=Zürich °C=21.5 1",
		want: []model.Row{row(1, "température,ville=Zürich", "°C", 21.5)}},
}

// manyFields writes n fields f00..f(n-1), in reverse order when reverse.
func manyFields(n int, reverse bool) string {
	parts := make([]string, n)
	for i := range parts {
		j := i
		if reverse {
			j = n - 1 - i
		}
		parts[i] = fieldName(j) + "=" + itoa(j) + "i"
	}
	return strings.Join(parts, ",")
}

func manyFieldsRow(n int) model.Row {
	r := model.Row{Time: 1, Series: "m"}
	for i := 0; i < n; i++ {
		r.Fields = append(r.Fields, model.Field{Name: fieldName(i), Value: model.Int(int64(i))})
	}
	return r
}

func fieldName(i int) string {
	return "f" + string(rune('0'+i/1000%10)) + string(rune('0'+i/100%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestParseLineProtocol(t *testing.T) {
	for _, tc := range lpValid {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := ParseLineProtocol([]byte(tc.in), tc.prec, testNow, nil)
			if err != nil {
				t.Fatalf("ParseLineProtocol(%q): %v", tc.in, err)
			}
			checkRows(t, rows)
			if d := diffRows(rows, tc.want); d != "" {
				t.Fatalf("ParseLineProtocol(%q): %s", tc.in, d)
			}
		})
	}
}

type lpBadCase struct {
	name string
	in   string
	prec Precision
	line int
	err  error
	msg  string
}

var (
	longSeries = "cpu,host=" + strings.Repeat("h", model.MaxSeriesLen)
	longString = strings.Repeat("s", model.MaxStringLen+1)
	longName   = strings.Repeat("n", model.MaxFieldNameLen+1)
)

var lpBad = []lpBadCase{
	{name: "invalid value on line 3", in: "cpu v=1 1\ncpu v=2 2\ncpu v=abc 3\n", line: 3, err: ErrInvalidValue,
		msg: `line 3: invalid field value "abc" for field "v"`},
	{name: "malformed line 2 after comment", in: "# c\ncpu v=1\r\ncpu\n", line: 3, err: model.ErrNoFields, msg: "missing fields"},
	{name: "no fields", in: "cpu", line: 1, err: model.ErrNoFields, msg: "missing fields"},
	{name: "no fields after key", in: "cpu,host=a   \r\n", line: 1, err: model.ErrNoFields, msg: "missing fields"},
	{name: "field without equals", in: "cpu v 1", line: 1, err: ErrSyntax, msg: `missing '=' after field name "v"`},
	{name: "trailing comma in fields", in: "cpu v=1, 1", line: 1, err: ErrSyntax, msg: "missing '='"},
	{name: "empty field name", in: "cpu =1", line: 1, err: model.ErrInvalidField, msg: "empty field name"},
	{name: "field name too long", in: "cpu " + longName + "=1", line: 1, err: model.ErrInvalidField, msg: "field name"},
	{name: "missing value", in: "cpu v=", line: 1, err: ErrInvalidValue, msg: `invalid field value "" for field "v"`},
	{name: "missing value before comma", in: "cpu v=,w=1", line: 1, err: ErrInvalidValue, msg: `for field "v"`},
	{name: "bad bool", in: "cpu v=tru", line: 1, err: ErrInvalidValue, msg: `"tru"`},
	{name: "bad int", in: "cpu v=1.5i", line: 1, err: ErrInvalidValue, msg: `"1.5i"`},
	{name: "int overflow", in: "cpu v=9223372036854775808i", line: 1, err: ErrValueRange, msg: "out of range"},
	{name: "uint above MaxInt64", in: "cpu v=9223372036854775808u", line: 1, err: ErrValueRange, msg: "out of range"},
	{name: "negative uint", in: "cpu v=-1u", line: 1, err: ErrInvalidValue, msg: `"-1u"`},
	{name: "float overflow", in: "cpu v=1e400", line: 1, err: ErrValueRange, msg: "out of range"},
	{name: "NaN", in: "cpu v=NaN", line: 1, err: ErrInvalidValue, msg: `"NaN"`},
	{name: "inf", in: "cpu v=inf", line: 1, err: ErrInvalidValue, msg: `"inf"`},
	{name: "hex float", in: "cpu v=0x10", line: 1, err: ErrInvalidValue, msg: `"0x10"`},
	{name: "underscore", in: "cpu v=1_000", line: 1, err: ErrInvalidValue, msg: `"1_000"`},
	{name: "plus sign", in: "cpu v=+1", line: 1, err: ErrInvalidValue, msg: `"+1"`},
	{name: "bare exponent", in: "cpu v=1e", line: 1, err: ErrInvalidValue, msg: `"1e"`},
	{name: "unterminated string", in: "cpu v=1 1\ncpu s=\"abc 2\n", line: 2, err: ErrSyntax, msg: "unterminated string"},
	{name: "text after string", in: `cpu s="a"b 1`, line: 1, err: ErrInvalidValue, msg: `unexpected "b"`},
	{name: "lone carriage return", in: "cpu v=1\rx 1", line: 1, err: ErrInvalidValue, msg: `unexpected "\r"`},
	{name: "bad timestamp", in: "cpu v=1 1\ncpu v=1 abc", line: 2, err: ErrTimeFormat, msg: `invalid timestamp "abc"`},
	{name: "float timestamp", in: "cpu v=1 1.5", line: 1, err: model.ErrInvalidTime, msg: `invalid timestamp "1.5"`},
	{name: "timestamp beyond int64", in: "cpu v=1 99999999999999999999", line: 1, err: ErrTimeRange, msg: "outside int64"},
	{name: "timestamp times precision overflows", in: "cpu v=1 1\ncpu v=1 9999999999999", prec: Second, line: 2,
		err: ErrTimeRange, msg: `line 2: timestamp "9999999999999" with precision s is outside int64 nanoseconds`},
	{name: "negative timestamp overflow", in: "cpu v=1 -9223372037", prec: Second, line: 1, err: model.ErrInvalidTime, msg: "outside int64"},
	{name: "text after timestamp", in: "cpu v=1 1 2", line: 1, err: ErrSyntax, msg: `unexpected "2" after the timestamp`},
	{name: "empty measurement", in: ",host=a v=1", line: 1, err: model.ErrInvalidSeries, msg: "empty measurement"},
	{name: "empty tag key", in: "cpu,=a v=1", line: 1, err: model.ErrInvalidSeries, msg: "empty tag key"},
	{name: "empty tag value", in: "cpu,host= v=1", line: 1, err: model.ErrInvalidSeries, msg: "empty tag key or value"},
	{name: "tag without equals", in: "cpu,host v=1", line: 1, err: model.ErrInvalidSeries, msg: "has no '='"},
	{name: "trailing comma in tags", in: "cpu, v=1", line: 1, err: model.ErrInvalidSeries, msg: "has no '='"},
	{name: "unescaped equals in tag value", in: "cpu,a=b=c v=1", line: 1, err: model.ErrInvalidSeries, msg: "unescaped '='"},
	{name: "duplicate tag", in: "cpu,a=1,a=2 v=1", line: 1, err: model.ErrInvalidSeries, msg: "appears twice"},
	{name: "series too long", in: "cpu v=1 1\n" + longSeries + " v=1 1", line: 2, err: model.ErrSeriesTooLong, msg: "line 2: series too long"},
	{name: "unsorted series too long", in: longSeries + ",a=1 v=1 1", line: 1, err: model.ErrSeriesTooLong, msg: "series too long"},
	{name: "NUL in series", in: "cpu\x00 v=1", line: 1, err: model.ErrInvalidSeries, msg: "NUL"},
	{name: "too many fields", in: "m " + manyFields(model.MaxFields+1, false) + " 1", line: 1, err: model.ErrTooManyFields, msg: "too many fields"},
	{name: "string too long", in: `m s="` + longString + `" 1`, line: 1, err: model.ErrStringTooLong, msg: "string field too long"},
	{name: "empty body", in: "", line: 0, err: ErrNoRows, msg: "no points"},
	{name: "comments only", in: "# a\n\n# b\n", line: 0, err: ErrNoRows, msg: "no points"},
	{name: "line counted past multi-line string", in: "m s=\"a\nb\nc\" 1\nm v=x", line: 4, err: ErrInvalidValue, msg: "line 4:"},
}

func TestParseLineProtocolErrors(t *testing.T) {
	for _, tc := range lpBad {
		t.Run(tc.name, func(t *testing.T) {
			prev := []model.Row{row(9, "keep", "v", 1.0)}
			rows, err := ParseLineProtocol([]byte(tc.in), tc.prec, testNow, prev)
			if err == nil {
				t.Fatalf("ParseLineProtocol(%q) = %s, want an error", tc.in, fmtRows(rows))
			}
			checkErr(t, err, tc.line, 0, tc.err, tc.msg)
			if len(rows) != 1 || rows[0].Series != "keep" {
				t.Errorf("on error the rows were not truncated to their original length: %s", fmtRows(rows))
			}
		})
	}
}

func TestParseLineProtocolAppends(t *testing.T) {
	rows := []model.Row{row(9, "keep", "v", 1.0)}
	rows, err := ParseLineProtocol([]byte("a v=1 1\nb v=2 2"), Nanosecond, 0, rows)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Row{row(9, "keep", "v", 1.0), row(1, "a", "v", 1.0), row(2, "b", "v", 2.0)}
	if d := diffRows(rows, want); d != "" {
		t.Fatal(d)
	}
	// Appending to a row's Fields must not clobber the next row.
	rows[1].Fields = append(rows[1].Fields, model.Field{Name: "w"})
	if rows[2].Fields[0].Name != "v" {
		t.Fatal("appending to one row's Fields overwrote the next row")
	}
}

func TestParseLineProtocolZeroCopy(t *testing.T) {
	body := []byte("cpu,host=a v=1,s=\"x\" 1\n")
	rows, err := ParseLineProtocol(body, Nanosecond, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	copy(body, "CPU")
	if rows[0].Series != "CPU,host=a" {
		t.Fatalf("series %q does not alias the body", rows[0].Series)
	}
}

func TestParseLineProtocolNegativePrecision(t *testing.T) {
	_, err := ParseLineProtocol([]byte("m v=1 1"), -1, 0, nil)
	checkErr(t, err, 0, 0, ErrPrecision, "not positive")
}

// TestParseLineProtocolManyRows crosses several field slab chunks.
func TestParseLineProtocolManyRows(t *testing.T) {
	var b strings.Builder
	var want []model.Row
	for i := 0; i < 5000; i++ {
		n := 1 + i%7
		b.WriteString("m ")
		b.WriteString(manyFields(n, i%2 == 0))
		b.WriteString(" 1\n")
		r := manyFieldsRow(n)
		want = append(want, r)
	}
	rows, err := ParseLineProtocol([]byte(b.String()), Nanosecond, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rows)
	if d := diffRows(rows, want); d != "" {
		t.Fatal(d)
	}
}

func TestParsePrecision(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Precision
	}{
		{"", Nanosecond}, {"n", Nanosecond}, {"ns", Nanosecond},
		{"u", Microsecond}, {"us", Microsecond}, {"µs", Microsecond},
		{"ms", Millisecond}, {"s", Second}, {"m", Minute}, {"h", Hour},
	} {
		got, err := ParsePrecision(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParsePrecision(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"x", "NS", "sec", "1"} {
		if _, err := ParsePrecision(in); !errors.Is(err, ErrPrecision) {
			t.Errorf("ParsePrecision(%q) error %v, want ErrPrecision", in, err)
		}
	}
	for p, want := range map[Precision]string{Nanosecond: "ns", Microsecond: "us", Millisecond: "ms", Second: "s",
		Minute: "m", Hour: "h", 7: "7ns"} {
		if p.String() != want {
			t.Errorf("Precision(%d).String() = %q, want %q", int64(p), p.String(), want)
		}
	}
}
