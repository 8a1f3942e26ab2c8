package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/influx"
)

// handleInfluxQuery serves InfluxDB 1.x's /query: GET or POST, the query
// in q (URL or form-encoded body, several statements separated by ';', or
// the whole body with Content-Type application/vnd.influxql), db, epoch,
// pretty, params (bound parameters, a JSON object) and chunked (accepted;
// the answer is always one JSON object, which a chunked reader reads as a
// single chunk). Errors of the whole request are {"error":"..."} with 400;
// errors of one statement are in its result, with 200, as InfluxDB does.
func (s *Server) handleInfluxQuery(ctx *fasthttp.RequestCtx) {
	if m := string(ctx.Method()); m != "GET" && m != "POST" {
		ctx.Response.Header.Set("Allow", "GET, POST")
		writeInfluxError(ctx, fasthttp.StatusMethodNotAllowed, "method "+m+" not allowed on /query (allowed: GET, POST)")
		return
	}
	if s.influx == nil {
		writeInfluxError(ctx, fasthttp.StatusNotImplemented, "influxql not configured")
		return
	}
	q := string(ctx.FormValue("q"))
	if q == "" && bytes.HasPrefix(ctx.Request.Header.ContentType(), []byte("application/vnd.influxql")) {
		q = string(ctx.Request.Body())
	}
	if q == "" {
		writeInfluxError(ctx, fasthttp.StatusBadRequest, `missing required parameter "q"`)
		return
	}
	opts := influx.Options{DB: string(ctx.FormValue("db")), Epoch: string(ctx.FormValue("epoch"))}
	if p := ctx.FormValue("params"); len(p) > 0 {
		d := json.NewDecoder(bytes.NewReader(p))
		d.UseNumber()
		if err := d.Decode(&opts.Params); err != nil {
			writeInfluxError(ctx, fasthttp.StatusBadRequest, "error parsing query parameters: "+err.Error())
			return
		}
	}
	pretty, _ := strconv.ParseBool(string(ctx.FormValue("pretty")))
	rctx, cancel := s.requestContext()
	defer cancel()
	resp, err := s.influx.Execute(rctx, q, opts)
	if err != nil {
		status := fasthttp.StatusBadRequest
		if !errors.Is(err, errcode.ErrInvalidQuery) {
			status = fasthttp.StatusInternalServerError
			s.log.Error("influxql request failed", "err", err)
		}
		writeInfluxError(ctx, status, err.Error())
		return
	}
	var body []byte
	if pretty {
		body, err = json.MarshalIndent(resp, "", "    ")
	} else {
		body, err = json.Marshal(resp)
	}
	if err != nil {
		writeInfluxError(ctx, fasthttp.StatusInternalServerError, fmt.Sprintf("encode answer: %v", err))
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// writeInfluxError answers an error in InfluxDB 1.x's shape {"error":"..."}.
func writeInfluxError(ctx *fasthttp.RequestCtx, status int, msg string) {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	ctx.ResetBody()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}
