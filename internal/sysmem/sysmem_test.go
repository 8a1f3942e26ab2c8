package sysmem

import (
	"testing"
	"testing/fstest"
)

func TestLimit(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name  string
		phys  uint64
		files map[string]string
		want  uint64
	}{
		{"no cgroup", 24 * gib, nil, 24 * gib},
		{"v2 unlimited", 24 * gib, map[string]string{"memory.max": "max\n"}, 24 * gib},
		{"v2 limit", 24 * gib, map[string]string{"memory.max": "4294967296\n"}, 4 * gib},
		{"v1 unlimited", 24 * gib, map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 24 * gib},
		{"v1 limit", 24 * gib, map[string]string{"memory/memory.limit_in_bytes": "2147483648"}, 2 * gib},
		{"limit above the machine", 2 * gib, map[string]string{"memory.max": "8589934592"}, 2 * gib},
		{"garbage", 24 * gib, map[string]string{"memory.max": "lots"}, 24 * gib},
		{"nothing known", 0, nil, 0},
		{"only a cgroup", 0, map[string]string{"memory.max": "1073741824"}, gib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, body := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			if got := limit(tc.phys, fsys); got != tc.want {
				t.Errorf("limit = %d, want %d", got, tc.want)
			}
		})
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
