package influx

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/influxdata/influxql"

	"github.com/tsdb/tsdb/influx/influxtest"
	"github.com/tsdb/tsdb/model"
)

// TestShowLongLists checks that a long IN (...) list of SHOW TAG VALUES and
// a long FROM list are matched through sets: slices.Contains per tag or
// per measurement made them quadratic (seconds for these sizes).
func TestShowLongLists(t *testing.T) {
	const n, probes = 200_000, 20_000
	list := &influxql.ListLiteral{}
	var ss influxql.Sources
	for i := 0; i < n; i++ {
		list.Vals = append(list.Vals, fmt.Sprintf("k%07d", i))
		ss = append(ss, &influxql.Measurement{Name: fmt.Sprintf("m%07d", i)})
	}
	start := time.Now()
	keep, err := tagKeyFilter(influxql.IN, list)
	if err != nil {
		t.Fatal(err)
	}
	src, err := parseSources(ss)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < probes; i++ {
		if keep(fmt.Sprintf("x%d", i)) || src.match(fmt.Sprintf("x%d", i)) {
			t.Fatal("matched a name not in the list")
		}
	}
	if !keep("k0199999") || !src.match("m0000000") {
		t.Fatal("a name of the list did not match")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("%d probes of %d-element lists took %v: quadratic matching", probes, n, d)
	}
}

// cancelAfterKeys cancels the request's context once it answers the series
// keys, as a deadline expiring during the statement would.
type cancelAfterKeys struct {
	*influxtest.Backend
	cancel context.CancelFunc
}

func (c *cancelAfterKeys) SeriesKeys(ctx context.Context, table string, q model.Query, limit int) ([]string, error) {
	keys, err := c.Backend.SeriesKeys(ctx, table, q, limit)
	c.cancel()
	return keys, err
}

func (c *cancelAfterKeys) FieldKeys(ctx context.Context, table, measurement string) ([]model.FieldKey, error) {
	fks, err := c.Backend.FieldKeys(ctx, table, measurement)
	c.cancel()
	return fks, err
}

// TestShowStopsOnCancel checks that the SHOW statements' loops over series
// and measurements stop when the request's context ends.
func TestShowStopsOnCancel(t *testing.T) {
	for _, q := range []string{
		`SHOW TAG VALUES WITH KEY IN ("host", "region")`,
		`SHOW TAG KEYS`,
		`SHOW SERIES WHERE host = 'a' OR host = 'b'`,
		`SHOW MEASUREMENTS`,
		`SHOW FIELD KEYS`,
	} {
		ctx, cancel := context.WithCancel(context.Background())
		e := NewExecutor(&cancelAfterKeys{Backend: testData(), cancel: cancel}, Config{})
		resp, err := e.Execute(ctx, q, Options{DB: "telegraf"})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Results[0].Err; got != context.Canceled.Error() {
			t.Errorf("%s: statement error %q, want %q", q, got, context.Canceled)
		}
	}
}
