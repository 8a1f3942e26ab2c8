package ingest

import (
	"strconv"
	"strings"

	"github.com/tsdb/tsdb/model"
)

// AppendLineProtocol appends rows to dst as line protocol with nanosecond
// timestamps, one line per row, and returns the extended buffer. It is meant
// for tests, benchmarks and the load test; ParseLineProtocol reads its output
// back to the same rows.
//
// The series is written as given (it is already escaped as line protocol),
// except that an unescaped space, which a JSON client may send in a tag
// value, is escaped. Fields are written in the order given; a field of an
// invalid kind is skipped. Some rows have no line protocol form: a series
// holding a line end, starting with '#', a tab or a carriage return, or
// ending in a lone backslash; a field name holding a line end; the floats
// NaN and ±Inf.
func AppendLineProtocol(dst []byte, rows []model.Row) []byte {
	for i := range rows {
		r := &rows[i]
		dst = appendSeries(dst, r.Series)
		sep := byte(' ')
		for j := range r.Fields {
			f := &r.Fields[j]
			if f.Value.Kind < model.KindFloat || f.Value.Kind > model.KindString {
				continue
			}
			dst = append(dst, sep)
			sep = ','
			dst = appendFieldName(dst, f.Name)
			dst = append(dst, '=')
			dst = appendValue(dst, f.Value)
		}
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, r.Time, 10)
		dst = append(dst, '\n')
	}
	return dst
}

// appendSeries writes a series key, escaping unescaped spaces.
func appendSeries(dst []byte, s string) []byte {
	if strings.IndexByte(s, ' ') < 0 {
		return append(dst, s...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			dst = append(dst, c, s[i+1])
			i++
			continue
		case c == ' ':
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return dst
}

// appendFieldName writes a field name with ',', '=', ' ' and '\' escaped.
func appendFieldName(dst []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case ',', '=', ' ', '\\':
			dst = append(dst, '\\', c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendValue writes a field value in line protocol syntax.
func appendValue(dst []byte, v model.Value) []byte {
	switch v.Kind {
	case model.KindFloat:
		return strconv.AppendFloat(dst, v.F, 'g', -1, 64)
	case model.KindInt:
		return append(strconv.AppendInt(dst, v.I, 10), 'i')
	case model.KindBool:
		if v.I != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(v.S); i++ {
		c := v.S[i]
		if c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}
