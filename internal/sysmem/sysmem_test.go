package sysmem

import (
	"slices"
	"testing"
	"testing/fstest"
)

func TestLimit(t *testing.T) {
	const gib = 1 << 30
	v2 := "0::/system.slice/tsdb.service\n"
	v1 := "12:pids:/x\n4:cpu,cpuacct:/x\n3:memory:/docker/abc\n"
	for _, tc := range []struct {
		name  string
		phys  uint64
		self  string
		files map[string]string
		want  uint64
	}{
		{"no cgroup", 24 * gib, "", nil, 24 * gib},
		{"v2 unlimited", 24 * gib, v2, map[string]string{"system.slice/tsdb.service/memory.max": "max\n", "system.slice/memory.max": "max"}, 24 * gib},
		{"v2 limit on the unit", 24 * gib, v2, map[string]string{"system.slice/tsdb.service/memory.max": "4294967296\n"}, 4 * gib},
		{"v2 limit on a parent", 24 * gib, v2, map[string]string{"system.slice/tsdb.service/memory.max": "max", "system.slice/memory.max": "2147483648"}, 2 * gib},
		{"v2 namespace root", 24 * gib, "0::/\n", map[string]string{"memory.max": "1073741824"}, gib},
		{"v1 unlimited", 24 * gib, v1, map[string]string{"memory/docker/abc/memory.limit_in_bytes": "9223372036854771712\n"}, 24 * gib},
		{"v1 limit", 24 * gib, v1, map[string]string{"memory/docker/abc/memory.limit_in_bytes": "2147483648"}, 2 * gib},
		{"v1 limit on a parent", 24 * gib, v1, map[string]string{"memory/docker/memory.limit_in_bytes": "3221225472"}, 3 * gib},
		{"other controllers only", 24 * gib, "12:pids:/x\n", map[string]string{"pids/x/memory.max": "1"}, 24 * gib},
		{"limit above the machine", 2 * gib, v2, map[string]string{"system.slice/memory.max": "8589934592"}, 2 * gib},
		{"garbage", 24 * gib, v2, map[string]string{"system.slice/memory.max": "lots"}, 24 * gib},
		{"no /proc: the roots", 24 * gib, "", map[string]string{"memory.max": "1073741824"}, gib},
		{"nothing known", 0, "", nil, 0},
		{"only a cgroup", 0, v2, map[string]string{"memory.max": "1073741824"}, gib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, body := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			if got := limit(tc.phys, []byte(tc.self), fsys); got != tc.want {
				t.Errorf("limit = %d, want %d (files %v)", got, tc.want, limitFiles([]byte(tc.self)))
			}
		})
	}
}

func TestLimitFiles(t *testing.T) {
	got := limitFiles([]byte("0::/a/b\n"))
	want := []string{"a/b/memory.max", "a/memory.max", "memory.max"}
	if !slices.Equal(got, want) {
		t.Errorf("v2 /a/b: %q, want %q", got, want)
	}
	got = limitFiles([]byte("3:memory:/\n"))
	want = []string{"memory/memory.limit_in_bytes"}
	if !slices.Equal(got, want) {
		t.Errorf("v1 /: %q, want %q", got, want)
	}
}

// TestLimitHere: on Linux the machine's memory is known.
func TestLimitHere(t *testing.T) {
	if physical() == 0 {
		t.Skip("physical memory unknown on this system")
	}
	if Limit() == 0 {
		t.Fatal("Limit() = 0 with the physical memory known")
	}
}
