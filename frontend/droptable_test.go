package frontend

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
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

// TestCheckRetention: an insert holding a row older than the retention
// floor (now - retention, or the horizon below which partitions were
// dropped: such a row would not even be replicated) is refused whole, as
// an invalid row; rows at the floor or later pass.
func TestCheckRetention(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	cfg := metadata.TableConfig{Name: "db", Retention: metadata.Duration(time.Hour)}
	floor := now.Add(-time.Hour).UnixNano()
	rows := func(ts ...int64) []model.Row {
		var out []model.Row
		for _, t := range ts {
			out = append(out, model.Row{Series: "cpu", Time: t})
		}
		return out
	}
	if err := checkRetention(cfg, &metadata.File{}, rows(floor, now.UnixNano()), now); err != nil {
		t.Errorf("rows inside the retention: %v", err)
	}
	err := checkRetention(cfg, &metadata.File{}, rows(now.UnixNano(), floor-1, floor-2), now)
	if !errors.Is(err, ErrBeyondRetention) || !errors.Is(err, errcode.ErrInvalidRow) || !strings.Contains(err.Error(), "2 of 3 rows") {
		t.Errorf("rows beyond the retention: %v", err)
	}
	// Retention raised to forever after a drop: the horizon still refuses.
	h := now.UnixNano() - 10
	if err := checkRetention(metadata.TableConfig{Name: "db"}, &metadata.File{DroppedBefore: &h}, rows(h-1), now); !errors.Is(err, ErrBeyondRetention) {
		t.Errorf("a row below the horizon: %v", err)
	}
	if err := checkRetention(metadata.TableConfig{Name: "db"}, &metadata.File{}, rows(math.MinInt64), now); err != nil {
		t.Errorf("no retention, no horizon: %v", err)
	}
}
