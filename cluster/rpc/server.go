package rpc

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/errcode"
)

// SecretHeader carries the cluster secret on every internal request.
const SecretHeader = "X-TSDB-Cluster-Secret"

// DefaultMaxRequestBytes is the body limit DecodeRequest applies when given
// a limit of zero or less.
const DefaultMaxRequestBytes = 32 << 20

// Error codes this package writes: those of package errcode, the one
// vocabulary of the public and the internal API.
const (
	CodeBadRequest       = errcode.CodeBadRequest       // 400
	CodeUnauthorized     = errcode.CodeUnauthorized     // 401
	CodeTooLarge         = errcode.CodeTooLarge         // 413
	CodeUnsupportedMedia = errcode.CodeUnsupportedMedia // 415
	CodeInternal         = errcode.CodeInternal         // 500
	CodeUnavailable      = errcode.CodeUnavailable      // 503
)

// errorResponse is the error body {"error": {"code": "...", "message": "..."}},
// the same as the public API's (http/api.ErrorResponse), declared here so
// that this package does not import the public API's.
type errorResponse struct {
	Error errorBody `json:"error"`
}

// errorBody names the problem: a stable code and a human message.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Authorized reports whether the request carries the cluster secret in
// SecretHeader. The comparison takes the same time whatever the header holds
// (both sides are hashed first, so not even the length leaks). An empty
// secret allows every request: a cluster without a secret.
func Authorized(ctx *fasthttp.RequestCtx, secret string) bool {
	if secret == "" {
		return true
	}
	got := sha256.Sum256(ctx.Request.Header.Peek(SecretHeader))
	want := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// DecodeRequest JSON-decodes the request body into v, a non-nil pointer.
// The body may be zstd-compressed (Content-Encoding: zstd) or identity; it
// must be at most maxBytes long both as sent and once decompressed
// (DefaultMaxRequestBytes when maxBytes <= 0). Unknown fields and trailing
// data are rejected, so a peer speaking a newer or different schema fails
// loudly instead of having fields silently dropped.
//
// On error the request has already been answered (413 ErrRequestTooLarge,
// 415 ErrUnsupportedEncoding, 400 ErrBadRequest) and the handler should
// just return. The body was read by fasthttp before the handler ran, so the
// server's MaxRequestBodySize must be at least maxBytes; a larger body never
// reaches the handler.
func DecodeRequest(ctx *fasthttp.RequestCtx, maxBytes int, v any) error {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxRequestBytes
	}
	err := decodeRequest(ctx, maxBytes, v)
	if err != nil {
		status, code := statusOf(err)
		WriteError(ctx, status, code, err.Error())
	}
	return err
}

func decodeRequest(ctx *fasthttp.RequestCtx, maxBytes int, v any) error {
	withPayload, err := checkContentType(ctx)
	if err != nil {
		return err
	}
	raw := ctx.Request.Body()
	if len(raw) > maxBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrRequestTooLarge, len(raw), maxBytes)
	}
	body := raw
	enc := strings.ToLower(strings.TrimSpace(string(ctx.Request.Header.ContentEncoding())))
	switch enc {
	case "", "identity":
	case "zstd":
		var out []byte
		var err error
		if withPayload {
			// The payload aliases the body: a buffer of its own.
			out, err = decompress(nil, raw, maxBytes)
		} else {
			buf := getBuf()
			defer putBuf(buf)
			out, err = decompress((*buf)[:0], raw, maxBytes)
			*buf = out
		}
		switch {
		case errors.Is(err, errTooLarge):
			return fmt.Errorf("%w: over %d bytes once decompressed", ErrRequestTooLarge, maxBytes)
		case err != nil:
			return fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		body = out
	default:
		return fmt.Errorf("%w: Content-Encoding %q (supported: zstd, identity)", ErrUnsupportedEncoding, enc)
	}
	if withPayload {
		if enc == "" || enc == "identity" {
			body = bytes.Clone(body) // the payload outlives the request
		}
		return decodeWithPayload(body, v)
	}
	return unmarshalStrict(body, v)
}

// checkContentType accepts an absent Content-Type, a JSON one, or the
// JSON-with-payload one (payload.go), which it reports.
func checkContentType(ctx *fasthttp.RequestCtx) (withPayload bool, err error) {
	ct := string(ctx.Request.Header.ContentType())
	if ct == "" {
		return false, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err == nil && mt == contentTypeJSON:
		return false, nil
	case err == nil && mt == contentTypePayload:
		return true, nil
	}
	return false, fmt.Errorf("%w: Content-Type %q (want %s or %s)", ErrUnsupportedEncoding, ct, contentTypeJSON, contentTypePayload)
}

// unmarshalStrict decodes exactly one JSON value with no unknown fields.
func unmarshalStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return fmt.Errorf("%w: empty body", ErrBadRequest)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var iu *json.InvalidUnmarshalError
		if errors.As(err, &iu) {
			return fmt.Errorf("BUG: DecodeRequest target: %w", err) // answered 500
		}
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return fmt.Errorf("%w: trailing data after the JSON value", ErrBadRequest)
	}
	return nil
}

// statusOf maps a DecodeRequest error to its status and code: 413, 415 or
// 400 for the members of errcode's kinds (ErrRequestTooLarge,
// ErrUnsupportedEncoding, ErrBadRequest), 500 for anything else.
func statusOf(err error) (int, string) {
	return errcode.Classify(err)
}

// WriteResponse answers with status and v as JSON, zstd-compressed when the
// request's Accept-Encoding allows zstd. A nil v answers with an empty body.
// If v cannot be encoded, the answer is a 500 error instead.
func WriteResponse(ctx *fasthttp.RequestCtx, status int, v any) {
	ctx.ResetBody()
	ctx.Response.Header.Del(fasthttp.HeaderContentEncoding)
	ctx.SetStatusCode(status)
	if v == nil {
		return
	}
	js, err := json.Marshal(v)
	if err != nil {
		WriteError(ctx, fasthttp.StatusInternalServerError, CodeInternal, "encode answer: "+err.Error())
		return
	}
	ctx.SetContentType("application/json")
	if !acceptsZstd(ctx.Request.Header.Peek(fasthttp.HeaderAcceptEncoding)) {
		ctx.SetBody(js)
		return
	}
	buf := getBuf()
	defer putBuf(buf)
	*buf = encoder().EncodeAll(js, (*buf)[:0])
	ctx.Response.Header.SetContentEncoding("zstd")
	ctx.SetBody(*buf) // copies
}

// WriteError answers with status and the error body
// {"error": {"code": code, "message": msg}}, uncompressed so that any tool
// can read it.
func WriteError(ctx *fasthttp.RequestCtx, status int, code, msg string) {
	body, _ := json.Marshal(errorResponse{Error: errorBody{Code: code, Message: msg}}) // cannot fail
	ctx.ResetBody()
	ctx.Response.Header.Del(fasthttp.HeaderContentEncoding)
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// acceptsZstd reports whether an Accept-Encoding value lists zstd with a
// non-zero quality. A bare "*" is not taken as consent: generic tools get
// identity unless they ask.
func acceptsZstd(h []byte) bool {
	for part := range strings.SplitSeq(string(h), ",") {
		name, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(name), "zstd") {
			continue
		}
		return qualityNonZero(params)
	}
	return false
}

// qualityNonZero reads "q=..." from the parameters of an Accept-Encoding
// entry; absent or unparsable means 1.
func qualityNonZero(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err != nil || q > 0
	}
	return true
}
