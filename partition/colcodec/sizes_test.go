package colcodec

import (
	"fmt"
	"strings"
	"testing"
)

// TestSizes logs bytes per point of every shape at 2,000 points (one
// harness series' block), per codec and, for the integer stream, per order
// and packing; run with -v to read the table. It fails if a harness shape
// grows past its bound.
func TestSizes(t *testing.T) {
	r := newRand(t)
	const n = 2000
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-10s %-18s %-14s %8s | order:packing bytes/point (varint bits buckets runs rice) per order 0 1 2\n", "column", "shape", "codec", "B/point")
	bound := map[string]float64{
		"timestamps/harness":    0.02, // regular: about 20 bytes per block
		"floats/harness-user":   1.35, // Rice: about 1.22
		"floats/harness-system": 1.35,
		"floats/harness-idle":   1.35,
		"versions/one-batch":    0.02, // one version: header and one node
		// Millisecond clock readings: the walls' stream finds the common
		// factor 1e6 (about 0.31 and 0.62 bytes/point).
		"versions/harness-ms-1node":  0.4,
		"versions/harness-ms-3nodes": 0.75,
		"versions/harness-ms-shared": 1.2, // about 1.05; 3.15 as one stream of walls
	}
	check := func(key string, perPoint float64) {
		if max, ok := bound[key]; ok && perPoint > max {
			t.Errorf("%s: %.3f bytes/point, bound %.3f", key, perPoint, max)
		}
	}
	streams := func(v []int64) string {
		var s strings.Builder
		for o := uint8(0); o <= order2; o++ {
			sc := uint8(0)
			if o > 0 {
				sc = scaleOf(v, o)
			}
			c := costOf(v, o, sc)
			fmt.Fprintf(&s, " o%d(s%d):", o, sc)
			for p := range c.size {
				fmt.Fprintf(&s, " %.3f", float64(c.size[p])/n)
			}
		}
		return s.String()
	}
	for _, sh := range timestampShapes {
		v := sh.gen(r, n)
		col, _ := EncodeTimestamps(nil, v)
		per := float64(len(col)) / n
		check("timestamps/"+sh.name, per)
		fmt.Fprintf(&b, "%-10s %-18s %-14v %8.3f |%s\n", "timestamps", sh.name, Codec(col[0]), per, streams(v))
	}
	for _, sh := range intShapes[:3] {
		v := sh.gen(r, n)
		col, _ := EncodeInts(nil, v)
		per := float64(len(col)) / n
		fmt.Fprintf(&b, "%-10s %-18s %-14v %8.3f |%s\n", "ints", sh.name, Codec(col[0]), per, streams(v))
	}
	for _, sh := range floatShapes {
		v := sh.gen(r, n)
		col, _ := EncodeFloats(nil, v)
		xor := appendXOR(nil, v)
		per := float64(len(col)) / n
		check("floats/"+sh.name, per)
		extra := fmt.Sprintf(" xor %.3f", float64(len(xor))/n)
		if m, e, ok := decimalMantissas(nil, v); ok {
			extra += fmt.Sprintf(" decimal(e=%d) %.3f;%s", e, float64(len(appendStream(nil, m))+4)/n, streams(m))
		}
		fmt.Fprintf(&b, "%-10s %-18s %-14v %8.3f |%s\n", "floats", sh.name, Codec(col[0]), per, extra)
	}
	for _, p := range []float64{0, 0.5, 0.01} {
		col, _ := EncodeBools(nil, randBools(r, n, p))
		fmt.Fprintf(&b, "%-10s %-18s %-14v %8.3f |\n", "bools", fmt.Sprintf("p=%v", p), Codec(col[0]), float64(len(col))/n)
	}
	for _, sh := range stringShapes {
		v := sh.gen(r, n)
		col, _ := EncodeStrings(nil, v)
		raw := 0
		for _, s := range v {
			raw += len(s)
		}
		fmt.Fprintf(&b, "%-10s %-18s %-14v %8.3f | %.1f bytes of text per point\n", "strings", sh.name, Codec(col[0]), float64(len(col))/n, float64(raw)/n)
	}
	for _, sh := range versionShapes {
		col, _ := EncodeVersions(nil, sh.gen(r, n))
		per := float64(len(col)) / n
		check("versions/"+sh.name, per)
		fmt.Fprintf(&b, "%-10s %-18s %-14v %8.3f |\n", "versions", sh.name, Codec(col[0]), per)
	}
	t.Log(b.String())
}
