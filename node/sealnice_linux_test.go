package node

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// threadsAtNice returns the process's threads whose nice value is nice
// (field 19 of each /proc/self/task/<tid>/stat line).
func threadsAtNice(t *testing.T, nice int) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var at []string
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/stat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if n, err := strconv.Atoi(fields[16]); err == nil && n == nice {
			at = append(at, e.Name())
		}
	}
	return at
}

// TestSealerThreadNice: a server's sealer runs on a thread of its own at
// Config.SealNice, and that thread ends when the server stops (no other
// goroutine of the process is left at the lowered priority).
func TestSealerThreadNice(t *testing.T) {
	const nice = 17 // no other test's servers use it
	if n := threadsAtNice(t, nice); len(n) > 0 {
		t.Skipf("threads %v already run at nice %d", n, nice)
	}
	e := testEtcd(t)
	n := startNode(t, e, "s1", t.TempDir(), func(c *Config) { c.SealNice = nice })
	deadline := time.Now().Add(30 * time.Second)
	for len(threadsAtNice(t, nice)) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("threads at nice %d: %v, want the sealer's one", nice, threadsAtNice(t, nice))
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopNode(t, n)
	for len(threadsAtNice(t, nice)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("threads at nice %d after the server stopped: %v", nice, threadsAtNice(t, nice))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
