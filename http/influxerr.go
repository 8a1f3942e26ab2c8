package http

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/http/api"
)

// The InfluxDB-compatible routes answer errors in InfluxDB's shapes, so
// that its clients (Telegraf, the influx CLI, the client libraries,
// Grafana) read the message: InfluxDB 1.x's {"error":"..."} on /write,
// /query and /ping, InfluxDB 2's {"code":"...","message":"..."} on
// /api/v2/write and /health. Every other route keeps tsdb's
// {"error":{"code","message"}}. writeAPIError picks the shape by the
// request's path (errorShape), so every error of those routes, from the
// handler, the authentication, the concurrency cap or fasthttp's body
// limit, comes in the route's shape; tsdb's own code is kept in the
// X-Tsdb-Error-Code header.

// errShape is the shape of a route's error bodies.
type errShape int

const (
	shapeTSDB     errShape = iota // {"error":{"code","message"}}
	shapeInfluxV1                 // {"error":"message"}
	shapeInfluxV2                 // {"code":"invalid","message":"..."}
)

// errorShape returns the error shape of the route serving path.
func errorShape(path string) errShape {
	switch path {
	case "/write", "/query", "/ping":
		return shapeInfluxV1
	case "/api/v2/write", "/health":
		return shapeInfluxV2
	}
	return shapeTSDB
}

// influxRoute reports whether path is one of the InfluxDB-compatible
// routes, whose answers carry InfluxDB's version headers.
func influxRoute(path string) bool { return errorShape(path) != shapeTSDB }

// headerTSDBErrorCode carries tsdb's error code (api.Code...) on an error
// answered in an InfluxDB shape, which has no room for it.
const headerTSDBErrorCode = api.HeaderErrorCode

// maxErrorHeader bounds the copy of a message InfluxDB puts in a header.
const maxErrorHeader = 1024

// writeInfluxV1Error answers an error in InfluxDB 1.x's shape:
// {"error":"msg"} with status, and the message in the X-Influxdb-Error
// header as InfluxDB 1.8 does. The /query handler calls it for errors of
// the whole request (a statement's own error goes in its result).
func writeInfluxV1Error(ctx *fasthttp.RequestCtx, status int, msg string) {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	ctx.ResetBody()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("X-Influxdb-Error", headerSafe(msg))
	ctx.SetBody(body)
}

// writeInfluxV2Error answers an error in InfluxDB 2's shape:
// {"code":"...","message":"msg"}, the code being InfluxDB 2's for status
// (influxV2Code), also in the X-Platform-Error-Code header as InfluxDB 2
// sends it.
func writeInfluxV2Error(ctx *fasthttp.RequestCtx, status int, msg string) {
	code := influxV2Code(status)
	body, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{code, msg})
	ctx.ResetBody()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json; charset=utf-8")
	ctx.Response.Header.Set("X-Platform-Error-Code", code)
	ctx.SetBody(body)
}

// influxV2Code is InfluxDB 2's error code (its errors.go vocabulary) for
// an HTTP status.
func influxV2Code(status int) string {
	switch status {
	case 400:
		return "invalid"
	case 401:
		return "unauthorized"
	case 403:
		return "forbidden"
	case 404:
		return "not found"
	case 405:
		return "method not allowed"
	case 409:
		return "conflict"
	case 413:
		return "request too large"
	case 415:
		return "unsupported media type"
	case 422:
		return "unprocessable entity"
	case 429:
		return "too many requests"
	case 503:
		return "unavailable"
	}
	if status >= 500 {
		return "internal error"
	}
	return "invalid"
}

// headerSafe makes msg fit in a header value: one line, bounded.
func headerSafe(msg string) string {
	msg = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
	if len(msg) > maxErrorHeader {
		msg = strings.ToValidUTF8(msg[:maxErrorHeader], "")
	}
	return msg
}

// influxNotFound words a table-not-found error of a write as InfluxDB
// does on the InfluxDB routes: `database not found: "db"` (1.x; Telegraf's
// outputs.influxdb creates the database when it reads this) or
// `bucket "db" not found` (2.x). Any other error is returned as it is.
func influxNotFound(ctx *fasthttp.RequestCtx, table string, err error) error {
	if _, code := errcode.Classify(err); code != api.CodeTableNotFound {
		return err
	}
	switch errorShape(string(ctx.Path())) {
	case shapeInfluxV1:
		return &apiError{status: 404, code: api.CodeTableNotFound, msg: fmt.Sprintf("database not found: %q", table)}
	case shapeInfluxV2:
		return &apiError{status: 404, code: api.CodeTableNotFound, msg: fmt.Sprintf("bucket %q not found", table)}
	}
	return err
}
