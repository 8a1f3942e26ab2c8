package api

import (
	"bytes"
	"cmp"
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
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/internal/backoff"
)

// Defaults of a Client's Options.
const (
	DefaultTimeout        = 10 * time.Second
	DefaultAttempts       = 4
	DefaultMaxRetryWait   = 30 * time.Second
	DefaultMaxAnswerBytes = 256 << 20
	// firstRetryWait is the wait before the first retry of a 503 answered
	// without Retry-After; it doubles with each attempt (with jitter) up to
	// MaxRetryWait.
	firstRetryWait = 100 * time.Millisecond
)

// Options configure a Client. The zero value is usable: no token, the
// system's TLS roots, the defaults above.
type Options struct {
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// TLS configures https servers (nil: Go's defaults).
	TLS *tls.Config
	// Timeout bounds each request, from sending it to reading the whole
	// answer (0: DefaultTimeout). A call that retries makes several.
	Timeout time.Duration
	// Attempts is the most requests one call makes (0: DefaultAttempts; 1:
	// no retry). A call is retried only on a 503 answer that says nothing
	// was done (every 503 but the outcome-unknown codes), after the
	// answer's Retry-After or else an exponential backoff, each wait at
	// most MaxRetryWait. Transport errors and other statuses are not
	// retried: the caller knows whether its request may be repeated.
	Attempts int
	// MaxRetryWait bounds each wait between attempts (0: DefaultMaxRetryWait).
	MaxRetryWait time.Duration
	// MaxAnswerBytes bounds the answer read (0: DefaultMaxAnswerBytes).
	MaxAnswerBytes int64
	// HTTPClient, when set, sends the requests (and TLS is ignored): the
	// way to share one connection pool between Clients of several
	// servers, or to tune the transport.
	HTTPClient *http.Client
}

// Client calls the public API of one tsdb server. It is safe for
// concurrent use.
type Client struct {
	base string // scheme://host[:port][/prefix], without a trailing slash
	hc   *http.Client
	opts Options
}

// NewClient returns a client of the server at base, an http or https URL
// such as http://127.0.0.1:8080.
func NewClient(base string, o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("server URL %q: want http://HOST:PORT or https://HOST:PORT", base)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.MaxRetryWait <= 0 {
		o.MaxRetryWait = DefaultMaxRetryWait
	}
	if o.MaxAnswerBytes <= 0 {
		o.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	hc := o.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = o.TLS
		hc = &http.Client{Transport: tr}
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), hc: hc, opts: o}, nil
}

// Base returns the server's URL, without a trailing slash.
func (c *Client) Base() string { return c.base }

// Timeout returns the bound of each request.
func (c *Client) Timeout() time.Duration { return c.opts.Timeout }

// CloseIdleConnections closes the idle connections of the client's pool.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Error is an answer with a status other than 2xx. Its text is
// "METHOD PATH: STATUS message", the message being the error body's, or
// the start of a body that is not the API's JSON error.
type Error struct {
	Method string
	// Path is the request's path, without the query.
	Path   string
	Status int
	// Code and Message are the error body's, empty when the body is not
	// {"error": {"code", "message"}}; on the InfluxDB routes (/write),
	// Code is the HeaderErrorCode header and Message the InfluxDB
	// body's.
	Code    string
	Message string
	// RetryAfter is the answer's Retry-After (whole seconds), or 0.
	RetryAfter time.Duration
	// Body is the start of the answer's body (at most 1 KiB).
	Body []byte
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		b := e.Body
		if len(b) > 200 {
			b = b[:200]
		}
		msg = string(bytes.TrimSpace(b))
	}
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, msg)
}

// ReadError is a failure to read an answer's body once its status came.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return "reading the answer: " + e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// DecodeError is a 2xx answer that does not decode into the value the call
// expects (not JSON, the wrong shape, or an empty body other than a 204's).
type DecodeError struct {
	Method, Path string
	// Err is the JSON decoder's error.
	Err error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s %s: undecodable answer: %v", e.Method, e.Path, e.Err)
}
func (e *DecodeError) Unwrap() error { return e.Err }

// StatusOf returns the status of an *Error in err's chain, or 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// CodeOf returns the error code of an *Error in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Request is one call of the API.
type Request struct {
	Method string
	// Path starts with a slash; Query is appended to it.
	Path  string
	Query url.Values
	// Header holds extra request headers.
	Header http.Header
	// Body is sent as is (nil: none), with Header's Content-Type.
	Body []byte
}

