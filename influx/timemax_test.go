package influx

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/influxdata/influxql"
)

// TestTimeMaxInt64 checks that time <= 9223372036854775807 is an open end:
// TimeRange.Max+1 overflowed to MinInt64, so the SELECT answered nothing
// and the DELETE deleted nothing.
func TestTimeMaxInt64(t *testing.T) {
	w, err := splitWhere(mustCond(t, `time <= 9223372036854775807`), time.Unix(0, 0))
	if err != nil || w.to != math.MaxInt64 || !w.hasTo {
		t.Fatalf("splitWhere: to %d hasTo %v err %v, want to MaxInt64", w.to, w.hasTo, err)
	}
	f := testData()
	got := run(t, f, `SELECT value FROM cpu WHERE host = 'c' AND time <= 9223372036854775807`, Options{DB: "telegraf", Epoch: "s"})
	if want := `{"results":[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000005,100]]}]}]}`; got != want {
		t.Fatalf("SELECT: got %s\nwant %s", got, want)
	}
	run(t, f, `DELETE FROM cpu WHERE time <= 9223372036854775807`, Options{DB: "telegraf"})
	if got := run(t, f, `SELECT value FROM cpu`, Options{DB: "telegraf"}); strings.Contains(got, "series") {
		t.Fatalf("after DELETE ... time <= MaxInt64: %s, want no rows", got)
	}
}

func mustCond(t *testing.T, cond string) influxql.Expr {
	t.Helper()
	e, err := influxql.ParseExpr(cond)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
