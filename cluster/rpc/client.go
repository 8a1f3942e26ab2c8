package rpc

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Client calls the internal API of other servers. It is safe for concurrent
// use; one Client per process is enough (connections are pooled per address).
type Client struct {
	cfg Config
	hc  *fasthttp.Client

	// mu orders Close against attempts that start a goroutine: an attempt
	// registers in inflight under the read lock only while closed is false,
	// so Close's Wait never races an Add.
	mu struct {
		sync.RWMutex
		closed bool
	}
	// inflight counts attempt goroutines still running. An attempt whose
	// ctx ended returns at once and leaves its goroutine to finish the
	// exchange (bounded by Timeout) and free the request.
	inflight sync.WaitGroup
}

// NewClient returns a client with cfg's policy; unset fields take their
// defaults (see Config).
func NewClient(cfg Config) *Client {
	cfg.EnsureDefaults()
	c := &Client{cfg: cfg}
	c.hc = &fasthttp.Client{
		Name:         "tsdb-rpc",
		ReadTimeout:  cfg.Timeout,
		WriteTimeout: cfg.Timeout,
		// The wire limit leaves room for zstd's framing over incompressible
		// data; the exact limit is enforced on the decompressed body.
		MaxResponseBodySize: cfg.MaxResponseBytes + cfg.MaxResponseBytes>>10 + 4096,
		// Retries are this package's policy, with backoff and a count the
		// caller sees; fasthttp must not add its own (it does not retry
		// POST anyway, this makes it explicit).
		MaxIdemponentCallAttempts: 1,
		RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		TLSConfig:                 cfg.TLS,
	}
	return c
}

// Close closes idle connections and waits for abandoned attempts (those
// whose ctx ended first) to finish, which takes at most Timeout. Calls made
// after Close return ErrClosed.
func (c *Client) Close() {
	c.mu.Lock()
	c.mu.closed = true
	c.mu.Unlock()
	c.inflight.Wait()
	c.hc.CloseIdleConnections()
}

// Call posts req to http://addr/path and decodes the answer into resp.
// addr is host:port (plain HTTP) or a base URL with its scheme,
// "https://host:port" for a peer serving TLS, whose certificate is then
// verified against Config.TLS.
//
// req is sent as zstd-compressed JSON (nil sends no body); the answer may be
// zstd or identity and is JSON-decoded into resp (nil discards it; an empty
// body leaves resp untouched). Each attempt is bounded by Timeout and by
// ctx's deadline; retryable failures are retried with backoff up to
// MaxAttempts (see the package documentation for the policy).
//
// Errors: a *StatusError for a non-2xx answer that is not retried (401 also
// matches ErrUnauthorized); ErrUnavailable wrapping the last error when
// every attempt failed retryably; ErrResponseTooLarge, ErrBadResponse;
// ctx.Err() (matched with errors.Is) as soon as ctx is done.
func (c *Client) Call(ctx context.Context, addr, path string, req, resp any) error {
	url := baseURL(addr) + path
	if c.closed() {
		return fmt.Errorf("POST %s: %w", url, ErrClosed)
	}
	body, err := encodeRequest(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	var last error
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return ctxError(url, err, n-1, last)
		}
		o := c.attempt(ctx, url, body, resp)
		switch {
		case o.err == nil:
			return nil
		case o.interrupted:
			return ctxError(url, o.err, n, last)
		case !o.retry: // a definitive answer stands even if ctx ended meanwhile
			return fmt.Errorf("POST %s: %w", url, o.err)
		}
		last = o.err
		if err := ctxDone(ctx); err != nil {
			return ctxError(url, err, n, last)
		}
		if n >= c.cfg.MaxAttempts {
			return fmt.Errorf("%w: POST %s: %d attempts failed, last: %w", ErrUnavailable, url, n, last)
		}
		if err := c.cfg.Sleep(ctx, c.cfg.backoff(n, o.retryAfter)); err != nil {
			return ctxError(url, err, n, last)
		}
	}
}

// baseURL returns addr as a base URL: itself when it has a scheme
// ("https://host:port"), else http://addr.
func baseURL(addr string) string {
	if strings.HasPrefix(addr, "https://") || strings.HasPrefix(addr, "http://") {
		return addr
	}
	return "http://" + addr
}

