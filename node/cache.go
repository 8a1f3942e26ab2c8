package node

import "github.com/tsdb/tsdb/internal/sysmem"

// Bounds of AutoCacheSize.
const (
	minAutoCache = 128 << 20
	maxAutoCache = 4 << 30
)

// AutoCacheSize is the block cache of each of servers servers sharing
// this process's memory when none is configured: an eighth of the memory
// available (sysmem.Limit: the machine's, or its control group's limit)
// shared among them, within [128 MiB, 4 GiB]; 128 MiB when the memory is
// unknown. The cache takes memory as it fills, so an idle server uses
// little of it.
//
// At 100,000 series the harness's sealed data (95 MB on disk, about
// twice that in pebble's uncompressed blocks) outgrew a 128 MiB cache and
// every aggregate read most of its blocks from the files again.
func AutoCacheSize(servers int) int64 {
	return autoCacheSize(sysmem.Limit(), servers)
}

func autoCacheSize(mem uint64, servers int) int64 {
	if mem == 0 || servers < 1 {
		return minAutoCache
	}
	return min(max(int64(mem/8/uint64(servers)), minAutoCache), maxAutoCache)
}
