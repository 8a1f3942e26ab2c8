package api

import "testing"

func TestParseSmearHeader(t *testing.T) {
	cases := []struct {
		value   string
		noSmear bool
		invalid bool
	}{
		{"off", true, false},
		{"OFF", true, false},
		{" Off ", true, false},
		{"false", true, false},
		{"FALSE", true, false},
		{"0", true, false},
		{"no", true, false},
		{"", false, false},
		{"on", false, false},
		{"True", false, false},
		{"1", false, false},
		{"yes", false, false},
		{"disable", false, true},
		{"of", false, true},
		{"2", false, true},
	}
	for _, c := range cases {
		noSmear, err := ParseSmearHeader(c.value)
		if noSmear != c.noSmear || (err != nil) != c.invalid {
			t.Errorf("ParseSmearHeader(%q) = %v, %v; want %v, invalid %v", c.value, noSmear, err, c.noSmear, c.invalid)
		}
	}
	if _, err := ParseSmearHeader("disable"); err == nil || err.Error() != `header X-TSDB-Smear: "disable" (want off or on)` {
		t.Errorf("error = %v, want one naming the header and the value", err)
	}
}
