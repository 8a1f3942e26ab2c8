package node

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/influx"
	"github.com/tsdb/tsdb/influx/influxtest"
)

// TestInfluxQLAcrossPartitions runs InfluxQL statements through the
// executor on three servers' front ends, over a table split in three
// partitions at RF 1 (most sub-queries remote), and checks every answer
// against the same statements on the brute-force backend of influxtest
// holding the same rows.
func TestInfluxQLAcrossPartitions(t *testing.T) {
	c := startCluster(t, 3)
	c.createTable("s1", "db", 1)
	rows := metaRows()
	var body strings.Builder
	fake := influxtest.New()
	for _, r := range rows {
		body.WriteString(r.line())
		var kv []any
		switch {
		case strings.HasPrefix(r.series, "mem"):
			kv = []any{"free", int(r.usage)}
		case r.idle:
			kv = []any{"usage", r.usage, "idle", int(r.t)}
		default:
			kv = []any{"usage", r.usage}
		}
		fake.Add("db", influxtest.Row(r.series, r.t, kv...))
	}
	c.insertLP("s1", "db", []byte(body.String()))
	c.splitInto("s1", "db", 0, 100, 3)

	statements := []string{
		`SELECT count(usage), sum(usage), mean(usage), min(usage), max(usage), first(usage), last(usage), spread(usage) FROM cpu WHERE time >= 0 AND time < 300 GROUP BY time(50ns), host fill(none)`,
		`SELECT mean(usage) FROM cpu WHERE time >= 0 AND time < 300 GROUP BY time(40ns, 10ns) fill(linear)`,
		`SELECT count(idle) FROM cpu WHERE time >= 20 AND time < 280 GROUP BY time(30ns), region fill(null)`,
		`SELECT median(usage), percentile(usage, 90), stddev(usage) FROM cpu WHERE time >= 0 AND time < 300 GROUP BY region`,
		`SELECT max(usage) FROM cpu WHERE (region =~ /e/ OR host = 'd') AND time >= 0 AND time < 300 GROUP BY *`,
		`SELECT usage, idle, host FROM cpu WHERE host = 'a' AND time >= 50 AND time < 120`,
		`SELECT * FROM cpu WHERE host = 'b' LIMIT 5 OFFSET 2`,
		`SELECT usage FROM cpu WHERE region != 'us' ORDER BY time DESC LIMIT 3`,
		`SELECT free FROM mem`,
		`SHOW MEASUREMENTS`,
		`SHOW TAG KEYS`,
		`SHOW TAG VALUES WITH KEY = "host" WHERE region = 'us'`,
		`SHOW FIELD KEYS`,
		`SHOW SERIES FROM cpu WHERE region != 'eu'`,
	}
	q := strings.Join(statements, "; ")
	want := answer(t, fake, q)
	for id, n := range c.nodes {
		if got := answer(t, n.front.Influx(), q); !sameAnswer(t, got, want) {
			t.Errorf("via %s:\n got %s\nwant %s", id, got, want)
		}
	}

	// DROP SERIES and DELETE through one server, seen by all. (The DELETE
	// leaves rows of every series it touches: a series whose rows are all
	// deleted by time stays in the tag index, where the fake forgets it.)
	del := `DROP SERIES FROM cpu WHERE host = 'a'; DELETE FROM cpu WHERE region = 'us' AND time >= 100 AND time < 150`
	answer(t, c.nodes["s2"].front.Influx(), del)
	answer(t, fake, del)
	want = answer(t, fake, q)
	for id, n := range c.nodes {
		if got := answer(t, n.front.Influx(), q); !sameAnswer(t, got, want) {
			t.Errorf("after the deletes, via %s:\n got %s\nwant %s", id, got, want)
		}
	}
}

func answer(t *testing.T, be influx.Backend, q string) string {
	t.Helper()
	resp, err := influx.NewExecutor(be, influx.Config{}).Execute(context.Background(), q, influx.Options{DB: "db", Epoch: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results {
		if r.Err != "" {
			t.Errorf("statement %d: %s", i, r.Err)
		}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameAnswer compares two /query answers as JSON, floats equal within a
// relative 1e-9: partial aggregate states (stddev's variance above all)
// merge in partition order here and in one pass in the fake, so the last
// digits may differ.
func sameAnswer(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("model answer is not JSON: %v\n%s", err, want)
	}
	return jsonClose(g, w)
}

func jsonClose(a, b any) bool {
	switch a := a.(type) {
	case float64:
		b, ok := b.(float64)
		return ok && (a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)))
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !jsonClose(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if !jsonClose(v, b[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}
