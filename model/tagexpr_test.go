package model

import (
	"errors"
	"testing"
)

func TestSeriesMatcher(t *testing.T) {
	or := &TagExpr{Op: TagOr, Args: []TagExpr{
		{Op: TagEq, Key: "host", Value: "a"},
		{Op: TagMatch, Key: "region", Value: "^eu"},
	}}
	cases := []struct {
		q      Query
		series string
		want   bool
	}{
		{Query{Measurement: "cpu"}, "cpu,host=a", true},
		{Query{Measurement: "cpu"}, "cpu", true},
		{Query{Measurement: "cpu"}, "cpu2,host=a", false},
		{Query{Measurement: "a b"}, `a\ b,host=x`, true},
		{Query{Tags: &TagExpr{Op: TagEq, Key: "host", Value: "a"}}, "cpu,host=a", true},
		{Query{Tags: &TagExpr{Op: TagEq, Key: "host", Value: "a"}}, "cpu,host=ab", false},
		{Query{Tags: &TagExpr{Op: TagEq, Key: "host", Value: ""}}, "cpu,region=x", true},
		{Query{Tags: &TagExpr{Op: TagNeq, Key: "host", Value: "a"}}, "cpu,host=b", true},
		{Query{Tags: &TagExpr{Op: TagNotMatch, Key: "host", Value: "a"}}, "cpu,host=bab", false},
		{Query{Measurement: "cpu", Tags: or}, "cpu,host=b,region=eu-west", true},
		{Query{Measurement: "cpu", Tags: or}, "cpu,host=b,region=us", false},
		{Query{Measurement: "mem", Tags: or}, "cpu,host=a", false},
		{Query{Tags: &TagExpr{Op: TagAnd, Args: []TagExpr{{Op: TagEq, Key: "host", Value: "a"}, {Op: TagEq, Key: "dc", Value: "x y"}}}}, `cpu,dc=x\ y,host=a`, true},
	}
	for _, c := range cases {
		m, err := c.q.Matcher()
		if err != nil {
			t.Fatalf("%+v: %v", c.q, err)
		}
		if got := m.Match(c.series); got != c.want {
			t.Errorf("%+v on %q = %v, want %v", c.q, c.series, got, c.want)
		}
	}
	if m, err := (&Query{}).Matcher(); m != nil || err != nil {
		t.Errorf("empty query's matcher = %v, %v; want nil, nil", m, err)
	}
}

func TestTagExprCompileRejects(t *testing.T) {
	bad := []TagExpr{
		{Op: "<"},
		{Op: TagAnd, Args: []TagExpr{{Op: TagEq, Key: "a"}}},
		{Op: TagEq},
		{Op: TagMatch, Key: "a", Value: "("},
	}
	for _, e := range bad {
		if _, err := e.Compile(); !errors.Is(err, ErrInvalidTagExpr) {
			t.Errorf("%+v: err %v, want ErrInvalidTagExpr", e, err)
		}
	}
	deep := TagExpr{Op: TagEq, Key: "a"}
	for range maxTagExprDepth + 2 {
		deep = TagExpr{Op: TagOr, Args: []TagExpr{deep, {Op: TagEq, Key: "b"}}}
	}
	if _, err := deep.Compile(); !errors.Is(err, ErrInvalidTagExpr) {
		t.Errorf("deep expression: err %v, want ErrInvalidTagExpr", err)
	}
}
