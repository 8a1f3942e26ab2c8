package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

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
		writeInfluxV1Error(ctx, fasthttp.StatusMethodNotAllowed, "method "+m+" not allowed on /query (allowed: GET, POST)")
		return
	}
	if s.influx == nil {
		writeInfluxV1Error(ctx, fasthttp.StatusNotImplemented, "influxql not configured")
		return
	}
	// A multipart form is read here with the body limit: FormValue would
	// read it with none, gunzipping a compressed body without bound.
	if bytes.HasPrefix(ctx.Request.Header.ContentType(), []byte("multipart/form-data")) {
		if _, err := ctx.Request.MultipartFormWithLimit(s.cfg.MaxBodyBytes); err != nil && !errors.Is(err, fasthttp.ErrNoMultipartForm) {
			switch {
			case errors.Is(err, fasthttp.ErrBodyTooLarge):
				err = fmt.Errorf("%w: the limit is %d bytes, decompressed", ErrBodyTooLarge, s.cfg.MaxBodyBytes)
			case strings.Contains(err.Error(), "unsupported content-encoding"):
				err = fmt.Errorf("%w: %v", ErrUnsupportedEncoding, err)
			default:
				err = fmt.Errorf("%w: %v", ErrBadRequest, err)
			}
			s.writeError(ctx, err)
			return
		}
		defer ctx.Request.RemoveMultipartFormFiles()
	}
	// Trimmed as InfluxDB does: a q of blanks is a missing q.
	q := strings.TrimSpace(string(ctx.FormValue("q")))
	if q == "" && bytes.HasPrefix(ctx.Request.Header.ContentType(), []byte("application/vnd.influxql")) {
		q = strings.TrimSpace(string(ctx.Request.Body()))
	}
	if q == "" {
		writeInfluxV1Error(ctx, fasthttp.StatusBadRequest, `missing required parameter "q"`)
		return
	}
	opts := influx.Options{DB: string(ctx.FormValue("db")), Epoch: string(ctx.FormValue("epoch"))}
	if p := ctx.FormValue("params"); len(p) > 0 {
		d := json.NewDecoder(bytes.NewReader(p))
		d.UseNumber()
		if err := d.Decode(&opts.Params); err != nil {
			writeInfluxV1Error(ctx, fasthttp.StatusBadRequest, "error parsing query parameters: "+err.Error())
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
		writeInfluxV1Error(ctx, status, err.Error())
		return
	}
	var body []byte
	if pretty {
		body, err = json.MarshalIndent(resp, "", "    ")
	} else {
		body, err = json.Marshal(resp)
	}
	if err != nil {
		writeInfluxV1Error(ctx, fasthttp.StatusInternalServerError, fmt.Sprintf("encode answer: %v", err))
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}
