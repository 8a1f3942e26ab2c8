package influx

import (
	"testing"
	"time"

	"github.com/influxdata/influxql"

	"github.com/tsdb/tsdb/model"
)

// TestTagExprLongChain checks that a long chain of one operator translates
// in linear time into one TagExpr with an argument per operand: merging the
// arguments at every level of the chain was quadratic.
func TestTagExprLongChain(t *testing.T) {
	const n = 100_000
	leaf := func() influxql.Expr {
		return &influxql.BinaryExpr{Op: influxql.EQ, LHS: &influxql.VarRef{Val: "host"}, RHS: &influxql.StringLiteral{Val: "a"}}
	}
	var e influxql.Expr = leaf()
	for i := 1; i < n; i++ {
		e = &influxql.BinaryExpr{Op: influxql.OR, LHS: e, RHS: leaf()}
		if i%1000 == 0 {
			e = &influxql.ParenExpr{Expr: e}
		}
	}
	start := time.Now()
	got, err := tagExpr(e)
	if err != nil {
		t.Fatal(err)
	}
	if got.Op != model.TagOr || len(got.Args) != n {
		t.Fatalf("got op %v with %d args, want OR of %d", got.Op, len(got.Args), n)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("%d operands took %v: quadratic", n, d)
	}
	// true operands: dropped from an AND, absorbing in an OR.
	for _, c := range []struct {
		cond string
		want int // args; -1: nil (every series)
	}{
		{`host = 'a' AND true AND (region = 'b' AND true)`, 2},
		{`host = 'a' OR (true OR region = 'b')`, -1},
		{`true AND true`, -1},
		{`host = 'a' AND (region = 'b' OR region = 'c')`, 2},
	} {
		x, err := influxql.ParseExpr(c.cond)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tagExpr(x)
		if err != nil {
			t.Fatal(err)
		}
		if (c.want < 0) != (got == nil) || (got != nil && len(got.Args) != c.want) {
			t.Errorf("%s: %+v, want %d args", c.cond, got, c.want)
		}
	}
}
