package influx

import (
	"math"
	"time"
)

// Response is the answer to one /query request, in InfluxDB 1.x's JSON
// shape: one Result per statement, or Err alone when the request as a whole
// failed (a parse error).
type Response struct {
	Results []Result `json:"results"`
	Err     string   `json:"error,omitempty"`
}

// Result is the answer to one statement.
type Result struct {
	StatementID int       `json:"statement_id"`
	Series      []*Series `json:"series,omitempty"`
	Err         string    `json:"error,omitempty"`
}

// Series is one series of a statement's answer.
type Series struct {
	Name    string            `json:"name,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
	Columns []string          `json:"columns"`
	Values  [][]any           `json:"values,omitempty"`
}

// epochDivisor returns the divisor of a time in ns for the epoch parameter
// of /query ("" keeps RFC 3339 strings: 0). An unknown epoch is ns, as
// InfluxDB 1.x reads it (its convertToEpoch falls back silently).
func epochDivisor(epoch string) int64 {
	switch epoch {
	case "":
		return 0
	case "u", "µ", "us":
		return int64(time.Microsecond)
	case "ms":
		return int64(time.Millisecond)
	case "s":
		return int64(time.Second)
	case "m":
		return int64(time.Minute)
	case "h":
		return int64(time.Hour)
	}
	return 1 // ns, n and any other value
}

// formatTime renders a time in ns as the answer's time column: an RFC 3339
// string with divisor 0, else an integer in the epoch's unit (Go's integer
// division, as InfluxDB's).
func formatTime(t, divisor int64) any {
	if divisor == 0 {
		return time.Unix(0, t).UTC().Format(time.RFC3339Nano)
	}
	return t / divisor
}

// finite turns a NaN or infinite float into null (JSON has neither;
// InfluxDB answers null).
func finite(v any) any {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return nil
	}
	return v
}