// Do makes the call r, retrying as Options say, and decodes a 2xx answer's
// JSON into out: nil discards it, a *[]byte receives the raw body. An
// error answer is an *Error; a failed request is the transport's error
// (a *url.Error), or a *ReadError when the answer's body could not be read.
func (c *Client) Do(ctx context.Context, r Request, out any) error {
	if ctx == nil {
		ctx = context.Background()
	}
	for attempt := 1; ; attempt++ {
		err := c.once(ctx, r, out)
		wait, retry := c.retryWait(err, attempt)
		if !retry {
			return err
		}
		if !backoff.Sleep(ctx, wait) {
			return err
		}
	}
}

// retryWait says whether the call that failed with err at attempt is
// retried, and after how long.
func (c *Client) retryWait(err error, attempt int) (time.Duration, bool) {
	var e *Error
	if attempt >= c.opts.Attempts || !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable ||
		e.Code == CodeOutcomeUnknown || e.Code == CodeOutcomeUnknownRows {
		return 0, false
	}
	if e.RetryAfter > 0 {
		return min(e.RetryAfter, c.opts.MaxRetryWait), true
	}
	return backoff.Policy{Base: firstRetryWait, Max: c.opts.MaxRetryWait}.Delay(attempt), true
}

// once makes one request of r.
func (c *Client) once(ctx context.Context, r Request, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	u := c.base + r.Path
	if len(r.Query) > 0 {
		u += "?" + r.Query.Encode()
	}
	var rd io.Reader
	if r.Body != nil {
		rd = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u, rd)
	if err != nil {
		return err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxAnswerBytes))
	if err != nil {
		return &ReadError{Err: err}
	}
	if resp.StatusCode/100 != 2 {
		return answerError(r.Method, r.Path, resp, body)
	}
	switch o := out.(type) {
	case nil:
		return nil
	case *[]byte:
		*o = body
		return nil
	}
	if len(body) == 0 && resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &DecodeError{Method: r.Method, Path: r.Path, Err: err}
	}
	return nil
}

// answerError reads an error answer.
func answerError(method, path string, resp *http.Response, body []byte) *Error {
	e := &Error{Method: method, Path: path, Status: resp.StatusCode, Body: body[:min(len(body), 1<<10)]}
	var eb ErrorResponse
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		e.Code, e.Message = eb.Error.Code, eb.Error.Message
	} else if code := resp.Header.Get(HeaderErrorCode); code != "" {
		// InfluxDB's shapes: {"error":"message"} or {"code","message"}.
		var ib struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &ib) == nil {
			e.Code, e.Message = code, cmp.Or(ib.Error, ib.Message)
		}
	}
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// IsTimeout reports whether err is a request that ran out of time (its
// Timeout or its context's deadline).
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// Get gets path (with query q) and decodes the answer into out (as Do).
func (c *Client) Get(ctx context.Context, path string, q url.Values, out any) error {
	return c.Do(ctx, Request{Method: http.MethodGet, Path: path, Query: q}, out)
}

// Post sends in as JSON to path and decodes the answer into out (as Do).
func (c *Client) Post(ctx context.Context, path string, in, out any) error {
	return c.send(ctx, http.MethodPost, path, in, out)
}

// send sends in as JSON with method to path.
func (c *Client) send(ctx context.Context, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode the request: %w", err)
	}
	return c.Do(ctx, Request{Method: method, Path: path, Body: body,
		Header: http.Header{"Content-Type": {"application/json"}}}, out)
}

// Paths of the public API.

// TablePath is the path of table t.
func TablePath(t string) string { return "/api/v1/tables/" + url.PathEscape(t) }

// PartitionPath is the path of partition p of table t.
func PartitionPath(t string, p uuid.UUID) string { return TablePath(t) + "/partitions/" + p.String() }

// DrainPath is the path of server's drain mark.
func DrainPath(server string) string { return "/api/v1/servers/" + url.PathEscape(server) + "/drain" }

// Paths of the cluster's resources.
const (
	ClusterPath   = "/api/v1/cluster"
	HealthPath    = "/api/v1/cluster/health"
	RebalancePath = "/api/v1/cluster/rebalance"
	TablesPath    = "/api/v1/tables"
)

