package partition

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// TestThrottleSeesEveryApply: the Throttle hook is called before each
// Apply with about the bytes the batch writes.
func TestThrottleSeesEveryApply(t *testing.T) {
	var calls, bytes atomic.Int64
	s, err := Open(Options{Dir: t.TempDir(), MemTableSize: 4 << 20, CacheSize: 8 << 20,
		Throttle: func(n int) { calls.Add(1); bytes.Add(int64(n)) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	r := createTestReplica(t, s)
	pad := strings.Repeat("x", 1000)
	rows := make([]model.Row, 10)
	for i := range rows {
		rows[i] = model.Row{Time: int64(i), Series: "s", Fields: []model.Field{{Name: "v", Value: model.String(pad), Version: model.Version{Wall: 1}}}}
	}
	if _, err := r.Apply(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(rows[:1]); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Fatalf("Throttle called %d times for 2 applies", calls.Load())
	}
	// 11 rows of a 1000-byte string: a little more than 11,000 bytes.
	if b := bytes.Load(); b < 11_000 || b > 13_000 {
		t.Fatalf("Throttle saw %d bytes, want about 11,500", b)
	}
}
