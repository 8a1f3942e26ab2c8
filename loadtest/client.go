package loadtest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tsdb/tsdb/http/api"
)

// client speaks the parts of the public API a load test needs, through one
// http/api.Client per server sharing one connection pool. Every request is
// bounded by the request timeout and made once: a worker counts each
// refusal and backs off itself. It is safe for concurrent use.
type client struct {
	hc      *http.Client
	opts    api.Options
	timeout time.Duration
	mu      sync.Mutex
	servers map[string]*api.Client // by base URL
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
	hc := &http.Client{Transport: tr}
	return &client{hc: hc, timeout: timeout, servers: map[string]*api.Client{},
		opts: api.Options{Token: token, Timeout: timeout, Attempts: 1, MaxAnswerBytes: 64 << 20, HTTPClient: hc}}
}

// close drops the idle connections.
func (c *client) close() { c.hc.CloseIdleConnections() }

// at returns the API client of server (a base URL).
func (c *client) at(server string) (*api.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ac, ok := c.servers[server]; ok {
		return ac, nil
	}
	ac, err := api.NewClient(server, c.opts)
	if err != nil {
		return nil, err
	}
	c.servers[server] = ac
	return ac, nil
}

// call runs f with the API client of server.
func (c *client) call(server string, f func(*api.Client) error) error {
	ac, err := c.at(server)
	if err != nil {
		return err
	}
	return f(ac)
}

// result is the outcome of one request.
type result struct {
	status     int           // HTTP status, 0 on a transport error
	code       string        // the error body's code, if any
	retryAfter time.Duration // from a Retry-After header
	err        error         // transport error or unexpected status
}

// resultOf is the result of a call that ended with err.
func resultOf(err error) result {
	var e *api.Error
	if errors.As(err, &e) {
		return result{status: e.Status, code: e.Code, retryAfter: e.RetryAfter, err: err}
	}
	if err == nil {
		return result{status: http.StatusNoContent} // a 2xx: which one is not kept
	}
	return result{err: err}
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

// write posts a line-protocol body to server's /write.
func (c *client) write(ctx context.Context, server, table string, body []byte, smear bool) result {
	return resultOf(c.call(server, func(ac *api.Client) error {
		return ac.Write(ctx, table, body, api.InsertOptions{NoSmear: !smear})
	}))
}

// cluster reads server's GET /api/v1/cluster.
func (c *client) cluster(ctx context.Context, server string) (api.ClusterResponse, error) {
	var out api.ClusterResponse
	err := c.call(server, func(ac *api.Client) (err error) {
		out, err = ac.Cluster(ctx)
		return err
	})
	return out, err
}

// table reads server's GET /api/v1/tables/{t}.
func (c *client) table(ctx context.Context, server, table string) (api.TableResponse, error) {
	var out api.TableResponse
	err := c.call(server, func(ac *api.Client) (err error) {
		out, err = ac.Table(ctx, table)
		return err
	})
	return out, err
}

// createTable posts req to server's /api/v1/tables.
func (c *client) createTable(ctx context.Context, server string, req api.CreateTableRequest) result {
	return resultOf(c.call(server, func(ac *api.Client) error {
		_, err := ac.CreateTable(ctx, req)
		return err
	}))
}

// queryCount returns the number of rows of series in [from, to), read at
// consistency ("": the server's default).
func (c *client) queryCount(ctx context.Context, server, table, series string, from, to int64, consistency string) (int, error) {
	var ans api.RawQueryResponse
	err := c.call(server, func(ac *api.Client) (err error) {
		ans, err = ac.QueryRaw(ctx, table, api.Query{Series: series, From: &from, To: &to, Consistency: consistency})
		return err
	})
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
	return ParseMetrics(resp.Body, scrapedMetrics...)
}
