package node

import (
	"net/url"
	"testing"
)

// TestInfluxQLOverHTTP: /query is wired to the front end: Telegraf's
// CREATE DATABASE, a write, then the influx CLI's and Grafana's kinds of
// statements through a real server, form-encoded POST and GET.
func TestInfluxQLOverHTTP(t *testing.T) {
	c := startCluster(t, 1)
	cl := c.client("s1")
	form := []string{"Content-Type", "application/x-www-form-urlencoded"}
	r := cl.do("POST", "/query", []byte(url.Values{"q": {`CREATE DATABASE "telegraf"`}}.Encode()), form...)
	if r.status != 200 || string(r.body) != `{"results":[{"statement_id":0}]}` {
		t.Fatalf("CREATE DATABASE: %d %s", r.status, r.body)
	}
	c.insertLP("s1", "telegraf", []byte("cpu,host=a v=1 10\ncpu,host=a v=3 20\ncpu,host=b v=10 60\nmem,host=a free=5i 70\n"))

	q := url.Values{"db": {"telegraf"}, "epoch": {"ns"}, "q": {
		`SELECT mean(v), count(v) FROM cpu WHERE time >= 0 AND time < 100 GROUP BY time(50ns), host fill(none); ` +
			`SHOW DATABASES; SHOW MEASUREMENTS; SHOW TAG VALUES WITH KEY = "host"; SHOW FIELD KEYS; SHOW RETENTION POLICIES; ` +
			`SELECT nope(v) FROM cpu; SELECT v FROM nope..cpu; SHOW TAG KEYS ON nope`}}
	r = cl.do("GET", "/query?"+q.Encode(), nil)
	want := `{"results":[{"statement_id":0,"series":[` +
		`{"name":"cpu","tags":{"host":"a"},"columns":["time","mean","count"],"values":[[0,2,2]]},` +
		`{"name":"cpu","tags":{"host":"b"},"columns":["time","mean","count"],"values":[[50,10,1]]}]},` +
		`{"statement_id":1,"series":[{"name":"databases","columns":["name"],"values":[["telegraf"]]}]},` +
		`{"statement_id":2,"series":[{"name":"measurements","columns":["name"],"values":[["cpu"],["mem"]]}]},` +
		`{"statement_id":3,"series":[{"name":"cpu","columns":["key","value"],"values":[["host","a"],["host","b"]]},{"name":"mem","columns":["key","value"],"values":[["host","a"]]}]},` +
		`{"statement_id":4,"series":[{"name":"cpu","columns":["fieldKey","fieldType"],"values":[["v","float"]]},{"name":"mem","columns":["fieldKey","fieldType"],"values":[["free","integer"]]}]},` +
		`{"statement_id":5,"series":[{"columns":["name","duration","shardGroupDuration","replicaN","default"],"values":[["autogen","0s","168h0m0s",1,true]]}]},` +
		`{"statement_id":6,"error":"function nope() is not supported (supported: count, sum, mean, median, min, max, first, last, spread, stddev, percentile)"},` +
		`{"statement_id":7,"error":"database not found: nope"},{"statement_id":8,"error":"database not found: nope"}]}`
	if r.status != 200 || string(r.body) != want {
		t.Errorf("got %d %s\nwant %s", r.status, r.body, want)
	}

	r = cl.do("GET", "/query?q=SELEKT", nil)
	if r.status != 400 || string(r.body) != `{"error":"error parsing query: found SELEKT, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 1"}` {
		t.Errorf("parse error: %d %s", r.status, r.body)
	}
}
