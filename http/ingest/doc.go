// Package ingest turns insert request bodies into rows: InfluxDB line
// protocol (POST /write), a JSON array of row objects and NDJSON (POST
// /api/v1/tables/{t}/insert). The HTTP server calls these parsers after
// decompressing the body; it stamps versions afterwards, so every
// model.Field.Version is left zero here.
//
// # Formats
//
// Line protocol (ParseLineProtocol), one point per line:
//
//	measurement[,tag=value...] field=value[,field=value...] [timestamp]
//
// with InfluxDB's escaping: in the measurement a backslash escapes ',' and
// ' '; in tag keys, tag values and field names it escapes ',', '=' and ' '
// (and in field names also '\'); in string values it escapes '"' and '\'.
// A backslash before any other byte is kept as written, as in InfluxDB.
// Field values are floats (1.5, 1, -3e5), integers (12i), unsigned integers
// (12u, stored as int64, so at most math.MaxInt64), bools (t, T, true, True,
// TRUE, f, F, false, False, FALSE) and double-quoted strings, which may span
// lines. Leading blanks are skipped; blank lines and lines starting with '#'
// are ignored; "\r\n" ends a line like "\n". Timestamps are integers in the
// request's Precision; a point without one takes the server's time (now),
// as InfluxDB does, and a timestamp whose product with the precision does
// not fit int64 nanoseconds is an error.
//
// JSON (ParseJSON) is an array of row objects, NDJSON (ParseNDJSON) one row
// object per line:
//
//	{"time": "2024-05-01T12:00:00Z", "series": "cpu,host=a", "fields": {"v": 1.5, "n": 3, "ok": true, "s": "x"}}
//
// "time" is RFC 3339 (fractional seconds allowed) or integer nanoseconds, as
// a JSON number or a decimal string (ParseTime). A number literal without
// '.', 'e' or 'E' that fits int64 is an int field, any other number a float.
// null, objects and arrays are refused, as are unknown keys (typo
// protection). See ParseJSON for the details.
//
// Every row comes out canonical: the series is canonical (model.CanonicalSeries
// returns it unchanged: measurement first, tags sorted by key, line protocol
// escaping), the fields are sorted by name with no name twice (the last value
// of a repeated name wins) and the row passes model.Row.Validate (limits on
// series length, field count, name and string lengths). A line protocol key
// with no backslash whose tags are already sorted is taken as is, without
// allocating; any other goes through model.CanonicalSeries, which gives every
// series one form: a JSON series "cpu,host=a b" (a space needs no escape
// there) and line protocol's cpu,host=a\ b are the same key.
//
// The parsers keep no state between calls and are safe for concurrent use.
//
// # Aliasing
//
// To avoid copying, the returned rows may share memory with body: series
// keys, field names and string values that needed no unescaping are strings
// made over body's bytes (unsafe.String). The caller owns body and must keep
// it unchanged, and alive, for as long as the rows (or any string taken from
// them) are in use; to keep a row longer, copy its strings (strings.Clone).
// Strings that needed unescaping, and series rebuilt to sort their tags, are
// allocated. The Fields of all rows of one call share a few large
// allocations; each row's Fields has its capacity capped at its length, so
// appending to one row never writes into another. A FieldMemory's parsers
// lend those allocations from one call to the next instead: its Reset takes
// back the Fields of every row parsed since, which the caller then no
// longer uses (the HTTP server keeps one with each pooled request's rows).
//
// The rows argument is a slice to append to, typically a reused one passed
// as rows[:0]; nil is fine. The parsers preallocate from a cheap estimate of
// the number of rows (a count of line ends or of "fields" keys).
//
// # Errors
//
// Every error of ParseLineProtocol, ParseJSON and ParseNDJSON is a
// *ParseError naming where the body broke: the 1-based line for line
// protocol and NDJSON (physical lines, so that an editor finds them; for a
// point whose string value spans lines, the line where the point starts),
// the 1-based row for a JSON array, plus, for malformed JSON, the byte
// offset (array) or column (NDJSON). It wraps a sentinel: ErrSyntax (or
// ErrInvalidValue, which wraps it), ErrValueRange, ErrUnknownKey,
// ErrMissingTime, ErrTimeFormat, ErrTimeRange (the last three wrap
// model.ErrInvalidTime), ErrNoRows for a body without rows, or the model
// sentinel of a violated limit (model.ErrEmptySeries, ErrInvalidSeries,
// ErrSeriesTooLong, ErrNoFields, ErrTooManyFields, ErrInvalidField,
// ErrStringTooLong, ErrUnsupportedType). Parsing stops at the first error
// and the body fails as a whole: the caller rejects the batch, and the rows
// slice comes back at its original length. The parsers never panic, whatever
// the input (fuzzed).
package ingest
