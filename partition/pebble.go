package partition

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleOptions returns the tuned options of docs/storage-format.md:
// time-ordered ingest wants a large memtable, no L0 write stops (keys do not
// overlap, so L0 stays one sub-level deep), and a second compaction slot on
// a 2-core machine.
func pebbleOptions(opts Options, cache *pebble.Cache, log *slog.Logger) *pebble.Options {
	logger := pebbleLogger{log: log.With("component", "pebble")}
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
		EventListener: &pebble.EventListener{
			WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
				logger.log.Warn("write stall", "reason", info.Reason)
			},
			WriteStallEnd: func() { logger.log.Info("write stall ended") },
		},
	}
	// 8 MiB L0 files (pebble's default is 2 MiB) mean fewer, larger flush
	// outputs for the 64 MiB memtable; deeper levels double from there.
	po.TargetFileSizes[0] = 8 << 20
	return po
}

// pebbleLogger routes pebble's log lines to slog: informational lines at
// debug level (pebble is chatty on open and on every WAL recovery), errors
// at error level.
type pebbleLogger struct {
	log *slog.Logger
}

// Infof implements pebble.Logger.
func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, args...))
	}
}

// Errorf implements pebble.Logger.
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...))
}

// Fatalf implements pebble.Logger. Pebble calls it on states it cannot
// continue from (its default logger exits the process); the store logs the
// line and panics instead, so the server's own crash handling decides.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg, "fatal", true)
	panic("pebble: " + msg)
}