// CreateTable creates a table (POST /api/v1/tables) and returns its config.
func (c *Client) CreateTable(ctx context.Context, req CreateTableRequest) (TableConfig, error) {
	var out TableConfig
	return out, c.Post(ctx, TablesPath, req, &out)
}

// PatchTable changes a table's retention (PATCH /api/v1/tables/{t}) and
// returns its config.
func (c *Client) PatchTable(ctx context.Context, table string, req PatchTableRequest) (TableConfig, error) {
	var out TableConfig
	return out, c.send(ctx, http.MethodPatch, TablePath(table), req, &out)
}

// DropTable drops a table (DELETE /api/v1/tables/{t}); force drops it even
// while a partition splits.
func (c *Client) DropTable(ctx context.Context, table string, force bool) error {
	var q url.Values
	if force {
		q = url.Values{"force": {"true"}}
	}
	return c.Do(ctx, Request{Method: http.MethodDelete, Path: TablePath(table), Query: q}, nil)
}

// ListTables returns every table's config (GET /api/v1/tables).
func (c *Client) ListTables(ctx context.Context) ([]TableConfig, error) {
	var out TablesResponse
	return out.Tables, c.Get(ctx, TablesPath, nil, &out)
}

// Table returns a table's config and current partitions (GET /api/v1/tables/{t}).
func (c *Client) Table(ctx context.Context, table string) (TableResponse, error) {
	var out TableResponse
	return out, c.Get(ctx, TablePath(table), nil, &out)
}

// TableReplicas returns a table's config and every partition with its
// replicas' states (GET /api/v1/tables/{t}?replicas=1).
func (c *Client) TableReplicas(ctx context.Context, table string) (TableReplicasResponse, error) {
	var out TableReplicasResponse
	return out, c.Get(ctx, TablePath(table), url.Values{"replicas": {"1"}}, &out)
}

// Metadata returns a table's config and the METADATA file of txnID (empty:
// the current one) (GET /api/v1/tables/{t}/metadata).
func (c *Client) Metadata(ctx context.Context, table, txnID string) (MetadataResponse, error) {
	var q url.Values
	if txnID != "" {
		q = url.Values{"txnid": {txnID}}
	}
	var out MetadataResponse
	return out, c.Get(ctx, TablePath(table)+"/metadata", q, &out)
}

// InsertOptions are an insert's headers.
type InsertOptions struct {
	// Consistency is ConsistencyOne, ConsistencyQuorum or ConsistencyAll
	// ("": the server's default, quorum).
	Consistency string
	// NoSmear sends X-TSDB-Smear: off.
	NoSmear bool
}

func (o InsertOptions) header(contentType string) http.Header {
	h := http.Header{"Content-Type": {contentType}}
	if o.Consistency != "" {
		h.Set(HeaderConsistency, o.Consistency)
	}
	if o.NoSmear {
		h.Set(HeaderSmear, "off")
	}
	return h
}

// Insert writes rows as JSON (POST /api/v1/tables/{t}/insert).
func (c *Client) Insert(ctx context.Context, table string, rows []Row, o InsertOptions) (InsertResponse, error) {
	body, err := json.Marshal(rows)
	if err != nil {
		return InsertResponse{}, fmt.Errorf("encode the rows: %w", err)
	}
	var out InsertResponse
	return out, c.Do(ctx, Request{Method: http.MethodPost, Path: TablePath(table) + "/insert", Body: body,
		Header: o.header("application/json")}, &out)
}

// Write writes InfluxDB line protocol with nanosecond timestamps
// (POST /write?db=TABLE&precision=ns).
func (c *Client) Write(ctx context.Context, table string, lines []byte, o InsertOptions) error {
	return c.Do(ctx, Request{Method: http.MethodPost, Path: "/write",
		Query: url.Values{"db": {table}, "precision": {"ns"}}, Body: lines,
		Header: o.header("text/plain; charset=utf-8")}, nil)
}

// Query selects rows or aggregates of a table.
type Query struct {
	// From and To bound the range [From, To) in integer ns; nil is open.
	From, To *int64
	// Series is one series key, or a prefix ending in "*" ("": all).
	Series string
	// Fields limits the fields answered (none: all).
	Fields []string
	// Limit bounds raw rows (0: the server's default).
	Limit int
	// Consistency is sent as X-TSDB-Consistency ("": the server's default).
	Consistency string
	// Agg (e.g. "mean", "min,max") asks for aggregates per Step ("1m" or
	// integer ns; "": one bucket); GroupAll merges all series into one.
	Agg      string
	Step     string
	GroupAll bool
}

