// Package pebblelog routes pebble's log lines to slog, for every pebble DB
// a server opens (the partition store, the smear queue).
package pebblelog

import (
	"context"
	"fmt"
	"log/slog"
)

// Logger implements pebble.Logger on a *slog.Logger: informational lines
// at debug level (pebble is chatty on open and on every WAL recovery),
// errors at error level.
type Logger struct {
	Log *slog.Logger
}

// Infof implements pebble.Logger.
func (l Logger) Infof(format string, args ...any) {
	if l.Log.Enabled(context.Background(), slog.LevelDebug) {
		l.Log.Debug(fmt.Sprintf(format, args...))
	}
}

// Errorf implements pebble.Logger.
func (l Logger) Errorf(format string, args ...any) {
	l.Log.Error(fmt.Sprintf(format, args...))
}

// Fatalf implements pebble.Logger. Pebble calls it on states it cannot
// continue from (its default logger exits the process); this logs the line
// and panics instead, so the server's own crash handling decides.
func (l Logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.Log.Error(msg, "fatal", true)
	panic("pebble: " + msg)
}
