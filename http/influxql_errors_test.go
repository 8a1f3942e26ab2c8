package http

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestInfluxQueryRequestErrors checks the errors of a whole /query request:
// InfluxDB's body and its X-Influxdb-Error header, and a q of blanks
// answered as a missing q (InfluxDB trims it).
func TestInfluxQueryRequestErrors(t *testing.T) {
	base, _ := influxServer(t)
	cases := []struct {
		name, method, query, ctype, body string
		status                           int
		msg                              string
	}{
		{"blank q", "GET", "q=" + url.QueryEscape(" \t\n "), "", "", 400, `missing required parameter "q"`},
		{"blank form q", "POST", "", "application/x-www-form-urlencoded", "q=+%20%0A", 400, `missing required parameter "q"`},
		{"blank influxql body", "POST", "", "application/vnd.influxql", "  \n", 400, `missing required parameter "q"`},
		{"parse error", "GET", "q=SELEKT", "", "", 400, "error parsing query: found SELEKT, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 1"},
		{"method", "PUT", "q=SHOW+DATABASES", "", "", 405, "method PUT not allowed on /query (allowed: GET, POST)"},
	}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, base+"/query?"+c.query, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := `{"error":` + jsonString(c.msg) + `}`
		if resp.StatusCode != c.status || string(b) != want || resp.Header.Get("X-Influxdb-Error") != c.msg {
			t.Errorf("%s: %d %s [X-Influxdb-Error: %q]\nwant %d %s [%q]", c.name, resp.StatusCode, b, resp.Header.Get("X-Influxdb-Error"), c.status, want, c.msg)
		}
	}
}

func jsonString(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
