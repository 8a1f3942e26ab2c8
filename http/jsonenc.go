package http

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/tsdb/tsdb/model"
)

// appendRawAnswer writes {"rows":[...],"truncated":b} without reflection.
func appendRawAnswer(b []byte, rows []model.Row, truncated bool) []byte {
	b = append(b, `{"rows":[`...)
	// Where b holds what was escaped for the rows before: the series, and
	// each field's name with its colon. The rows of a query mostly repeat
	// them (one series, the same fields), and a copy is several times
	// cheaper than escaping again (appendString was a quarter of a
	// one-series answer's encoding).
	var series span
	var times timeDigits
	var namesArr [8]span
	names := namesArr[:0]
	// middle is where the row before wrote what follows its time up to
	// its one field's value (`,"series":"…","fields":{"name":`), when it
	// had one field: a row of the same series and field name copies it
	// whole (one series' raw points, the common answer).
	var middle span
	for i := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		r := &rows[i]
		b = append(b, `{"time":`...)
		b = times.append(b, r.Time)
		if middle.end > 0 && len(r.Fields) == 1 && r.Series == rows[i-1].Series && r.Fields[0].Name == rows[i-1].Fields[0].Name {
			b = append(b, b[middle.start:middle.end]...)
			b = append(appendValue(b, r.Fields[0].Value), "}}"...)
			continue
		}
		middle = span{start: len(b)}
		b = append(b, `,"series":`...)
		if i > 0 && r.Series == rows[i-1].Series {
			b = append(b, b[series.start:series.end]...)
		} else {
			series.start = len(b)
			b = appendString(b, r.Series)
			series.end = len(b)
		}
		b = append(b, `,"fields":{`...)
		for j := range r.Fields {
			if j > 0 {
				b = append(b, ',')
			}
			name := r.Fields[j].Name
			if i > 0 && j < len(rows[i-1].Fields) && rows[i-1].Fields[j].Name == name {
				// names[j] is the row before's (set for every field it has).
				b = append(b, b[names[j].start:names[j].end]...)
			} else {
				at := span{start: len(b)}
				b = append(appendString(b, name), ':')
				at.end = len(b)
				if j < len(names) {
					names[j] = at
				} else {
					names = append(names, at)
				}
			}
			if len(r.Fields) == 1 {
				middle.end = len(b)
			}
			b = appendValue(b, r.Fields[j].Value)
		}
		if len(r.Fields) != 1 {
			middle.end = 0
		}
		b = append(b, "}}"...)
	}
	b = append(b, `],"truncated":`...)
	b = strconv.AppendBool(b, truncated)
	return append(b, '}')
}

// span is where appendRawAnswer wrote something in its buffer.
type span struct{ start, end int }

// timeDigits writes the times of an answer's rows (appendRawAnswer) as
// strconv.AppendInt does. The rows of a query are mostly under a second
// apart, so a time's digits above its last nine are mostly those of the
// row before: they are copied from where it wrote them, and the last nine
// written by pairs.
type timeDigits struct {
	sec int64 // the seconds whose digits b holds at at; 0: none yet
	at  span
}

func (c *timeDigits) append(b []byte, t int64) []byte {
	if t < 1e9 {
		return strconv.AppendInt(b, t, 10) // before 1970-01-01T00:00:01Z: rare
	}
	sec, ns := t/1e9, uint32(t%1e9) // sec ≥ 1
	switch {
	case sec == c.sec:
		b = append(b, b[c.at.start:c.at.end]...)
	case c.sec > 0 && sec > c.sec && sec-c.sec < 1000:
		// A few seconds on (rows a second or so apart): the digits
		// before, with the difference added, carried leftwards.
		start := len(b)
		b = append(b, b[c.at.start:c.at.end]...)
		d, carry := sec-c.sec, int64(0)
		for i := len(b) - 1; (d > 0 || carry > 0) && i >= start; i-- {
			v := int64(b[i]-'0') + d%10 + carry
			b[i], d, carry = byte('0'+v%10), d/10, v/10
		}
		if d > 0 || carry > 0 { // one digit more
			b = strconv.AppendInt(b[:start], sec, 10)
		}
		c.sec, c.at = sec, span{start, len(b)}
	default:
		start := len(b)
		b = strconv.AppendInt(b, sec, 10)
		c.sec, c.at = sec, span{start, len(b)}
	}
	var d [9]byte
	for i := 7; i >= 1; i -= 2 {
		q := ns / 100
		r := ns - q*100
		d[i], d[i+1] = digitPairs[2*r], digitPairs[2*r+1]
		ns = q
	}
	d[0] = byte('0' + ns)
	return append(b, d[:]...)
}

