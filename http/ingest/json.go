package ingest

import (
	"bytes"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tsdb/tsdb/model"
)

// ParseJSON parses a JSON array of row objects (a single row object is also
// taken, as a batch of one) and appends the rows to rows, which it returns.
//
// A row object is
//
//	{"time": T, "series": "cpu,host=a", "fields": {"v": 1.5, "n": 3, "ok": true, "s": "x"}}
//
// with exactly these keys, in any order; any other key is an error
// (ErrUnknownKey), as is a missing "time" (ErrMissingTime). T is an RFC 3339
// string, an integer number of nanoseconds, or a decimal string of one (see
// ParseTime); a number in exponent form is taken when it is an exact integer
// ("1.7e18"). The series is canonicalized (model.CanonicalSeries).
//
// Field values: a number literal without '.', 'e' or 'E' that fits int64 is
// an int; any other number (3.0, 1e3, 2^63) is a float. Encoders that print
// a float64 holding a whole number without a decimal point (Go's
// encoding/json writes 96.0 as 96, so does JavaScript) therefore send an int;
// clients that need a float field must write the point. true and false are
// bools, strings are strings; null, objects and arrays are refused with
// model.ErrUnsupportedType naming the field. A field named twice keeps the
// last value.
//
// The rows may alias body (see doc.go). On error the result is rows truncated
// to its original length and the error is a *ParseError naming the 1-based
// row (0 for a fault outside any row); one bad row fails the whole body. An
// empty body or array fails with ErrNoRows.
func ParseJSON(body []byte, rows []model.Row) ([]model.Row, error) {
	return parseJSON(body, rows, nil)
}

// parseJSON is ParseJSON, the Fields lent by mem when it is not nil.
func parseJSON(body []byte, rows []model.Row, mem *FieldMemory) ([]model.Row, error) {
	orig := len(rows)
	// A row object holds two objects: itself and its fields.
	est := estimateRows(bytes.Count(body, []byte{'{'})/2, len(body), len(minJSONRow))
	rows = slices.Grow(rows, min(est, maxPrealloc))
	p := jsonParser{b: body}
	p.slab.estRows, p.slab.mem = est, mem
	var scratch [scratchFields]model.Field
	rows, err := p.array(rows, scratch[:0])
	if err != nil {
		clear(rows[orig:])
		return rows[:orig], err
	}
	if len(rows) == orig {
		return rows, perr(ErrNoRows, "no rows in the body")
	}
	return rows, nil
}

// ParseNDJSON parses newline-delimited JSON: one row object (as in ParseJSON)
// per line, lines ended by "\n" or "\r\n", blank lines skipped. It appends
// the rows to rows and returns them. Errors are *ParseError naming the
// 1-based line; the rest is as in ParseJSON.
func ParseNDJSON(body []byte, rows []model.Row) ([]model.Row, error) {
	return parseNDJSON(body, rows, nil)
}

// parseNDJSON is ParseNDJSON, the Fields lent by mem when it is not nil.
func parseNDJSON(body []byte, rows []model.Row, mem *FieldMemory) ([]model.Row, error) {
	orig := len(rows)
	est := estimateRows(bytes.Count(body, []byte{'\n'})+1, len(body), len(minJSONRow))
	rows = slices.Grow(rows, min(est, maxPrealloc))
	p := jsonParser{ndjson: true}
	p.slab.estRows, p.slab.mem = est, mem
	var scratch [scratchFields]model.Field
	line := 0
	for start := 0; start < len(body); {
		line++
		end := bytes.IndexByte(body[start:], '\n')
		if end < 0 {
			end = len(body)
		} else {
			end += start
		}
		p.b, p.i, p.base = body[:end], start, start
		p.ws()
		if p.i < end {
			var r model.Row
			err := p.row(&r, scratch[:0])
			if err == nil {
				if p.ws(); p.i < end {
					err = p.syntax("unexpected %s after the row object", p.found())
				}
			}
			if err != nil {
				err.Line = line
				clear(rows[orig:])
				return rows[:orig], err
			}
			rows = append(rows, r)
		}
		start = end + 1
	}
	if len(rows) == orig {
		return rows, perr(ErrNoRows, "no rows in the body")
	}
	return rows, nil
}

