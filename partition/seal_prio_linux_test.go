package partition

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tsdb/tsdb/internal/threadprio"
)

// threadNice reads the calling thread's nice value from /proc (field 19
// of its stat line).
func threadNice(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(syscall.Gettid()) + "/stat")
	if err != nil {
		t.Error(err)
		return -100
	}
	s := string(b)
	n, err := strconv.Atoi(strings.Fields(s[strings.LastIndexByte(s, ')')+2:])[16])
	if err != nil {
		t.Error(err)
		return -100
	}
	return n
}

// TestSealLockedAtProcessPriority: a seal run by a goroutine at a lowered
// thread priority (node's sealer, --seal-nice) does what it does under
// the apply lock at the process's priority: the commit of its pass
// outside the lock, and the pass under the lock that a write during that
// pass makes it take.
func TestSealLockedAtProcessPriority(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	old := int64(5) << bucketShift // ended in 1970
	mustApply(t, r, row("cpu,host=a", old, fl("a", 1, 1)), row("cpu,host=b", old, fl("a", 2, 1)))
	base := threadNice(t)
	low := min(base+5, 19)
	if low == base {
		t.Skipf("the test runs at nice %d already", base)
	}
	wrote := false
	r.hookSealOutside = func() {
		if !wrote { // a write into the bucket: the commit finds it and the pass runs again under the lock
			wrote = true
			mustApply(t, r, row("cpu,host=c", old+1, fl("a", 3, 2)))
		}
	}
	var locked []int
	r.hookSealLocked = func() { locked = append(locked, threadNice(t)) }
	type result struct {
		nice int
		st   SealStats
		err  error
	}
	done := make(chan result)
	go func() {
		if err := threadprio.Lower(low); err != nil {
			done <- result{err: err}
			return
		}
		st, err := r.Seal(t.Context(), old+1<<bucketShift)
		done <- result{threadNice(t), st, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the seal did not end")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.nice != low {
		t.Fatalf("the sealing goroutine's thread is at nice %d, want %d", res.nice, low)
	}
	if res.st.Series != 3 || s.SealRetries() != 1 {
		t.Fatalf("sealed %d series with %d retries under the lock, want 3 and 1", res.st.Series, s.SealRetries())
	}
	if len(locked) < 2 {
		t.Fatalf("the seal ran %d times under the lock, want the commit and the pass under it", len(locked))
	}
	for i, n := range locked {
		if n != base {
			t.Errorf("under the lock (%d of %d) the seal ran at nice %d, want the process's %d", i+1, len(locked), n, base)
		}
	}
	got := scanAll(t, r)
	if len(got) != 3 {
		t.Fatalf("%d rows after the seal, want 3", len(got))
	}
}
