package bytesize

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"512", 512}, {"512B", 512}, {"2MB", 2_000_000}, {"2mb", 2_000_000}, {"2M", 2_000_000},
		{"250MB", 250_000_000}, {"512KiB", 512 << 10}, {"4MiB", 4 << 20}, {"4mib", 4 << 20},
		{"1.5GiB", 3 << 29}, {"1.5 GB", 1_500_000_000}, {"64k", 64_000}, {" 3TiB ", 3 << 40},
		{"0.5KiB", 512}, {"1.5B", 1},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", " ", "MB", "-1", "+1", "2XB", "1..2MB", "9999999TiB", "2 M B", "lots", "0x10"} {
		if _, err := Parse(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q): error %v, want ErrInvalid", in, err)
		}
	}
}

func TestFormatRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0B"}, {512, "512B"}, {4 << 20, "4MiB"}, {3 << 29, "1.5GiB"}, {2_000_000, "1.91MiB"},
	} {
		got := Format(tc.in)
		if got != tc.want {
			t.Errorf("Format(%d) = %q, want %q", tc.in, got, tc.want)
		}
		back, err := Parse(got)
		if err != nil || float64(back) < float64(tc.in)*0.99 || float64(back) > float64(tc.in)*1.01 {
			t.Errorf("Parse(Format(%d)) = %d, %v", tc.in, back, err)
		}
	}
}

func TestValue(t *testing.T) {
	var n int64 = 64 << 20
	v := Var(&n)
	if v.String() != "64MiB" || v.Type() != "size" {
		t.Errorf("String %q Type %q", v.String(), v.Type())
	}
	if err := v.Set("250MB"); err != nil || n != 250_000_000 {
		t.Fatalf("Set(250MB): %d, %v", n, err)
	}
	if err := v.Set("1024"); err != nil || n != 1024 {
		t.Fatalf("Set(1024): %d, %v (a plain number is bytes)", n, err)
	}
	if err := v.Set("lots"); !errors.Is(err, ErrInvalid) || n != 1024 {
		t.Errorf("Set(lots): %v, value %d (want ErrInvalid, unchanged)", err, n)
	}
	var zero int
	if s := Var(&zero).String(); s != "0" {
		t.Errorf("zero shows as %q, want 0", s)
	}
	// An int flag refuses what an int cannot hold (on 32-bit platforms).
	var small int32
	w := Var(&small)
	if err := w.Set("3GiB"); err == nil || small != 0 {
		t.Errorf("int32 Set(3GiB): %v, value %d", err, small)
	}
	if err := w.Set("1KiB"); err != nil || small != 1024 {
		t.Errorf("int32 Set(1KiB): %v, value %d", err, small)
	}
}

// TestByteSizeFlag (moved from loadtest, whose ByteSize this type replaces).
func TestByteSizeFlag(t *testing.T) {
	var n int64
	b := Var(&n)
	if err := b.Set("2MB"); err != nil || n != 2_000_000 {
		t.Fatalf("Set(2MB): %d, %v", n, err)
	}
	if b.String() != "1.91MiB" || b.Type() != "size" {
		t.Errorf("String %q Type %q", b.String(), b.Type())
	}
	if err := b.Set("lots"); err == nil || n != 2_000_000 {
		t.Errorf("Set(lots): %v, value %d (want unchanged)", err, n)
	}
}
