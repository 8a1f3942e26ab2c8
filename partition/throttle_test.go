package partition

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// TestThrottleSeesEveryApply: the Throttle hook is called by each Apply
// that changes something, with the bytes of its batch; a replay that
// changes nothing is not charged.
func TestThrottleSeesEveryApply(t *testing.T) {
	var calls, bytes atomic.Int64
	s, err := Open(Options{Dir: t.TempDir(), MemTableSize: 4 << 20, CacheSize: 8 << 20,
		Throttle: func(n int) { calls.Add(1); bytes.Add(int64(n)) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	r := lookingUp(createTestReplica(t, s))
	pad := strings.Repeat("x", 1000)
	rows := make([]model.Row, 10)
	for i := range rows {
		rows[i] = model.Row{Time: int64(i), Series: "s", Fields: []model.Field{{Name: "v", Value: model.String(pad), Version: model.Version{Wall: 1}}}}
	}
	if _, err := r.Apply(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(rows[:1]); err != nil { // a replay: no change
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Fatalf("Throttle called %d times for one changing apply and one replay", calls.Load())
	}
	// 10 rows of a 1000-byte string, each value written twice (the row
	// and its log entry, which carries it), with keys and metadata: a
	// little more than 20,000 bytes.
	if b := bytes.Load(); b < 20_000 || b > 24_000 {
		t.Fatalf("Throttle saw %d bytes, want about 21,000", b)
	}
}
