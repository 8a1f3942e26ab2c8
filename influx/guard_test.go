package influx

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/errcode"
)

// TestQueryShapeLimits checks the guard run before parsing: a query nesting
// parentheses deeper than MaxQueryDepth, joining more than MaxBoolOps
// conditions or longer than MaxQueryBytes fails the whole request naming
// the limit. (The shapes that crashed the process, 1M parentheses and 2M
// ORs, overflowed the stack of the parser and of influxql.ConditionExpr; the
// inputs here are just above the limits, which parse without the guard.)
func TestQueryShapeLimits(t *testing.T) {
	e := NewExecutor(testData(), Config{})
	d := DefaultMaxQueryDepth + 1
	cases := []struct{ name, q, want string }{
		{"deep parentheses", `SELECT value FROM cpu WHERE ` + strings.Repeat("(", d) + `host='a'` + strings.Repeat(")", d),
			"nests parentheses deeper than 100"},
		{"many ORs", `SELECT value FROM cpu WHERE host='a'` + strings.Repeat(` OR host='a'`, DefaultMaxBoolOps+1),
			"more than 1000 AND/OR operators"},
		{"many ands, any case", `SELECT value FROM cpu WHERE host='a'` + strings.Repeat(` aNd host='a'`, DefaultMaxBoolOps+1),
			"more than 1000 AND/OR operators"},
		{"too long", `SELECT value FROM cpu WHERE host='` + strings.Repeat("x", DefaultMaxQueryBytes) + `'`,
			"query too long"},
	}
	for _, c := range cases {
		_, err := e.Execute(context.Background(), c.q, Options{DB: "telegraf"})
		if err == nil || !errors.Is(err, errcode.ErrInvalidQuery) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want a request error containing %q", c.name, err, c.want)
		}
	}
	// At the limits, and with parentheses and operators inside strings,
	// the query runs.
	ok := []string{
		`SELECT value FROM cpu WHERE ` + strings.Repeat("(", DefaultMaxQueryDepth) + `host='a'` + strings.Repeat(")", DefaultMaxQueryDepth),
		`SELECT value FROM cpu WHERE host='a'` + strings.Repeat(` OR host='a'`, DefaultMaxBoolOps),
		`SELECT value FROM cpu WHERE host='` + strings.Repeat("((( or and ", 20_000) + `'`,
		`SELECT value FROM cpu WHERE "` + strings.Repeat(`(\" or `, 20_000) + `"='a'`,
		`SELECT value FROM cpu WHERE host =~ /(a)|(b)/ AND "order"='x'`,
	}
	for _, q := range ok {
		if _, err := e.Execute(context.Background(), q, Options{DB: "telegraf"}); err != nil {
			t.Errorf("%.80s...: %v", q, err)
		}
	}
}
