package block

import (
	"math/rand/v2"
	"testing"

	"github.com/tsdb/tsdb/internal/harnessdata"
	"github.com/tsdb/tsdb/model"
)

// The harness's shape (partition/colcodec/shapes_test.go): one series of
// 2,000 points 300 ms apart, three float fields shaped like CPU user,
// system and idle percentages printed with 2 decimals, all fields of a
// row with the version of one write from a millisecond clock, writes
// arriving 1–3 ms apart at one of the servers.

const (
	harnessPoints = 2000
	harnessStep   = int64(300 * 1e6)
)

// harnessRows returns one harness series' rows.
func harnessRows(r *rand.Rand, n, servers int) []model.Row {
	user, sys, idle := harnessdata.Walk(r, n)
	vers := harnessdata.ClockVersions(r, t0, n, servers)
	rows := make([]model.Row, n)
	for i := range rows {
		v := vers[i]
		rows[i] = model.Row{Time: t0 + int64(i)*harnessStep, Series: testSeries, Fields: []model.Field{
			{Name: "usage_idle", Value: model.Float(idle[i]), Version: v},
			{Name: "usage_system", Value: model.Float(sys[i]), Version: v},
			{Name: "usage_user", Value: model.Float(user[i]), Version: v},
		}}
	}
	return rows
}

// maxHarnessBytesPerPoint bounds the whole block (3 fields, timestamps,
// versions, summaries, header and checksum) per point of 3 fields on the
// harness shape. The store's target is 4; measured 2.93 at one server and
// 3.25 at three with usage_idle predicted from the other two (predict.go);
// 3.97 and 4.28 without (4.04 and 4.35 with summaries of 72 bytes): the
// three float columns took 3.57 (1.1–1.24 each, see colcodec.TestSizes),
// the versions 0.31 (0.61 at three servers), the timestamps 0.01, the
// summaries, names and headers 0.08.
var maxHarnessBytesPerPoint = map[int]float64{1: 3.0, 3: 3.3}

// bucketPoints is the rows of one harness series in one storage bucket
// (68.7 s at 300 ms), the block the store seals; maxBucketBytesPerPoint
// bounds it as maxHarnessBytesPerPoint does a block of 2,000. Measured
// 3.85 and 4.28 bytes per point at one and three servers with prediction
// (stop 51), 4.87 and 5.29 without (stop 40), where the summaries in their
// 72 bytes made them 5.53 and 5.95.
const bucketPoints = 229

var maxBucketBytesPerPoint = map[int]float64{1: 3.95, 3: 4.4}

func TestHarnessSize(t *testing.T) {
	for _, size := range []struct {
		rows  int
		bound map[int]float64
	}{{harnessPoints, maxHarnessBytesPerPoint}, {bucketPoints, maxBucketBytesPerPoint}} {
		for _, servers := range []int{1, 3} {
			r := rand.New(rand.NewPCG(4, uint64(servers)))
			var total int
			const series = 20
			for range series {
				b, err := Encode(nil, harnessRows(r, size.rows, servers))
				if err != nil {
					t.Fatal(err)
				}
				total += len(b)
			}
			perPoint := float64(total) / series / float64(size.rows)
			t.Logf("harness shape, %d server(s): %.0f bytes per block of %d points, %.3f bytes per point of 3 fields",
				servers, float64(total)/series, size.rows, perPoint)
			if perPoint > size.bound[servers] {
				t.Errorf("%d server(s), %d rows: %.3f bytes per point, the bound is %.2f", servers, size.rows, perPoint, size.bound[servers])
			}
		}
	}
}

// TestVersionForms checks that Encode weighs the block-level version
// column (with per-field exceptions or own columns) against one version
// column per field and keeps the smaller, on several version patterns.
func TestVersionForms(t *testing.T) {
	patterns := map[string]func(row, field int, v *model.Version){
		"one write per row":   func(int, int, *model.Version) {},
		"one write per field": func(_, k int, v *model.Version) { v.Wall += int64(k) * 1e6 },
		"rotating overwrite": func(i, k int, v *model.Version) {
			if i%3 == k {
				v.Wall += 5e8
			}
		},
		"random": func(i, k int, v *model.Version) {
			if (i*7+k*13)%5 < 2 {
				v.Wall -= int64(i*k) * 1e3
			}
		},
	}
	for name, p := range patterns {
		r := rand.New(rand.NewPCG(5, 17))
		rows := harnessRows(r, harnessPoints, 1)
		for i := range rows {
			for k := range rows[i].Fields {
				p(i, k, &rows[i].Fields[k].Version)
			}
		}
		var size [3]int
		for force := range 3 {
			e := &Encoder{forceVersions: force}
			b, err := e.Encode(nil, rows)
			if err != nil {
				t.Fatal(err)
			}
			rd, err := Open(b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := rd.Rows(nil, testSeries)
			if err != nil {
				t.Fatal(err)
			}
			rowsEqual(t, got, rows)
			size[force] = len(b)
		}
		t.Logf("%s: %d bytes (block column: %d, per field: %d)", name, size[0], size[forceRow], size[forceOwn])
		if size[0] > size[forceRow] || size[0] > size[forceOwn] {
			t.Errorf("%s: %d bytes, more than a forced form (block column: %d, per field: %d)", name, size[0], size[forceRow], size[forceOwn])
		}
	}
}
