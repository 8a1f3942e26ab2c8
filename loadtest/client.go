package loadtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tsdb/tsdb/http/api"
)

// client speaks the parts of the public API a load test needs. Every call
// is bounded by the request timeout. It is safe for concurrent use.
type client struct {
	hc      *http.Client
	token   string
	timeout time.Duration
}

// newClient returns a client keeping up to conns idle connections per
// server, so each worker reuses its own; tc (nil: defaults) configures
// https servers.
func newClient(token string, tc *tls.Config, timeout time.Duration, conns int) *client {
	tr := &http.Transport{
		TLSClientConfig:     tc,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &client{hc: &http.Client{Transport: tr}, token: token, timeout: timeout}
}

// close drops the idle connections.
func (c *client) close() { c.hc.CloseIdleConnections() }

// result is the outcome of one request.
type result struct {
	status     int           // HTTP status, 0 on a transport error
	code       string        // the error body's code, if any
	retryAfter time.Duration // from a Retry-After header
	err        error         // transport error or unexpected status
}

// ok reports a 2xx answer.
func (r result) ok() bool { return r.err == nil && r.status/100 == 2 }

// errorKey names the failure for the error counts: "503 queue_full",
// "timeout", "transport".
func (r result) errorKey() string {
	switch {
	case r.status != 0:
		if r.code == "" {
			return strconv.Itoa(r.status)
		}
		return strconv.Itoa(r.status) + " " + r.code
	case errors.Is(r.err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "transport"
	}
}

// do sends one request and decodes a 2xx JSON answer into out (if not
// nil); an error answer's code and Retry-After land in the result.
func (c *client) do(ctx context.Context, method, u string, hdr http.Header, body []byte, out any) result {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return result{err: err}
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	return readAnswer(resp, out)
}

// readAnswer reads the body of resp into out or into an error result.
func readAnswer(resp *http.Response, out any) result {
	r := result{status: resp.StatusCode}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		r.err = err
		return r
	}
	if resp.StatusCode/100 == 2 {
		if out != nil && len(b) > 0 {
			if err := json.Unmarshal(b, out); err != nil {
				r.err = fmt.Errorf("decode answer: %w", err)
			}
		}
		return r
	}
	var e api.ErrorResponse
	if json.Unmarshal(b, &e) == nil {
		r.code = e.Error.Code
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		r.retryAfter = time.Duration(s) * time.Second
	}
	r.err = fmt.Errorf("%s %s: %d %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, firstLine(e.Error.Message, b))
	return r
}

// firstLine is the error message, or the start of the raw body.
func firstLine(msg string, body []byte) string {
	if msg != "" {
		return msg
	}
	if len(body) > 200 {
		body = body[:200]
	}
	return string(bytes.TrimSpace(body))
}

// write posts a line-protocol body to server's /write.
func (c *client) write(ctx context.Context, server, table string, body []byte, smear bool) result {
	u := server + "/write?precision=ns&db=" + url.QueryEscape(table)
	hdr := http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
	if !smear {
		hdr.Set(api.HeaderSmear, "off")
	}
	return c.do(ctx, http.MethodPost, u, hdr, body, nil)
}

// getJSON gets u and decodes the answer into out.
func (c *client) getJSON(ctx context.Context, u string, out any) error {
	return c.do(ctx, http.MethodGet, u, nil, nil, out).err
}

// postJSON posts v as JSON to u.
func (c *client) postJSON(ctx context.Context, u string, v any) result {
	b, err := json.Marshal(v)
	if err != nil {
		return result{err: err}
	}
	return c.do(ctx, http.MethodPost, u, http.Header{"Content-Type": {"application/json"}}, b, nil)
}

// queryCount returns the number of rows of series in [from, to).
func (c *client) queryCount(ctx context.Context, server, table, series string, from, to int64) (int, error) {
	q := url.Values{"series": {series}, "from": {strconv.FormatInt(from, 10)}, "to": {strconv.FormatInt(to, 10)}}
	var ans api.RawQueryResponse
	err := c.getJSON(ctx, server+"/api/v1/tables/"+url.PathEscape(table)+"/query?"+q.Encode(), &ans)
	return len(ans.Rows), err
}

// scrape reads server's /metrics and returns the load test's metrics.
func (c *client) scrape(ctx context.Context, server string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("GET %s/metrics: %d", server, resp.StatusCode)
	}
	return ParseMetrics(resp.Body, MetricStoreWriteBytes, MetricSmearQueueRows)
}
