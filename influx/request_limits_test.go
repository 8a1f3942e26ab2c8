package influx

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/errcode"
)

// TestRequestAnswerLimit checks the bound on one request's answer summed
// over its statements: the statement passing MaxRequestRows and every later
// one answer an error; the ones before keep their series.
func TestRequestAnswerLimit(t *testing.T) {
	e := NewExecutor(testData(), Config{MaxRequestRows: 12})
	// SELECT value FROM cpu answers 9 rows: the first fits, the second
	// passes 12, the third is past it.
	resp, err := e.Execute(context.Background(), `SELECT value FROM cpu; SELECT value FROM cpu; SHOW DATABASES`, Options{DB: "telegraf"})
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Results[0]; r.Err != "" || len(r.Series) != 1 || len(r.Series[0].Values) != 9 {
		t.Fatalf("statement 0: %+v, want 9 rows", r)
	}
	for _, r := range resp.Results[1:] {
		if !strings.HasPrefix(r.Err, "request answer too large: ") || r.Series != nil {
			t.Errorf("statement %d: %+v, want the request answer too large error", r.StatementID, r)
		}
	}
}

// TestMaxStatements checks that a request with more than MaxStatements
// statements fails as a whole.
func TestMaxStatements(t *testing.T) {
	e := NewExecutor(testData(), Config{})
	q := strings.Repeat("SHOW DATABASES;", DefaultMaxStatements+1)
	if _, err := e.Execute(context.Background(), q, Options{}); err == nil || !errors.Is(err, errcode.ErrInvalidQuery) || !strings.Contains(err.Error(), "too many statements: 101 (the limit is 100 per request)") {
		t.Fatalf("err %v, want too many statements", err)
	}
	q = strings.Repeat("SHOW DATABASES;", DefaultMaxStatements)
	if resp, err := e.Execute(context.Background(), q, Options{}); err != nil || len(resp.Results) != DefaultMaxStatements {
		t.Fatalf("%d statements: err %v", DefaultMaxStatements, err)
	}
}
