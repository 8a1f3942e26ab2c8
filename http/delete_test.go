package http

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// deleteBackend records the queries of DeleteRows.
type deleteBackend struct {
	*replBackend
	mu  sync.Mutex
	got []model.Query
}

func (b *deleteBackend) DeleteRows(_ context.Context, table string, q model.Query) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, q)
	return nil
}

// TestDeleteEndpoint: POST /api/v1/tables/{t}/delete turns its body into
// the query of DeleteRows and answers 204; a bad body, inverted bounds, a
// bad tag predicate and a delete with no bound (without "all") are 400s
// naming the problem, and nothing is deleted.
func TestDeleteEndpoint(t *testing.T) {
	be := &deleteBackend{replBackend: newReplBackend()}
	addr := startServer(t, NewServer(Config{}, be))
	url := "http://" + addr + "/api/v1/tables/metrics/delete"
	for _, tc := range []struct {
		body   string
		status int
		want   model.Query // when 204
		msg    string      // when 400
	}{
		{`{"from": "1970-01-01T00:00:00.000000010Z", "to": 20, "measurement": "cpu",
		   "tags": {"op": "=", "key": "host", "value": "a"}}`, 204,
			model.Query{From: 10, To: 20, Measurement: "cpu", Tags: &model.TagExpr{Op: model.TagEq, Key: "host", Value: "a"}}, ""},
		{`{"series": "cpu,b=2,a=1"}`, 204, model.Query{From: math.MinInt64, To: math.MaxInt64, Series: "cpu,a=1,b=2"}, ""},
		{`{"prefix": "cpu,", "to": "30"}`, 204, model.Query{From: math.MinInt64, To: 30, Series: "cpu,", Prefix: true}, ""},
		{`{"all": true}`, 204, model.Query{From: math.MinInt64, To: math.MaxInt64}, ""},
		{`{}`, 400, model.Query{}, `all\": true`},
		{``, 400, model.Query{}, "request body"},
		{`{"from": 20, "to": 10}`, 400, model.Query{}, "after"},
		{`{"from": true}`, 400, model.Query{}, "request body"},
		{`{"from": "yesterday"}`, 400, model.Query{}, "from"},
		{`{"series": "a", "prefix": "b"}`, 400, model.Query{}, "exclusive"},
		{`{"measurement": "cpu", "tags": {"op": "=~", "key": "h", "value": "("}}`, 400, model.Query{}, "tags"},
		{`{"measurement": "cpu", "bogus": 1}`, 400, model.Query{}, "bogus"},
	} {
		before := len(be.got)
		a := rawPostHeaders(t, url, nil, tc.body)
		if a.status != tc.status {
			t.Errorf("%s: status %d (%s), want %d", tc.body, a.status, a.body, tc.status)
			continue
		}
		if tc.status != 204 {
			if !strings.Contains(a.body, tc.msg) {
				t.Errorf("%s: body %s, want it to name %q", tc.body, a.body, tc.msg)
			}
			if len(be.got) != before {
				t.Errorf("%s: refused but deleted", tc.body)
			}
			continue
		}
		if len(be.got) != before+1 || !jsonEqual(t, be.got[before], tc.want) {
			t.Errorf("%s: deleted %+v, want %+v", tc.body, be.got[before:], tc.want)
		}
	}
	if a := rawGet(t, url, ""); a.status != 405 {
		t.Errorf("GET delete: %d, want 405", a.status)
	}
}
