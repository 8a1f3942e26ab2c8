package http

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestInfluxQueryMultipartLimit checks that a multipart/form-data /query
// body is read within MaxBodyBytes once decompressed: fasthttp's FormValue
// read the form with no limit, so a gzip'd body under the limit inflated
// without bound. A form within the limit, compressed or not, still works.
func TestInfluxQueryMultipartLimit(t *testing.T) {
	base, _ := influxServer(t) // MaxBodyBytes 64 KiB
	form := func(pad int) []byte {
		var b bytes.Buffer
		b.WriteString("--XX\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\nSHOW DATABASES\r\n")
		b.WriteString("--XX\r\nContent-Disposition: form-data; name=\"pad\"\r\n\r\n")
		b.WriteString(strings.Repeat("a", pad))
		b.WriteString("\r\n--XX--\r\n")
		return b.Bytes()
	}
	gz := func(p []byte) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(p)
		zw.Close()
		return b.Bytes()
	}
	post := func(body []byte, gzipped bool) rawAnswer {
		req, err := http.NewRequest("POST", base+"/query", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "multipart/form-data; boundary=XX")
		if gzipped {
			req.Header.Set("Content-Encoding", "gzip")
		}
		return do(t, req)
	}
	bomb := gz(form(8 << 20))
	if len(bomb) >= 1<<16 {
		t.Fatalf("the compressed body is %d bytes, not under the limit", len(bomb))
	}
	got := post(bomb, true)
	var e struct{ Error string }
	if got.status != 413 || json.Unmarshal([]byte(got.body), &e) != nil || !strings.Contains(e.Error, "request body too large") {
		t.Errorf("gzip'd form of 8 MiB: %d %.200s, want 413 in InfluxDB's shape", got.status, got.body)
	}
	const dbs = `{"results":[{"statement_id":0,"series":[{"name":"databases","columns":["name"],"values":[["telegraf"]]}]}]}`
	for _, gzipped := range []bool{false, true} {
		body := form(100)
		if gzipped {
			body = gz(body)
		}
		if got := post(body, gzipped); got.status != 200 || got.body != dbs {
			t.Errorf("small form (gzip %v): %d %s", gzipped, got.status, got.body)
		}
	}
}
