package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// strictDecode decodes as the internal API's server does: unknown members
// are refused.
func strictDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// TestSubQueryCarriesSelectionAndGrouping: the query fields issue 18 added
// (Measurement, Tags, Offset, GroupBy) travel in a sub-query and in a meta
// sub-query, and decode back to the same request.
func TestSubQueryCarriesSelectionAndGrouping(t *testing.T) {
	id := uuid.MustParse("aaaaaaaa-0000-0000-0000-000000000001")
	q := model.Query{From: 1, To: 2, Measurement: "cpu", Offset: 7, GroupBy: []string{"host"},
		Tags: &model.TagExpr{Op: model.TagOr, Args: []model.TagExpr{
			{Op: model.TagEq, Key: "host", Value: "a"}, {Op: model.TagNotMatch, Key: "dc", Value: "^e"}}},
		Step: 4, Consistency: "all"}
	sub := SubQueryRequest{Table: "cpu", PartitionID: id, ToPlacement: id, TxnSeq: 3, Query: q, Agg: true, MaxBytes: 8}
	b, err := json.Marshal(sub)
	if err != nil {
		t.Fatal(err)
	}
	var back SubQueryRequest
	strictDecode(t, b, &back)
	if !reflect.DeepEqual(back, sub) {
		t.Fatalf("sub-query %s decoded to %+v, want %+v", b, back, sub)
	}
	meta := MetaQueryRequest{Table: "cpu", PartitionID: id, ToPlacement: id, TxnSeq: 3, Kind: MetaSeriesKeys, Query: q, Limit: 5}
	if b, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	var mback MetaQueryRequest
	strictDecode(t, b, &mback)
	if !reflect.DeepEqual(mback, meta) {
		t.Fatalf("meta sub-query %s decoded to %+v, want %+v", b, mback, meta)
	}
	resp := MetaQueryResponse{SeriesKeys: []string{"a", "b"},
		FieldKeys: []model.FieldKey{{Measurement: "cpu", Name: "usage", Kind: model.KindFloat}}}
	if b, err = json.Marshal(resp); err != nil {
		t.Fatal(err)
	}
	var rback MetaQueryResponse
	strictDecode(t, b, &rback)
	if !reflect.DeepEqual(rback, resp) {
		t.Fatalf("meta answer %s decoded to %+v, want %+v", b, rback, resp)
	}
}
