package smear

import (
	"log/slog"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/internal/pebblelog"
)

// Pebble sizing of the queue's own DB. The queue holds at most a few
// minutes of smeared inserts and every entry is deleted soon after it is
// written, so it wants a memtable large enough that most entries die before
// a flush, and little cache.
const (
	defaultMemTableSize = 32 << 20
	cacheSize           = 8 << 20
)

func pebbleOptions(opts *Options, cache *pebble.Cache, log *slog.Logger) *pebble.Options {
	logger := pebblelog.Logger{Log: log.With("component", "pebble")}
	return &pebble.Options{
		FormatMajorVersion:          pebble.FormatNewest,
		MemTableSize:                opts.MemTableSize,
		MemTableStopWritesThreshold: 4,
		L0StopWritesThreshold:       1000,
		Cache:                       cache,
		Logger:                      logger,
		FS:                          opts.FS,
		EventListener: &pebble.EventListener{
			WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
				logger.Log.Warn("smear queue write stall", "reason", info.Reason)
			},
		},
	}
}
