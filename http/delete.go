package http

import (
	"math"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/http/ingest"
	"github.com/tsdb/tsdb/model"
)

// deleteBodyWant describes the delete body in error messages.
const deleteBodyWant = `{"from"?, "to"?: TIME, "series"? or "prefix"?: string, "measurement"?: string, "tags"?: TAGEXPR, "all"?: bool}`

// handleDelete serves POST /api/v1/tables/{t}/delete: a delete of the rows
// the body selects, acknowledged once every tombstone is on a quorum of
// its partition's replicas (204).
func (s *Server) handleDelete(ctx *fasthttp.RequestCtx, table string) {
	if err := model.ValidateTableName(table); err != nil {
		s.writeError(ctx, err)
		return
	}
	q, err := s.decodeDelete(ctx)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	if err := s.backend.DeleteRows(rctx, table, q); err != nil {
		s.writeError(ctx, err)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// decodeDelete reads and checks a delete's body into the query selecting
// its rows.
func (s *Server) decodeDelete(ctx *fasthttp.RequestCtx) (model.Query, error) {
	body, release, err := requestBody(ctx, s.cfg.MaxBodyBytes, s.zstd)
	if err != nil {
		return model.Query{}, err
	}
	defer release()
	var req api.DeleteRequest
	if err := decodeObject(body, &req, deleteBodyWant); err != nil {
		return model.Query{}, err
	}
	return deleteQuery(req)
}

// deleteQuery turns a delete request into the query selecting its rows.
func deleteQuery(req api.DeleteRequest) (model.Query, error) {
	q := model.Query{From: math.MinInt64, To: math.MaxInt64, Measurement: req.Measurement, Tags: req.Tags}
	var err error
	if req.From != "" {
		if q.From, err = ingest.ParseTime(string(req.From)); err != nil {
			return q, badQuery("from: %v", err)
		}
	}
	if req.To != "" {
		if q.To, err = ingest.ParseTime(string(req.To)); err != nil {
			return q, badQuery("to: %v", err)
		}
	}
	if q.From > q.To {
		return q, badQuery("from (%d) is after to (%d)", q.From, q.To)
	}
	switch {
	case req.Series != "" && req.Prefix != "":
		return q, badQuery("series and prefix are exclusive")
	case req.Series != "":
		if q.Series, err = model.CanonicalSeries(req.Series); err != nil {
			return q, badQuery("series: %v", err)
		}
	case req.Prefix != "":
		q.Series, q.Prefix = req.Prefix, true
	}
	if req.Tags != nil {
		if _, err := req.Tags.Compile(); err != nil {
			return q, badQuery("tags: %v", err)
		}
	}
	bounded := req.From != "" || req.To != "" || q.Series != "" || q.Measurement != "" || q.Tags != nil
	if !bounded && !req.All {
		return q, badQuery(`a delete with no from, to, series, prefix, measurement or tags deletes every row of the table; send "all": true to mean it`)
	}
	return q, nil
}
