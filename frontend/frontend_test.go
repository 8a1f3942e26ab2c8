package frontend

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/wire"
	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/router"
)

// The front end is the HTTP server's backend without importing it.
var _ tsdbhttp.Backend = (*Frontend)(nil)

func ptr(v int64) *int64 { return &v }

// TestSplitSmeared: rows in a partition narrower than the threshold are
// smeared, the others written at once, in order; with none smeared the
// rows come back as they are.
func TestSplitSmeared(t *testing.T) {
	sec := int64(time.Second)
	file := &metadata.File{Partitions: []metadata.Partition{
		{Begin: nil, End: ptr(100 * sec)},            // open start: never narrow
		{Begin: ptr(100 * sec), End: ptr(110 * sec)}, // 10 s: narrow
		{Begin: ptr(110 * sec), End: ptr(500 * sec)}, // wide
	}}
	sc := metadata.SmearConfig{Enabled: true, MaxDelay: metadata.Duration(time.Minute), KeyrangeThreshold: metadata.Duration(time.Minute)}
	rows := func(ts ...int64) []model.Row {
		var out []model.Row
		for _, t := range ts {
			out = append(out, model.Row{Time: t * sec})
		}
		return out
	}
	times := func(rs []model.Row) []int64 {
		var out []int64
		for _, r := range rs {
			out = append(out, r.Time/sec)
		}
		return out
	}
	smeared, direct := splitSmeared(sc, file, rows(1, 105, 200, 101, 50))
	if got := times(smeared); !slices.Equal(got, []int64{105, 101}) {
		t.Errorf("smeared %v, want [105 101]", got)
	}
	if got := times(direct); !slices.Equal(got, []int64{1, 200, 50}) {
		t.Errorf("direct %v, want [1 200 50]", got)
	}
	in := rows(1, 200)
	smeared, direct = splitSmeared(sc, file, in)
	if smeared != nil || &direct[0] != &in[0] {
		t.Errorf("nothing narrow: smeared %v, direct not the rows themselves", smeared)
	}
}

// TestPickServers: the least loaded servers first, k of them at most.
func TestPickServers(t *testing.T) {
	live := []membership.Info{
		{ID: "a", Summary: membership.Summary{Partitions: 5}},
		{ID: "b", Summary: membership.Summary{Partitions: 1}},
		{ID: "c", Summary: membership.Summary{Partitions: 3}},
	}
	for seed := range 3 {
		rnd := func(n int) int { return (seed + n) % n }
		got := pickServers(live, 2, rnd)
		if len(got) != 2 || got[0].ID != "b" || got[1].ID != "c" {
			t.Errorf("seed %d: picked %v, want b, c", seed, got)
		}
	}
	if got := pickServers(live, 5, func(int) int { return 0 }); len(got) != 3 {
		t.Errorf("k above the live count picked %d", len(got))
	}
}

// TestTableConfigFromRequest: defaults from the live count, and a factor
// above it refused.
func TestTableConfigFromRequest(t *testing.T) {
	cfg, err := tableConfigFromRequest(api.CreateTableRequest{Name: "t"}, 2)
	if err != nil || cfg.ReplicationFactor != 2 {
		t.Fatalf("got %+v, %v; want factor 2", cfg, err)
	}
	if _, err := tableConfigFromRequest(api.CreateTableRequest{Name: "t", ReplicationFactor: 3}, 2); !errors.Is(err, metadata.ErrInvalidConfig) {
		t.Errorf("factor 3 on 2 live servers: %v, want ErrInvalidConfig", err)
	}
}

// TestPublicError: the router's routing failures are the public API's 503,
// an insert whose outcome is unknown stays so.
func TestPublicError(t *testing.T) {
	for _, tc := range []struct {
		in   error
		want error
	}{
		{router.ErrOffline, api.ErrOffline},
		{router.ErrUnavailable, wire.ErrUnavailable},
		{router.ErrMoved, wire.ErrUnavailable},
		{router.ErrNotLocal, wire.ErrUnavailable},
	} {
		if err := publicError(tc.in); !errors.Is(err, tc.want) || !errors.Is(err, tc.in) {
			t.Errorf("publicError(%v) = %v, want it to match %v", tc.in, err, tc.want)
		}
	}
	unknown := errors.Join(router.ErrUnavailable, wire.ErrInsertOutcomeUnknown)
	if err := publicError(unknown); err != unknown {
		t.Errorf("an unknown outcome became %v", err)
	}
	if publicError(nil) != nil {
		t.Error("nil became an error")
	}
}
