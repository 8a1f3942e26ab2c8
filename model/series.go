package model

import (
	"fmt"
	"sort"
	"strings"
)

// Tag is one key=value pair of a series key, unescaped.
type Tag struct {
	Key, Value string
}

// CanonicalSeries parses a series key written as InfluxDB line protocol's
// "measurement,tag=value,..." and returns its one canonical form: the
// measurement first, then the tags sorted by key, each part re-escaped by
// BuildSeries. "cpu,region=eu,host=a" becomes "cpu,host=a,region=eu"; the
// JSON series "cpu,host=a b" and line protocol's cpu,host=a\ b are the same
// key. A key with no backslash or space whose tags are sorted is already
// canonical and is returned as is, without allocating.
func CanonicalSeries(s string) (string, error) {
	if s == "" {
		return "", ErrEmptySeries
	}
	if len(s) > MaxSeriesLen {
		return "", fmt.Errorf("%w: %d bytes, the limit is %d", ErrSeriesTooLong, len(s), MaxSeriesLen)
	}
	meas, tags, err := SplitSeries(s)
	if err != nil {
		return "", err
	}
	sorted := true
	for i := 1; i < len(tags); i++ {
		if tags[i-1].Key >= tags[i].Key {
			sorted = false
			break
		}
	}
	if sorted && strings.IndexByte(s, '\\') < 0 && strings.IndexByte(s, ' ') < 0 {
		// Nothing is escaped and ',' and '=' are all structural: BuildSeries
		// would write the same bytes.
		return s, nil
	}
	out, err := BuildSeries(meas, tags)
	if err != nil {
		return "", err
	}
	if len(out) > MaxSeriesLen {
		return "", fmt.Errorf("%w: %d bytes, the limit is %d", ErrSeriesTooLong, len(out), MaxSeriesLen)
	}
	return out, nil
}

// SplitSeries splits a series key into its unescaped measurement and tags, in
// the order written.
func SplitSeries(s string) (measurement string, tags []Tag, err error) {
	i := 0
	measurement, i = scanToken(s, i, ",", true)
	if measurement == "" {
		return "", nil, fmt.Errorf("%w: %q has an empty measurement", ErrInvalidSeries, s)
	}
	for i < len(s) {
		i++ // skip ','
		var k, v string
		k, i = scanToken(s, i, "=,", false)
		if i >= len(s) || s[i] != '=' {
			return "", nil, fmt.Errorf("%w: %q: tag %q has no '='", ErrInvalidSeries, s, k)
		}
		i++
		v, i = scanToken(s, i, ",=", false)
		if i < len(s) && s[i] == '=' {
			return "", nil, fmt.Errorf("%w: %q: unescaped '=' in tag value", ErrInvalidSeries, s)
		}
		if k == "" || v == "" {
			return "", nil, fmt.Errorf("%w: %q: empty tag key or value", ErrInvalidSeries, s)
		}
		tags = append(tags, Tag{Key: k, Value: v})
	}
	return measurement, tags, nil
}

// scanToken reads from s[i:] up to the first unescaped byte in stops and
// returns the unescaped token and the index of the stop byte (or len(s)).
// A backslash escapes ',', ' ', '\\' and, outside the measurement, '='; before
// any other byte it is a literal backslash.
func scanToken(s string, i int, stops string, measurement bool) (string, int) {
	start := i
	escaped := false
	for i < len(s) {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			escaped = true
			i += 2
			continue
		}
		if strings.IndexByte(stops, c) >= 0 {
			break
		}
		i++
	}
	if !escaped {
		return s[start:i], i
	}
	var b strings.Builder
	for j := start; j < i; j++ {
		if s[j] == '\\' && j+1 < i {
			n := s[j+1]
			if n == ',' || n == ' ' || n == '\\' || (!measurement && n == '=') {
				b.WriteByte(n)
				j++
				continue
			}
		}
		b.WriteByte(s[j])
	}
	return b.String(), i
}

// BuildSeries writes the canonical series key of a measurement and tags:
// tags sorted by key, escaped as in line protocol (',' and ' ' in the
// measurement, ',', '=' and ' ' in tag keys and values) and every backslash
// doubled, so that SplitSeries gives back exactly the parts. Two tags with the
// same key are an error.
func BuildSeries(measurement string, tags []Tag) (string, error) {
	if measurement == "" {
		return "", fmt.Errorf("%w: empty measurement", ErrInvalidSeries)
	}
	sorted := make([]Tag, len(tags))
	copy(sorted, tags)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Key < sorted[j].Key })
	var b strings.Builder
	b.Grow(len(measurement) + 16*len(tags))
	writeEscaped(&b, measurement, ", \\")
	for i, t := range sorted {
		if t.Key == "" || t.Value == "" {
			return "", fmt.Errorf("%w: empty tag key or value", ErrInvalidSeries)
		}
		if i > 0 && sorted[i-1].Key == t.Key {
			return "", fmt.Errorf("%w: tag %q appears twice", ErrInvalidSeries, t.Key)
		}
		b.WriteByte(',')
		writeEscaped(&b, t.Key, ",= \\")
		b.WriteByte('=')
		writeEscaped(&b, t.Value, ",= \\")
	}
	return b.String(), nil
}

func writeEscaped(b *strings.Builder, s, special string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(special, c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
}

// ValidateTableName checks a table name against [a-z][a-z0-9_]{0,63}.
func ValidateTableName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: %q must be 1 to 64 characters", ErrInvalidTable, name)
	}
	if name[0] < 'a' || name[0] > 'z' {
		return fmt.Errorf("%w: %q must start with a lowercase letter", ErrInvalidTable, name)
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("%w: %q may hold only lowercase letters, digits and '_'", ErrInvalidTable, name)
		}
	}
	return nil
}
