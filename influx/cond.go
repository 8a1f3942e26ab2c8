package influx

import (
	"fmt"
	"math"
	"time"

	"github.com/influxdata/influxql"

	"github.com/tsdb/tsdb/model"
)

// where is a WHERE clause split into what tsdb's query takes.
type where struct {
	// from and to bound the time range [from, to); hasFrom and hasTo
	// tell whether the clause bounded it.
	from, to       int64
	hasFrom, hasTo bool
	// tags is the predicate on tags; nil: every series.
	tags *model.TagExpr
}

// splitWhere splits cond into its time range and tag predicate.
// Conditions on fields are refused (tsdb filters series, not values).
func splitWhere(cond influxql.Expr, now time.Time) (where, error) {
	w := where{from: math.MinInt64, to: math.MaxInt64}
	if cond == nil {
		return w, nil
	}
	rest, tr, err := influxql.ConditionExpr(cond, &influxql.NowValuer{Now: now})
	if err != nil {
		return w, err
	}
	if !tr.Min.IsZero() {
		w.from, w.hasFrom = tr.Min.UnixNano(), true
	}
	if !tr.Max.IsZero() {
		// TimeRange.Max is inclusive, To exclusive. Max can be MaxInt64
		// (time <= 9223372036854775807), where +1 would overflow to
		// MinInt64 and select nothing: To stays MaxInt64, the open end
		// that includes a row at MaxInt64 (model.Query).
		w.to, w.hasTo = math.MaxInt64, true
		if m := tr.Max.UnixNano(); m < math.MaxInt64 {
			w.to = m + 1
		}
	}
	if rest != nil {
		w.tags, err = tagExpr(rest)
		if err != nil {
			return w, err
		}
	}
	return w, nil
}

// tagExpr translates the non-time part of a WHERE clause into a tag
// predicate.
func tagExpr(e influxql.Expr) (*model.TagExpr, error) {
	switch e := e.(type) {
	case *influxql.ParenExpr:
		return tagExpr(e.Expr)
	case *influxql.BooleanLiteral:
		if e.Val {
			return nil, nil
		}
		// WHERE false: a predicate nothing satisfies.
		return &model.TagExpr{Op: model.TagAnd, Args: []model.TagExpr{
			{Op: model.TagEq, Key: "_", Value: "x"}, {Op: model.TagNeq, Key: "_", Value: "x"}}}, nil
	case *influxql.BinaryExpr:
		switch e.Op {
		case influxql.AND, influxql.OR:
			return boolExpr(e)
		case influxql.EQ, influxql.NEQ, influxql.EQREGEX, influxql.NEQREGEX:
			return tagCompare(e)
		case influxql.LT, influxql.LTE, influxql.GT, influxql.GTE:
			return nil, fmt.Errorf("unsupported condition: %s (conditions on fields are not supported; tsdb filters on time and tags only)", e)
		}
	}
	return nil, fmt.Errorf("unsupported condition: %s (tsdb filters on time and tags only)", e)
}

// boolExpr translates a chain of one boolean operator (a AND b AND c, as
// the parser nests it, parentheses included) into one TagExpr with an
// argument per operand. Collecting the operands first keeps it linear:
// merging the arguments at every level of the chain was quadratic.
func boolExpr(e *influxql.BinaryExpr) (*model.TagExpr, error) {
	op := model.TagAnd
	if e.Op == influxql.OR {
		op = model.TagOr
	}
	var operands []influxql.Expr
	stack := []influxql.Expr{e}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for {
			p, ok := x.(*influxql.ParenExpr)
			if !ok {
				break
			}
			x = p.Expr
		}
		if b, ok := x.(*influxql.BinaryExpr); ok && b.Op == e.Op {
			stack = append(stack, b.RHS, b.LHS) // LHS first out: operands in order
			continue
		}
		operands = append(operands, x)
	}
	out := &model.TagExpr{Op: op}
	for _, x := range operands {
		t, err := tagExpr(x)
		if err != nil {
			return nil, err
		}
		switch {
		case t == nil && op == model.TagAnd: // x AND true
			continue
		case t == nil: // x OR true
			return nil, nil
		case t.Op == op:
			out.Args = append(out.Args, t.Args...)
		default:
			out.Args = append(out.Args, *t)
		}
	}
	switch len(out.Args) {
	case 0: // every operand true
		return nil, nil
	case 1:
		return &out.Args[0], nil
	}
	return out, nil
}

// tagCompare translates one comparison of a tag with a string or a
// regular expression.
func tagCompare(e *influxql.BinaryExpr) (*model.TagExpr, error) {
	ref, ok := e.LHS.(*influxql.VarRef)
	lit := e.RHS
	if !ok {
		ref, ok = e.RHS.(*influxql.VarRef)
		lit = e.LHS
	}
	if !ok || (ref.Type != influxql.Unknown && ref.Type != influxql.Tag) {
		return nil, fmt.Errorf("unsupported condition: %s (conditions on fields are not supported; tsdb filters on time and tags only)", e)
	}
	switch l := lit.(type) {
	case *influxql.StringLiteral:
		switch e.Op {
		case influxql.EQ:
			return &model.TagExpr{Op: model.TagEq, Key: ref.Val, Value: l.Val}, nil
		case influxql.NEQ:
			return &model.TagExpr{Op: model.TagNeq, Key: ref.Val, Value: l.Val}, nil
		}
	case *influxql.RegexLiteral:
		switch e.Op {
		case influxql.EQREGEX:
			return &model.TagExpr{Op: model.TagMatch, Key: ref.Val, Value: l.Val.String()}, nil
		case influxql.NEQREGEX:
			return &model.TagExpr{Op: model.TagNotMatch, Key: ref.Val, Value: l.Val.String()}, nil
		}
	case *influxql.IntegerLiteral, *influxql.NumberLiteral, *influxql.BooleanLiteral, *influxql.UnsignedLiteral:
		return nil, fmt.Errorf("unsupported condition: %s (conditions on fields are not supported; tsdb filters on time and tags only)", e)
	}
	return nil, fmt.Errorf("unsupported condition: %s (a tag compares with =, != to a string or =~, !~ to a regular expression)", e)
}
