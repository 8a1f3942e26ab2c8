package partition

import (
	"log/slog"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/internal/pebblelog"
)

// pebbleOptions returns the tuned options of docs/storage-format.md:
// time-ordered ingest wants a large memtable, no L0 write stops, L0
// compactions late (below), and a second compaction slot on a 2-core
// machine.
func pebbleOptions(opts Options, cache *pebble.Cache, log *slog.Logger) *pebble.Options {
	logger := pebblelog.Logger{Log: log.With("component", "pebble")}
	po := &pebble.Options{
		FormatMajorVersion:          pebble.FormatNewest,
		MemTableSize:                orDefault(opts.MemTableSize, defaultMemTableSize),
		MemTableStopWritesThreshold: 4,
		L0StopWritesThreshold:       1000,
		LBaseMaxBytes:               256 << 20,
		CompactionConcurrencyRange:  func() (int, int) { return 1, 2 },
		Cache:                       cache,
		Logger:                      logger,
		FS:                          opts.FS,
		Merger:                      rowMerger,
		EventListener: &pebble.EventListener{
			WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
				logger.Log.Warn("write stall", "reason", info.Reason)
			},
			WriteStallEnd: func() { logger.Log.Info("write stall ended") },
		},
	}
	// 8 MiB L0 files (pebble's default is 2 MiB) mean fewer, larger flush
	// outputs for the 64 MiB memtable; deeper levels double from there.
	po.TargetFileSizes[0] = 8 << 20
	// L0 is compacted into Lbase once 8 sub-levels deep: pebble scores L0
	// by twice its depth over this threshold, and its default of 4
	// compacted at 2. Head rows live in L0 for a minute or two before their
	// bucket is sealed and they are deleted; every flush's files span
	// the head's current bucket, so each early L0 compaction rewrote the
	// bucket's rows flushed so far, again and again, for rows about to
	// go. At 100,000 series compactions were 47% of the write phase's
	// CPU; 16 took 6-28% off the server's CPU (docs/performance.md, "L0
	// compactions of head rows").
	po.L0CompactionThreshold = 16
	// Below L0, where compactions put the sealed blocks, sstable blocks
	// are 32 KiB instead of pebble's 4 KiB: snappy then finds the
	// repetition between a bucket's column blocks (their keys, field
	// names and headers), which at 100,000 series hold about 11 rows
	// each. The store of the peer harness's 10 M points there went from
	// 99 to 79 MB at no cost in CPU; L0 (flushes of head rows, read by
	// point lookups) keeps 4 KiB (docs/storage-format.md, "Pebble
	// options").
	for i := 1; i < len(po.Levels); i++ {
		po.Levels[i].BlockSize = sealedLevelBlockSize
	}
	return po
}

// sealedLevelBlockSize is the sstable block size of the levels below L0.
const sealedLevelBlockSize = 32 << 10
