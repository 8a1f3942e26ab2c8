package loadtest

import (
	"errors"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"512", 512}, {"512B", 512}, {"2MB", 2_000_000}, {"2mb", 2_000_000}, {"2M", 2_000_000},
		{"512KiB", 512 << 10}, {"4MiB", 4 << 20}, {"4mib", 4 << 20}, {"1.5GiB", 3 << 29}, {"1.5 GB", 1_500_000_000},
		{"64k", 64_000}, {" 3TiB ", 3 << 40}, {"0.5KiB", 512},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "MB", "-1", "2XB", "1..2MB", "9999999TiB", "2 M B"} {
		if _, err := ParseSize(in); !errors.Is(err, ErrInvalidSize) {
			t.Errorf("ParseSize(%q): error %v, want ErrInvalidSize", in, err)
		}
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0B"}, {512, "512B"}, {4 << 20, "4MiB"}, {3 << 29, "1.5GiB"}, {2_000_000, "1.91MiB"},
	} {
		got := FormatSize(tc.in)
		if got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
		back, err := ParseSize(got)
		if err != nil || float64(back) < float64(tc.in)*0.99 || float64(back) > float64(tc.in)*1.01 {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", tc.in, back, err)
		}
	}
}
