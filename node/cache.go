package node

import "github.com/tsdb/tsdb/internal/sysmem"

// Bounds of AutoCacheSize.
const (
	minAutoCache    = 128 << 20 // of the eighth, for all servers
	maxAutoCache    = 4 << 30
	minServerCache  = 32 << 20 // of each server's share
	autoCacheDivide = 8        // the share of the memory
)

// AutoCacheSize is the block cache of each of servers servers sharing
// this process's memory when none is configured: an eighth of the memory
// available (sysmem.Limit: the machine's, or its control group's limit),
// bounded to [128 MiB, 4 GiB], shared among them, at least 32 MiB each;
// the memory unknown counts as 1 GiB. The cache takes memory as it fills,
// so an idle server uses little of it.
//
// At 100,000 series the harness's sealed data (95 MB on disk, about
// twice that in pebble's uncompressed blocks) outgrew a 128 MiB cache and
// every aggregate read most of its blocks from the files again.
func AutoCacheSize(servers int) int64 {
	return autoCacheSize(sysmem.Limit(), servers)
}

func autoCacheSize(mem uint64, servers int) int64 {
	total := int64(minAutoCache)
	if mem > 0 {
		total = min(max(int64(mem/autoCacheDivide), minAutoCache), maxAutoCache)
	}
	return max(total/int64(max(servers, 1)), minServerCache)
}
