package ingest

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/tsdb/tsdb/model"
)

// Precision is the unit of line protocol timestamps, as its multiplier to
// nanoseconds.
type Precision int64

// The precisions of InfluxDB's /write endpoint.
const (
	Nanosecond  Precision = 1
	Microsecond Precision = 1e3
	Millisecond Precision = 1e6
	Second      Precision = 1e9
	Minute      Precision = 60e9
	Hour        Precision = 3600e9
)

// ParsePrecision reads the precision query parameter of /write as InfluxDB
// does: "" (the default), "n" and "ns" are nanoseconds, "u", "us" and "µs"
// microseconds, "ms" milliseconds, "s" seconds, and, as in InfluxDB 1.x, "m"
// minutes and "h" hours. Errors wrap ErrPrecision.
func ParsePrecision(s string) (Precision, error) {
	switch s {
	case "", "n", "ns":
		return Nanosecond, nil
	case "u", "us", "µ", "µs":
		return Microsecond, nil
	case "ms":
		return Millisecond, nil
	case "s":
		return Second, nil
	case "m":
		return Minute, nil
	case "h":
		return Hour, nil
	}
	return 0, fmt.Errorf("%w %s (want ns, us, ms, s, m or h)", ErrPrecision, quote(s))
}

// String returns the precision's query parameter spelling.
func (p Precision) String() string {
	switch p {
	case Nanosecond:
		return "ns"
	case Microsecond:
		return "us"
	case Millisecond:
		return "ms"
	case Second:
		return "s"
	case Minute:
		return "m"
	case Hour:
		return "h"
	}
	return strconv.FormatInt(int64(p), 10) + "ns"
}

// ParseLineProtocol parses an InfluxDB line protocol body and appends one row
// per point to rows, which it returns. Timestamps are in units of prec (the
// zero Precision means nanoseconds); a point without one gets now, in
// nanoseconds. Measurement and tags become the canonical series; fields are
// sorted by name, the last of a repeated name winning. Versions are left zero.
//
// The rows may alias body (see doc.go): body must stay unchanged while they
// are in use. On error the result is rows truncated to its original length
// and the error is a *ParseError naming the line; one bad point fails the
// whole body. A body without points fails with ErrNoRows.
func ParseLineProtocol(body []byte, prec Precision, now int64, rows []model.Row) ([]model.Row, error) {
	return parseLineProtocol(body, prec, now, rows, nil)
}

// parseLineProtocol is ParseLineProtocol, the Fields lent by mem when it is
// not nil.
func parseLineProtocol(body []byte, prec Precision, now int64, rows []model.Row, mem *FieldMemory) ([]model.Row, error) {
	if prec == 0 {
		prec = Nanosecond
	}
	if prec < 0 {
		return rows, perr(ErrPrecision, "precision %d is not positive", int64(prec))
	}
	orig := len(rows)
	est := estimateRows(bytes.Count(body, []byte{'\n'})+1, len(body), len("m v=1\n"))
	rows = slices.Grow(rows, min(est, maxPrealloc))
	p := lpParser{b: body, line: 1, prec: int64(prec), now: now}
	p.slab.estRows, p.slab.mem = est, mem
	var scratch [scratchFields]model.Field
	for p.i < len(p.b) {
		if p.skipEmpty() {
			continue
		}
		line := p.line
		var r model.Row
		if err := p.point(&r, scratch[:0]); err != nil {
			err.Line = line
			clear(rows[orig:])
			return rows[:orig], err
		}
		rows = append(rows, r)
	}
	if len(rows) == orig {
		return rows, perr(ErrNoRows, "no points in the body")
	}
	return rows, nil
}

// lpParser holds the state of one ParseLineProtocol call.
type lpParser struct {
	b    []byte
	i    int   // read position
	line int   // 1-based line of b[i]
	prec int64 // timestamp multiplier
	now  int64 // time of points without a timestamp
	slab fieldSlab
}

// skipEmpty skips leading blanks and, if the line is blank or a comment, the
// whole line; it reports whether it did the latter.
func (p *lpParser) skipEmpty() bool {
	b, n, i := p.b, len(p.b), p.i
	for i < n && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	p.i = i
	switch {
	case p.atEOL(i):
		p.i = p.skipEOL(i)
		return true
	case b[i] == '#':
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			p.i = n
			return true
		}
		p.i = i + j + 1
		p.line++
		return true
	}
	return false
}

