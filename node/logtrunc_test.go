package node

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
)

// logRecorder is a slog.Handler that keeps every record's message with
// its attributes (those of With included), for tests that check a log
// line was written.
type logRecorder struct {
	mu    *sync.Mutex
	lines *[]loggedLine
	attrs []slog.Attr
}

// loggedLine is one record: its message and attributes by key.
type loggedLine struct {
	msg   string
	attrs map[string]string
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: &sync.Mutex{}, lines: &[]loggedLine{}}
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l := loggedLine{msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		l.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.lines = append(*h.lines, l)
	h.mu.Unlock()
	return nil
}

func (h *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecorder{mu: h.mu, lines: h.lines, attrs: append(slices.Clone(h.attrs), attrs...)}
}

// WithGroup is not needed by the lines these tests look for: the group's
// attributes are kept under their own keys.
func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// logged reports whether a line with message msg and every attribute of
// kv (key, value, key, value...) was written.
func (h *logRecorder) logged(msg string, kv ...string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
next:
	for _, l := range *h.lines {
		if l.msg != msg {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if l.attrs[kv[i]] != kv[i+1] {
				continue next
			}
		}
		return true
	}
	return false
}

// localReplica returns server id's replica of table (nil if none).
func (c *testCluster) localReplica(id, table string) *partition.Replica {
	for _, r := range c.nodes[id].store.Replicas() {
		if r.Info().Table == table {
			return r
		}
	}
	return nil
}

// TestLogTruncatedPastDownTargetTakesSnapshot (issue 16): RF 3, every push
// to s3 fails (BlockPush). Once s3 has failed for LaggardAfter and lags by
// more than MaxLogLag, s1's and s2's replicas truncate their logs past its
// cursor (logged), inserts being acknowledged by s1 and s2 all along.
// Unblocked, s3 takes a row snapshot from each, and ends with every
// acknowledged row exactly once (same rows and checksum as s1 and s2).
func TestLogTruncatedPastDownTargetTakesSnapshot(t *testing.T) {
	var blocked atomic.Bool
	blocked.Store(true)
	logs := newLogRecorder()
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.knobs.BlockPush = func(t metadata.Target) bool { return t.ServerID == "s3" && blocked.Load() }
		cfg.knobs.LaggardAfter = 200 * time.Millisecond
		cfg.knobs.MaxLogLag = 100
		cfg.knobs.TruncateMin = 1
		cfg.Logger = slog.New(logs).With("test_node", cfg.ID)
	})
	c.createTable("s1", "cpu", 3)
	const rows = 2000
	for i := range 4 {
		c.insertLP("s1", "cpu", lpBatch("a", int64(i*rows/4), rows/4, 50))
	}
	f := c.currentFile("s1", "cpu")
	var down uuid.UUID
	for _, pl := range f.Partitions[0].Servers {
		if pl.ServerID == "s3" {
			down = pl.PlacementID
		}
	}
	if down == uuid.Nil {
		t.Fatalf("s3 holds no replica of cpu: %+v", f.Partitions[0].Servers)
	}
	for _, id := range []string{"s1", "s2"} {
		waitFor(t, id+"'s log truncated past s3's cursor", func() bool {
			r := c.localReplica(id, "cpu")
			return r != nil && r.LogStart() > r.Confirmed(down)
		})
		waitFor(t, id+" logging the truncation past s3", func() bool {
			return logs.logged("log truncated past a down target", "test_node", id, "target", down.String())
		})
	}
	if got := c.localReplica("s3", "cpu"); got == nil {
		t.Fatal("s3 lost its replica")
	}

	blocked.Store(false)
	waitFor(t, "s3 converged with s1 and s2", func() bool { return c.converged("cpu", rows, "s1", "s2", "s3") })
	c.checkRowsEverywhere("cpu", rows)
	// Each of s1 and s2 sends s3 a row snapshot (one of them may finish
	// after s3 converged: the other's delivered every row), and s3's
	// cursor on each then claims the snapshot's sequence, above the
	// truncation point.
	for _, id := range []string{"s1", "s2"} {
		waitFor(t, id+"'s row snapshot to s3 done", func() bool {
			return logs.logged("row snapshot done", "test_node", id, "target", down.String())
		})
		waitFor(t, id+"'s cursor of s3 at or above its truncation point", func() bool {
			r := c.localReplica(id, "cpu")
			return r.Confirmed(down) >= r.LogStart()
		})
	}
	c.checkRowsEverywhere("cpu", rows)
}