// ctxDone returns ctx's error once it is done or its deadline has passed
// (the deadline also bounds the attempt, which may end a moment before the
// context's own timer fires).
func ctxDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

func ctxError(url string, err error, attempts int, last error) error {
	if last == nil {
		return fmt.Errorf("POST %s: %w after %d attempt(s)", url, err, attempts)
	}
	return fmt.Errorf("POST %s: %w after %d attempt(s), last error: %v", url, err, attempts, last)
}

// requestBody is an encoded request: zstd-compressed bytes of a media type.
type requestBody struct {
	data        []byte
	contentType string
}

// encodeRequest returns req as zstd-compressed JSON (a PayloadRequest as
// its JSON header and payload, payload.go), or nil data for a nil req. The
// bytes are never reused: an abandoned attempt may still be sending them.
func encodeRequest(req any) (requestBody, error) {
	if req == nil {
		return requestBody{}, nil
	}
	if pr, ok := req.(PayloadRequest); ok {
		return encodeWithPayload(pr)
	}
	js, err := json.Marshal(req)
	if err != nil {
		return requestBody{}, fmt.Errorf("rpc: encode request: %w", err)
	}
	return requestBody{data: encoder().EncodeAll(js, make([]byte, 0, len(js)/2+64)), contentType: contentTypeJSON}, nil
}

// outcome is the result of one attempt.
type outcome struct {
	err         error
	retry       bool
	retryAfter  time.Duration // the answer's Retry-After; -1 when absent
	interrupted bool          // ctx ended before the exchange did; err is ctx.Err()
}

// attempt makes one exchange. fasthttp takes no context, so when ctx can be
// cancelled the exchange runs on its own goroutine and the attempt returns
// as soon as ctx is done; that goroutine then frees the request itself.
func (c *Client) attempt(ctx context.Context, url string, body requestBody, resp any) outcome {
	timeout := c.cfg.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	deadline := time.Now().Add(timeout)
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	c.buildRequest(req, url, body)
	if ctx.Done() == nil {
		defer release(req, res)
		return c.finish(c.hc.DoDeadline(req, res, deadline), timeout, res, resp)
	}
	if !c.track() {
		release(req, res)
		return outcome{err: ErrClosed}
	}
	done := make(chan error) // unbuffered: a completed send hands req/res back
	go func() {
		defer c.inflight.Done()
		err := c.hc.DoDeadline(req, res, deadline)
		select {
		case done <- err:
		case <-ctx.Done(): // the caller is gone; nobody else owns req/res
			release(req, res)
		}
	}()
	select {
	case err := <-done:
		defer release(req, res)
		return c.finish(err, timeout, res, resp)
	case <-ctx.Done():
		return outcome{err: ctx.Err(), interrupted: true}
	}
}

func (c *Client) closed() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.mu.closed
}

// track registers an attempt goroutine unless the client is closed.
func (c *Client) track() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.mu.closed {
		return false
	}
	c.inflight.Add(1)
	return true
}

func release(req *fasthttp.Request, res *fasthttp.Response) {
	fasthttp.ReleaseRequest(req)
	fasthttp.ReleaseResponse(res)
}

func (c *Client) buildRequest(req *fasthttp.Request, url string, body requestBody) {
	req.SetRequestURI(url)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.Set(fasthttp.HeaderAcceptEncoding, "zstd")
	if c.cfg.Secret != "" {
		req.Header.Set(SecretHeader, c.cfg.Secret)
	}
	if c.cfg.Clock != nil {
		req.Header.Set(ClockHeader, c.cfg.Clock.Stamp())
	}
	if body.data != nil {
		req.Header.SetContentType(body.contentType)
		req.Header.SetContentEncoding("zstd")
		req.SetBodyRaw(body.data) // read-only, shared by the attempts of one call
	}
}