// atEOL reports whether b[i:] starts with "\n", "\r\n", "\r" at the end, or
// is empty.
func (p *lpParser) atEOL(i int) bool {
	b, n := p.b, len(p.b)
	return i >= n || b[i] == '\n' || b[i] == '\r' && (i+1 >= n || b[i+1] == '\n')
}

// skipEOL returns the position after the line end at i (see atEOL).
func (p *lpParser) skipEOL(i int) int {
	if i < len(p.b) && p.b[i] == '\r' {
		i++
	}
	if i < len(p.b) {
		i++ // '\n'
		p.line++
	}
	return i
}

// point parses one point, from its first byte through its line end. fs is
// scratch space for the fields.
func (p *lpParser) point(r *model.Row, fs []model.Field) *ParseError {
	series, err := p.seriesKey()
	if err != nil {
		return err
	}
	r.Series = series
	if fs, err = p.fields(fs); err != nil {
		return err
	}
	if r.Time, err = p.timestamp(); err != nil {
		return err
	}
	return finishRow(&p.slab, r, fs)
}

// Byte classes of the fast scans: the bytes that end, or need a closer look
// in, a measurement, a tag key, a tag value, a field name and an unquoted
// field value.
var (
	measStop   = byteSet(", \\\n")
	tagKeyStop = byteSet("=, \\\n")
	tagValStop = byteSet(", =\\\n")
	nameStop   = byteSet("=, \\\n")
	valueStop  = byteSet(", \n\r")
)

func byteSet(s string) (t [256]bool) {
	for i := 0; i < len(s); i++ {
		t[s[i]] = true
	}
	return t
}

// seriesKey reads the measurement and tags up to the first unescaped space
// and returns the canonical series. The fast path takes a well-formed key
// whose tag keys are plain and sorted as is; anything else, errors included,
// goes through seriesKeySlow.
func (p *lpParser) seriesKey() (string, *ParseError) {
	b, n := p.b, len(p.b)
	start, i := p.i, p.i
	for {
		for i < n && !measStop[b[i]] {
			i++
		}
		break
	}
	// A backslash anywhere sends the key to the slow path: only
	// model.CanonicalSeries decides how escapes normalize.
	if i == start || i < n && b[i] == '\\' {
		return p.seriesKeySlow(start)
	}
	var prev []byte
	for i < n && b[i] == ',' {
		i++
		ks := i
		for i < n && !tagKeyStop[b[i]] {
			i++
		}
		if i >= n || b[i] != '=' || i == ks || string(b[ks:i]) <= string(prev) {
			return p.seriesKeySlow(start)
		}
		prev = b[ks:i]
		i++
		vs := i
		for {
			for i < n && !tagValStop[b[i]] {
				i++
			}
			break
		}
		if i == vs || i < n && (b[i] == '=' || b[i] == '\\' || b[i] == '\n') {
			return p.seriesKeySlow(start)
		}
	}
	if i >= n || b[i] != ' ' || i-start > model.MaxSeriesLen {
		return p.seriesKeySlow(start)
	}
	p.i = i
	return b2s(b[start:i]), nil
}

// seriesKeySlow finds the end of the key that starts at start (a backslash
// escapes the byte after it, except a line end) and canonicalizes it with
// the model's rules, reporting what is wrong with it.
func (p *lpParser) seriesKeySlow(start int) (string, *ParseError) {
	b, n := p.b, len(p.b)
	i := start
	for i < n {
		c := b[i]
		if c == '\\' && i+1 < n && b[i+1] != '\n' {
			i += 2
			continue
		}
		if c == ' ' || c == '\n' {
			break
		}
		i++
	}
	if i >= n || b[i] != ' ' {
		return "", perr(model.ErrNoFields, "missing fields after %s", quote(string(bytes.TrimSuffix(b[start:i], []byte{'\r'}))))
	}
	p.i = i
	return canonicalSeries(b2s(b[start:i]))
}

