package loadtest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// parseLines splits a line-protocol body into (series, value, time).
func parseLines(t *testing.T, body []byte) (series []string, times []int64) {
	t.Helper()
	text := string(body)
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("body does not end with a newline: %q", text)
	}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		f := strings.Split(line, " ")
		if len(f) != 3 || !strings.HasPrefix(f[0], Measurement+",s=") || !strings.HasPrefix(f[1], "v=") {
			t.Fatalf("bad line %q", line)
		}
		if _, err := strconv.ParseFloat(f[1][2:], 64); err != nil {
			t.Fatalf("bad value in %q", line)
		}
		ts, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("bad time in %q", line)
		}
		series, times = append(series, f[0]), append(times, ts)
	}
	return series, times
}

// TestBatchHot: rows at now+i ns, series rotating from the first, across
// batches, and no (series, time) repeated even with more rows than series.
func TestBatchHot(t *testing.T) {
	b := newBatchBuilder(3, 5, 4, 0, 0, 1)
	now := time.Unix(1700000000, 0)
	series, times := parseLines(t, b.build(now))
	wantSeries := []string{"loadtest,s=1", "loadtest,s=2", "loadtest,s=0", "loadtest,s=1", "loadtest,s=2"}
	seen := map[string]bool{}
	for i := range series {
		if series[i] != wantSeries[i] || times[i] != now.UnixNano()+int64(i) {
			t.Errorf("row %d: %s %d, want %s %d", i, series[i], times[i], wantSeries[i], now.UnixNano()+int64(i))
		}
		key := series[i] + "@" + strconv.FormatInt(times[i], 10)
		if seen[key] {
			t.Errorf("row %d repeats %s", i, key)
		}
		seen[key] = true
	}
	series, _ = parseLines(t, b.build(now))
	if series[0] != "loadtest,s=0" {
		t.Errorf("second batch starts at %s, want loadtest,s=0", series[0])
	}
}

// TestBatchRange: rows uniformly in [from, to).
func TestBatchRange(t *testing.T) {
	from, to := int64(1_000_000), int64(1_000_100)
	b := newBatchBuilder(10, 1000, 0, from, to, 7)
	_, times := parseLines(t, b.build(time.Now()))
	lo, hi := to, from
	for _, ts := range times {
		if ts < from || ts >= to {
			t.Fatalf("time %d outside [%d, %d)", ts, from, to)
		}
		lo, hi = min(lo, ts), max(hi, ts)
	}
	if lo > from+10 || hi < to-10 {
		t.Errorf("1000 times span only [%d, %d] of [%d, %d)", lo, hi, from, to)
	}
}
