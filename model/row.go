package model

import (
	"fmt"
	"math"
	"sort"
)

// Limits of the data model (DESIGN.md section 1).
const (
	// MaxSeriesLen is the longest series key accepted, in bytes.
	MaxSeriesLen = 1024
	// MaxFields is the largest number of fields one row may carry.
	MaxFields = 1024
	// MaxStringLen is the longest string field value accepted, in bytes.
	MaxStringLen = 64 << 10
	// MaxFieldNameLen is the longest field name accepted, in bytes.
	MaxFieldNameLen = 256
)

// Kind is the type of a field value.
type Kind uint8

// The field value kinds. The numbering is part of the storage format.
const (
	KindInvalid Kind = 0
	KindFloat   Kind = 1
	KindInt     Kind = 2
	KindBool    Kind = 3
	KindString  Kind = 4
	// KindDeleted is a tombstone: a field value with no payload that a
	// delete writes (DELETE FROM, DROP SERIES, POST .../delete). It merges
	// like any value, by version, and readers skip it: a field whose
	// newest version is a tombstone is absent. Clients can never send one
	// (Validate refuses it); the internal paths carry it (ValidateInternal).
	KindDeleted Kind = 5
)

// String returns the kind's name as used in error messages.
func (k Kind) String() string {
	switch k {
	case KindFloat:
		return "float"
	case KindInt:
		return "int"
	case KindBool:
		return "bool"
	case KindString:
		return "string"
	case KindDeleted:
		return "deleted"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Value is one typed field value. Exactly one of F, I or S is meaningful,
// chosen by Kind; a bool is stored in I as 0 or 1.
type Value struct {
	Kind Kind
	F    float64
	I    int64
	S    string
}

// Float returns a float value.
func Float(f float64) Value { return Value{Kind: KindFloat, F: f} }

// Int returns an int64 value.
func Int(i int64) Value { return Value{Kind: KindInt, I: i} }

// Bool returns a bool value.
func Bool(b bool) Value {
	if b {
		return Value{Kind: KindBool, I: 1}
	}
	return Value{Kind: KindBool}
}

// String returns a string value.
func String(s string) Value { return Value{Kind: KindString, S: s} }

// Deleted returns a tombstone (KindDeleted).
func Deleted() Value { return Value{Kind: KindDeleted} }

// IsDeleted reports whether v is a tombstone.
func (v Value) IsDeleted() bool { return v.Kind == KindDeleted }

// Numeric reports the value as a float64 for aggregation. Strings are not
// numeric; bools count as 0 and 1.
func (v Value) Numeric() (float64, bool) {
	switch v.Kind {
	case KindFloat:
		return v.F, true
	case KindInt, KindBool:
		return float64(v.I), true
	}
	return 0, false
}

// Interface returns the value as a Go value suitable for encoding/json:
// float64, int64, bool or string.
func (v Value) Interface() any {
	switch v.Kind {
	case KindFloat:
		return v.F
	case KindInt:
		return v.I
	case KindBool:
		return v.I != 0
	case KindString:
		return v.S
	}
	return nil
}

// Equal reports whether two values have the same kind and content. Floats
// compare by bit pattern so that NaN equals itself.
func (v Value) Equal(o Value) bool {
	if v.Kind != o.Kind {
		return false
	}
	switch v.Kind {
	case KindFloat:
		return math.Float64bits(v.F) == math.Float64bits(o.F)
	case KindInt, KindBool:
		return v.I == o.I
	case KindString:
		return v.S == o.S
	}
	return true
}

// Field is one named value of a row together with the version of the write
// that set it.
type Field struct {
	Name    string
	Value   Value
	Version Version
}

// Row is the unit of data: identified by (Series, Time), carrying fields that
// merge one by one under last-writer-wins by Version.
type Row struct {
	// Time is nanoseconds since the Unix epoch, UTC.
	Time int64
	// Series is the canonical series key (see CanonicalSeries).
	Series string
	// Fields are the row's values; after Normalize they are sorted by name
	// with no name twice.
	Fields []Field
}

// SetVersion stamps every field of the row with v. Front ends call it once,
// when they first accept the row (DESIGN.md section 1: versions are assigned
// once).
func (r *Row) SetVersion(v Version) {
	for i := range r.Fields {
		r.Fields[i].Version = v
	}
}

// Validate checks the row against the data model's limits. It does not
// canonicalize the series; parsers do that. A tombstone (KindDeleted) is
// refused: clients cannot send one.
func (r *Row) Validate() error { return r.validate(false) }

// ValidateInternal is Validate for rows on the internal paths (forwarded
// inserts, pushes), which may carry tombstones (KindDeleted) written by a
// delete.
func (r *Row) ValidateInternal() error { return r.validate(true) }

func (r *Row) validate(tombstones bool) error {
	if r.Series == "" {
		return ErrEmptySeries
	}
	if len(r.Series) > MaxSeriesLen {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrSeriesTooLong, len(r.Series), MaxSeriesLen)
	}
	for i := 0; i < len(r.Series); i++ {
		if r.Series[i] == 0 {
			return fmt.Errorf("%w: series contains a NUL byte", ErrInvalidSeries)
		}
	}
	if len(r.Fields) == 0 {
		return ErrNoFields
	}
	if len(r.Fields) > MaxFields {
		return fmt.Errorf("%w: %d fields, the limit is %d", ErrTooManyFields, len(r.Fields), MaxFields)
	}
	for i := range r.Fields {
		f := &r.Fields[i]
		if f.Name == "" {
			return fmt.Errorf("%w: empty field name", ErrInvalidField)
		}
		if len(f.Name) > MaxFieldNameLen {
			return fmt.Errorf("%w: field name of %d bytes, the limit is %d", ErrInvalidField, len(f.Name), MaxFieldNameLen)
		}
		switch f.Value.Kind {
		case KindFloat, KindInt, KindBool:
		case KindDeleted:
			if !tombstones {
				return fmt.Errorf("%w: field %q has %s", ErrUnsupportedType, f.Name, f.Value.Kind)
			}
		case KindString:
			if len(f.Value.S) > MaxStringLen {
				return fmt.Errorf("%w: field %q holds a string of %d bytes, the limit is %d",
					ErrStringTooLong, f.Name, len(f.Value.S), MaxStringLen)
			}
		default:
			return fmt.Errorf("%w: field %q has %s", ErrUnsupportedType, f.Name, f.Value.Kind)
		}
	}
	return nil
}

// Normalize sorts the fields by name. When a name appears twice, the later
// occurrence in the input wins (as in InfluxDB line protocol), unless the
// earlier one carries a higher version.
func (r *Row) Normalize() {
	fs := r.Fields
	if len(fs) < 2 {
		return
	}
	sorted := true
	for i := 1; i < len(fs); i++ {
		if fs[i-1].Name >= fs[i].Name {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
	out := fs[:1]
	for i := 1; i < len(fs); i++ {
		last := &out[len(out)-1]
		if fs[i].Name == last.Name {
			if !fs[i].Version.Less(last.Version) {
				*last = fs[i]
			}
			continue
		}
		out = append(out, fs[i])
	}
	r.Fields = out
}
