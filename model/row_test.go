package model

import (
	"errors"
	"testing"
)

// TestValidateTombstones: a tombstone (KindDeleted) is refused on the
// public path (Validate) and accepted on the internal ones
// (ValidateInternal), which check everything else alike.
func TestValidateTombstones(t *testing.T) {
	v := Version{Wall: 1, Node: 1}
	del := Row{Time: 1, Series: "cpu", Fields: []Field{{Name: "a", Value: Deleted(), Version: v}, {Name: "b", Value: Float(1), Version: v}}}
	if err := del.Validate(); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("Validate of a tombstone: %v, want ErrUnsupportedType", err)
	}
	if err := del.ValidateInternal(); err != nil {
		t.Errorf("ValidateInternal of a tombstone: %v", err)
	}
	bad := Row{Time: 1, Series: "cpu", Fields: []Field{{Name: "", Value: Deleted(), Version: v}}}
	if err := bad.ValidateInternal(); !errors.Is(err, ErrInvalidField) {
		t.Errorf("ValidateInternal of an empty field name: %v, want ErrInvalidField", err)
	}
	if !Deleted().IsDeleted() || Float(0).IsDeleted() || !Deleted().Equal(Deleted()) || Deleted().Equal(Float(0)) {
		t.Error("IsDeleted or Equal wrong for tombstones")
	}
	if _, ok := Deleted().Numeric(); ok || Deleted().Interface() != nil || KindDeleted.String() != "deleted" {
		t.Error("a tombstone is numeric, has a JSON value or a wrong name")
	}
}
