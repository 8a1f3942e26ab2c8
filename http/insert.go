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

// rowsBuf is a pooled slice of rows for one request, with the memory of
// their Fields.
type rowsBuf struct {
	rows   []model.Row
	fields ingest.FieldMemory
}

var rowsPool = sync.Pool{New: func() any { return &rowsBuf{rows: make([]model.Row, 0, 1024)} }}

func putRows(b *rowsBuf) {
	if cap(b.rows) > 1<<20 {
		b.rows = nil
	}
	clear(b.rows[:cap(b.rows)]) // drop references into request bodies
	b.rows = b.rows[:0]
	b.fields.Reset()
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
	s.insert(ctx, table, format, func(body []byte, rows []model.Row, mem *ingest.FieldMemory) ([]model.Row, string, error) {
		f := format
		if f == "" {
			f = sniffFormat(body)
		}
		if f == formatNDJSON {
			rows, err := mem.ParseNDJSON(body, rows)
			return rows, f, err
		}
		rows, err := mem.ParseJSON(body, rows)
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

// handleWrite serves InfluxDB line protocol: POST /write (v1) and POST
// /api/v2/write (v2), with InfluxDB's parameters (writeParams). It answers
// 204 like InfluxDB so existing clients and agents work unchanged; its
// errors come in InfluxDB's shapes (influxerr.go).
func (s *Server) handleWrite(ctx *fasthttp.RequestCtx, v2 bool) {
	table, prec, err := writeParams(ctx.QueryArgs(), v2)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	s.insert(ctx, table, formatLineProtocol, func(body []byte, rows []model.Row, mem *ingest.FieldMemory) ([]model.Row, string, error) {
		rows, err := mem.ParseLineProtocol(body, prec, s.cfg.Now(), rows)
		return rows, formatLineProtocol, err
	}, func(int) {
		ctx.SetStatusCode(fasthttp.StatusNoContent)
	})
}

// writeParams reads the query parameters of a line-protocol write as
// InfluxDB does and returns the table written to and the precision.
//
// v1 (/write, InfluxDB 1.8): db names the table (required); precision is
// "" or n or ns (nanoseconds), u (also us, µ, µs), ms, s, m or h; rp and
// consistency are accepted and ignored (a table has one retention; the
// X-TSDB-Consistency header picks the acknowledgements).
//
// v2 (/api/v2/write): bucket names the table (required); a bucket
// "db/rp", as InfluxDB 1.8 maps its databases and retention policies to
// buckets, names table db. precision is ns (the default), us, ms or s, as
// InfluxDB 2 takes it. org and orgID are accepted and ignored (tsdb has no
// organisations).
func writeParams(args *fasthttp.Args, v2 bool) (string, ingest.Precision, error) {
	p := string(args.Peek("precision"))
	if !v2 {
		table := string(args.Peek("db"))
		if table == "" {
			return "", 0, fmt.Errorf("%w: database is required (?db= names the table to write to)", ErrBadRequest)
		}
		prec, err := ingest.ParsePrecision(p)
		if err != nil {
			return "", 0, fmt.Errorf("%w: invalid precision %q (use n, u, ms, s, m or h)", ErrBadRequest, p)
		}
		return table, prec, nil
	}
	bucket := string(args.Peek("bucket"))
	if bucket == "" {
		return "", 0, fmt.Errorf("%w: bucket is required (?bucket= names the table to write to)", ErrBadRequest)
	}
	table, _, _ := strings.Cut(bucket, "/")
	if table == "" {
		return "", 0, fmt.Errorf("%w: bucket %q names no database before its '/'", ErrBadRequest, bucket)
	}
	switch p {
	case "", "ns", "us", "ms", "s":
	default:
		return "", 0, fmt.Errorf("%w: invalid precision %q; valid precision units are ns, us, ms, and s", ErrBadRequest, p)
	}
	prec, err := ingest.ParsePrecision(p)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return table, prec, nil
}

// parseFunc parses a request body into rows appended to rows, the rows'
// Fields lent by mem, and names the body's format.
type parseFunc func(body []byte, rows []model.Row, mem *ingest.FieldMemory) ([]model.Row, string, error)

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
	noSmear, err := api.ParseSmearHeader(string(ctx.Request.Header.Peek(api.HeaderSmear)))
	if err != nil {
		s.writeError(ctx, fmt.Errorf("%w: %w", ErrBadRequest, err))
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	// An unknown table is a 404 whatever the body holds.
	if _, _, err := s.backend.Table(rctx, table); err != nil {
		s.writeError(ctx, influxNotFound(ctx, table, err))
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
	rows, f, err := parse(body, rb.rows[:0], &rb.fields)
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
