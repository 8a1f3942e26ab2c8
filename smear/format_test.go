package smear

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func queueMarker(t *testing.T, q *Queue) string {
	t.Helper()
	v, closer, err := q.db.Get(formatKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return string(v)
}

// TestFormatMarker (issue 17 item 6): a new queue is marked "1"; a queue
// without a marker (written before it existed) keeps its entries and is
// marked; a queue of an unknown version is refused with an error naming
// the directory and both versions, and left as it was.
func TestFormatMarker(t *testing.T) {
	dir := t.TempDir()
	clk, opts := clockedOptions(t)
	q, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := queueMarker(t, q); got != "1" {
		t.Fatalf("marker of a new queue = %q, want \"1\"", got)
	}
	if err := q.Enqueue(context.Background(), "cpu", makeRows(0, 5), clk.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// The previous build: the same layout without the marker.
	if err := q.db.Delete(formatKey, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Metrics = NewMetrics(nil)
	q, err = Open(dir, opts)
	if err != nil {
		t.Fatalf("Open of an unmarked queue: %v", err)
	}
	if got := queueMarker(t, q); got != "1" {
		t.Fatalf("marker of an unmarked queue after Open = %q, want \"1\"", got)
	}
	if rows, _ := q.Depth(); rows != 5 {
		t.Fatalf("%d rows in the unmarked queue after Open, want 5", rows)
	}

	for _, tc := range []struct {
		marker string
		want   error
		text   string
	}{
		{"2", ErrUnknownFormat, "has format version 2; this build supports version 1 only"},
		{"one", ErrCorrupt, `"one", not a version number`},
	} {
		if err := q.db.Set(formatKey, []byte(tc.marker), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		opts.Metrics = NewMetrics(nil)
		_, err = Open(dir, opts)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), tc.text) {
			t.Fatalf("Open of a queue marked %q = %v; want %v naming %s and saying %q", tc.marker, err, tc.want, dir, tc.text)
		}
		t.Logf("marker %q: %v", tc.marker, err)
		// Put the marker back to reuse the queue.
		db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
		if err != nil {
			t.Fatal(err)
		}
		v, closer, err := db.Get(formatKey)
		if err != nil || string(v) != tc.marker {
			t.Fatalf("marker after the refused Open = %q, %v; want %q", v, err, tc.marker)
		}
		_ = closer.Close()
		if err := errors.Join(db.Set(formatKey, []byte("1"), pebble.Sync), db.Close()); err != nil {
			t.Fatal(err)
		}
		opts.Metrics = NewMetrics(nil)
		if q, err = Open(dir, opts); err != nil {
			t.Fatal(err)
		}
	}
	_ = q.Close()
}

type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(f string, args ...any) {
	panic(f)
}
