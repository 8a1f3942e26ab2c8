package model

import (
	"errors"
	"math/rand"
	"slices"
	"sort"
	"testing"
	"time"
)

func TestCanonicalSeries(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"cpu", "cpu"},
		{"cpu,host=a,region=eu", "cpu,host=a,region=eu"},
		{"cpu,region=eu,host=a", "cpu,host=a,region=eu"},
		{`cpu,host=a b`, `cpu,host=a\ b`},    // JSON: a space needs no escape
		{`cpu,host=a\ b`, `cpu,host=a\ b`},   // line protocol
		{`cpu,b=1,a=x y`, `cpu,a=x\ y,b=1`},  // same form whatever the order
		{`cpu,a=x y,b=1`, `cpu,a=x\ y,b=1`},  //
		{`my\ cpu,h=a\,b`, `my\ cpu,h=a\,b`}, // escaped separators
		{`cpu,h=x\y`, `cpu,h=x\\y`},          // a literal backslash is doubled
		{`cpu,h=x\\y`, `cpu,h=x\\y`},         // an escaped backslash stays
		{`m=1,h=a`, `m=1,h=a`},               // '=' needs no escape in a measurement
	} {
		got, err := CanonicalSeries(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("CanonicalSeries(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", ",h=a", "cpu,h", "cpu,=a", "cpu,h=", "cpu,h=a=b", "cpu,h=a,h=b"} {
		if _, err := CanonicalSeries(bad); err == nil {
			t.Errorf("CanonicalSeries(%q) accepted", bad)
		}
	}
	if _, err := CanonicalSeries(string(make([]byte, MaxSeriesLen+1))); !errors.Is(err, ErrSeriesTooLong) {
		t.Errorf("long series: %v", err)
	}
}

// TestSeriesRoundTrip is a property test: for random parts (with every
// special character), BuildSeries then SplitSeries gives the parts back, the
// result is canonical (a fixed point), and tag order does not matter.
func TestSeriesRoundTrip(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	const alphabet = `ab,= \\x"=`
	word := func() string {
		n := 1 + rng.Intn(6)
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
	for i := 0; i < 5000; i++ {
		meas := word()
		var tags []Tag
		seen := map[string]bool{}
		for j := rng.Intn(4); j > 0; j-- {
			k := word()
			if seen[k] {
				continue
			}
			seen[k] = true
			tags = append(tags, Tag{Key: k, Value: word()})
		}
		s, err := BuildSeries(meas, tags)
		if err != nil {
			t.Fatalf("BuildSeries(%q, %v): %v", meas, tags, err)
		}
		gm, gt, err := SplitSeries(s)
		if err != nil {
			t.Fatalf("SplitSeries(%q): %v", s, err)
		}
		want := slices.Clone(tags)
		sort.Slice(want, func(a, b int) bool { return want[a].Key < want[b].Key })
		if gm != meas || !slices.Equal(gt, want) {
			t.Fatalf("round trip of %q %v via %q gave %q %v", meas, tags, s, gm, gt)
		}
		c, err := CanonicalSeries(s)
		if err != nil || c != s {
			t.Fatalf("CanonicalSeries(%q) = %q, %v: a built key must be canonical", s, c, err)
		}
		rng.Shuffle(len(tags), func(a, b int) { tags[a], tags[b] = tags[b], tags[a] })
		if s2, _ := BuildSeries(meas, tags); s2 != s {
			t.Fatalf("tag order changed the key: %q vs %q", s2, s)
		}
	}
}

func TestClockMonotonic(t *testing.T) {
	wall := int64(100)
	c := NewClock("s1", func() int64 { return wall })
	a := c.Now()
	b := c.Now() // same wall time: still strictly greater
	if !a.Less(b) || a.Node != NodeID("s1") {
		t.Fatalf("%v then %v", a, b)
	}
	c.Observe(Version{Wall: 1000, Node: 7})
	if v := c.Now(); v.Wall <= 1000 {
		t.Fatalf("after observing 1000 got %v", v)
	}
	wall = 5_000_000
	if v := c.Now(); v.Wall != 5_000_000 {
		t.Fatalf("wall clock ahead: got %v", v)
	}
	wall = 7_654_321
	if v := c.Now(); v.Wall != 7_000_000 {
		t.Fatalf("wall clock 7.654321 ms: got %v, want the whole millisecond 7000000", v)
	}
	if NodeID("s1") == NodeID("s2") {
		t.Fatal("node ids collide")
	}
}

// TestClockMillisecondAfterNanosecond: a version stored with a nanosecond
// wall (before the clock read whole milliseconds), then observed, is
// followed by readings that order after it, though its millisecond
// truncated is below it: a later write still wins (rule 2's inputs).
func TestClockMillisecondAfterNanosecond(t *testing.T) {
	wall := int64(1_700_000_000_123_456_789)
	c := NewClock("s1", func() int64 { return wall })
	old := Version{Wall: wall - 1000, Node: NodeID("s2")} // written this millisecond, in nanoseconds
	if !c.Observe(old) {
		t.Fatal("a version in the past was refused")
	}
	for range 3 {
		v := c.Now()
		if !old.Less(v) {
			t.Fatalf("reading %v after observing %v does not win", v, old)
		}
		old = v
	}
	wall += 1e6
	if v := c.Now(); v.Wall != 1_700_000_000_124_000_000 {
		t.Fatalf("in the next millisecond: %v, want its whole millisecond", v)
	}
	for _, tc := range [][2]int64{{0, 0}, {999_999, 0}, {1e6, 1e6}, {-1, -1e6}, {-1e6, -1e6}, {-1_500_000, -2_000_000}} {
		if got := TruncateToMillisecond(tc[0]); got != tc[1] {
			t.Errorf("TruncateToMillisecond(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}

func TestValidateTableName(t *testing.T) {
	for _, ok := range []string{"a", "metrics", "a_1", "z012345678901234567890123456789012345678901234567890123456789012"} {
		if err := ValidateTableName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "A", "1a", "_a", "a-b", "a.b", "aé", "a0123456789012345678901234567890123456789012345678901234567890123"} {
		if err := ValidateTableName(bad); !errors.Is(err, ErrInvalidTable) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestClockObserveBounded: a version further ahead of the wall clock than
// the max ahead does not move the clock (Observe reports it), one within it
// does, and a clock without a bound follows any version.
func TestClockObserveBounded(t *testing.T) {
	const maxAhead = 500 * time.Millisecond
	wall := int64(1_700_000_000e9)
	c := NewClock("s1", func() int64 { return wall })
	c.SetMaxAhead(maxAhead)
	if c.Observe(Version{Wall: wall + int64(time.Hour), Node: 7}) {
		t.Fatal("a version an hour ahead was accepted")
	}
	if v := c.Now(); v.Wall > wall+int64(maxAhead) {
		t.Fatalf("after a refused far-future version the clock reads %v, %v ahead", v, time.Duration(v.Wall-wall))
	}
	near := wall + int64(maxAhead) - 1
	if !c.Observe(Version{Wall: near, Node: 7}) {
		t.Fatal("a version within the max ahead was refused")
	}
	if v := c.Now(); v.Wall <= near {
		t.Fatalf("after observing %d the clock reads %v", near, v)
	}
	u := NewClock("s2", func() int64 { return wall })
	if !u.Observe(Version{Wall: wall + int64(time.Hour), Node: 7}) || u.Now().Wall <= wall+int64(time.Hour) {
		t.Fatal("an unbounded clock did not follow a far-future version")
	}
}
