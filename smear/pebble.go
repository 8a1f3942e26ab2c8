package smear

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
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
	logger := pebbleLogger{log: log.With("component", "pebble")}
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
				logger.log.Warn("smear queue write stall", "reason", info.Reason)
			},
		},
	}
}

// pebbleLogger routes pebble's log lines to slog: informational lines at
// debug level, errors at error level.
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

// Fatalf implements pebble.Logger. Pebble's default exits the process; we
// log and panic, so the server's own crash handling decides.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg, "fatal", true)
	panic("pebble: " + msg)
}