// minJSONRow is the shortest row object, for estimates.
const minJSONRow = `{"time":1,"series":"m","fields":{"v":1}}`

// jsonParser is a hand-written JSON scanner specialised for row objects. It
// returns strings that alias the input when they hold no escapes.
type jsonParser struct {
	b      []byte
	i      int  // read position
	base   int  // start of the current line (NDJSON), for columns
	ndjson bool // report columns within the line instead of body offsets
	slab   fieldSlab
}

// array parses the whole body of ParseJSON. fs is scratch space for the
// fields of a row.
func (p *jsonParser) array(rows []model.Row, fs []model.Field) ([]model.Row, *ParseError) {
	p.ws()
	if p.i >= len(p.b) {
		return rows, nil
	}
	if p.b[p.i] == '{' {
		var r model.Row
		err := p.row(&r, fs)
		if err == nil {
			if p.ws(); p.i < len(p.b) {
				err = p.syntax("unexpected %s after the row object", p.found())
			}
		}
		if err != nil {
			err.Row = 1
			return rows, err
		}
		return append(rows, r), nil
	}
	if p.b[p.i] != '[' {
		return rows, p.syntax("expected '[' or '{', found %s", p.found())
	}
	p.i++
	if p.ws(); p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return rows, p.end()
	}
	for n := 1; ; n++ {
		p.ws()
		var r model.Row
		if err := p.row(&r, fs); err != nil {
			err.Row = n
			return rows, err
		}
		rows = append(rows, r)
		p.ws()
		if p.i >= len(p.b) {
			err := p.syntax("unexpected end of input, expected ',' or ']'")
			err.Row = n
			return rows, err
		}
		c := p.b[p.i]
		if c == ']' {
			p.i++
			return rows, p.end()
		}
		if c != ',' {
			err := p.syntax("expected ',' or ']' after the row, found %s", p.found())
			err.Row = n
			return rows, err
		}
		p.i++
	}
}

// end checks that only whitespace follows.
func (p *jsonParser) end() *ParseError {
	if p.ws(); p.i < len(p.b) {
		return p.syntax("unexpected %s after the array", p.found())
	}
	return nil
}

// row parses one row object into r, using fs as scratch for its fields.
func (p *jsonParser) row(r *model.Row, fs []model.Field) *ParseError {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return p.syntax("expected '{' to start a row object, found %s", p.found())
	}
	p.i++
	var haveTime, haveSeries, haveFields bool
	var series string
	if p.ws(); p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return perr(ErrMissingTime, `missing "time"`)
	}
	for {
		p.ws()
		key, err := p.str()
		if err != nil {
			return err
		}
		if err := p.colon(); err != nil {
			return err
		}
		switch key {
		case "time":
			if haveTime {
				return perr(ErrUnknownKey, `"time" given twice`)
			}
			haveTime = true
			r.Time, err = p.time()
		case "series":
			if haveSeries {
				return perr(ErrUnknownKey, `"series" given twice`)
			}
			haveSeries = true
			if p.i < len(p.b) && p.b[p.i] != '"' {
				return perr(model.ErrInvalidSeries, `"series" must be a string`)
			}
			series, err = p.str()
		case "fields":
			if haveFields {
				return perr(ErrUnknownKey, `"fields" given twice`)
			}
			haveFields = true
			fs, err = p.fields(fs)
		default:
			return perr(ErrUnknownKey, `unknown key %s (a row has "time", "series" and "fields")`, quote(key))
		}
		if err != nil {
			return err
		}
		if done, err := p.next('}'); err != nil || done {
			if err != nil {
				return err
			}
			break
		}
	}
	switch {
	case !haveTime:
		return perr(ErrMissingTime, `missing "time"`)
	case !haveSeries:
		return perr(model.ErrEmptySeries, `missing "series"`)
	case !haveFields:
		return perr(model.ErrNoFields, `missing "fields"`)
	}
	s, err := canonicalSeries(series)
	if err != nil {
		return err
	}
	r.Series = s
	return finishRow(&p.slab, r, fs)
}

// next reads the separator after a member: ',' (done false) or the closing
// byte (done true).
func (p *jsonParser) next(closing byte) (done bool, err *ParseError) {
	p.ws()
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case ',':
			p.i++
			return false, nil
		case closing:
			p.i++
			return true, nil
		}
	}
	return false, p.syntax("expected ',' or '%c', found %s", closing, p.found())
}

