package influx

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzExecute runs arbitrary query text through the executor over
// testData's tables: whatever the text, Execute answers a response or an
// error, never panics (a panic in a /query handler is a 500 at best, and a
// stack overflow, as the deep queries of TestQueryShapeLimits were, kills
// the server), and a response encodes as JSON. Run it beyond its seeds with
// go test ./influx -run '^$' -fuzz FuzzExecute -fuzztime 5m.
func FuzzExecute(f *testing.F) {
	seeds := []string{
		`SELECT mean("value") FROM "cpu" WHERE ("host" =~ /^a$/) AND ` + grafanaFilter + ` GROUP BY time(10s), "host" fill(null)`,
		`SELECT value FROM cpu WHERE time >= now() - 1h`,
		`SELECT count(value), max(value), min(value) FROM cpu GROUP BY time(7s) fill(linear)`,
		`SELECT percentile(value, 90), median(value), stddev(value), spread(value) FROM cpu GROUP BY host`,
		`SELECT derivative(mean(value), 1s) FROM cpu WHERE time > 0 GROUP BY time(10s)`,
		`SELECT * FROM mem; SELECT "used"::field, "host"::tag FROM mem WHERE active = 'yes' AND ok = true`,
		`SELECT last(value) FROM cpu WHERE host = $h LIMIT 2 OFFSET 1 SLIMIT 1`,
		`SELECT top(value, 2), bottom(value, host, 1) FROM cpu`,
		`SELECT value FROM /c.*/ WHERE time < '2023-11-14T22:13:30Z' ORDER BY time DESC`,
		`SELECT v FROM other..nan`,
		`SHOW TAG VALUES FROM "cpu" WITH KEY = "host" WHERE "region" =~ /^eu/`,
		`SHOW MEASUREMENTS WITH MEASUREMENT =~ /(?i)CP/ LIMIT 100`,
		`SHOW FIELD KEYS FROM "cpu"; SHOW TAG KEYS; SHOW SERIES; SHOW DATABASES; SHOW RETENTION POLICIES`,
		`SELECT mean(value) FROM cpu WHERE time >= 9223372036854775806 GROUP BY time(1ns)`,
		`SELECT mean(value) FROM (SELECT value FROM cpu) GROUP BY time(1h, -30m)`,
		`CREATE DATABASE x; DROP MEASUREMENT cpu; DELETE FROM cpu WHERE time < 0`,
	}
	for _, s := range seeds {
		f.Add(s, "s", "telegraf")
	}
	f.Add(`SELECT value FROM cpu`, "", "")
	f.Fuzz(func(t *testing.T, q, epoch, db string) {
		e := NewExecutor(testData(), Config{
			MaxRawRows: 1000, MaxBuckets: 10_000,
			Now: func() time.Time { return time.Unix(0, sec(60)) },
		})
		opts := Options{DB: db, Epoch: epoch, Params: map[string]any{"h": "a"}}
		resp, err := e.Execute(context.Background(), q, opts)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("Execute(%q): an error without a message", q)
			}
			return
		}
		if resp == nil {
			t.Fatalf("Execute(%q): no response and no error", q)
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("Execute(%q): the response does not encode: %v", q, err)
		}
	})
}
