package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/tsdb/tsdb/model"
)

// maxSeed keeps the huge table inputs (limit tests) out of the fuzz corpus,
// where they would only slow mutation down.
const maxSeed = 4096

var precisions = []Precision{Nanosecond, Microsecond, Millisecond, Second, Minute, Hour, 0}

// checkFailed asserts the contract of a failed parse.
func checkFailed(t *testing.T, err error, rows []model.Row) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *ParseError", err, err)
	}
	if pe.Err == nil || pe.Error() == "" {
		t.Fatalf("ParseError without sentinel or message: %#v", pe)
	}
	if len(rows) != 1 || rows[0].Series != "keep" {
		t.Fatalf("on error the rows were not truncated to their original length: %s", fmtRows(rows))
	}
}

// FuzzLineProtocol: never panics; on success every row is valid and
// canonical, and AppendLineProtocol writes rows that parse back the same.
func FuzzLineProtocol(f *testing.F) {
	for _, tc := range lpValid {
		f.Add([]byte(tc.in), uint8(0))
	}
	for _, tc := range lpBad {
		if len(tc.in) <= maxSeed {
			f.Add([]byte(tc.in), uint8(3))
		}
	}
	f.Add([]byte("cpu,host=a,region=eu usage_user=1.5,usage_system=2.5,usage_idle=96 1700000000000000000\n"), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, p uint8) {
		prec := precisions[int(p)%len(precisions)]
		keep := []model.Row{{Series: "keep"}}
		rows, err := ParseLineProtocol(body, prec, 42, keep)
		if err != nil {
			checkFailed(t, err, rows)
			return
		}
		rows = rows[1:]
		checkRows(t, rows)
		enc := AppendLineProtocol(nil, rows)
		again, err := ParseLineProtocol(enc, Nanosecond, 0, nil)
		if err != nil {
			t.Fatalf("re-encoded %q does not parse: %v", enc, err)
		}
		if d := diffRows(again, rows); d != "" {
			t.Fatalf("re-encoded %q parses differently: %s", enc, d)
		}
	})
}

// FuzzJSON: never panics; on success the body is valid JSON (as
// encoding/json sees it) and every row is valid and canonical.
func FuzzJSON(f *testing.F) {
	for _, tc := range jsonValid {
		f.Add([]byte(tc.in))
	}
	for _, tc := range jsonBadRows {
		if len(tc.in) <= maxSeed {
			f.Add([]byte("[" + okRow + "," + tc.in + "]"))
		}
	}
	f.Add([]byte(`[{"time":"2024-05-01T12:00:00.5+02:00","series":"cpu,host=a","fields":{"v":1.5e-3,"s":"\u00e9"}}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		keep := []model.Row{{Series: "keep"}}
		rows, err := ParseJSON(body, keep)
		if err != nil {
			checkFailed(t, err, rows)
			return
		}
		if !json.Valid(body) {
			t.Fatalf("ParseJSON accepted invalid JSON %q", body)
		}
		checkRows(t, rows[1:])
		checkJSONRoundTrip(t, rows[1:])
	})
}

// FuzzNDJSON: as FuzzJSON, line by line.
func FuzzNDJSON(f *testing.F) {
	for _, tc := range ndjsonValid {
		f.Add([]byte(tc.in))
	}
	for _, tc := range jsonBadRows {
		if len(tc.in) <= maxSeed {
			f.Add([]byte(okRow + "\n\n" + tc.in + "\n"))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		keep := []model.Row{{Series: "keep"}}
		rows, err := ParseNDJSON(body, keep)
		if err != nil {
			checkFailed(t, err, rows)
			return
		}
		for _, line := range bytes.Split(body, []byte{'\n'}) {
			if len(bytes.TrimSpace(line)) > 0 && !json.Valid(line) {
				t.Fatalf("ParseNDJSON accepted invalid JSON line %q", line)
			}
		}
		checkRows(t, rows[1:])
		checkJSONRoundTrip(t, rows[1:])
	})
}

// checkJSONRoundTrip re-encodes rows as NDJSON and parses them back, when
// encoding/json can carry their strings unchanged (valid UTF-8).
func checkJSONRoundTrip(t *testing.T, rows []model.Row) {
	t.Helper()
	for _, r := range rows {
		if !utf8.ValidString(r.Series) {
			return
		}
		for _, f := range r.Fields {
			if !utf8.ValidString(f.Name) || !utf8.ValidString(f.Value.S) {
				return
			}
		}
	}
	enc := appendJSONRows(nil, rows)
	again, err := ParseNDJSON(enc, nil)
	if err != nil {
		t.Fatalf("re-encoded %q does not parse: %v", enc, err)
	}
	if d := diffRows(again, rows); d != "" {
		t.Fatalf("re-encoded %q parses differently: %s", enc, d)
	}
}