// colon reads the ':' after a key and the whitespace around it.
func (p *jsonParser) colon() *ParseError {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != ':' {
		return p.syntax("expected ':' after the key, found %s", p.found())
	}
	p.i++
	p.ws()
	return nil
}

// time reads the value of "time".
func (p *jsonParser) time() (int64, *ParseError) {
	if p.i >= len(p.b) {
		return 0, p.syntax("expected the time, found %s", p.found())
	}
	switch c := p.b[p.i]; {
	case c == '"':
		s, err := p.str()
		if err != nil {
			return 0, err
		}
		t, detail, sentinel := parseTime(s)
		if sentinel != nil {
			return 0, perr(sentinel, `invalid "time": %s`, detail)
		}
		return t, nil
	case c == '-' || isDigit(c):
		if t, end, ok := fastJSONTime(p.b, p.i); ok {
			p.i = end
			return t, nil
		}
		lit, isInt, err := p.number()
		if err != nil {
			return 0, err
		}
		var t int64
		var ok, rangeErr bool
		if isInt {
			t, ok, rangeErr = parseInt(lit)
		} else {
			t, ok, rangeErr = exactInt(lit)
		}
		switch {
		case rangeErr:
			return 0, perr(ErrTimeRange, `"time" %s is outside int64 nanoseconds`, lit)
		case !ok:
			return 0, perr(ErrTimeFormat, `"time" %s is not an integer number of nanoseconds`, lit)
		}
		return t, nil
	case c == 't' || c == 'f' || c == 'n' || c == '{' || c == '[':
		return 0, perr(ErrTimeFormat, `"time" must be an RFC 3339 string or integer nanoseconds`)
	}
	return 0, p.syntax("expected the time, found %s", p.found())
}

// fields reads the "fields" object, appending the fields to fs.
func (p *jsonParser) fields(fs []model.Field) ([]model.Field, *ParseError) {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		if p.i < len(p.b) && bytes.IndexByte([]byte("\"-0123456789tfn["), p.b[p.i]) >= 0 {
			return fs, perr(ErrSyntax, `"fields" must be an object`)
		}
		return fs, p.syntax(`expected '{' after "fields", found %s`, p.found())
	}
	p.i++
	if p.ws(); p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return fs, nil
	}
	for {
		p.ws()
		name, err := p.str()
		if err != nil {
			return fs, err
		}
		if err := p.colon(); err != nil {
			return fs, err
		}
		fs = p.slab.grow(fs)
		f := &fs[len(fs)-1]
		f.Name = name
		if err := p.fieldValue(f); err != nil {
			return fs, err
		}
		if done, err := p.next('}'); err != nil || done {
			return fs, err
		}
	}
}

// fieldValue reads one field value into f.
func (p *jsonParser) fieldValue(f *model.Field) *ParseError {
	if p.i >= len(p.b) {
		return p.syntax("expected a value, found %s", p.found())
	}
	switch c := p.b[p.i]; c {
	case '"':
		s, err := p.str()
		f.Value = model.String(s)
		return err
	case 't':
		f.Value = model.Bool(true)
		return p.literal("true")
	case 'f':
		f.Value = model.Bool(false)
		return p.literal("false")
	case 'n':
		if err := p.literal("null"); err != nil {
			return err
		}
		return perr(model.ErrUnsupportedType, "field %s is null: unsupported type", quote(f.Name))
	case '{':
		return perr(model.ErrUnsupportedType, "field %s is an object: unsupported type", quote(f.Name))
	case '[':
		return perr(model.ErrUnsupportedType, "field %s is an array: unsupported type", quote(f.Name))
	}
	if end, v, ok := fastJSONNumber(p.b, p.i); ok {
		p.i = end
		f.Value = v
		return nil
	}
	lit, isInt, err := p.number()
	if err != nil {
		return err
	}
	if isInt {
		if v, _, rangeErr := parseInt(lit); !rangeErr {
			f.Value = model.Int(v)
			return nil
		}
	}
	if v, ok := simpleFloat(lit); ok {
		f.Value = model.Float(v)
		return nil
	}
	v, perr2 := strconv.ParseFloat(b2s(lit), 64)
	if perr2 != nil {
		return perr(ErrValueRange, "value %s of field %s is out of range", lit, quote(f.Name))
	}
	f.Value = model.Float(v)
	return nil
}

