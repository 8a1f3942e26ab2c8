package formatmark

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestReadWrite(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := []byte{0}
	if v, raw, err := Read(db, key); v != 0 || raw != nil || err != nil {
		t.Fatalf("no marker: Read = %d, %q, %v; want 0, nil, nil", v, raw, err)
	}
	if err := Write(db, key, 12); err != nil {
		t.Fatal(err)
	}
	if v, raw, err := Read(db, key); v != 12 || string(raw) != "12" || err != nil {
		t.Fatalf("after Write(12): Read = %d, %q, %v", v, raw, err)
	}
	for _, bad := range []string{"x", "0", "01", "-1", "1 ", ""} {
		if err := db.Set(key, []byte(bad), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if v, raw, err := Read(db, key); !errors.Is(err, ErrNotANumber) || v != 0 || string(raw) != bad {
			t.Fatalf("marker %q: Read = %d, %q, %v; want ErrNotANumber with the bytes", bad, v, raw, err)
		}
	}
}