// fields reads the field set, appending the fields to fs.
func (p *lpParser) fields(fs []model.Field) ([]model.Field, *ParseError) {
	b, n, i := p.b, len(p.b), p.i
	for i < n && b[i] == ' ' {
		i++
	}
	if p.atEOL(i) {
		return fs, perr(model.ErrNoFields, "missing fields")
	}
	for {
		start, esc := i, false
		for {
			for i < n && !nameStop[b[i]] {
				i++
			}
			if i < n && b[i] == '\\' {
				if i+1 < n && b[i+1] != '\n' {
					esc = true
					i += 2
				} else {
					i++
				}
				continue
			}
			break
		}
		raw := b[start:i]
		if i >= n || b[i] != '=' {
			return fs, perr(ErrSyntax, "missing '=' after field name %s", quote(string(raw)))
		}
		if len(raw) == 0 {
			return fs, perr(model.ErrInvalidField, "empty field name")
		}
		name := b2s(raw)
		if esc {
			name = unescapeFieldName(raw)
		}
		fs = p.slab.grow(fs)
		f := &fs[len(fs)-1]
		f.Name = name
		var err *ParseError
		if i, err = p.value(i+1, name, &f.Value); err != nil {
			return fs, err
		}
		if i >= n {
			break
		}
		switch c := b[i]; {
		case c == ',':
			i++
			continue
		case c == ' ' || p.atEOL(i):
		default:
			return fs, perr(ErrInvalidValue, "unexpected %s after the value of field %s", quote(string(c)), quote(name))
		}
		break
	}
	p.i = i
	return fs, nil
}

// value reads the value of field name that starts at i into v and returns
// the position after it.
func (p *lpParser) value(i int, name string, v *model.Value) (int, *ParseError) {
	b, n := p.b, len(p.b)
	if i < n {
		if c := b[i]; c == '"' {
			return p.stringValue(i, name, v)
		} else if c == '-' || c-'0' <= 9 {
			if j, ok := fastNumber(b, i, v); ok {
				return j, nil
			}
		}
	}
	j := i
	for j < n && !valueStop[b[j]] {
		j++
	}
	switch err := parseScalar(b[i:j], v); err {
	case nil:
		return j, nil
	case ErrValueRange:
		return j, perr(err, "value %s of field %s is out of range", quote(string(b[i:j])), quote(name))
	default:
		return j, perr(err, "invalid field value %s for field %s", quote(string(b[i:j])), quote(name))
	}
}

// stringValue reads a double-quoted string starting at b[i] == '"'. Inside,
// \" and \\ are escapes; any other backslash is kept. Line ends are part of
// the string.
func (p *lpParser) stringValue(i int, name string, v *model.Value) (int, *ParseError) {
	b, n := p.b, len(p.b)
	j, esc := i+1, false
	for ; j < n; j++ {
		c := b[j]
		if c == '"' {
			raw := b[i+1 : j]
			*v = model.String(b2s(raw))
			if esc {
				v.S = unescapeStringValue(raw)
			}
			return j + 1, nil
		}
		if c == '\\' && j+1 < n {
			esc = true
			j++
			c = b[j]
		}
		if c == '\n' {
			p.line++
		}
	}
	return j, perr(ErrSyntax, "unterminated string value of field %s", quote(name))
}

// parseScalar reads an unquoted field value: 12i, 12u, a bool or a float.
// It returns nil, ErrInvalidValue or ErrValueRange.
func parseScalar(tok []byte, v *model.Value) error {
	n := len(tok)
	if n == 0 {
		return ErrInvalidValue
	}
	switch tok[n-1] {
	case 'i':
		x, ok, rangeErr := parseInt(tok[:n-1])
		if !ok {
			return ErrInvalidValue
		}
		if rangeErr {
			return ErrValueRange
		}
		*v = model.Int(x)
		return nil
	case 'u':
		x, ok, rangeErr := parseUint(tok[:n-1])
		if !ok {
			return ErrInvalidValue
		}
		if rangeErr || x > math.MaxInt64 {
			return ErrValueRange
		}
		*v = model.Int(int64(x))
		return nil
	}
	switch tok[0] {
	case 't', 'T', 'f', 'F':
		switch b2s(tok) {
		case "t", "T", "true", "True", "TRUE":
			*v = model.Bool(true)
		case "f", "F", "false", "False", "FALSE":
			*v = model.Bool(false)
		default:
			return ErrInvalidValue
		}
		return nil
	}
	if x, ok := simpleFloat(tok); ok {
		*v = model.Float(x)
		return nil
	}
	if !isFloat(tok) {
		return ErrInvalidValue
	}
	x, err := strconv.ParseFloat(b2s(tok), 64)
	if err != nil {
		return ErrValueRange // the syntax was checked: only ErrRange remains
	}
	*v = model.Float(x)
	return nil
}

