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
		{0, 1, 128 * mib},           // unknown: the floor
		{24 << 30, 1, 3 * gib},      // an eighth
		{24 << 30, 3, 1 * gib},      // shared by three servers
		{64 << 30, 1, 4 * gib},      // at most 4 GiB
		{256 << 30, 3, 4 * gib / 3}, // ... for all servers together
		{512 << 20, 1, 128 * mib},   // at least 128 MiB
		{2 << 30, 5, 256 * mib / 5}, // an eighth of 2 GiB shared by five
		{1 << 30, 16, 32 * mib},     // at least 32 MiB a server
		{24 << 30, 0, 3 * gib},      // no servers: as one
	} {
		if got := autoCacheSize(tc.mem, tc.servers); got != tc.want {
			t.Errorf("autoCacheSize(%d, %d) = %d, want %d", tc.mem, tc.servers, got, tc.want)
		}
	}
	if got := AutoCacheSize(1); got < 128*mib || got > 4*gib {
		t.Errorf("AutoCacheSize(1) = %d: outside [128 MiB, 4 GiB]", got)
	}
}
