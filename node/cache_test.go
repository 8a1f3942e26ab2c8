package node

import "testing"

func TestAutoCacheSize(t *testing.T) {
	const (
		mib = int64(1) << 20
		gib = int64(1) << 30
	)
	for _, tc := range []struct {
		mem     uint64
		servers int
		want    int64
	}{
		{0, 1, 128 * mib},             // unknown
		{24 * 1 << 30, 1, 3 * gib},    // an eighth
		{24 * 1 << 30, 3, 1 * gib},    // shared by three servers
		{64 * 1 << 30, 1, 4 * gib},    // at most 4 GiB
		{512 * 1 << 20, 1, 128 * mib}, // at least 128 MiB
		{24 * 1 << 30, 0, 128 * mib},  // no servers: the floor
	} {
		if got := autoCacheSize(tc.mem, tc.servers); got != tc.want {
			t.Errorf("autoCacheSize(%d, %d) = %d, want %d", tc.mem, tc.servers, got, tc.want)
		}
	}
	if got := AutoCacheSize(1); got < 128*mib || got > 4*gib {
		t.Errorf("AutoCacheSize(1) = %d: outside [128 MiB, 4 GiB]", got)
	}
}
