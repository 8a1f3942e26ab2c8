package presplit

import (
	"math"
	"testing"
	"time"
)

const gb = 1 << 30

func TestWidth(t *testing.T) {
	def := DefaultConfig()
	for _, tc := range []struct {
		name   string
		rate   float64
		target uint64
		cfg    Config
		want   time.Duration
	}{
		{"exact nice", gb / 600.0, gb, def, 10 * time.Minute},
		{"rounds down to nice", 1e6, 1e9, def, 15 * time.Minute}, // 1000s
		{"rounds down below a minute", 1, 59, def, 30 * time.Second},
		{"hours", 1, 5 * 3600, def, 4 * time.Hour},
		{"zero rate (idle) is MaxWidth", 0, gb, def, 24 * time.Hour},
		{"negative rate is MaxWidth", -5, gb, def, 24 * time.Hour},
		{"NaN rate (unknown) is MaxWidth", math.NaN(), gb, def, 24 * time.Hour},
		{"tiny rate clamps to MaxWidth", 1e-3, gb, def, 24 * time.Hour},
		{"huge ratio clamps to MaxWidth", 1e-300, math.MaxUint64, def, 24 * time.Hour},
		{"huge rate clamps to MinWidth", 1e12, gb, def, time.Second},
		{"infinite rate is MinWidth", math.Inf(1), gb, def, time.Second},
		{"zero target is MinWidth", 1, 0, def, time.Second},
		{"zero config takes defaults", 0, gb, Config{}, 24 * time.Hour},
		{"custom MaxWidth is not nice", 0, gb, Config{MaxWidth: 7 * time.Hour}, 7 * time.Hour},
		{"custom MinWidth is not nice", 1e12, gb, Config{MinWidth: 3 * time.Second}, 3 * time.Second},
		{"whole days above a day", 1, 50 * 3600, Config{MaxWidth: 7 * 24 * time.Hour}, 48 * time.Hour},
		{"sub-second", 1, 3, Config{MinWidth: time.Nanosecond}, 2 * time.Second},
		{"sub-second nice", 1000, 7, Config{MinWidth: time.Nanosecond}, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Width(tc.rate, tc.target, tc.cfg); got != tc.want {
				t.Fatalf("Width(%g, %d) = %s, want %s", tc.rate, tc.target, got, tc.want)
			}
		})
	}
}

func TestNiceWidthsDivideADay(t *testing.T) {
	for i, w := range niceWidths {
		if day%w != 0 {
			t.Errorf("%s does not divide a day", w)
		}
		if i > 0 && w <= niceWidths[i-1] {
			t.Errorf("niceWidths not ascending at %s", w)
		}
	}
}

func TestNiceFloor(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, time.Nanosecond},
		{time.Nanosecond, time.Nanosecond},
		{999 * time.Millisecond, 500 * time.Millisecond},
		{time.Second, time.Second},
		{61 * time.Second, time.Minute},
		{23*time.Hour + 59*time.Minute, 12 * time.Hour},
		{day, day},
		{3*day - 1, 2 * day},
	} {
		if got := niceFloor(tc.in); got != tc.want {
			t.Errorf("niceFloor(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
