package frontend

import (
	"math"
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// TestRetentionFloor: the oldest time a query answers is now - retention,
// or the METADATA's retention horizon when that is later; without either,
// everything.
func TestRetentionFloor(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	hour := metadata.Duration(time.Hour)
	horizon := func(v int64) *metadata.File { return &metadata.File{DroppedBefore: &v} }
	for _, tc := range []struct {
		name string
		cfg  metadata.TableConfig
		file *metadata.File
		want int64
	}{
		{"no retention", metadata.TableConfig{}, &metadata.File{}, math.MinInt64},
		{"retention", metadata.TableConfig{Retention: hour}, &metadata.File{}, now.Add(-time.Hour).UnixNano()},
		{"a horizon after now - retention (retention raised after a drop)", metadata.TableConfig{Retention: hour}, horizon(now.UnixNano() - 10), now.UnixNano() - 10},
		{"a horizon before now - retention", metadata.TableConfig{Retention: hour}, horizon(5), now.Add(-time.Hour).UnixNano()},
		{"a horizon, retention 0 now", metadata.TableConfig{}, horizon(5), 5},
	} {
		if got := retentionFloor(tc.cfg, tc.file, now); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