// finish classifies an exchange and decodes a 2xx answer into resp.
func (c *Client) finish(err error, timeout time.Duration, res *fasthttp.Response, resp any) outcome {
	if err != nil {
		return classifyTransport(err, timeout)
	}
	if c.cfg.Clock != nil {
		c.cfg.Clock.Receive(res.Header.Peek(ClockHeader))
	}
	status := res.StatusCode()
	if status >= 200 && status < 300 {
		if err := c.decodeResponse(res, resp); err != nil {
			return outcome{err: err}
		}
		return outcome{}
	}
	o := outcome{err: c.statusError(res), retryAfter: -1}
	switch status {
	case fasthttp.StatusTooManyRequests, fasthttp.StatusServiceUnavailable:
		o.retry = true
		o.retryAfter = parseRetryAfter(string(res.Header.Peek(fasthttp.HeaderRetryAfter)), time.Now())
	case fasthttp.StatusBadGateway, fasthttp.StatusGatewayTimeout:
		o.retry = true
	}
	return o
}

// classifyTransport decides whether an exchange that got no answer is
// retried: connection errors and timeouts are, an oversized answer and a
// malformed address are not.
func classifyTransport(err error, timeout time.Duration) outcome {
	var (
		ne  net.Error
		cve *tls.CertificateVerificationError
		rhe tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &cve), errors.As(err, &rhe):
		// An untrusted peer certificate, or a peer that does not speak
		// TLS: retrying cannot help.
		return outcome{err: fmt.Errorf("%w: %w", ErrTLS, err)}
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return outcome{err: fmt.Errorf("%w: %w", ErrResponseTooLarge, err)}
	case errors.Is(err, fasthttp.ErrorInvalidURI):
		return outcome{err: err}
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.Is(err, fasthttp.ErrTLSHandshakeTimeout), errors.As(err, &ne) && ne.Timeout():
		return outcome{err: fmt.Errorf("%w after %v: %w", ErrTimeout, timeout, err),
			retry: true, retryAfter: -1}
	}
	return outcome{err: err, retry: true, retryAfter: -1}
}

// responseBody returns the answer's body decompressed, in a pooled buffer
// when it had to be decompressed; put it back with putBuf.
func (c *Client) responseBody(res *fasthttp.Response) ([]byte, *[]byte, error) {
	raw := res.Body()
	enc := strings.ToLower(strings.TrimSpace(string(res.Header.ContentEncoding())))
	switch enc {
	case "", "identity":
		if len(raw) > c.cfg.MaxResponseBytes {
			return nil, nil, fmt.Errorf("%w: %d bytes, over %d", ErrResponseTooLarge, len(raw), c.cfg.MaxResponseBytes)
		}
		return raw, nil, nil
	case "zstd":
		buf := getBuf()
		out, err := decompress((*buf)[:0], raw, c.cfg.MaxResponseBytes)
		*buf = out
		if errors.Is(err, errTooLarge) {
			putBuf(buf)
			return nil, nil, fmt.Errorf("%w: %w", ErrResponseTooLarge, err)
		}
		if err != nil {
			putBuf(buf)
			return nil, nil, fmt.Errorf("%w: %w", ErrBadResponse, err)
		}
		return out, buf, nil
	}
	return nil, nil, fmt.Errorf("%w: Content-Encoding %q", ErrBadResponse, enc)
}

func (c *Client) decodeResponse(res *fasthttp.Response, resp any) error {
	body, buf, err := c.responseBody(res)
	if err != nil {
		return err
	}
	if buf != nil {
		defer putBuf(buf)
	}
	if resp == nil || len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, resp); err != nil {
		return fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	return nil
}

// maxErrorText bounds the text of a non-JSON error body kept in Message.
const maxErrorText = 512

// statusError builds the error of a non-2xx answer from its body.
func (c *Client) statusError(res *fasthttp.Response) *StatusError {
	se := &StatusError{Status: res.StatusCode()}
	body, buf, err := c.responseBody(res)
	if buf != nil {
		defer putBuf(buf)
	}
	if err != nil {
		se.Message = fmt.Sprintf("%s (undecodable error body: %v)", fasthttp.StatusMessage(se.Status), err)
		return se
	}
	var eb errorResponse
	if json.Unmarshal(body, &eb) == nil && (eb.Error.Code != "" || eb.Error.Message != "") {
		se.Code, se.Message = eb.Error.Code, eb.Error.Message
		return se
	}
	text := strings.TrimSpace(string(body[:min(len(body), maxErrorText)]))
	if text == "" {
		text = fasthttp.StatusMessage(se.Status)
	}
	se.Message = text
	return se
}
