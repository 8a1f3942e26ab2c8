package ingest

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/model"
)

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"-1", -1},
		{"007", 7},
		{"1700000000000000000", 1700000000000000000},
		{"9223372036854775807", math.MaxInt64},
		{"-9223372036854775808", math.MinInt64},
		{"1970-01-01T00:00:00Z", 0},
		{"1970-01-01T00:00:00.000000001Z", 1},
		{"1970-01-01T00:00:00.5Z", 5e8},
		{"2024-05-01T12:00:00Z", 1714564800000000000},
		{"2024-05-01T14:00:00.123456789+02:00", 1714564800123456789},
		{"2024-05-01T10:00:00-02:00", 1714564800000000000},
		{"2262-04-11T23:47:16.854775807Z", math.MaxInt64},
		{"1677-09-21T00:12:43.145224192Z", math.MinInt64},
		{"1969-12-31T23:59:59Z", -1e9},
	} {
		got, err := ParseTime(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", ErrTimeFormat},
		{"-", ErrTimeFormat},
		{"abc", ErrTimeFormat},
		{"1.5", ErrTimeFormat},
		{"1e9", ErrTimeFormat},
		{"+5", ErrTimeFormat},
		{" 5", ErrTimeFormat},
		{"2024-05-01", ErrTimeFormat},
		{"2024-05-01 12:00:00Z", ErrTimeFormat},
		{"2024-13-01T00:00:00Z", ErrTimeFormat},
		{"9223372036854775808", ErrTimeRange},
		{"-9223372036854775809", ErrTimeRange},
		{"99999999999999999999999", ErrTimeRange},
		{"2500-01-01T00:00:00Z", ErrTimeRange},
		{"2262-04-11T23:47:16.854775808Z", ErrTimeRange},
		{"1677-09-21T00:12:43.145224191Z", ErrTimeRange},
		{"0001-01-01T00:00:00Z", ErrTimeRange},
	} {
		_, err := ParseTime(tc.in)
		if !errors.Is(err, tc.want) || !errors.Is(err, model.ErrInvalidTime) {
			t.Errorf("ParseTime(%q) error %v, want %v wrapping model.ErrInvalidTime", tc.in, err, tc.want)
		}
	}
}

func TestExactInt(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     int64
		ok, rerr bool
	}{
		{"0", 0, true, false},
		{"-0.0e5", 0, true, false},
		{"0.000", 0, true, false},
		{"1.7e18", 1.7e18, true, false},
		{"17e17", 1.7e18, true, false},
		{"12.50e1", 125, true, false},
		{"1.5e3", 1500, true, false},
		{"100e-2", 1, true, false},
		{"1000000000000000000000e-3", 1e18, true, false},
		{"0.00000000000000000000000000001e29", 1, true, false},
		{"9.223372036854775807e18", math.MaxInt64, true, false},
		{"-9.223372036854775808e18", math.MinInt64, true, false},
		{"1.5", 0, false, false},
		{"1e-1", 0, false, false},
		{"123e-2", 0, false, false},
		{"1e19", 0, true, true},
		{"9.223372036854775808e18", 0, true, true},
		{"-9.223372036854775809e18", 0, true, true},
		{"1e999999999999999999999", 0, true, true},
		{"1e-999999999999999999999", 0, false, false},
		{"0e999999999999999999999", 0, true, false},
	} {
		v, ok, rerr := exactInt([]byte(tc.in))
		if v != tc.want || ok != tc.ok || rerr != tc.rerr {
			t.Errorf("exactInt(%q) = %d, %v, %v; want %d, %v, %v", tc.in, v, ok, rerr, tc.want, tc.ok, tc.rerr)
		}
	}
}

func TestEightDigits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"00000000", 0, true},
		{"12345678", 12345678, true},
		{"99999999", 99999999, true},
		{"17000000", 17000000, true},
		{"1234567a", 0, false},
		{"/2345678", 0, false},
		{"1234:678", 0, false},
		{"12 45678", 0, false},
		{"\xb12345678", 0, false},
		{"1234567\xb9", 0, false},
	} {
		got, ok := eightDigits([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("eightDigits(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// randNumber writes a random numeric literal: sign, integer digits, an
// optional fraction, exponent or int suffix, sometimes malformed.
func randNumber(rng *rand.Rand) string {
	var b strings.Builder
	if rng.Intn(3) == 0 {
		b.WriteByte('-')
	}
	digits := func(n int) {
		for i := 0; i < n; i++ {
			b.WriteByte(byte('0' + rng.Intn(10)))
		}
	}
	digits(rng.Intn(22))
	switch rng.Intn(5) {
	case 0:
		b.WriteByte('.')
		digits(rng.Intn(18))
	case 1:
		b.WriteString([]string{"i", "u", "e5", "E-3", "x"}[rng.Intn(5)])
	}
	return b.String()
}

// TestFastNumbers checks the one-pass number parsers against the general
// ones on random literals.
func TestFastNumbers(t *testing.T) {
	s := seed(t)
	rng := rand.New(rand.NewSource(s))
	for iter := 0; iter < 200000; iter++ {
		lit := randNumber(rng)
		if lit == "" {
			continue
		}
		var fast model.Value
		if end, ok := fastNumber([]byte(lit+","), 0, &fast); ok {
			var slow model.Value
			if err := parseScalar([]byte(lit), &slow); err != nil || !fast.Equal(slow) || end != len(lit) {
				t.Fatalf("seed %d: line protocol %q: fast %+v (end %d), full %+v, %v", s, lit, fast, end, slow, err)
			}
		}
		if end, v, ok := fastJSONNumber([]byte(lit+"}"), 0); ok {
			p := jsonParser{b: []byte(lit + "}")}
			num, isInt, err := p.number()
			var full model.Value
			if x, _, rangeErr := parseInt(num); isInt && !rangeErr {
				full = model.Int(x)
			} else if f, ferr := strconv.ParseFloat(string(num), 64); ferr == nil {
				full = model.Float(f)
			}
			if err != nil || p.i != end || !full.Equal(v) {
				t.Fatalf("seed %d: JSON %q: fast %+v (end %d), full %+v (end %d), %v", s, lit, v, end, full, p.i, err)
			}
			if !json.Valid([]byte(lit[:end])) {
				t.Fatalf("seed %d: JSON fast path took invalid %q", s, lit[:end])
			}
		}
	}
}
