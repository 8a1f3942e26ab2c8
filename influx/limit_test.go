package influx

import (
	"context"
	"testing"
	"time"

	"github.com/tsdb/tsdb/influx/influxtest"
	"github.com/tsdb/tsdb/model"
)

// limitSpy records the row limit of every Backend.Query.
type limitSpy struct {
	*influxtest.Backend
	limits []int
}

func (l *limitSpy) Query(ctx context.Context, table string, q model.Query) ([]model.Row, bool, error) {
	l.limits = append(l.limits, q.Limit)
	return l.Backend.Query(ctx, table, q)
}

// TestLimitOffsetOverflow checks that a LIMIT near MaxInt64 with an OFFSET
// keeps the row cap: OFFSET+LIMIT overflowed to a negative q.Limit, which
// the backend reads as no limit.
func TestLimitOffsetOverflow(t *testing.T) {
	for _, q := range []string{
		`SELECT value FROM cpu LIMIT 9223372036854775807 OFFSET 1`,
		`SELECT value FROM cpu LIMIT 1 OFFSET 9223372036854775807`,
		`SELECT value FROM cpu LIMIT 9223372036854775807 OFFSET 9223372036854775807`,
	} {
		spy := &limitSpy{Backend: testData()}
		e := NewExecutor(spy, Config{MaxRawRows: 100, Now: func() time.Time { return time.Unix(0, sec(60)) }})
		if _, err := e.Execute(context.Background(), q, Options{DB: "telegraf"}); err != nil {
			t.Fatal(err)
		}
		for _, l := range spy.limits {
			if l <= 0 || l > 101 {
				t.Errorf("%s: backend limit %d, want 1..101 (the row cap)", q, l)
			}
		}
	}
}
