package model

import (
	"encoding/json"
	"math"
	"testing"
)

func TestQueryClip(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	q := Query{From: 10, To: 100, Series: "cpu", Fields: []string{"a"}, Limit: 5, Step: 7, Origin: 10,
		GroupAll: true, MaxBuckets: 9, Consistency: "all"}
	tests := []struct {
		name       string
		begin, end *int64
		from, to   int64
	}{
		{"open partition", nil, nil, 10, 100},
		{"partition inside", p(20), p(30), 20, 30},
		{"partition around", p(0), p(200), 10, 100},
		{"begin inside, open end", p(50), nil, 50, 100},
		{"open begin, end inside", nil, p(50), 10, 50},
	}
	for _, tc := range tests {
		got := q.Clip(tc.begin, tc.end)
		want := q
		want.From, want.To = tc.from, tc.to
		if got.From != want.From || got.To != want.To || got.Series != want.Series || got.Limit != want.Limit ||
			got.Step != want.Step || got.Origin != want.Origin || !got.GroupAll || got.MaxBuckets != want.MaxBuckets ||
			got.Consistency != want.Consistency || len(got.Fields) != 1 {
			t.Errorf("%s: Clip = %+v, want %+v", tc.name, got, want)
		}
	}
	open := Query{From: math.MinInt64, To: math.MaxInt64}
	if got := open.Clip(p(-5), p(5)); got.From != -5 || got.To != 5 {
		t.Errorf("Clip of an open query = [%d, %d), want [-5, 5)", got.From, got.To)
	}
}

// TestQueryJSON pins the query's JSON form: the field names of an internal
// sub-query, unchanged from before the one query type (both sides of a
// sub-query run the same version, but a rename should be deliberate).
func TestQueryJSON(t *testing.T) {
	q := Query{From: 1, To: 2, Series: "s", Prefix: true, Fields: []string{"f"}, Limit: 3, MaxBytes: 99,
		Step: 4, Origin: 5, GroupAll: true, MaxBuckets: 6, Consistency: "quorum"}
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"from":1,"to":2,"series":"s","prefix":true,"fields":["f"],"limit":3,"step":4,"origin":5,` +
		`"group_all":true,"max_buckets":6,"consistency":"quorum"}`
	if string(b) != want {
		t.Fatalf("JSON = %s\nwant   %s", b, want)
	}
	var back Query
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	q.MaxBytes = 0 // not sent
	if back.From != q.From || back.To != q.To || back.Series != q.Series || back.Prefix != q.Prefix ||
		back.Limit != q.Limit || back.MaxBytes != 0 || back.Step != q.Step || back.Origin != q.Origin ||
		back.GroupAll != q.GroupAll || back.MaxBuckets != q.MaxBuckets || back.Consistency != q.Consistency {
		t.Fatalf("round trip = %+v, want %+v", back, q)
	}
	if b, _ := json.Marshal(Query{}); string(b) != `{"from":0,"to":0}` {
		t.Fatalf("zero query JSON = %s", b)
	}
}
