package model

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrInvalidTagExpr is returned by TagExpr.Compile for a malformed predicate.
var ErrInvalidTagExpr = errors.New("model: invalid tag predicate")

// TagOp is the operator of a TagExpr.
type TagOp string

// The operators of a TagExpr: two connectives and four comparisons of one
// tag's value (InfluxQL's WHERE on tags). A series without the tag compares
// as if its value were "" (InfluxDB's rule: host = "" matches series
// without a host).
const (
	TagAnd      TagOp = "and"
	TagOr       TagOp = "or"
	TagEq       TagOp = "="
	TagNeq      TagOp = "!="
	TagMatch    TagOp = "=~"
	TagNotMatch TagOp = "!~"
)

// TagExpr is a predicate on a series' tags. A comparison has Key and Value
// (for =~ and !~, Value is a regular expression in Go's RE2 syntax,
// unanchored as in InfluxQL); a connective has two or more Args. Its JSON
// form travels inside a sub-query (Query.Tags).
type TagExpr struct {
	Op    TagOp     `json:"op"`
	Key   string    `json:"key,omitempty"`
	Value string    `json:"value,omitempty"`
	Args  []TagExpr `json:"args,omitempty"`
}

// maxTagExprDepth bounds the nesting of a TagExpr (it arrives from the
// network inside sub-queries).
const maxTagExprDepth = 64

// TagMatcher is a compiled TagExpr; it is safe for concurrent use.
type TagMatcher struct {
	op   TagOp
	key  string
	val  string
	re   *regexp.Regexp
	args []*TagMatcher
}

// Compile checks e and compiles its regular expressions.
func (e *TagExpr) Compile() (*TagMatcher, error) {
	return e.compile(0)
}

func (e *TagExpr) compile(depth int) (*TagMatcher, error) {
	if depth > maxTagExprDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalidTagExpr, maxTagExprDepth)
	}
	m := &TagMatcher{op: e.Op, key: e.Key, val: e.Value}
	switch e.Op {
	case TagAnd, TagOr:
		if len(e.Args) < 2 {
			return nil, fmt.Errorf("%w: %q needs at least two operands, has %d", ErrInvalidTagExpr, e.Op, len(e.Args))
		}
		for i := range e.Args {
			a, err := e.Args[i].compile(depth + 1)
			if err != nil {
				return nil, err
			}
			m.args = append(m.args, a)
		}
	case TagEq, TagNeq:
		if e.Key == "" {
			return nil, fmt.Errorf("%w: %q with an empty tag key", ErrInvalidTagExpr, e.Op)
		}
	case TagMatch, TagNotMatch:
		if e.Key == "" {
			return nil, fmt.Errorf("%w: %q with an empty tag key", ErrInvalidTagExpr, e.Op)
		}
		re, err := regexp.Compile(e.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: regular expression %q: %v", ErrInvalidTagExpr, e.Value, err)
		}
		m.re = re
	default:
		return nil, fmt.Errorf("%w: unknown operator %q", ErrInvalidTagExpr, e.Op)
	}
	return m, nil
}

// Match reports whether tags (as SplitSeries returns them) satisfy the
// predicate.
func (m *TagMatcher) Match(tags []Tag) bool {
	switch m.op {
	case TagAnd:
		for _, a := range m.args {
			if !a.Match(tags) {
				return false
			}
		}
		return true
	case TagOr:
		for _, a := range m.args {
			if a.Match(tags) {
				return true
			}
		}
		return false
	}
	v := tagValue(tags, m.key)
	switch m.op {
	case TagEq:
		return v == m.val
	case TagNeq:
		return v != m.val
	case TagMatch:
		return m.re.MatchString(v)
	case TagNotMatch:
		return !m.re.MatchString(v)
	}
	return false
}

// tagValue returns the value of key in tags, "" when absent.
func tagValue(tags []Tag, key string) string {
	for _, t := range tags {
		if t.Key == key {
			return t.Value
		}
	}
	return ""
}

// SeriesMatcher decides whether a series key belongs to a query: its
// measurement (Query.Measurement) and tag predicate (Query.Tags). The zero
// value of neither matches everything.
type SeriesMatcher struct {
	measurement string
	tags        *TagMatcher
}

// Matcher compiles the series selection of q beyond Series/Prefix: nil
// (and no error) when q has neither Measurement nor Tags.
func (q *Query) Matcher() (*SeriesMatcher, error) {
	if q.Measurement == "" && q.Tags == nil {
		return nil, nil
	}
	sm := &SeriesMatcher{measurement: q.Measurement}
	if q.Tags != nil {
		m, err := q.Tags.Compile()
		if err != nil {
			return nil, err
		}
		sm.tags = m
	}
	return sm, nil
}

// Match reports whether the series key satisfies the matcher. A key that
// does not parse matches nothing.
func (sm *SeriesMatcher) Match(series string) bool {
	if sm.measurement != "" {
		// Fast reject before parsing: the key must start with the
		// measurement as written (escaping keeps ',' and ' ' out of it).
		if !strings.HasPrefix(series, escapeMeasurement(sm.measurement)) {
			return false
		}
	}
	meas, tags, err := SplitSeries(series)
	if err != nil {
		return false
	}
	if sm.measurement != "" && meas != sm.measurement {
		return false
	}
	return sm.tags == nil || sm.tags.Match(tags)
}

// escapeMeasurement returns a measurement as it is written at the start of
// a canonical series key.
func escapeMeasurement(m string) string {
	if !strings.ContainsAny(m, `, \`) {
		return m
	}
	var b strings.Builder
	writeEscaped(&b, m, `, \`)
	return b.String()
}

// Measurement returns the measurement of a series key: its part before the
// first unescaped comma, unescaped.
func Measurement(series string) (string, error) {
	m, _, err := SplitSeries(series)
	return m, err
}