// digitPairs holds the two digits of 0 to 99, in order.
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// rawAnswerSize estimates the bytes of appendRawAnswer's answer from its
// first row, a little over, so that the buffer is made once: rows of one
// query mostly have one shape.
func rawAnswerSize(rows []model.Row) int {
	if len(rows) == 0 {
		return 64
	}
	per := 48 + len(rows[0].Series) // {"time":…,"series":"…","fields":{}}
	for _, f := range rows[0].Fields {
		per += len(f.Name) + 24
	}
	return 64 + len(rows)*per
}

// appendAggAnswer writes {"series":[{"series":s,"buckets":[{"time":t,"values":{...}}]}]}.
// A field with no value for the aggregate (e.g. min over strings) is left out
// of its bucket.
func appendAggAnswer(b []byte, res []model.SeriesAgg, agg model.Agg) []byte {
	b = append(b, `{"series":[`...)
	for i := range res {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"series":`...)
		b = appendString(b, res[i].Series)
		b = append(b, `,"buckets":[`...)
		for j := range res[i].Buckets {
			bk := &res[i].Buckets[j]
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"time":`...)
			b = strconv.AppendInt(b, bk.Start, 10)
			b = append(b, `,"values":{`...)
			first := true
			for k := range bk.Fields {
				v, ok := bk.Fields[k].State.Result(agg)
				if !ok {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				b = appendString(b, bk.Fields[k].Name)
				b = append(b, ':')
				b = appendFloat(b, v)
			}
			b = append(b, "}}"...)
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

func appendValue(b []byte, v model.Value) []byte {
	switch v.Kind {
	case model.KindFloat:
		return appendFloat(b, v.F)
	case model.KindInt:
		return strconv.AppendInt(b, v.I, 10)
	case model.KindBool:
		return strconv.AppendBool(b, v.I != 0)
	case model.KindString:
		return appendString(b, v.S)
	}
	return append(b, "null"...)
}

// appendFloat writes a JSON number; NaN and ±Inf, which JSON cannot hold,
// are written as null.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		// Integral floats print without exponent or fraction, as encoding/json does.
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	if a := math.Abs(f); a >= 1e-4 && a < 1e6 {
		// Most measurements have a few decimals (a percentage, a
		// temperature): f is then the float nearest x/10⁴ for an integer
		// x, and that decimal, its trailing zeros trimmed, is the
		// shortest that reads back as f (it has at most 10 significant
		// digits, and decimals of up to 15 name distinct floats), which
		// is what strconv prints in this range ('g' uses no exponent
		// from 1e-4 to below 1e6), several times faster.
		if x := math.Round(f * 1e4); x/1e4 == f {
			return appendDecimal4(b, int64(x))
		}
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendDecimal4 writes x/10⁴ in decimal, without trailing zeros (x is
// not a multiple of 10⁴: the value is not integral).
func appendDecimal4(b []byte, x int64) []byte {
	if x < 0 {
		b = append(b, '-')
		x = -x
	}
	switch q := x / 10000; {
	case q < 10: // most measurements (percentages, temperatures): no call
		b = append(b, byte('0'+q))
	case q < 100:
		b = append(b, digitPairs[2*q], digitPairs[2*q+1])
	default:
		b = strconv.AppendInt(b, q, 10)
	}
	frac := x % 10000
	hi, lo := frac/100, frac%100
	d := [5]byte{'.', digitPairs[2*hi], digitPairs[2*hi+1], digitPairs[2*lo], digitPairs[2*lo+1]}
	n := 5
	for d[n-1] == '0' {
		n--
	}
	return append(b, d[:n]...)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
