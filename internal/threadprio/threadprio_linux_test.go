package threadprio

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// threadNice reads a thread's nice value from /proc (field 19 of its stat
// line, after the command's closing parenthesis).
func threadNice(t *testing.T, tid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, err := strconv.Atoi(fields[16]) // field 19 of the whole line
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLowerOneThread checks that Lower raises the nice value of the
// calling goroutine's thread only, and that the thread ends with the
// goroutine: no other goroutine can run at the lowered priority.
func TestLowerOneThread(t *testing.T) {
	base := threadNice(t, syscall.Gettid())
	want := min(base+7, 19)
	type result struct {
		tid, nice int
		err       error
	}
	got := make(chan result)
	release := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		err := Lower(want)
		tid := syscall.Gettid()
		got <- result{tid, threadNice(t, tid), err}
		<-release
	}()
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.nice != want {
		t.Errorf("the lowered thread's nice value is %d, want %d", r.nice, want)
	}
	if n := threadNice(t, syscall.Gettid()); n != base {
		t.Errorf("the test's own thread went from nice %d to %d", base, n)
	}
	close(release)
	<-ended
	if r.tid == os.Getpid() {
		// The process's main thread: the runtime parks it for good
		// instead of ending it (runtime.LockOSThread), which /proc
		// cannot tell from a thread waiting for work.
		return
	}
	// The locked thread exits with its goroutine; give the runtime a
	// moment, polling, rather than a fixed sleep.
	for i := 0; ; i++ {
		if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(r.tid)); os.IsNotExist(err) {
			break
		}
		if i == 1000 {
			t.Fatalf("thread %d at nice %d outlived its goroutine", r.tid, want)
		}
		syscall.Nanosleep(&syscall.Timespec{Nsec: 1e6}, nil)
	}
}

// TestLowerRange refuses nice values outside 1 to 19 without touching
// the thread.
func TestLowerRange(t *testing.T) {
	for _, n := range []int{0, -1, 20} {
		done := make(chan error)
		go func() { done <- Lower(n) }()
		if err := <-done; err == nil {
			t.Errorf("Lower(%d) = nil, want an error", n)
		}
	}
}
