package ingest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// row builds an expected row; fields are given as name, value pairs.
func row(t int64, series string, kv ...any) model.Row {
	r := model.Row{Time: t, Series: series}
	for i := 0; i < len(kv); i += 2 {
		var v model.Value
		switch x := kv[i+1].(type) {
		case float64:
			v = model.Float(x)
		case int:
			v = model.Int(int64(x))
		case int64:
			v = model.Int(x)
		case bool:
			v = model.Bool(x)
		case string:
			v = model.String(x)
		default:
			panic(fmt.Sprintf("row: unsupported value %T", x))
		}
		r.Fields = append(r.Fields, model.Field{Name: kv[i].(string), Value: v})
	}
	return r
}

// diffRows describes the first difference between two row lists, or "".
func diffRows(got, want []model.Row) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d rows, want %d:\n got  %s\n want %s", len(got), len(want), fmtRows(got), fmtRows(want))
	}
	for i := range got {
		g, w := &got[i], &want[i]
		if g.Time != w.Time || g.Series != w.Series || len(g.Fields) != len(w.Fields) {
			return fmt.Sprintf("row %d: got %s, want %s", i+1, fmtRows(got[i:i+1]), fmtRows(want[i:i+1]))
		}
		for j := range g.Fields {
			gf, wf := &g.Fields[j], &w.Fields[j]
			if gf.Name != wf.Name || !gf.Value.Equal(wf.Value) || gf.Version != wf.Version {
				return fmt.Sprintf("row %d field %d: got %s, want %s", i+1, j, fmtRows(got[i:i+1]), fmtRows(want[i:i+1]))
			}
		}
	}
	return ""
}

func fmtRows(rows []model.Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "{%d %q", r.Time, r.Series)
		for _, f := range r.Fields {
			fmt.Fprintf(&b, " %q=%s:%#v", f.Name, f.Value.Kind, f.Value.Interface())
		}
		b.WriteString("} ")
	}
	return b.String()
}

// checkRows asserts the invariants every successful parse must meet.
func checkRows(t testing.TB, rows []model.Row) {
	t.Helper()
	for i := range rows {
		r := &rows[i]
		if err := r.Validate(); err != nil {
			t.Fatalf("row %d does not validate: %v (%s)", i+1, err, fmtRows(rows[i:i+1]))
		}
		c, err := model.CanonicalSeries(r.Series)
		if err != nil || c != r.Series {
			t.Fatalf("row %d: series %q is not canonical: %q, %v", i+1, r.Series, c, err)
		}
		for j := range r.Fields {
			if j > 0 && r.Fields[j-1].Name >= r.Fields[j].Name {
				t.Fatalf("row %d: fields not sorted and unique: %s", i+1, fmtRows(rows[i:i+1]))
			}
			if !r.Fields[j].Version.IsZero() {
				t.Fatalf("row %d: version set", i+1)
			}
		}
		if cap(r.Fields) != len(r.Fields) {
			t.Fatalf("row %d: Fields capacity %d exceeds length %d", i+1, cap(r.Fields), len(r.Fields))
		}
	}
}

// checkErr asserts that err is a *ParseError at the given line and row,
// wrapping want, whose message contains msg.
func checkErr(t testing.TB, err error, line, row int, want error, msg string) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *ParseError", err, err)
	}
	if pe.Line != line || pe.Row != row {
		t.Errorf("error %q: line %d row %d, want line %d row %d", err, pe.Line, pe.Row, line, row)
	}
	if !errors.Is(err, want) {
		t.Errorf("error %q does not wrap %q", err, want)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not contain %q", err, msg)
	}
}

// testingSeed returns the seed set in $INGEST_SEED, or 0.
func testingSeed() int64 {
	v, _ := strconv.ParseInt(os.Getenv("INGEST_SEED"), 10, 64)
	return v
}
