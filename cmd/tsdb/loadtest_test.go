package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/loadtest"
)

// startDevForLoadtest starts `tsdb dev` (three servers) in-process on free
// ports and returns the first server's URL; it stops when the test ends.
func startDevForLoadtest(t *testing.T) string {
	t.Helper()
	return startDev(t)
}

// tinyLoadtestArgs are the flags of a short load test writing its files
// under dir.
func tinyLoadtestArgs(dir, chart string) []string {
	return []string{"loadtest", "--duration", "1500ms", "--warmup", "0s", "--wait-narrow", "0s", "--series", "50", "--batch", "100",
		"--concurrency", "2", "--rate", "5000", "--max-delay", "1s", "--probe-interval", "250ms",
		"--probe-timeout", "20s", "--sample-interval", "250ms", "--request-timeout", "15s", "--table", "lt",
		"--report", filepath.Join(dir, "report.json"), "--chart", filepath.Join(dir, chart), "--log-level", "error"}
}

// readLoadtestReport reads the report a test's load test wrote and checks
// its runs acknowledged rows.
func readLoadtestReport(t *testing.T, dir string, runs int) *loadtest.Report {
	t.Helper()
	rep, err := loadtest.ReadReport(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != runs || rep.Aborted {
		t.Fatalf("report: %d runs (want %d), aborted %v", len(rep.Runs), runs, rep.Aborted)
	}
	for _, r := range rep.Runs {
		if r.RowsAcked <= 0 || r.Visibility.Visible == 0 {
			t.Errorf("%s: %d rows acked, visibility %+v, errors %v", r.Name, r.RowsAcked, r.Visibility, r.Errors)
		}
	}
	return rep
}

// checkChartFile checks a chart file starts like an SVG or a PNG.
func checkChartFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	svg := bytes.HasPrefix(b, []byte("<?xml")) && bytes.Contains(b, []byte("<svg"))
	png := bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))
	if len(b) < 1000 || !(svg || png) {
		t.Errorf("%s is not an SVG or PNG chart (%d bytes)", path, len(b))
	}
}

// TestLoadtestCompareAgainstDev runs `tsdb loadtest --compare` for 2×1.5 s
// against an in-process `tsdb dev` cluster through --url (discovering all
// three servers) and checks the summary, the JSON report and the chart.
func TestLoadtestCompareAgainstDev(t *testing.T) {
	base := startDevForLoadtest(t)
	dir := t.TempDir()
	out, err := run(append(tinyLoadtestArgs(dir, "chart.svg"), "--url", base, "--compare")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Log(out)
	for _, want := range []string{"smear-off", "smear-on", "acked rows/s", "busiest share / fair share",
		"visibility p50 / p99 / max", "throughput ratio smear on/off:", "ideal N/(RF+1) = 3/4 = 0.75"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	rep := readLoadtestReport(t, dir, 2)
	if len(rep.Servers) != 3 || rep.Compare == nil || rep.Compare.Ratio <= 0 || rep.Settings.ClusterMode != "url" {
		t.Errorf("servers %v, compare %+v, mode %q", rep.Servers, rep.Compare, rep.Settings.ClusterMode)
	}
	checkChartFile(t, filepath.Join(dir, "chart.svg"))
}

// TestLoadtestLocalCluster runs `tsdb loadtest --cluster 1 --rf 1
// --write-limit 50MB`: the
// local cluster's server is this test binary run as the tsdb command
// (TSDB_TEST_MAIN, see TestMain). It checks the run, the files, the
// server's log in --dir and that the server is stopped afterwards.
func TestLoadtestLocalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	t.Setenv("TSDB_TEST_MAIN", "1") // inherited by the server process
	dir := t.TempDir()
	clusterDir := filepath.Join(dir, "cluster")
	out, err := run(append(tinyLoadtestArgs(dir, "chart.png"), "--cluster", "1", "--rf", "1", "--dir", clusterDir,
		"--write-limit", "50MB")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Log(out)
	if !strings.Contains(out, "local cluster: 1 servers") || !strings.Contains(out, "smear-on") {
		t.Errorf("output:\n%s", out)
	}
	rep := readLoadtestReport(t, dir, 1)
	if rep.Settings.ClusterMode != "local" || rep.Table.ReplicationFactor != 1 || len(rep.Servers) != 1 ||
		rep.Settings.WriteLimit != 50_000_000 || !strings.Contains(strings.Join(rep.Settings.ServerFlags, " "), "--write-limit 50000000") {
		t.Errorf("mode %q, table %+v, servers %v, settings %+v", rep.Settings.ClusterMode, rep.Table, rep.Servers, rep.Settings)
	}
	checkChartFile(t, filepath.Join(dir, "chart.png"))
	if _, err := os.Stat(filepath.Join(clusterDir, "s1.log")); err != nil {
		t.Errorf("server log: %v", err)
	}
	if resp, err := http.Get(rep.Servers[0].URL + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("the local server still answers after the load test")
	}
}

// TestLoadtestBadFlags checks bad flags give one clear line naming the
// flag, before any request is sent.
func TestLoadtestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "1", "--url", "http://127.0.0.1:1"}, "--cluster"},
		{[]string{"--cluster", "-1"}, "--cluster"},
		{[]string{"--from=-1h"}, "--from/--to"},
		{[]string{"--from=-1h", "--to=-2h"}, "--from/--to"},
		{[]string{"--to", "yesterday"}, "--to"},
		{[]string{"--write-limit", "2XB"}, "write-limit"},
		{[]string{"--partition-size-target", "lots"}, "partition-size-target"},
		{[]string{"--chart", "x.pdf"}, "--chart"},
		{[]string{"--series", "-1", "--batch", "-1"}, "--batch"},
		{[]string{"--url", "127.0.0.1:8080"}, "--url"},
		{[]string{"--log-level", "loud"}, "--log-level"},
	} {
		out, err := run(append([]string{"loadtest"}, tc.args...)...)
		if err == nil {
			t.Errorf("%v: no error", tc.args)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: error %q should be one line naming %s", tc.args, msg, tc.want)
		}
		if strings.Contains(out, "Usage:") || exitCode(err) != 2 {
			t.Errorf("%v: printed the usage or exit code %d: %s", tc.args, exitCode(err), out)
		}
	}
}

// TestLoadtestParseTimeFlag reads RFC 3339 and relative times.
func TestLoadtestParseTimeFlag(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}}, {"-1h", now.Add(-time.Hour)}, {"0s", now},
		{"2026-01-02T03:04:05Z", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	} {
		got, err := parseTimeFlag("from", tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
