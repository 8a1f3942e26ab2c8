package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tsdb/tsdb/model"
)

// DeleteRequest is the body of POST /api/v1/tables/{t}/delete: the rows of
// the table in [From, To) whose series matches Series (exact) or Prefix,
// Measurement and Tags are deleted, every field of them. Every bound is
// optional, but a request with none at all is refused unless All is set.
type DeleteRequest struct {
	// From and To bound the time range [From, To): RFC 3339 or integer
	// nanoseconds, as a JSON string or number; empty is an open end.
	From TimeArg `json:"from,omitempty"`
	To   TimeArg `json:"to,omitempty"`
	// Series is an exact series key (canonicalized); Prefix a series key
	// prefix. At most one of them.
	Series string `json:"series,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	// Measurement keeps the series of this measurement only.
	Measurement string `json:"measurement,omitempty"`
	// Tags is a tag predicate (model.TagExpr's JSON form).
	Tags *model.TagExpr `json:"tags,omitempty"`
	// All allows a delete with no bound at all: every row of the table.
	All bool `json:"all,omitempty"`
}

// TimeArg is a time in a JSON body: a string (RFC 3339 or integer
// nanoseconds) or a JSON integer of nanoseconds, kept as its text.
type TimeArg string

// UnmarshalJSON accepts a JSON string or number.
func (t *TimeArg) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = TimeArg(s)
		return nil
	}
	if _, err := strconv.ParseInt(string(b), 10, 64); err != nil {
		return fmt.Errorf("time %s: want RFC 3339 or integer nanoseconds", b)
	}
	*t = TimeArg(b)
	return nil
}
