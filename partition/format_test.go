package partition

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/internal/pebblelog"
)

// formatMarker returns the raw format marker of s, "" when absent.
func formatMarker(t *testing.T, s *Store) string {
	t.Helper()
	v, closer, err := s.DB().Get(formatKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return string(v)
}

// setMarker sets (or, for "", deletes) the format marker of the store in
// dir behind the store's back and closes it.
func setMarker(t *testing.T, s *Store, v string) {
	t.Helper()
	var err error
	if v == "" {
		err = s.DB().Delete(formatKey, pebble.Sync)
	} else {
		err = s.DB().Set(formatKey, []byte(v), pebble.Sync)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// openLogged opens the store in dir with its log in the returned buffer.
func openLogged(t *testing.T, dir string) (*Store, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	s, err := Open(Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, &buf
}

const legacyMarkLog = "written before the format marker"

func TestFormatMarkerFresh(t *testing.T) {
	dir := t.TempDir()
	s, log := openLogged(t, dir)
	if got := formatMarker(t, s); got != "8" {
		t.Fatalf("format marker of a new store = %q, want \"8\"", got)
	}
	if strings.Contains(log.String(), legacyMarkLog) {
		t.Fatalf("a new store logged as written before the marker:\n%s", log)
	}
	_ = s.Close()
	s = openPlainStore(t, dir)
	if got := formatMarker(t, s); got != "8" {
		t.Fatalf("format marker after reopen = %q, want \"8\"", got)
	}
}

// TestFormatMarkerLegacy: a store written before the marker existed (the
// previous build: replicas, rows, a birth record, no marker) opens as
// version 1, keeps its rows and gets the marker of version 8.
func TestFormatMarkerLegacy(t *testing.T) {
	dir := t.TempDir()
	s := openPlainStore(t, dir)
	if err := s.RecordBirth(nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	r := createTestReplica(t, s)
	want := walRows(t, r, 0, 2000)
	setMarker(t, s, "")

	s, log := openLogged(t, dir)
	if got := formatMarker(t, s); got != "8" {
		t.Fatalf("format marker of a legacy store after Open = %q, want \"8\"", got)
	}
	if !strings.Contains(log.String(), legacyMarkLog) {
		t.Fatalf("a legacy store not logged as written before the marker:\n%s", log)
	}
	r2, ok := s.Replica(r.Info().Placement)
	if !ok {
		t.Fatal("replica missing after reopen")
	}
	sortRows(want)
	if err := sameRows(scanAll(t, r2), want); err != nil {
		t.Fatalf("rows of the legacy store: %v", err)
	}
}

// TestFormatMarkerUnknown: a store marked with a version this build does
// not support is refused with an error naming the path and both versions,
// and left marked as it was; a marker that is not a version is corrupt.
func TestFormatMarkerUnknown(t *testing.T) {
	for _, tc := range []struct {
		marker string
		want   error
		text   []string
	}{
		{"10", ErrUnknownFormat, []string{"format version 10", "supports version 1, 2, 3, 4, 5, 6, 7, 8, 9 only"}},
		{"17", ErrUnknownFormat, []string{"format version 17", "supports version 1, 2, 3, 4, 5, 6, 7, 8, 9 only"}},
		{"x", ErrCorrupt, []string{`"x"`, "not a version"}},
		{"01", ErrCorrupt, []string{`"01"`}},
		{"0", ErrCorrupt, []string{`"0"`}},
	} {
		t.Run(tc.marker, func(t *testing.T) {
			dir := t.TempDir()
			s := openPlainStore(t, dir)
			createTestReplica(t, s)
			setMarker(t, s, tc.marker)

			s, err := Open(Options{Dir: dir, CacheSize: 8 << 20})
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open of a store marked %q succeeded", tc.marker)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Open = %v; want %v naming %s", err, tc.want, dir)
			}
			for _, w := range tc.text {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("Open = %v; want it to say %q", err, w)
				}
			}
			t.Logf("marker %q: %v", tc.marker, err)
			db, err := pebble.Open(dir, &pebble.Options{Logger: pebblelog.Logger{Log: slog.New(slog.DiscardHandler)}})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			v, closer, err := db.Get(formatKey)
			if err != nil || string(v) != tc.marker {
				t.Fatalf("marker after the refused Open = %q, %v; want %q", v, err, tc.marker)
			}
			_ = closer.Close()
		})
	}
}

// TestFormatMarkerOlderBlocks: a store marked 4 to 7 (the builds before
// decimal summaries, and before predicted fields) opens, keeps its sealed
// rows readable and is marked 8, or 9 with the memory head; a store of 7
// or 9 opened without it is marked 8. (Its blocks are this build's: the
// reads of both summary forms are block.TestSummaries', of plain and
// predicted fields block.TestPredictedRoundTrip's.)
func TestFormatMarkerOlderBlocks(t *testing.T) {
	for _, tc := range []struct {
		from    string
		memHead bool
		want    string
	}{{"4", false, "8"}, {"4", true, "9"}, {"5", false, "8"}, {"5", true, "9"}, {"6", false, "8"}, {"6", true, "9"},
		{"7", false, "8"}, {"7", true, "9"}, {"9", false, "8"}} {
		t.Run(tc.from+"→"+tc.want, func(t *testing.T) {
			dir := t.TempDir()
			s := openPlainStore(t, dir)
			r := createTestReplica(t, s)
			want := walRows(t, r, 0, 300)
			if _, err := r.Seal(t.Context(), math.MaxInt64); err != nil {
				t.Fatal(err)
			}
			setMarker(t, s, tc.from)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err := Open(Options{Dir: dir, MemTableSize: 4 << 20, CacheSize: 8 << 20, MemoryHead: tc.memHead})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := formatMarker(t, s); got != tc.want {
				t.Fatalf("marker %q, want %q", got, tc.want)
			}
			r2, _ := s.Replica(r.Info().Placement)
			sortRows(want)
			if err := sameRows(scanAll(t, r2), want); err != nil {
				t.Fatalf("rows after the upgrade: %v", err)
			}
		})
	}
}
