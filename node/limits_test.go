package node

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tsdb/tsdb/http/api"
)

// wantAPIError checks an answer's status, code and that its message names
// every one of words.
func wantAPIError(t *testing.T, what string, r response, status int, code string, words ...string) {
	t.Helper()
	var eb api.ErrorResponse
	if r.status != status || json.Unmarshal(r.body, &eb) != nil || eb.Error.Code != code {
		t.Fatalf("%s: %d %.200s, want %d %s", what, r.status, r.body, status, code)
	}
	t.Logf("%s: %d %s", what, r.status, eb.Error.Message)
	for _, w := range words {
		if !strings.Contains(eb.Error.Message, w) {
			t.Fatalf("%s: message %q does not name %q", what, eb.Error.Message, w)
		}
	}
}

// TestAggregateBucketCapThroughFrontEnd (issue 14 item 7): an aggregate
// whose series have 100 buckets each (far under the old per-series limit
// of 100,000) but 2,000 in all is refused with 422 too_many_buckets naming
// the cap and what to change, whether the front end holds the replica or
// reads it over the internal API; narrower queries still answer.
func TestAggregateBucketCapThroughFrontEnd(t *testing.T) {
	c := startCluster(t, 1, func(cfg *Config) { cfg.MaxQueryBuckets = 1000 })
	c.createTable("s1", "cpu", 1)
	c.start("fe") // holds no replica: its queries are sub-queries to s1
	var b strings.Builder
	for h := range 20 {
		for i := range 100 {
			fmt.Fprintf(&b, "m,host=h%02d v=%d %d\n", h, i, t0+int64(i)*1e9)
		}
	}
	c.insertLP("s1", "cpu", []byte(b.String()))
	all := fmt.Sprintf("agg=count&step=1s&from=%d&to=%d", t0, t0+100e9)
	for _, id := range []string{"s1", "fe"} {
		cl := c.client(id)
		wantAPIError(t, "2000 buckets via "+id, cl.do("GET", "/api/v1/tables/cpu/query?"+all, nil),
			422, api.CodeTooManyBuckets, "1000 buckets", "--max-query-buckets", "bigger step")
		if got := queryAgg(cl, "cpu", all+"&series=m,host=h01"); len(got.Series) != 1 || len(got.Series[0].Buckets) != 100 {
			t.Fatalf("one series via %s: %+v", id, got)
		}
		if got := queryAgg(cl, "cpu", strings.Replace(all, "step=1s", "step=10s", 1)); len(got.Series) != 20 {
			t.Fatalf("a bigger step via %s: %d series", id, len(got.Series))
		}
	}
	// The early check: a step alone making more buckets than the cap.
	wantAPIError(t, "step over the cap", c.client("fe").do("GET",
		fmt.Sprintf("/api/v1/tables/cpu/query?agg=count&step=1ns&from=0&to=1001"), nil),
		422, api.CodeTooManyBuckets, "1000 buckets")
}

// TestSubQueryAnswerBytesLimit (issue 14 item 7): a partition's answer over
// --max-subquery-bytes fails the query with 422 answer_too_large naming
// the limit, both when the replica refuses to send it and when a replica
// sends it anyway (the front end stops reading past the limit); both
// servers stay up and smaller queries answer.
func TestSubQueryAnswerBytesLimit(t *testing.T) {
	const limit = 64 << 10
	ignore := &atomic.Bool{}
	c := startCluster(t, 1, func(cfg *Config) {
		cfg.MaxSubQueryBytes = limit
		cfg.knobs.IgnoreSubQueryLimit = ignore
	})
	c.createTable("s1", "cpu", 1)
	c.start("fe")
	var b strings.Builder
	const rows = 2000
	rng := rand.New(rand.NewPCG(1, 2)) // incompressible notes, the same every run
	for i := range rows {
		note := fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64())
		fmt.Fprintf(&b, "m,host=h%d note=\"%s\" %d\n", i%7, note, t0+int64(i))
	}
	c.insertLP("s1", "cpu", []byte(b.String()))
	fe := c.client("fe")
	const all = "/api/v1/tables/cpu/query?limit=100000"
	wantAPIError(t, "the replica refuses", fe.do("GET", all, nil), 422, api.CodeAnswerTooLarge,
		fmt.Sprint(limit), "--max-subquery-bytes")
	// Partial aggregates under the bucket cap whose encoding is over the
	// byte limit: refused once encoded, before they are sent.
	aggs := fmt.Sprintf("/api/v1/tables/cpu/query?agg=count&step=1ns&from=%d&to=%d", t0, t0+rows)
	wantAPIError(t, "the replica refuses partial aggregates", fe.do("GET", aggs, nil), 422, api.CodeAnswerTooLarge,
		fmt.Sprint(limit), "--max-subquery-bytes", "would be")
	ignore.Store(true)
	wantAPIError(t, "the front end stops reading", fe.do("GET", all, nil), 422, api.CodeAnswerTooLarge,
		fmt.Sprint(limit), "--max-subquery-bytes")
	wantAPIError(t, "the front end stops reading partial aggregates", fe.do("GET", aggs, nil), 422,
		api.CodeAnswerTooLarge, fmt.Sprint(limit), "--max-subquery-bytes")
	ignore.Store(false)
	for _, id := range []string{"s1", "fe"} {
		cl := c.client(id)
		cl.must(200, cl.do("GET", "/healthz", nil), nil)
		if got := queryRaw(cl, "cpu", "limit=10"); len(got.Rows) != 10 {
			t.Fatalf("a small query via %s: %d rows", id, len(got.Rows))
		}
	}
	// Sub-queries in a row, whose rows arenas lend and take back
	// (model.RowArena): each answer is the local read's.
	local := queryRaw(c.client("s1"), "cpu", "limit=300")
	for i := range 4 {
		params := fmt.Sprintf("limit=%d", 300-i*50)
		if got := queryRaw(fe, "cpu", params); !reflect.DeepEqual(got.Rows, local.Rows[:len(got.Rows)]) || len(got.Rows) != 300-i*50 {
			t.Fatalf("a sub-query of %s answered %d rows unlike the local read's", params, len(got.Rows))
		}
	}
	// The server holding the replica reads it locally: no sub-query, and
	// the row limit bounds the answer.
	if got := queryRaw(c.client("s1"), "cpu", "limit=100000"); len(got.Rows) != rows {
		t.Fatalf("the whole table via s1: %d rows, want %d", len(got.Rows), rows)
	}
}
