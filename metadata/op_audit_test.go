package metadata

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// allInvalidCases lists every op's invalid cases, by op.
func allInvalidCases() map[string][]opCase {
	return map[string][]opCase{
		"CREATE and the checks every op shares": createInvalidCases(),
		"SET_OFFLINE":                           setOfflineInvalidCases(),
		"SPLIT_BEGIN":                           splitBeginInvalidCases(),
		"SPLIT_FINALIZE":                        splitFinalizeInvalidCases(),
		"SPLIT_ABORT":                           splitAbortInvalidCases(),
		"JOIN_SERVER":                           joinServerInvalidCases(),
		"JOIN_FINALIZE":                         joinFinalizeInvalidCases(),
		"REMOVE_SERVER":                         removeServerInvalidCases(),
		"FORCE_JOIN":                            forceJoinInvalidCases(),
		"DROP_PARTITIONS":                       dropPartitionsInvalidCases(),
	}
}

// TestOpErrorsAllTested audits the op tests against the op code: every
// error message an op can produce (each fmt.Errorf in op.go and ops_*.go,
// except pure wrappers such as "%w: %s: %w") must be produced by at least
// one invalid case, so a new precondition cannot land without its test.
// Rule 9's "no op shrinks a range in place" has no error of its own: no op
// can express a shrink, which TestOpsNeverShrink and TestOpsRandomSequence
// check on every result.
func TestOpErrorsAllTested(t *testing.T) {
	var msgs []string
	for op, cases := range allInvalidCases() {
		if len(cases) == 0 {
			t.Errorf("%s: no invalid case", op)
		}
		for _, tc := range cases {
			if _, err := Apply(tc.base, tc.txnID(), tc.op); err != nil {
				msgs = append(msgs, err.Error())
			} else {
				t.Errorf("%s / %s: no error", op, tc.name)
			}
		}
	}
	formats := opErrorFormats(t)
	if len(formats) < 40 {
		t.Fatalf("found only %d error formats; the audit is not reading the op files", len(formats))
	}
	for _, f := range formats {
		re := formatRegexp(f.format)
		if re != nil && !slices.ContainsFunc(msgs, re.MatchString) {
			t.Errorf("%s: no invalid case produces %q", f.pos, f.format)
		}
	}
}

type errorFormat struct {
	pos    string
	format string
}

// opErrorFormats returns the format string of every fmt.Errorf call in
// op.go and ops_*.go.
func opErrorFormats(t *testing.T) []errorFormat {
	t.Helper()
	files, err := filepath.Glob("ops_*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") }), "op.go")
	fset := token.NewFileSet()
	var out []errorFormat
	for _, name := range files {
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isFmtErrorf(call.Fun) || len(call.Args) == 0 {
				return true
			}
			format, ok := constString(call.Args[0])
			if !ok {
				t.Errorf("%s: fmt.Errorf with a non-constant format", fset.Position(call.Pos()))
				return true
			}
			out = append(out, errorFormat{pos: fset.Position(call.Pos()).String(), format: format})
			return true
		})
	}
	return out
}

func isFmtErrorf(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "fmt" && sel.Sel.Name == "Errorf"
}

// constString evaluates a string literal or a sum of string literals.
func constString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok1 := constString(e.X)
		y, ok2 := constString(e.Y)
		return x + y, ok1 && ok2
	case *ast.ParenExpr:
		return constString(e.X)
	}
	return "", false
}

var verb = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z%]`)

// formatRegexp turns a format into a regexp matching what it can print
// (each verb matches anything), or nil for a pure wrapper whose literal
// text has no letter.
func formatRegexp(format string) *regexp.Regexp {
	literals := verb.Split(format, -1)
	if !strings.ContainsFunc(strings.Join(literals, ""), unicode.IsLetter) {
		return nil
	}
	for i, l := range literals {
		literals[i] = regexp.QuoteMeta(l)
	}
	return regexp.MustCompile(strings.Join(literals, "(?s:.*)"))
}

// TestFormatRegexp checks the audit's own matcher.
func TestFormatRegexp(t *testing.T) {
	for _, tc := range []struct {
		format, msg string
		match       bool
	}{
		{"partition %s is not splitting", "metadata: invalid op: SPLIT_ABORT: partition 1-2 is not splitting", true},
		{"partition %s is not splitting", "partition 1-2 is splitting", false},
		{"want %d children for %d points, got %d", "want 2 children for 1 points, got 3", true},
		{"servers[%d]: nil placement_id", "servers[1]: nil placement_id", true},
		{"servers[%d]: nil placement_id", "servers1: nil placement_id", false},
	} {
		if got := formatRegexp(tc.format).MatchString(tc.msg); got != tc.match {
			t.Errorf("%q vs %q: %t", tc.format, tc.msg, got)
		}
	}
	if formatRegexp("%w: %s: %w") != nil {
		t.Error("a pure wrapper needs no case")
	}
}