// literal reads the keyword lit (true, false, null).
func (p *jsonParser) literal(lit string) *ParseError {
	if len(p.b)-p.i < len(lit) || b2s(p.b[p.i:p.i+len(lit)]) != lit {
		return p.syntax("invalid literal, expected %s", lit)
	}
	p.i += len(lit)
	return nil
}

// number reads a JSON number and returns its literal and whether it is
// written as an integer (no fraction, no exponent).
func (p *jsonParser) number() (lit []byte, isInt bool, err *ParseError) {
	b, n, start := p.b, len(p.b), p.i
	i := start
	if i < n && b[i] == '-' {
		i++
	}
	switch {
	case i < n && b[i] == '0':
		i++
	case i < n && b[i] >= '1' && b[i] <= '9':
		for i++; i < n && isDigit(b[i]); i++ {
		}
	default:
		p.i = i
		return nil, false, p.syntax("expected a value, found %s", p.found())
	}
	isInt = true
	if i < n && b[i] == '.' {
		isInt = false
		i++
		if i >= n || !isDigit(b[i]) {
			p.i = i
			return nil, false, p.syntax("expected a digit after '.', found %s", p.found())
		}
		for ; i < n && isDigit(b[i]); i++ {
		}
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		isInt = false
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= n || !isDigit(b[i]) {
			p.i = i
			return nil, false, p.syntax("expected a digit in the exponent, found %s", p.found())
		}
		for ; i < n && isDigit(b[i]); i++ {
		}
	}
	p.i = i
	return b[start:i], isInt, nil
}

// strStop marks the bytes that end the fast scan of a string: the closing
// quote, a backslash and the control characters JSON forbids raw.
var strStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str reads a JSON string. Without escapes the result aliases the input.
func (p *jsonParser) str() (string, *ParseError) {
	b, n := p.b, len(p.b)
	if p.i >= n || b[p.i] != '"' {
		return "", p.syntax("expected a string, found %s", p.found())
	}
	start := p.i + 1
	i := start
	for i < n && !strStop[b[i]] {
		i++
	}
	if i < n && b[i] == '"' {
		p.i = i + 1
		return b2s(b[start:i]), nil
	}
	return p.strSlow(start, i)
}

// strSlow reads the rest of a string that holds escapes; b[start:i] is the
// plain prefix already scanned.
func (p *jsonParser) strSlow(start, i int) (string, *ParseError) {
	b, n := p.b, len(p.b)
	out := make([]byte, 0, i-start+16)
	out = append(out, b[start:i]...)
	for i < n {
		c := b[i]
		switch {
		case c == '"':
			p.i = i + 1
			return string(out), nil
		case c < 0x20:
			p.i = i
			return "", p.syntax("control character %s in a string", quote(string(c)))
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= n {
			break
		}
		i++
		switch e := b[i]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b[i+1:])
			if !ok {
				p.i = i
				return "", p.syntax(`invalid \u escape`)
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+2 < n && b[i+1] == '\\' && b[i+2] == 'u' {
					r2, ok = hex4(b[i+3:])
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			p.i = i
			return "", p.syntax("invalid escape %s in a string", quote(`\`+string(e)))
		}
		i++
	}
	p.i = n
	return "", p.syntax("unterminated string")
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// ws skips JSON whitespace.
func (p *jsonParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// found describes the byte at the read position for an error message.
func (p *jsonParser) found() string {
	if p.i >= len(p.b) {
		return "end of input"
	}
	return quote(string(p.b[p.i]))
}

// syntax returns an ErrSyntax error at the read position: a byte offset in
// the body, or a 1-based column for NDJSON.
func (p *jsonParser) syntax(format string, args ...any) *ParseError {
	e := perr(ErrSyntax, format, args...)
	if p.ndjson {
		e.Msg = "invalid JSON at column " + strconv.Itoa(p.i-p.base+1) + ": " + e.Msg
	} else {
		e.Msg = "invalid JSON at offset " + strconv.Itoa(p.i) + ": " + e.Msg
	}
	return e
}
