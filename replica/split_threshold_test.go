package replica

import (
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// TestSplitThreshold: a partition the table smears inserts into is split
// at twice the target until max_delay and the margin have passed since its
// end; a wide or open-ended partition, or one of a table without smearing,
// at the target itself.
func TestSplitThreshold(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) *int64 { v := now.Add(d).UnixNano(); return &v }
	cfg := metadata.TableConfig{PartitionSizeTarget: 4 << 20, Smear: model.SmearConfig{
		Enabled: true, MaxDelay: model.Duration(20 * time.Second), KeyrangeThreshold: model.Duration(time.Minute)}}
	off := cfg
	off.Smear.Enabled = false
	const target, twice = 4 << 20, 8 << 20
	for _, tc := range []struct {
		name       string
		cfg        metadata.TableConfig
		begin, end *int64
		want       uint64
	}{
		{"narrow, at now", cfg, at(-time.Second), at(0), twice},
		{"narrow, in the future", cfg, at(time.Minute), at(time.Minute + time.Second), twice},
		{"narrow, ended within max_delay + margin", cfg, at(-25 * time.Second), at(-24 * time.Second), twice},
		{"narrow, ended max_delay + margin ago", cfg, at(-26 * time.Second), at(-25 * time.Second), target},
		{"narrow, long ago", cfg, at(-time.Hour), at(-time.Hour + time.Second), target},
		{"as wide as the threshold", cfg, at(-time.Minute), at(0), target},
		{"open-ended", cfg, at(0), nil, target},
		{"smearing off", off, at(-time.Second), at(0), target},
	} {
		p := &metadata.Partition{Begin: tc.begin, End: tc.end}
		if got := splitThreshold(tc.cfg, p, now); got != tc.want {
			t.Errorf("%s: threshold %d, want %d", tc.name, got, tc.want)
		}
	}
}
