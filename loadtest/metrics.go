package loadtest

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// Metric names scraped from every server's GET /metrics.
const (
	// MetricStoreWriteBytes is the counter of bytes a server wrote to its
	// stores (partitions and smear queue): what --write-limit caps.
	MetricStoreWriteBytes = "tsdb_store_write_bytes_total"
	// MetricSmearQueueRows is the gauge of rows waiting in a server's smear
	// queue.
	MetricSmearQueueRows = "tsdb_smear_queue_rows"
)

// ParseMetrics reads the Prometheus text exposition format and returns,
// for each of names present, the sum of its samples over all label sets.
// A name absent from the text is absent from the map. Comments, other
// metrics and malformed lines are skipped; only read errors are returned.
func ParseMetrics(r io.Reader, names ...string) (map[string]float64, error) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	out := make(map[string]float64)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := parseSampleLine(sc.Text())
		if ok && want[name] {
			out[name] += v
		}
	}
	return out, sc.Err()
}

// parseSampleLine splits `name{labels} value [timestamp]` into the metric
// name and value. Label values may hold spaces and escaped quotes.
func parseSampleLine(line string) (name string, v float64, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", 0, false
	}
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return "", 0, false
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		end := labelsEnd(rest)
		if end < 0 {
			return "", 0, false
		}
		rest = rest[end+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	return name, v, err == nil
}

// labelsEnd returns the index of the '}' closing the label set that s
// starts with, skipping quoted values, or -1.
func labelsEnd(s string) int {
	inQuote := false
	for i := 1; i < len(s); i++ {
		switch {
		case inQuote && s[i] == '\\':
			i++
		case s[i] == '"':
			inQuote = !inQuote
		case !inQuote && s[i] == '}':
			return i
		}
	}
	return -1
}
