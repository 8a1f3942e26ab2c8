package http

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestInfluxQueryLongGET checks that a GET /query with a query of tens of
// KB works (fasthttp's default 4 KiB read buffer refused a query over about
// 4 KB: Grafana sends GET), and that one over ReadBufferSize is answered
// 431 in InfluxDB's shape.
func TestInfluxQueryLongGET(t *testing.T) {
	base, _ := influxServer(t)
	query := func(n int) string {
		return "SELECT value FROM cpu WHERE host =~ /^(" + strings.Repeat("x|", n/2) + "a)$/ AND time < 1700000001s"
	}
	for _, n := range []int{5000, 25000} {
		got := do(t, mustRequest(t, "GET", base+"/query?db=telegraf&epoch=s&q="+url.QueryEscape(query(n)), ""))
		if want := `{"results":[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000000,1]]}]}]}`; got.status != 200 || got.body != want {
			t.Errorf("query of %d bytes: %d %.300s", n, got.status, got.body)
		}
	}
	// The server answers as soon as the read buffer overflows and closes
	// the connection with the rest of the request unread, so the kernel
	// may reset it before the client has read the answer (as for a body
	// over the limit sent without Expect, server.go): a client may see
	// the reset instead. The answer's shape is checked on the first of a
	// few attempts that reads it.
	var got rawAnswer
	for attempt := 1; ; attempt++ {
		var err error
		got, err = readAnswer(mustRequest(t, "GET", base+"/query?db=telegraf&q="+url.QueryEscape(query(ReadBufferSize)), ""))
		if err == nil {
			break
		}
		if attempt == 10 {
			t.Fatalf("query over ReadBufferSize: no answer read in %d attempts: %v", attempt, err)
		}
	}
	var e struct{ Error string }
	if got.status != http.StatusRequestHeaderFieldsTooLarge || json.Unmarshal([]byte(got.body), &e) != nil || !strings.Contains(e.Error, "send a long query to /query with POST") {
		t.Errorf("query over ReadBufferSize: %d %.300s, want 431 in InfluxDB's shape", got.status, got.body)
	}
}

// readAnswer sends req and reads its answer, or returns the transport's
// error.
func readAnswer(req *http.Request) (rawAnswer, error) {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return rawAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return rawAnswer{}, err
	}
	return rawAnswer{status: resp.StatusCode, body: string(b)}, nil
}
