package loadtest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/http/api"
)

// sampleReport is a compare-mode report with two servers.
func sampleReport() *Report {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	series := func(scale float64) []ServerSeries {
		var out []ServerSeries
		for _, id := range []string{"s1", "s2"} {
			s := ServerSeries{ID: id}
			for i := -3; i <= 12; i++ {
				s.Points = append(s.Points, Point{T: float64(i), WriteBytesPerSec: scale * float64(i+5) * 1e5, QueueRows: float64(i)})
			}
			out = append(out, s)
			scale /= 2
		}
		return out
	}
	run := func(name string, smear bool, rate float64) RunResult {
		return RunResult{
			Name: name, Smear: smear, Start: from, Seconds: 10, RowsAcked: int64(rate * 10), Requests: int64(rate / 100),
			AckedRowsPerSec: rate, DeliveredRowsPerSec: rate, Latency: Latency{P50Ms: 1.5, P90Ms: 3, P99Ms: 12.25, MaxMs: 40, MeanMs: 2},
			Errors: map[string]int64{"503 queue_full": 3},
			Stored: StoredWrites{Available: true, TotalBytes: 3000, BytesPerSec: 300, BusiestID: "s1", BusiestShare: 2.0 / 3,
				FairShare: 0.5, BusiestOverFair: 4.0 / 3, Servers: []ServerShare{
					{ID: "s1", URL: "http://a", Bytes: 2000, Share: 2.0 / 3, MaxQueueRows: 5}, {ID: "s2", URL: "http://b", Bytes: 1000, Share: 1.0 / 3}}},
			Visibility: Visibility{Probes: 10, Visible: 9, TimedOut: 1, SeenLate: 1, P50Ms: 100, P99Ms: 900, MaxMs: 1000},
			TimeSeries: series(1),
		}
	}
	return &Report{
		Settings: Settings{Servers: []string{"http://a"}, Table: "lt", Series: 10, Batch: 5, Concurrency: 1,
			Duration: api.Duration(10 * time.Second), Warmup: api.Duration(3 * time.Second), MaxDelay: api.Duration(time.Second),
			Compare: true, From: &from, To: &from, WriteLimit: 2 << 20, ServerFlags: []string{"--min-servers", "2"}},
		Table:   TableInfo{Name: "lt", Created: true, ReplicationFactor: 1, MaxDelay: api.Duration(time.Second)},
		Servers: []Server{{ID: "s1", URL: "http://a"}, {ID: "s2", URL: "http://b"}},
		Runs:    []RunResult{run(RunSmearOff, false, 1000), run(RunSmearOn, true, 1500)},
		Compare: &Comparison{OffRowsPerSec: 1000, OnRowsPerSec: 1500, Ratio: 1.5, Servers: 2, ReplicationFactor: 1, Ideal: 1},
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	rep := sampleReport()
	path := filepath.Join(t.TempDir(), "r.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rep) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", back, rep)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{`"max_delay": "1s"`, `"acked_rows_per_sec": 1500`, `"ideal": 1`, `"busiest_over_fair"`, "\n  \"runs\""} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if _, err := ReadReport(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("reading a missing report succeeded")
	}
}

func TestComparison(t *testing.T) {
	rep := sampleReport()
	rep.Table.ReplicationFactor = 3
	rep.Servers = append(rep.Servers, Server{ID: "s3"}, Server{ID: "s4"}, Server{ID: "s5"}, Server{ID: "s6"})
	c := rep.comparison()
	if c.Ratio != 1.5 || c.Ideal != 1.5 || c.Servers != 6 {
		t.Errorf("comparison %+v, want ratio 1.5, ideal 6/4", c)
	}
	rep.Runs[0].DeliveredRowsPerSec = 0
	if c := rep.comparison(); c.Ratio != 0 {
		t.Errorf("ratio with nothing acked off: %v", c.Ratio)
	}
	rep.Aborted = true
	if rep.comparison() != nil {
		t.Error("comparison of an aborted report")
	}
}

func TestWriteSummary(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"smear-off", "smear-on", "acked rows/s", "1000", "1500", "1.5ms / 12.2ms", "503 queue_full: 3",
		"66.7% / 50.0% = 1.33x (s1)", "share of stored writes s2", "33.3% (queue max 0 rows)",
		"100.0ms / 900.0ms / 1.00s", "10: 9 seen, 1 timed out (1 seen after the drain, 0 still not), 0 failed",
		"throughput ratio smear on/off: 1.50 (ideal N/(RF+1) = 2/2 = 1.00)", "write limit 2MiB/s (2097152 B/s)",
		"servers started with --min-servers 2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// checkChart checks path holds a PNG (magic) or an SVG (XML header and
// <svg element).
func checkChart(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 1000 {
			t.Errorf("%s: not a PNG (%d bytes)", path, len(b))
		}
	case ".svg":
		if !bytes.HasPrefix(b, []byte("<?xml")) || !bytes.Contains(b, []byte("<svg")) || len(b) < 1000 {
			t.Errorf("%s: not an SVG (%d bytes): %.100s", path, len(b), b)
		}
	}
}

func TestWriteChart(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"c.svg", "c.PNG"} {
		path := filepath.Join(dir, name)
		if err := WriteChart(path, sampleReport()); err != nil {
			t.Fatal(err)
		}
		checkChart(t, path)
	}
	empty := &Report{}
	if err := WriteChart(filepath.Join(dir, "empty.svg"), empty); err != nil {
		t.Errorf("chart of an empty report: %v", err)
	}
	if err := WriteChart(filepath.Join(dir, "c.pdf"), sampleReport()); !errors.Is(err, ErrUnsupportedChart) {
		t.Errorf("pdf: %v, want ErrUnsupportedChart", err)
	}
}

func TestConfigValidateNamesEveryFlag(t *testing.T) {
	c := Config{Servers: []string{"127.0.0.1:8080"}, From: time.Now(), ChartPath: "x.pdf"}
	c.EnsureDefaults()
	c.Series, c.Rate = -1, -1
	err := c.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("error %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"--url", "--series", "--rate", "--from/--to", "--chart"} {
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q should name %s on one line", err, want)
		}
	}
	ok := Config{Servers: []string{"http://127.0.0.1:8080"}}
	ok.EnsureDefaults()
	if err := ok.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestStoredShares(t *testing.T) {
	servers := []Server{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}
	at := time.Unix(100, 0)
	mk := func(dt time.Duration, vals ...float64) []sample {
		var out []sample
		for _, v := range vals {
			out = append(out, sample{at: at.Add(dt), ok: true, hasWrite: true, write: v})
		}
		return out
	}
	// d restarted (its counter went down): its whole new value counts.
	sw := storedShares(servers, mk(0, 100, 100, 100, 500), mk(2*time.Second, 700, 300, 100, 200))
	if !sw.Available || sw.TotalBytes != 1000 || sw.BytesPerSec != 500 || sw.BusiestID != "a" ||
		sw.BusiestShare != 0.6 || sw.FairShare != 0.25 || sw.BusiestOverFair != 2.4 || sw.Servers[3].Bytes != 200 {
		t.Errorf("shares %+v", sw)
	}
	end := mk(time.Second, 1, 2, 3, 4)
	end[2].hasWrite = false
	if sw := storedShares(servers, mk(0, 0, 0, 0, 0), end); sw.Available || sw.BusiestID != "" || sw.BusiestOverFair != 0 {
		t.Errorf("a server without the counter: %+v", sw)
	}
}
