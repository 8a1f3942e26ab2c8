package presplit

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
)

// t0 is a fixed instant aligned to every nice width up to 12h (noon UTC).
var t0 = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC).UnixNano()

// dayStart is midnight UTC of t0's day.
var dayStart = time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC).UnixNano()

func i64(v int64) *int64 { return &v }

// at returns t0+d in ns.
func at(d time.Duration) int64 { return t0 + int64(d) }

// testID returns a stable uuid named by s.
func testID(s string) uuid.UUID { return uuid.NewSHA1(uuid.NameSpaceOID, []byte(s)) }

// tailPart returns a splittable tail partition beginning at begin.
func tailPart(begin *int64) metadata.Partition {
	return metadata.Partition{
		ID:      testID("tail"),
		Begin:   begin,
		Servers: []metadata.Placement{{ServerID: "s1", PlacementID: testID("tail-s1")}},
	}
}

// txnID returns the n-th test txnid: 40 lowercase hex digits.
func txnID(n int) string { return fmt.Sprintf("%040x", n) }

// fileWithBounds returns a valid file cut at bounds: (-inf, b0), [b0, b1),
// ..., [bn, +inf), each partition on servers s1 and s2.
func fileWithBounds(t *testing.T, bounds ...int64) *metadata.File {
	t.Helper()
	f := &metadata.File{Table: "cpu", TxnID: txnID(1), TxnSeq: 1}
	for i := 0; i <= len(bounds); i++ {
		p := metadata.Partition{ID: testID(fmt.Sprintf("p%d", i)), Servers: twoServers(fmt.Sprintf("p%d", i))}
		if i > 0 {
			p.Begin = i64(bounds[i-1])
		}
		if i < len(bounds) {
			p.End = i64(bounds[i])
		}
		f.Partitions = append(f.Partitions, p)
	}
	if err := f.Validate(); err != nil {
		t.Fatalf("test file: %v", err)
	}
	return f
}

func twoServers(name string) []metadata.Placement {
	return []metadata.Placement{
		{ServerID: "s1", PlacementID: testID(name + "/s1")},
		{ServerID: "s2", PlacementID: testID(name + "/s2")},
	}
}

// applyDecision commits d on f as SPLIT_BEGIN (Presplit) with fresh
// children, then SPLIT_FINALIZE with every server confirmed, checking both
// with metadata.Apply. It returns the file after the finalize.
func applyDecision(t *testing.T, f *metadata.File, d Decision) *metadata.File {
	t.Helper()
	children := make([]metadata.SplitChild, d.Children())
	confirmed := make(map[uuid.UUID][]string, len(children))
	for i := range children {
		name := fmt.Sprintf("%s/child%d", f.TxnID, i)
		children[i] = metadata.SplitChild{ID: testID(name), Servers: twoServers(name)}
		confirmed[children[i].ID] = []string{"s1", "s2"}
	}
	body := d.SplitBegin(children)
	begun, err := metadata.Apply(f, txnID(int(f.TxnSeq)*2+1), metadata.Op{Type: metadata.OpSplitBegin, SplitBegin: &body})
	if err != nil {
		t.Fatalf("SPLIT_BEGIN of %v: %v", d.Points, err)
	}
	done, err := metadata.Apply(begun, txnID(int(begun.TxnSeq)*2+1), metadata.Op{
		Type:          metadata.OpSplitFinalize,
		SplitFinalize: &metadata.SplitFinalizeOp{PartitionID: d.PartitionID, Confirmed: confirmed},
	})
	if err != nil {
		t.Fatalf("SPLIT_FINALIZE: %v", err)
	}
	return done
}

// steadyStats returns n closed partitions of width w ending at end (newest
// first), each holding rate bytes per second.
func steadyStats(end int64, w time.Duration, n int, rate float64) []PartitionStats {
	out := make([]PartitionStats, n)
	for i := range out {
		e := end - int64(i)*int64(w)
		out[i] = PartitionStats{
			ID:    testID(fmt.Sprintf("steady%d", i)),
			Begin: i64(e - int64(w)),
			End:   i64(e),
			Bytes: uint64(rate * w.Seconds()),
		}
	}
	return out
}

// checkPoints checks the invariants every plan keeps.
func checkPoints(t *testing.T, tail metadata.Partition, points []int64, width time.Duration, cfg Config) {
	t.Helper()
	cfg = cfg.withDefaults()
	if len(points) == 0 {
		t.Fatal("no points")
	}
	if len(points) > cfg.MaxPoints {
		t.Fatalf("%d points, cap %d", len(points), cfg.MaxPoints)
	}
	for i, p := range points {
		if i > 0 && p <= points[i-1] {
			t.Fatalf("points[%d]=%d not above points[%d]=%d", i, p, i-1, points[i-1])
		}
		if tail.Begin != nil && p <= *tail.Begin {
			t.Fatalf("points[%d]=%d not above begin %d", i, p, *tail.Begin)
		}
		if p%int64(width) != 0 {
			t.Fatalf("points[%d]=%d not a multiple of %s", i, p, width)
		}
	}
}

// partitionsAhead counts the bounded partitions of f beginning at or after
// now, and returns the tail's begin (nil when open).
func partitionsAhead(f *metadata.File, now int64) (int, *int64) {
	n := 0
	for _, p := range f.Partitions {
		if p.Begin != nil && p.End != nil && *p.Begin >= now {
			n++
		}
	}
	return n, f.Partitions[len(f.Partitions)-1].Begin
}
