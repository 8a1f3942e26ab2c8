package block

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// TestEncoderKeepsNoStrings: after Encode, successful or not, the
// Encoder's buffers hold none of the caller's strings, to their capacity.
func TestEncoderKeepsNoStrings(t *testing.T) {
	var e Encoder
	check := func(what string) {
		t.Helper()
		for j, f := range e.fields[:cap(e.fields)] {
			if f.name != "" {
				t.Fatalf("%s: fields[%d].name %q", what, j, f.name)
			}
		}
		for _, s := range [][]string{e.names[:cap(e.names)], e.merged[:cap(e.merged)], e.strs[:cap(e.strs)]} {
			for j, x := range s {
				if x != "" {
					t.Fatalf("%s: string %d: %q", what, j, x)
				}
			}
		}
		for j, v := range e.vals[:cap(e.vals)] {
			if v.S != "" {
				t.Fatalf("%s: vals[%d] %q", what, j, v.S)
			}
		}
	}
	big := []model.Row{{Time: 1, Fields: []model.Field{
		{Name: "a", Value: model.String("x")}, {Name: "b", Value: model.String("y")}, {Name: "c", Value: model.Float(1)},
	}}, {Time: 2, Fields: []model.Field{{Name: "a", Value: model.String("z")}, {Name: "d", Value: model.String("w")}}}}
	if _, err := e.Encode(nil, big); err != nil {
		t.Fatal(err)
	}
	check("after a block of 4 fields")
	if _, err := e.Encode(nil, big[:1]); err != nil {
		t.Fatal(err)
	}
	check("after a smaller block")
	rows := make([]model.Row, MaxFields+1)
	for i := range rows {
		rows[i] = model.Row{Time: int64(i), Fields: []model.Field{{Name: fmt.Sprintf("f%05d", i), Value: model.String("v")}}}
	}
	if _, err := e.Encode(nil, rows); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
	check("after an error")
}