// timestamp reads the optional timestamp and the line end.
func (p *lpParser) timestamp() (int64, *ParseError) {
	b, n, i := p.b, len(p.b), p.i
	for i < n && b[i] == ' ' {
		i++
	}
	if p.atEOL(i) {
		p.i = p.skipEOL(i)
		return p.now, nil
	}
	// Fast path: at most 19 digits holding an int64, then a blank or line
	// end.
	u, j := readDigits(b, i)
	if d := j - i; d > 0 && d <= 19 && u <= math.MaxInt64 && (j == n || b[j] == ' ' || b[j] == '\n' || b[j] == '\r') {
		return p.finishTimestamp(j, int64(u), b[i:j])
	}
	for j < n && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	tok := b[i:j]
	ts, ok, rangeErr := parseInt(tok)
	if !ok {
		return 0, perr(ErrTimeFormat, "invalid timestamp %s", quote(string(tok)))
	}
	if rangeErr {
		return 0, perr(ErrTimeRange, "timestamp %s is outside int64", quote(string(tok)))
	}
	return p.finishTimestamp(j, ts, tok)
}

// finishTimestamp scales the timestamp ts (written as tok, which ends at j)
// by the precision and reads the line end after it.
func (p *lpParser) finishTimestamp(j int, ts int64, tok []byte) (int64, *ParseError) {
	b, n := p.b, len(p.b)
	if p.prec != 1 && (ts > math.MaxInt64/p.prec || ts < math.MinInt64/p.prec) {
		return 0, perr(ErrTimeRange, "timestamp %s with precision %s is outside int64 nanoseconds",
			quote(string(tok)), Precision(p.prec))
	}
	for j < n && b[j] == ' ' {
		j++
	}
	if !p.atEOL(j) {
		return 0, perr(ErrSyntax, "unexpected %s after the timestamp", quote(string(b[j:min(j+16, n)])))
	}
	p.i = p.skipEOL(j)
	return ts * p.prec, nil
}

// unescapeFieldName resolves \, \= \space and \\ in a field name; any other
// backslash is kept with the byte after it.
func unescapeFieldName(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '\\' && i+1 < len(raw) {
			switch raw[i+1] {
			case ',', '=', ' ', '\\':
				i++
				c = raw[i]
			default:
				out = append(out, c)
				i++
				c = raw[i]
			}
		}
		out = append(out, c)
	}
	return string(out)
}

// unescapeStringValue resolves \" and \\ in a string field value; any other
// backslash is kept with the byte after it.
func unescapeStringValue(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '\\' && i+1 < len(raw) {
			if n := raw[i+1]; n != '"' && n != '\\' {
				out = append(out, c)
			}
			i++
			c = raw[i]
		}
		out = append(out, c)
	}
	return string(out)
}

// canonicalSeries returns the canonical form of a series key written as
// "measurement,tag=value,...". A key whose tags are already sorted, with no
// escapes in the tag keys, is returned as is (aliasing its input); any other
// goes through model.CanonicalSeries.
func canonicalSeries(s string) (string, *ParseError) {
	if isCanonicalPlain(s) {
		return s, nil
	}
	c, err := model.CanonicalSeries(s)
	if err != nil {
		return "", modelErr(err)
	}
	if c != s {
		// model.BuildSeries re-escapes the unescaped parts; a tag value that
		// ends in a lone backslash then escapes the comma after it. Refuse
		// what does not come back to itself.
		if c2, err := model.CanonicalSeries(c); err != nil || c2 != c {
			return "", perr(model.ErrInvalidSeries, "series %s has no canonical form (a tag value ending in a backslash?)", quote(s))
		}
	}
	return c, nil
}

// Byte classes of isCanonicalPlain: what ends, or needs a closer look in, a
// measurement, a tag key and a tag value of a series key.
var (
	seriesMeasStop = byteSet(",\\ ")
	seriesKeyStop  = byteSet("=,\\ ")
	seriesValStop  = byteSet(",=\\ ")
)

// isCanonicalPlain reports whether s is a well-formed series key, within the
// length limit, with no backslash and no space and its tags strictly sorted:
// keys model.CanonicalSeries returns unchanged. It follows
// model.SplitSeries's tokenization.
func isCanonicalPlain(s string) bool {
	n := len(s)
	if n == 0 || n > model.MaxSeriesLen {
		return false
	}
	i := 0
	for {
		for i < n && !seriesMeasStop[s[i]] {
			i++
		}
		break
	}
	if i == 0 || i < n && s[i] != ',' {
		return false // empty measurement, or a backslash
	}
	prev := ""
	for i < n {
		i++ // ','
		ks := i
		for i < n && !seriesKeyStop[s[i]] {
			i++
		}
		if i >= n || s[i] != '=' || i == ks || s[ks:i] <= prev {
			return false
		}
		prev = s[ks:i]
		i++
		vs := i
		for {
			for i < n && !seriesValStop[s[i]] {
				i++
			}
			break
		}
		if i == vs || i < n && s[i] != ',' {
			return false
		}
	}
	return true
}
