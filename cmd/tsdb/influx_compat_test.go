package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	influxhttp "github.com/influxdata/influxdb-client-go/v2/api/http"
	influxdb1 "github.com/influxdata/influxdb1-client/v2"
)

// The compatibility tests of issue 18: InfluxDB's own clients (the Go
// client libraries for 1.x and 2.x, and the influx CLI) against a real
// `tsdb dev` cluster started in-process, with a token.

const compatToken = "compat-s3cret"

// startDevWithToken starts `tsdb dev` (three servers) in-process with
// --auth-token-file holding token and returns the first server's URL; it
// stops when the test ends.
func startDevWithToken(t *testing.T, token string) string {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return startDev(t, "--auth-token-file", tokenFile)
}

// compatCall calls tsdb's own API on base with the bearer token and
// returns the status and body.
func compatCall(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+compatToken)
	req.Header.Set("X-TSDB-Consistency", "all") // reads see every write acknowledged
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// createCompatTable creates a table through tsdb's API.
func createCompatTable(t *testing.T, base, name string) {
	t.Helper()
	if st, body := compatCall(t, "POST", base+"/api/v1/tables", `{"name":"`+name+`"}`); st != 201 {
		t.Fatalf("create table %s: %d %s", name, st, body)
	}
}

// waitForSeries polls a raw query of table on base until every series in
// want has a row at its time (ns) and returns; it fails the test after 30 s.
func waitForSeries(t *testing.T, base, table string, want map[string]int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, body := compatCall(t, "GET", base+"/api/v1/tables/"+table+"/query", "")
		var ans struct {
			Rows []struct {
				Time   int64
				Series string
			}
		}
		missing := []string{}
		if st == 200 && json.Unmarshal([]byte(body), &ans) == nil {
			for s, ts := range want {
				found := false
				for _, r := range ans.Rows {
					found = found || r.Series == s && r.Time == ts
				}
				if !found {
					missing = append(missing, fmt.Sprintf("%s@%d", s, ts))
				}
			}
			if len(missing) == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("table %s: %v missing after 30 s; last answer %d %s", table, missing, st, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestInfluxClientLibraries: InfluxDB's Go client libraries, unchanged,
// against a token-protected `tsdb dev`: the 2.x client's Ping, Health and
// blocking write API with Token auth (bucket and bucket "db/rp"), the 1.x
// client's Ping and batch write with a user and the token as password;
// both read the errors (wrong token, unknown database) as InfluxDB's.
func TestInfluxClientLibraries(t *testing.T) {
	base := startDevWithToken(t, compatToken)
	createCompatTable(t, base, "telegraf")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ts := time.Now().Truncate(time.Second)

	// influxdb-client-go v2.
	c2 := influxdb2.NewClient(base, compatToken)
	defer c2.Close()
	if ok, err := c2.Ping(ctx); !ok || err != nil {
		t.Fatalf("v2 Ping: %v %v", ok, err)
	}
	h, err := c2.Health(ctx)
	if err != nil {
		t.Fatalf("v2 Health: %v", err)
	}
	if h.Status != "pass" || h.Name != "tsdb" || h.Version == nil || !strings.HasPrefix(*h.Version, "1.8.10-tsdb-") {
		t.Fatalf("v2 Health: %+v", h)
	}
	w := c2.WriteAPIBlocking("any-org", "telegraf")
	if err := w.WriteRecord(ctx, fmt.Sprintf("cpu,host=v2rec v=1 %d", ts.UnixNano())); err != nil {
		t.Fatalf("v2 WriteRecord: %v", err)
	}
	p := influxdb2.NewPoint("cpu", map[string]string{"host": "v2point"}, map[string]any{"v": 2.5, "n": 3}, ts)
	if err := w.WritePoint(ctx, p); err != nil {
		t.Fatalf("v2 WritePoint: %v", err)
	}
	if err := c2.WriteAPIBlocking("", "telegraf/autogen").WriteRecord(ctx, fmt.Sprintf("cpu,host=v2rp v=1 %d", ts.UnixNano())); err != nil {
		t.Fatalf("v2 write to bucket telegraf/autogen: %v", err)
	}
	var he *influxhttp.Error
	err = c2.WriteAPIBlocking("any-org", "nope").WriteRecord(ctx, "cpu v=1")
	if !errors.As(err, &he) || he.StatusCode != 404 || he.Code != "not found" || he.Message != `bucket "nope" not found` {
		t.Fatalf("v2 write to an unknown bucket: %#v, want 404 not found", err)
	}
	bad := influxdb2.NewClient(base, "wrong")
	defer bad.Close()
	err = bad.WriteAPIBlocking("any-org", "telegraf").WriteRecord(ctx, "cpu v=1")
	if !errors.As(err, &he) || he.StatusCode != 401 || he.Code != "unauthorized" {
		t.Fatalf("v2 write with a wrong token: %#v, want 401 unauthorized", err)
	}
	if ok, err := bad.Ping(ctx); !ok || err != nil {
		t.Fatalf("v2 Ping with a wrong token (ping is open): %v %v", ok, err)
	}

	// influxdb1-client v2 (the 1.x client): basic auth, any user.
	c1, err := influxdb1.NewHTTPClient(influxdb1.HTTPConfig{Addr: base, Username: "telegraf", Password: compatToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if _, version, err := c1.Ping(5 * time.Second); err != nil || !strings.HasPrefix(version, "1.8.10-tsdb-") {
		t.Fatalf("v1 Ping: %q %v", version, err)
	}
	bp, err := influxdb1.NewBatchPoints(influxdb1.BatchPointsConfig{Database: "telegraf", Precision: "s", RetentionPolicy: "autogen"})
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"v1a", "v1b"} {
		pt, err := influxdb1.NewPoint("cpu", map[string]string{"host": host}, map[string]any{"v": 1.5}, ts)
		if err != nil {
			t.Fatal(err)
		}
		bp.AddPoint(pt)
	}
	if err := c1.Write(bp); err != nil {
		t.Fatalf("v1 Write: %v", err)
	}
	bp2, _ := influxdb1.NewBatchPoints(influxdb1.BatchPointsConfig{Database: "nope"})
	pt, _ := influxdb1.NewPoint("cpu", nil, map[string]any{"v": 1.0}, ts)
	bp2.AddPoint(pt)
	// The 1.x client's error is the answer's body, as with InfluxDB.
	if err := c1.Write(bp2); err == nil || err.Error() != `{"error":"database not found: \"nope\""}` {
		t.Fatalf("v1 Write to an unknown database: %v, want database not found", err)
	}
	c1bad, _ := influxdb1.NewHTTPClient(influxdb1.HTTPConfig{Addr: base, Username: "telegraf", Password: "wrong"})
	defer c1bad.Close()
	bp.SetDatabase("telegraf")
	if err := c1bad.Write(bp); err == nil || !strings.Contains(err.Error(), "authorization failed") {
		t.Fatalf("v1 Write with a wrong password: %v, want authorization failed", err)
	}

	ns := ts.UnixNano()
	waitForSeries(t, base, "telegraf", map[string]int64{
		"cpu,host=v2rec": ns, "cpu,host=v2point": ns, "cpu,host=v2rp": ns, "cpu,host=v1a": ns, "cpu,host=v1b": ns,
	})
}

// runInflux runs the influx CLI against host:port with the token as
// password and returns its combined output and error.
func runInflux(t *testing.T, port string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append([]string{"-host", "127.0.0.1", "-port", port, "-username", "cli", "-password", compatToken}, args...)
	out, err := exec.CommandContext(ctx, "influx", full...).CombinedOutput()
	return string(out), err
}

// TestInfluxCLI runs the influx CLI (Debian's influxdb-client, 1.6) against
// a token-protected `tsdb dev`: INSERT through /write; CREATE DATABASE,
// SELECT and the SHOW statements through /query.
func TestInfluxCLI(t *testing.T) {
	if _, err := exec.LookPath("influx"); err != nil {
		t.Skip("the influx CLI is not on PATH (Debian: apt-get install influxdb-client); skipping the CLI compatibility test")
	}
	base := startDevWithToken(t, compatToken)
	u, _ := url.Parse(base)
	port := u.Port()
	createCompatTable(t, base, "x")

	// INSERT: the CLI pings, then writes line protocol to /write with
	// basic auth (password = token).
	if out, err := runInflux(t, port, "-database", "x", "-execute", "INSERT cpu,host=a v=1"); err != nil {
		t.Fatalf("influx INSERT: %v\n%s", err, out)
	}
	if out, err := runInflux(t, port, "-database", "x", "-precision", "s", "-execute", "INSERT cpu,host=b v=2 1700000000"); err != nil {
		t.Fatalf("influx INSERT with -precision s: %v\n%s", err, out)
	}
	waitForSeries(t, base, "x", map[string]int64{"cpu,host=b": 1_700_000_000_000_000_000})
	st, body := compatCall(t, "GET", base+"/api/v1/tables/x/query?series=cpu,host=a", "")
	if st != 200 || !strings.Contains(body, `"cpu,host=a"`) {
		t.Fatalf("the row INSERTed without a time: %d %s", st, body)
	}
	// Errors reach the CLI's user as InfluxDB's.
	// (The CLI 1.6 prints ERR and still exits 0 after a failed INSERT.)
	out, err := runInflux(t, port, "-database", "nope", "-execute", "INSERT cpu v=1")
	if !strings.Contains(out, `ERR: {"error":"database not found: \"nope\""}`) {
		t.Fatalf("influx INSERT into an unknown database: %v\n%s", err, out)
	}
	full := []string{"-host", "127.0.0.1", "-port", port, "-username", "cli", "-password", "wrong", "-database", "x", "-execute", "INSERT cpu v=1"}
	if out, err := exec.Command("influx", full...).CombinedOutput(); !strings.Contains(string(out), "authorization failed") {
		t.Fatalf("influx INSERT with a wrong password: %v\n%s", err, out)
	}

	if out, err := runInflux(t, port, "-execute", "CREATE DATABASE y"); err != nil {
		t.Fatalf("influx CREATE DATABASE: %v\n%s", err, out)
	}
	if out, err := runInflux(t, port, "-database", "y", "-execute", "INSERT cpu,host=a v=1"); err != nil {
		t.Fatalf("influx INSERT into the created database: %v\n%s", err, out)
	}
	if out, err := runInflux(t, port, "-database", "y", "-execute", "INSERT cpu,host=b v=3"); err != nil {
		t.Fatalf("influx INSERT: %v\n%s", err, out)
	}
	type series struct {
		Name    string
		Tags    map[string]string
		Columns []string
		Values  [][]any
	}
	query := func(db, q string) []series {
		t.Helper()
		args := []string{"-format", "json", "-execute", q}
		if db != "" {
			args = append([]string{"-database", db}, args...)
		}
		out, err := runInflux(t, port, args...)
		if err != nil {
			t.Fatalf("influx %q: %v\n%s", q, err, out)
		}
		var ans struct {
			Results []struct {
				Series []series
				Error  string
			}
		}
		if err := json.Unmarshal([]byte(out), &ans); err != nil || len(ans.Results) != 1 || ans.Results[0].Error != "" {
			t.Fatalf("influx %q: %v\n%s", q, err, out)
		}
		return ans.Results[0].Series
	}
	values := func(ss []series) []string {
		var vs []string
		for _, s := range ss {
			for _, v := range s.Values {
				vs = append(vs, fmt.Sprint(v...))
			}
		}
		return vs
	}
	has := func(q string, vs []string, want ...string) {
		t.Helper()
		for _, w := range want {
			found := false
			for _, v := range vs {
				found = found || v == w
			}
			if !found {
				t.Errorf("%s: %q does not hold %q", q, vs, w)
			}
		}
	}
	var got []series
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = query("y", "SELECT mean(v) FROM cpu WHERE time > now() - 1h GROUP BY time(1m), host")
		if len(got) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	means := map[string]bool{}
	for _, s := range got {
		if s.Name != "cpu" || len(s.Columns) != 2 || s.Columns[0] != "time" || s.Columns[1] != "mean" {
			t.Errorf("SELECT mean: series %+v", s)
		}
		for _, v := range s.Values {
			if len(v) == 2 && v[1] != nil {
				means[s.Tags["host"]+"="+fmt.Sprint(v[1])] = true
			}
		}
	}
	if len(got) != 2 || !means["a=1"] || !means["b=3"] {
		t.Errorf("SELECT mean(v) ... GROUP BY time(1m), host: %+v, want hosts a (mean 1) and b (mean 3)", got)
	}
	has("SHOW DATABASES", values(query("", "SHOW DATABASES")), "x", "y")
	has("SHOW MEASUREMENTS", values(query("y", "SHOW MEASUREMENTS")), "cpu")
	has("SHOW TAG KEYS", values(query("y", "SHOW TAG KEYS FROM cpu")), "host")
	has("SHOW TAG VALUES", values(query("y", `SHOW TAG VALUES FROM cpu WITH KEY = "host"`)), "hosta", "hostb")
	has("SHOW FIELD KEYS", values(query("y", "SHOW FIELD KEYS")), "vfloat")
	has("SHOW SERIES", values(query("y", "SHOW SERIES")), "cpu,host=a", "cpu,host=b")
	if rps := query("y", "SHOW RETENTION POLICIES"); len(rps) != 1 || len(rps[0].Values) == 0 {
		t.Errorf("SHOW RETENTION POLICIES: %+v", rps)
	}
}
