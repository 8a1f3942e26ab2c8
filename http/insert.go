package http

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/http/ingest"
	"github.com/tsdb/tsdb/model"
)

// Insert formats, as metric labels.
const (
	formatJSON         = "json"
	formatNDJSON       = "ndjson"
	formatLineProtocol = "line_protocol"
)

// rowsBuf is a pooled slice of rows for one request.
type rowsBuf struct{ rows []model.Row }

var rowsPool = sync.Pool{New: func() any { return &rowsBuf{rows: make([]model.Row, 0, 1024)} }}

func putRows(b *rowsBuf) {
	if cap(b.rows) > 1<<20 {
		b.rows = nil
	}
	clear(b.rows[:cap(b.rows)]) // drop references into request bodies
	b.rows = b.rows[:0]
	rowsPool.Put(b)
}

// handleInsert serves POST /api/v1/tables/{t}/insert: a JSON array of rows or
// NDJSON, chosen by Content-Type (or by the first byte when it is absent).
func (s *Server) handleInsert(ctx *fasthttp.RequestCtx, table string) {
	format := formatJSON
	ct := strings.ToLower(string(ctx.Request.Header.ContentType()))
	ct, _, _ = strings.Cut(ct, ";")
	switch strings.TrimSpace(ct) {
	case "application/json", "text/json":
	case "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines":
		format = formatNDJSON
	case "", "application/octet-stream", "text/plain":
		format = "" // sniff
	default:
		s.writeError(ctx, fmt.Errorf("%w: %q (use application/json for a JSON array or application/x-ndjson)", ErrUnsupportedType, ct))
		return
	}
	s.insert(ctx, table, format, func(body []byte, rows []model.Row) ([]model.Row, string, error) {
		f := format
		if f == "" {
			f = sniffFormat(body)
		}
		if f == formatNDJSON {
			rows, err := ingest.ParseNDJSON(body, rows)
			return rows, f, err
		}
		rows, err := ingest.ParseJSON(body, rows)
		return rows, f, err
	}, func(n int) {
		s.writeJSON(ctx, 200, api.InsertResponse{Rows: n})
	})
}

// sniffFormat tells a JSON array from NDJSON by the first non-space byte.
func sniffFormat(body []byte) string {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) > 0 && b[0] == '{' {
		return formatNDJSON
	}
	return formatJSON
}

// handleWrite serves InfluxDB line protocol: POST /write?db=t&precision=p
// (v1) and POST /api/v2/write?bucket=t&precision=p (v2). It answers 204 like
// InfluxDB so existing clients and agents work unchanged.
func (s *Server) handleWrite(ctx *fasthttp.RequestCtx, v2 bool) {
	args := ctx.QueryArgs()
	param := "db"
	if v2 {
		param = "bucket"
	}
	table := string(args.Peek(param))
	if table == "" {
		s.writeError(ctx, fmt.Errorf("%w: missing ?%s= (the table to write to)", ErrBadRequest, param))
		return
	}
	prec, err := ingest.ParsePrecision(string(args.Peek("precision")))
	if err != nil {
		s.writeError(ctx, fmt.Errorf("%w: %v", ErrBadRequest, err))
		return
	}
	s.insert(ctx, table, formatLineProtocol, func(body []byte, rows []model.Row) ([]model.Row, string, error) {
		rows, err := ingest.ParseLineProtocol(body, prec, s.cfg.Now(), rows)
		return rows, formatLineProtocol, err
	}, func(int) {
		ctx.SetStatusCode(fasthttp.StatusNoContent)
	})
}

type parseFunc func(body []byte, rows []model.Row) ([]model.Row, string, error)

// insert runs the shared insert path: table check, body decode, parse,
// write, answer.
func (s *Server) insert(ctx *fasthttp.RequestCtx, table, format string, parse parseFunc, ok func(n int)) {
	if err := model.ValidateTableName(table); err != nil {
		s.writeError(ctx, err)
		return
	}
	consistency, err := parseConsistency(ctx.Request.Header.Peek(api.HeaderConsistency))
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	noSmear, err := parseSmear(ctx.Request.Header.Peek(api.HeaderSmear))
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	// An unknown table is a 404 whatever the body holds.
	if _, _, err := s.backend.Table(rctx, table); err != nil {
		s.writeError(ctx, err)
		return
	}
	body, release, err := requestBody(ctx, s.cfg.MaxBodyBytes, s.zstd)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	defer release()
	rb := rowsPool.Get().(*rowsBuf)
	defer putRows(rb)
	rows, f, err := parse(body, rb.rows[:0])
	rb.rows = rows
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	if err := s.backend.Insert(rctx, table, rows, model.InsertOptions{Consistency: consistency, NoSmear: noSmear}); err != nil {
		s.writeError(ctx, err)
		return
	}
	s.metrics.insertRows.WithLabelValues(f).Add(float64(len(rows)))
	s.metrics.insertBytes.WithLabelValues(f).Add(float64(len(ctx.Request.Body())))
	ok(len(rows))
}

// parseSmear reads the X-TSDB-Smear header of an insert: "off" (or
// "false", "0", "no") opts out of smearing; "on" (or "true", "1", "yes"),
// empty or absent leaves it to the table and the server. Case and spaces
// do not matter; anything else is a 400.
func parseSmear(h []byte) (noSmear bool, err error) {
	switch strings.ToLower(strings.TrimSpace(string(h))) {
	case "", "on", "true", "1", "yes":
		return false, nil
	case "off", "false", "0", "no":
		return true, nil
	}
	return false, fmt.Errorf("%w: header %s: %q (want off or on)", ErrBadRequest, api.HeaderSmear, h)
}

// parseConsistency reads the X-TSDB-Consistency header of an insert: one,
// quorum or all, in any case; absent or empty means quorum.
func parseConsistency(v []byte) (string, error) {
	c := strings.ToLower(strings.TrimSpace(string(v)))
	switch c {
	case "":
		return api.ConsistencyQuorum, nil
	case api.ConsistencyOne, api.ConsistencyQuorum, api.ConsistencyAll:
		return c, nil
	}
	return "", fmt.Errorf("%w: header %s: %q (want %s, %s or %s; absent means %s)", ErrBadRequest, api.HeaderConsistency,
		v, api.ConsistencyOne, api.ConsistencyQuorum, api.ConsistencyAll, api.ConsistencyQuorum)
}
