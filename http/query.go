package http

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/http/ingest"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// Query limits.
const (
	// DefaultQueryLimit is the raw row limit when the query names none.
	DefaultQueryLimit = 10_000
	// MaxQueryLimit is the largest raw row limit accepted.
	MaxQueryLimit = 1_000_000
)

// queryParams is a parsed query string: the query, and the aggregate
// function its answer shows (zero: a raw query, answered with rows).
type queryParams struct {
	model.Query
	agg model.Agg
}

// parseQuery reads and validates the query parameters of
// GET /api/v1/tables/{t}/query. maxBuckets bounds an aggregate answer's
// buckets summed over its series: a step making more than that for one
// series is refused here, before anything is read; it is the query's
// MaxBuckets. The query's Consistency is left to the caller (a header).
func parseQuery(args *fasthttp.Args, maxBuckets int) (queryParams, error) {
	q := queryParams{Query: model.Query{From: math.MinInt64, To: math.MaxInt64, Limit: DefaultQueryLimit, MaxBuckets: maxBuckets}}
	fromSet, toSet := false, false
	var err error
	if v := args.Peek("from"); len(v) > 0 {
		if q.From, err = ingest.ParseTime(string(v)); err != nil {
			return q, badQuery("from: %v", err)
		}
		fromSet = true
	}
	if v := args.Peek("to"); len(v) > 0 {
		if q.To, err = ingest.ParseTime(string(v)); err != nil {
			return q, badQuery("to: %v", err)
		}
		toSet = true
	}
	if q.From > q.To {
		return q, badQuery("from (%d) is after to (%d)", q.From, q.To)
	}
	if v := string(args.Peek("series")); v != "" {
		if strings.HasSuffix(v, "*") {
			q.Series, q.Prefix = strings.TrimSuffix(v, "*"), true
		} else {
			s, err := model.CanonicalSeries(v)
			if err != nil {
				return q, badQuery("series: %v", err)
			}
			q.Series = s
		}
	}
	if v := string(args.Peek("fields")); v != "" {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				q.Fields = append(q.Fields, f)
			}
		}
	}
	if v := string(args.Peek("limit")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > MaxQueryLimit {
			return q, badQuery("limit %q: want an integer from 1 to %d", v, MaxQueryLimit)
		}
		q.Limit = n
	}
	if v := string(args.Peek("agg")); v != "" {
		if q.agg, err = model.ParseAgg(v); err != nil {
			return q, badQuery("agg: %v", err)
		}
	}
	switch v := string(args.Peek("group")); v {
	case "", "series":
	case "none":
		q.GroupAll = true
	default:
		return q, badQuery("group %q: want series or none", v)
	}
	if v := string(args.Peek("step")); v != "" {
		if q.agg == 0 {
			return q, badQuery("step needs agg")
		}
		step, err := parseStep(v)
		if err != nil {
			return q, err
		}
		if !fromSet || !toSet {
			return q, badQuery("step needs both from and to (to bound the number of buckets)")
		}
		if n := bucketCount(q.From, q.To, step); n > uint64(maxBuckets) {
			return q, fmt.Errorf("%w: step %s over [from, to) makes %d buckets for each series, over the limit of %d buckets "+
				"summed over all series (tsdb server --max-query-buckets); use a bigger step or a narrower time range",
				partition.ErrTooManyBuckets, v, n, maxBuckets)
		}
		q.Step = step
	}
	return q, nil
}

// parseStep reads a Go duration ("1m") or integer nanoseconds; it must be > 0.
func parseStep(v string) (int64, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0, badQuery("step %q must be positive", v)
		}
		return n, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, badQuery("step %q: want a duration like 10s or integer nanoseconds", v)
	}
	if d <= 0 {
		return 0, badQuery("step %q must be positive", v)
	}
	return int64(d), nil
}

// bucketCount is the number of epoch-aligned step buckets [from, to) touches.
func bucketCount(from, to, step int64) uint64 {
	if from >= to {
		return 0
	}
	first := floorDiv(from, step)
	last := floorDiv(to-1, step)
	return uint64(last-first) + 1
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func (s *Server) handleQuery(ctx *fasthttp.RequestCtx, table string) {
	if err := model.ValidateTableName(table); err != nil {
		s.writeError(ctx, err)
		return
	}
	args := ctx.QueryArgs()
	if string(ctx.Method()) == "POST" {
		args = ctx.PostArgs()
	}
	q, err := parseQuery(args, s.cfg.MaxQueryBuckets)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	// A read defaults to one replica as it is (DESIGN.md section 5);
	// quorum or all make it catch up from that many replicas first.
	q.Consistency = api.ConsistencyOne
	if h := ctx.Request.Header.Peek(api.HeaderConsistency); len(h) > 0 {
		if q.Consistency, err = parseConsistency(h); err != nil {
			s.writeError(ctx, err)
			return
		}
	}
	rctx, cancel := s.requestContext()
	defer cancel()
	if q.agg == 0 {
		q.Query.NoVersions = true // the answer prints none
		// The answer is printed and dropped here: its memory is lent by
		// an arena that the next query reuses.
		arena := model.GetRowArena()
		defer arena.Release()
		q.Query.Arena = arena
		rows, truncated, err := s.backend.Query(rctx, table, q.Query)
		if err != nil {
			s.writeError(ctx, err)
			return
		}
		s.metrics.queryRows.Add(float64(len(rows)))
		ctx.SetContentType("application/json")
		// Written into the response's pooled body buffer (fasthttp
		// returns it to its pool with the response): an answer of one
		// series' 2,000 points is about 200 KB, which a buffer per
		// request would allocate for every query.
		body := ctx.Response.SwapBody(nil)
		ctx.Response.SwapBody(appendRawAnswer(slices.Grow(body[:0], rawAnswerSize(rows)), rows, truncated))
		return
	}
	q.Query.NoVariance = q.agg != model.AggStddev
	q.Query.SumsOnly = q.agg == model.AggCount || q.agg == model.AggSum || q.agg == model.AggAvg
	res, err := s.backend.Aggregate(rctx, table, q.Query)
	if err != nil {
		s.writeError(ctx, err)
		return
	}
	n := 0
	for i := range res {
		n += len(res[i].Buckets)
	}
	s.metrics.queryBuckets.Add(float64(n))
	ctx.SetContentType("application/json")
	ctx.Response.SetBodyRaw(appendAggAnswer(make([]byte, 0, 64+n*64), res, q.agg))
}