func (q Query) request(table string) Request {
	v := url.Values{}
	if q.From != nil {
		v.Set("from", strconv.FormatInt(*q.From, 10))
	}
	if q.To != nil {
		v.Set("to", strconv.FormatInt(*q.To, 10))
	}
	if q.Series != "" {
		v.Set("series", q.Series)
	}
	if len(q.Fields) > 0 {
		v.Set("fields", strings.Join(q.Fields, ","))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Agg != "" {
		v.Set("agg", q.Agg)
	}
	if q.Step != "" {
		v.Set("step", q.Step)
	}
	if q.GroupAll {
		v.Set("group", "none")
	}
	r := Request{Method: http.MethodGet, Path: TablePath(table) + "/query", Query: v}
	if q.Consistency != "" {
		r.Header = http.Header{HeaderConsistency: {q.Consistency}}
	}
	return r
}

// QueryRaw answers a query without Agg (GET /api/v1/tables/{t}/query).
func (c *Client) QueryRaw(ctx context.Context, table string, q Query) (RawQueryResponse, error) {
	var out RawQueryResponse
	if q.Agg != "" {
		return out, errors.New("QueryRaw of a query with Agg: use QueryAgg")
	}
	return out, c.Do(ctx, q.request(table), &out)
}

// QueryAgg answers a query with Agg (GET /api/v1/tables/{t}/query).
func (c *Client) QueryAgg(ctx context.Context, table string, q Query) (AggQueryResponse, error) {
	var out AggQueryResponse
	if q.Agg == "" {
		return out, errors.New("QueryAgg of a query without Agg: use QueryRaw")
	}
	return out, c.Do(ctx, q.request(table), &out)
}

// Cluster lists the servers of the cluster (GET /api/v1/cluster).
func (c *Client) Cluster(ctx context.Context) (ClusterResponse, error) {
	var out ClusterResponse
	return out, c.Get(ctx, ClusterPath, nil, &out)
}

// Health returns the cluster's health report (GET /api/v1/cluster/health).
func (c *Client) Health(ctx context.Context) (HealthResponse, error) {
	var out HealthResponse
	return out, c.Get(ctx, HealthPath, nil, &out)
}

// Rebalance asks the master to rebalance (POST /api/v1/cluster/rebalance).
func (c *Client) Rebalance(ctx context.Context) (RebalanceResponse, error) {
	var out RebalanceResponse
	return out, c.Post(ctx, RebalancePath, struct{}{}, &out)
}

// Drain marks server draining (on) or clears the mark
// (POST or DELETE /api/v1/servers/{id}/drain).
func (c *Client) Drain(ctx context.Context, server string, on bool) (DrainResponse, error) {
	var out DrainResponse
	if on {
		return out, c.Post(ctx, DrainPath(server), struct{}{}, &out)
	}
	return out, c.Do(ctx, Request{Method: http.MethodDelete, Path: DrainPath(server)}, &out)
}

// SetOffline takes a partition offline or back online
// (POST …/partitions/{p}/offline or …/online).
func (c *Client) SetOffline(ctx context.Context, table string, p uuid.UUID, offline bool) (ChangeResponse, error) {
	verb := "/online"
	if offline {
		verb = "/offline"
	}
	var out ChangeResponse
	return out, c.Post(ctx, PartitionPath(table, p)+verb, struct{}{}, &out)
}

// JoinServer joins req.Server to a partition (POST …/partitions/{p}/join).
func (c *Client) JoinServer(ctx context.Context, table string, p uuid.UUID, req ServerChangeRequest) (ChangeResponse, error) {
	var out ChangeResponse
	return out, c.Post(ctx, PartitionPath(table, p)+"/join", req, &out)
}

// LeaveServer removes req.Server from a partition (POST …/partitions/{p}/leave).
func (c *Client) LeaveServer(ctx context.Context, table string, p uuid.UUID, req ServerChangeRequest) (ChangeResponse, error) {
	var out ChangeResponse
	return out, c.Post(ctx, PartitionPath(table, p)+"/leave", req, &out)
}

// Split starts a split of a partition (POST …/partitions/{p}/split).
func (c *Client) Split(ctx context.Context, table string, p uuid.UUID, req SplitRequest) (SplitResponse, error) {
	var out SplitResponse
	return out, c.Post(ctx, PartitionPath(table, p)+"/split", req, &out)
}
