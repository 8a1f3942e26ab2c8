package partition

// Benchmarks of the write and read paths. Run without -race:
//
//	go test -run '^$' -bench . -benchmem ./partition/
//
// Rows have the shape of a typical metric: series
// "cpu,host=host_N,region=eu-west" (N in 0..999) and three float fields;
// a batch is 1000 rows, one per host, at one timestamp, and successive
// batches move forward in time (new rows, time-ordered ingest).

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

const (
	benchBatch    = 1000
	benchInterval = int64(10e9) // 10 s between batches
)

var benchFieldNames = []string{"usage_idle", "usage_system", "usage_user"}

func benchSeries(n int) string { return fmt.Sprintf("cpu,host=host_%d,region=eu-west", n) }

// benchRows returns a reusable batch template; setBenchTime stamps it.
func benchRows() []model.Row {
	rows := make([]model.Row, benchBatch)
	for i := range rows {
		rows[i] = model.Row{Series: benchSeries(i), Fields: make([]model.Field, len(benchFieldNames))}
		for j, name := range benchFieldNames {
			rows[i].Fields[j] = model.Field{Name: name, Value: model.Float(float64(i*3 + j))}
		}
	}
	return rows
}

func setBenchTime(rows []model.Row, t int64) {
	v := model.Version{Wall: 1_700_000_000_000_000_000 + t, Node: 0x9e3779b97f4a7c15}
	for i := range rows {
		rows[i].Time = t
		for j := range rows[i].Fields {
			rows[i].Fields[j].Version = v
			rows[i].Fields[j].Value.F += 0.5
		}
	}
}

func openBenchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// runWriters runs b.N batches spread over the given number of goroutines;
// write(w, i) writes the batch with global index i from writer w. It
// reports rows/s.
func runWriters(b *testing.B, s *Store, writers int, write func(w int, i int64) error) {
	m0 := s.Metrics().Total()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	b.ResetTimer()
	cpu0 := processCPU()
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := write(w, i); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)*benchBatch/elapsed.Seconds(), "rows/s")
	rows := float64(b.N) * benchBatch
	b.ReportMetric(float64(cpu.Nanoseconds())/rows, "cpu-ns/row")
	m := s.Metrics().Total()
	b.ReportMetric(float64(m.TableBytesFlushed-m0.TableBytesFlushed)/rows, "flushB/row")
	b.ReportMetric(float64(m.TableBytesCompacted-m0.TableBytesCompacted)/rows, "compactB/row")
}

// processCPU returns the CPU time (user + system) of the whole process,
// background compactions included. Unlike rows/s it hardly depends on
// what else runs on the machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPebbleCeiling is the raw ceiling: synced pebble batches of 1000
// keys with exactly the key and value bytes Apply writes for these rows
// (row keys only), committed with Batch.Commit(pebble.Sync). The
// sub-benchmark with_seq_index adds the sequence index entry Apply also
// writes per row, i.e. the same bytes as Apply without the read-merge.
func BenchmarkPebbleCeiling(b *testing.B) {
	for _, withSeq := range []bool{false, true} {
		for _, writers := range []int{1, 4} {
			name := fmt.Sprintf("writers=%d", writers)
			if withSeq {
				name = "with_seq_index/" + name
			}
			b.Run(name, func(b *testing.B) {
				s := openBenchStore(b)
				ks := newKeyspace(uuid.New(), uuid.Nil)
				var seq atomic.Uint64
				templates := make([][]model.Row, writers)
				for w := range templates {
					templates[w] = benchRows()
				}
				b.ReportAllocs()
				runWriters(b, s, writers, func(w int, i int64) error {
					rows := templates[w]
					setBenchTime(rows, i*benchInterval)
					return ceilingBatch(s.DB(), &ks, rows, withSeq, seq.Add(benchBatch)-benchBatch)
				})
			})
		}
	}
}

// ceilingBatch writes rows as raw keys and values in one synced batch.
func ceilingBatch(db *pebble.DB, ks *keyspace, rows []model.Row, withSeq bool, firstSeq uint64) error {
	var (
		enc  valueEncoder
		key  []byte
		val  []byte
		efs  []encField
		sk   []byte
		sval []byte
		ends []int // where each row's value ends in val
	)
	batch := db.NewBatch()
	defer batch.Close()
	for i := range rows {
		r := &rows[i]
		seq := firstSeq + uint64(i) + 1
		key = ks.appendRowKey(key[:0], r.Series, r.Time)
		efs = efs[:0]
		for j := range r.Fields {
			efs = append(efs, encFromModel(&r.Fields[j]))
		}
		start := len(val)
		val = enc.appendValue(val, seq, efs)
		if err := batch.Set(key, val[start:], nil); err != nil {
			return err
		}
		ends = append(ends, len(val))
	}
	// As Apply: the index entries after the rows, each range ascending.
	for i := 0; withSeq && i < len(rows); i++ {
		r := &rows[i]
		sk = ks.appendSeqKey(sk[:0], firstSeq+uint64(i)+1)
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		sval = appendSeqValue(sval[:0], r.Series, r.Time, uuid.Nil, val[start:ends[i]])
		if err := batch.Set(sk, sval, nil); err != nil {
			return err
		}
	}
	return batch.Commit(pebble.Sync)
}

// BenchmarkApply measures Replica.Apply of 1000-row batches of new,
// time-ordered rows: writers on one replica (they contend on its applyMu
// and share fsyncs), and 4 writers each on its own replica; logvalues=off
// is a replica without targets (SetLogValues(false): legacy log entries).
func BenchmarkApply(b *testing.B) {
	cases := []struct {
		writers, replicas int
		noValues          bool
	}{{1, 1, false}, {1, 1, true}, {4, 1, false}, {4, 4, false}}
	for _, c := range cases {
		name := fmt.Sprintf("writers=%d/replicas=%d", c.writers, c.replicas)
		if c.noValues {
			name += "/logvalues=off"
		}
		b.Run(name, func(b *testing.B) {
			s := openBenchStore(b)
			reps := make([]*Replica, c.replicas)
			for i := range reps {
				reps[i] = createTestReplica(b, s)
				reps[i].SetLogValues(!c.noValues)
			}
			templates := make([][]model.Row, c.writers)
			for w := range templates {
				templates[w] = benchRows()
			}
			b.ReportAllocs()
			runWriters(b, s, c.writers, func(w int, i int64) error {
				rows := templates[w]
				setBenchTime(rows, i*benchInterval)
				res, err := reps[w%c.replicas].Apply(rows)
				if err == nil && res.Changed != benchBatch {
					err = fmt.Errorf("batch changed %d rows", res.Changed)
				}
				return err
			})
		})
	}
}

// BenchmarkApplyLate measures Replica.Apply of 1000-row batches of new
// rows older than the replica's newest (smeared inserts forwarded late, a
// push of rows another replica took first): every row is looked up before
// it is written. The replica holds 1,000 earlier batches 10 ms apart (the
// hot partition at "now": one storage bucket), flushed every 20 batches
// into overlapping sstables, as under a sustained load; each late batch
// lands between two stored ones.
func BenchmarkApplyLate(b *testing.B) {
	s := openBenchStore(b)
	r := createTestReplica(b, s)
	rows := benchRows()
	const stored, gap = 1000, int64(10e6)
	for i := int64(0); i < stored; i++ {
		setBenchTime(rows, i*gap)
		if _, err := r.Apply(rows); err != nil {
			b.Fatal(err)
		}
		if i%20 == 19 {
			if err := s.DB().Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	runWriters(b, s, 1, func(_ int, i int64) error {
		// 1 ns and up past a stored batch's time, cycling: absent keys.
		setBenchTime(rows, (i%stored)*gap+1+i/stored)
		res, err := r.Apply(rows)
		if err == nil && res.Changed != benchBatch {
			err = fmt.Errorf("batch changed %d rows", res.Changed)
		}
		return err
	})
}

// BenchmarkApplyReplay measures a batch whose rows are all already stored
// (a replication replay or client retry): all ties, nothing written.
func BenchmarkApplyReplay(b *testing.B) {
	s := openBenchStore(b)
	r := createTestReplica(b, s)
	rows := benchRows()
	setBenchTime(rows, 0)
	if _, err := r.Apply(rows); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	runWriters(b, s, 1, func(int, int64) error {
		res, err := r.Apply(rows)
		if err == nil && res.Changed != 0 {
			err = fmt.Errorf("replay changed %d rows", res.Changed)
		}
		return err
	})
}

// loadBenchData stores 100 series x 1000 points (100k rows, 10 s apart,
// about 146 storage buckets) and flushes them to sstables.
func loadBenchData(b *testing.B) *Replica {
	b.Helper()
	s := openBenchStore(b)
	r := createTestReplica(b, s)
	rows := benchRows()[:100]
	for i := int64(0); i < 1000; i++ {
		setBenchTime(rows, i*benchInterval)
		if _, err := r.Apply(rows); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.DB().Flush(); err != nil {
		b.Fatal(err)
	}
	return r
}

// benchLayouts are the ways BenchmarkScan and BenchmarkAggregate store
// loadBenchData: rows in the head, sealed into blocks (read by columns and
// summaries), and sealed but aggregated row by row as the head is.
var benchLayouts = []string{"head", "sealed", "sealed_rows"}

// loadBenchLayout is loadBenchData in layout.
func loadBenchLayout(b *testing.B, layout string) *Replica {
	b.Helper()
	r := loadBenchData(b)
	if layout == "head" {
		return r
	}
	if _, err := r.Seal(b.Context(), maxTime); err != nil {
		b.Fatal(err)
	}
	if err := r.store.DB().Compact(b.Context(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	r.store.rowAggregates = layout == "sealed_rows"
	return r
}

func BenchmarkScan(b *testing.B) {
	for _, layout := range benchLayouts[:2] {
		b.Run(layout, func(b *testing.B) { benchmarkScan(b, loadBenchLayout(b, layout)) })
	}
}

func benchmarkScan(b *testing.B, r *Replica) {
	cases := []struct {
		name string
		q    model.Query
		want int
	}{
		{"all_series", model.Query{From: minTime, To: maxTime}, 100_000},
		{"one_series", model.Query{From: minTime, To: maxTime, Series: benchSeries(7)}, 1000},
		// The peer harness's series_select: one field of one series.
		{"one_series_one_field", model.Query{From: minTime, To: maxTime, Series: benchSeries(7), Fields: []string{"usage_user"}}, 1000},
		{"one_series_10pct_time", model.Query{From: 0, To: 100 * benchInterval, Series: benchSeries(7)}, 100},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				rows, _, err := r.Scan(c.q)
				if err != nil || len(rows) != c.want {
					b.Fatalf("%d rows, %v; want %d", len(rows), err, c.want)
				}
			}
			b.ReportMetric(float64(b.N)*float64(c.want)/time.Since(start).Seconds(), "rows/s")
		})
	}
}

func BenchmarkAggregate(b *testing.B) {
	for _, layout := range benchLayouts {
		b.Run(layout, func(b *testing.B) { benchmarkAggregate(b, loadBenchLayout(b, layout)) })
	}
}

// aggCase is one query of the aggregate benchmarks, over rows rows.
type aggCase struct {
	name string
	q    model.Query
	rows int
}

func benchmarkAggregate(b *testing.B, r *Replica) {
	benchAggregateCases(b, r, []aggCase{
		{"per_series_step_60s", model.Query{From: minTime, To: maxTime, Step: 60e9}, 100_000},
		{"group_all_step_60s", model.Query{From: minTime, To: maxTime, Step: 60e9, GroupAll: true}, 100_000},
		{"one_series_one_field", model.Query{From: minTime, To: maxTime, Series: benchSeries(7), Fields: []string{"usage_user"}}, 1000},
		{"group_all_step_10m", model.Query{From: minTime, To: maxTime, Step: 600e9, GroupAll: true}, 100_000},
		{"group_all_step_60s_one_field", model.Query{From: minTime, To: maxTime, Step: 60e9, GroupAll: true, Fields: []string{"usage_user"}}, 100_000},
	})
}

// benchAggregateCases runs each case as a sub-benchmark reporting rows/s.
func benchAggregateCases(b *testing.B, r *Replica, cases []aggCase) {
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				if _, err := r.Aggregate(c.q); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*float64(c.rows)/time.Since(start).Seconds(), "rows/s")
		})
	}
}

// denseTicks and denseInterval are the dense benchmarks' time axis: a
// point of every series every 300 ms for 5 minutes.
const (
	denseTicks    = 1000
	denseInterval = int64(300e6)
)

// benchWalk gives benchRows' fields the peer harness's values: a random
// walk of two decimals per series and field.
type benchWalk struct {
	vals []float64
	rng  *rand.Rand
}

func newBenchWalk(series int) *benchWalk {
	return &benchWalk{vals: make([]float64, series*len(benchFieldNames)), rng: rand.New(rand.NewSource(1))}
}

// step moves every walk one step and sets rows' values to them.
func (w *benchWalk) step(rows []model.Row) {
	for j := range rows {
		for k := range rows[j].Fields {
			v := &w.vals[j*len(benchFieldNames)+k]
			*v = math.Round((*v+w.rng.Float64()-0.5)*100) / 100
			rows[j].Fields[k].Value = model.Float(*v)
		}
	}
}

// loadDenseBench writes the peer harness's shape in layout: 1,000 series
// of three float fields, a point every denseInterval for denseTicks (1 M
// rows, about 220 per series and storage bucket), values random walks of
// two decimals. "head" is the head as written (the memory head's rows
// unless TSDB_TEST_MEMHEAD=0), "sealed" its blocks.
func loadDenseBench(b *testing.B, layout string) *Replica {
	b.Helper()
	s := openBenchStore(b)
	r := createTestReplica(b, s)
	rows := benchRows()
	walk := newBenchWalk(len(rows))
	for i := range int64(denseTicks) {
		setBenchTime(rows, i*denseInterval)
		walk.step(rows)
		if _, err := r.Apply(rows); err != nil {
			b.Fatal(err)
		}
	}
	if layout == "sealed" {
		if _, err := r.Seal(b.Context(), maxTime); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

// BenchmarkAggregateDense aggregates the peer harness's shape (its
// agg_mean_1m, docs/performance.md; loadDenseBench).
func BenchmarkAggregateDense(b *testing.B) {
	for _, layout := range benchLayouts[:2] {
		b.Run(layout, func(b *testing.B) {
			r := loadDenseBench(b, layout)
			const to = denseTicks * denseInterval
			n := denseTicks * benchBatch
			// The data's range, as the harness asks (an open end is
			// walked by one goroutine).
			benchAggregateCases(b, r, []aggCase{
				{"group_all_step_60s_one_field", model.Query{From: 0, To: to, Step: 60e9, GroupAll: true, Fields: []string{"usage_user"}}, n},
				// What the HTTP API asks for agg=avg (no stddev asked).
				{"group_all_step_60s_one_field_no_variance", model.Query{From: 0, To: to, Step: 60e9, GroupAll: true,
					Fields: []string{"usage_user"}, NoVariance: true}, n},
				{"per_series_step_60s", model.Query{From: 0, To: to, Step: 60e9}, n},
				// The harness's series_count: one series, one bucket.
				{"one_series_count", model.Query{From: 0, To: to, Step: to, Series: benchSeries(42),
					Fields: []string{"usage_user"}, NoVariance: true}, denseTicks},
			})
		})
	}
}

// BenchmarkScanDense reads one series' raw points of one field from the
// peer harness's shape (its series_select; loadDenseBench), as the HTTP API
// asks (no versions), with the answer's memory allocated or lent by an
// arena that each query Resets.
func BenchmarkScanDense(b *testing.B) {
	for _, layout := range benchLayouts[:2] {
		b.Run(layout, func(b *testing.B) {
			r := loadDenseBench(b, layout)
			for _, lent := range []bool{false, true} {
				b.Run(map[bool]string{false: "alloc", true: "arena"}[lent], func(b *testing.B) {
					q := model.Query{From: 0, To: denseTicks * denseInterval, Series: benchSeries(42), Fields: []string{"usage_user"},
						Limit: 1_000_000, NoVersions: true}
					if lent {
						q.Arena = new(model.RowArena)
					}
					b.ReportAllocs()
					for b.Loop() {
						rows, _, err := r.Scan(q)
						if err != nil || len(rows) != denseTicks {
							b.Fatalf("%d rows, %v; want %d", len(rows), err, denseTicks)
						}
						if lent {
							q.Arena.Reset()
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*denseTicks), "ns/row")
				})
			}
		})
	}
}

func BenchmarkChecksum(b *testing.B) {
	r := loadBenchData(b)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		c, err := r.Checksum()
		if err != nil || c.Rows != 100_000 {
			b.Fatalf("%+v, %v", c, err)
		}
	}
	b.ReportMetric(float64(b.N)*100_000/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkTagFilter measures Scan and Aggregate with a tag predicate on
// loadBenchData (100 series, about 7 rows per series and storage bucket):
// seeking to the series the index lists (mode=seek) against walking every
// series and testing it once per bucket (mode=walk); mode=auto is the
// choice indexSeekRatio makes.
func BenchmarkTagFilter(b *testing.B) {
	r := loadBenchData(b)
	host := func(v string) *model.TagExpr { return &model.TagExpr{Op: model.TagEq, Key: "host", Value: v} }
	cases := []struct {
		name string
		tags *model.TagExpr
		rows int
	}{
		{"1of100", host("host_7"), 1000},
		{"11of100", &model.TagExpr{Op: model.TagMatch, Key: "host", Value: "^host_(7|[1-9]7)$"}, 10_000},
		{"50of100", &model.TagExpr{Op: model.TagMatch, Key: "host", Value: "[02468]$"}, 50_000},
	}
	saved := indexSeekRatio
	defer func() { indexSeekRatio = saved }()
	for _, c := range cases {
		for _, mode := range []struct {
			name  string
			ratio int
		}{{"auto", saved}, {"seek", 0}, {"walk", 1 << 30}} {
			b.Run("scan/"+c.name+"/mode="+mode.name, func(b *testing.B) {
				indexSeekRatio = mode.ratio
				q := model.Query{From: minTime, To: maxTime, Measurement: "cpu", Tags: c.tags}
				b.ReportAllocs()
				start := time.Now()
				for b.Loop() {
					rows, _, err := r.Scan(q)
					if err != nil || len(rows) != c.rows {
						b.Fatalf("%d rows, %v; want %d", len(rows), err, c.rows)
					}
				}
				b.ReportMetric(float64(b.N)*float64(c.rows)/time.Since(start).Seconds(), "rows/s")
			})
			b.Run("agg/"+c.name+"/mode="+mode.name, func(b *testing.B) {
				indexSeekRatio = mode.ratio
				q := model.Query{From: minTime, To: maxTime, Measurement: "cpu", Tags: c.tags, Step: 60e9, GroupBy: []string{"region"}}
				b.ReportAllocs()
				start := time.Now()
				for b.Loop() {
					if _, err := r.Aggregate(q); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)*float64(c.rows)/time.Since(start).Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkApplyNewSeries is BenchmarkApply's single writer where every
// batch holds 1000 series the replica has never stored: the worst case of
// the tag index (4 index keys per series).
func BenchmarkApplyNewSeries(b *testing.B) {
	s := openBenchStore(b)
	r := createTestReplica(b, s)
	rows := benchRows()
	b.ReportAllocs()
	runWriters(b, s, 1, func(_ int, i int64) error {
		setBenchTime(rows, i*benchInterval)
		for j := range rows {
			rows[j].Series = fmt.Sprintf("cpu,host=host_%d_%d,region=eu-west", i, j)
		}
		res, err := r.Apply(rows)
		if err == nil && res.Changed != benchBatch {
			err = fmt.Errorf("batch changed %d rows", res.Changed)
		}
		return err
	})
}

// BenchmarkReadLog measures the read of a whole replica's log (100k rows,
// flushed) in pages of 10,000 entries, as the pusher reads it: from the
// live replica and from a LogSnapshot (a mark).
func BenchmarkReadLog(b *testing.B) {
	r := loadBenchData(b)
	const total, page = 100_000, 10_000
	readAll := func(read func(after uint64, maxRows int) ([]LogEntry, error)) error {
		after, n := uint64(0), 0
		for {
			es, err := read(after, page)
			if err != nil {
				return err
			}
			if len(es) == 0 {
				break
			}
			n += len(es)
			after = es[len(es)-1].Seq
		}
		if n != total {
			return fmt.Errorf("read %d entries, want %d", n, total)
		}
		return nil
	}
	b.Run("live", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			if err := readAll(r.ReadLog); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)*total/time.Since(start).Seconds(), "rows/s")
	})
	b.Run("snapshot", func(b *testing.B) {
		ls, err := r.SnapshotLog()
		if err != nil {
			b.Fatal(err)
		}
		defer ls.Close()
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			if err := readAll(ls.ReadLog); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)*total/time.Since(start).Seconds(), "rows/s")
	})
}

// BenchmarkAggregateSparse is the harness's agg_mean_1m at 100,000
// series in miniature: 10,000 series of a row every 6.25 s, 100 rows each
// (about 11 per sealed block), the mean of one field over all series per
// minute. Its cost is per block, not per row: it measures opening,
// decoding and folding small blocks.
func BenchmarkAggregateSparse(b *testing.B) {
	const series, perSeries, interval = 10_000, 100, int64(6_250_000_000)
	s := openBenchStore(b)
	r := createTestReplica(b, s)
	rows := make([]model.Row, benchBatch)
	for i := 0; i < series*perSeries/benchBatch; i++ {
		for j := range rows {
			n := i*benchBatch + j
			h, tick := n%series, n/series
			rows[j] = model.Row{Series: benchSeries(h), Time: int64(tick)*interval + int64(h)*(interval/series)}
			v := model.Version{Wall: 1_700_000_000_000_000_000 + int64(n), Node: 1}
			rows[j].Fields = make([]model.Field, 0, len(benchFieldNames))
			for k, name := range benchFieldNames {
				rows[j].Fields = append(rows[j].Fields, model.Field{Name: name, Value: model.Float(float64(n%977) + float64(k)/4), Version: v})
			}
		}
		if _, err := r.Apply(rows); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := r.Seal(b.Context(), maxTime); err != nil {
		b.Fatal(err)
	}
	if err := s.DB().Compact(b.Context(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	// The data's range, as the harness asks (an open end is walked by one
	// goroutine).
	q := model.Query{From: 0, To: perSeries * interval, Step: 60e9, GroupAll: true, Fields: []string{"usage_user"}}
	sums := q
	sums.NoVariance, sums.SumsOnly = true, true // what the HTTP API asks for agg=avg
	for _, c := range []struct {
		name string
		q    model.Query
	}{{"variance", q}, {"sums_only", sums}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				res, err := r.Aggregate(c.q)
				if err != nil || len(res) != 1 {
					b.Fatalf("%d series, %v", len(res), err)
				}
			}
			b.ReportMetric(float64(b.N)*series*perSeries/time.Since(start).Seconds(), "rows/s")
		})
	}
	// The harness's series_count: one series' count over the whole range
	// in one step, its rows in a block of each of about ten storage buckets.
	one := model.Query{From: 0, To: perSeries * interval, Step: perSeries * interval, Series: benchSeries(42),
		Fields: []string{"usage_user"}, NoVariance: true, SumsOnly: true}
	b.Run("one_series_count", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := r.Aggregate(one)
			if err != nil || len(res) != 1 {
				b.Fatalf("%d series, %v", len(res), err)
			}
		}
	})
}

// BenchmarkReadChunkNarrow reads a chunk of a range as narrow as a
// pre-split child's (one second) out of a memory head holding 1,000
// series of 2,000 rows each in one storage bucket: the range's rows are
// what the read costs, not its bucket's (a reader seeks past each series'
// rows outside the range: RowRange.skipKey).
func BenchmarkReadChunkNarrow(b *testing.B) {
	s := openMemStore(b, nil, b.TempDir(), 0)
	r := createTestReplica(b, s)
	const series, perSeries, step = 1000, 2000, int64(25e6) // 25 ms: 50 s of rows
	base := int64(10 << bucketShift)
	batch := make([]model.Row, 0, series)
	for i := range perSeries {
		batch = batch[:0]
		for j := range series {
			batch = append(batch, row(fmt.Sprintf("cpu,host=h%04d", j), base+int64(i)*step, fl("v", float64(i), 1)))
		}
		mustApply(b, r, batch...)
	}
	ls, err := r.SnapshotLog()
	if err != nil {
		b.Fatal(err)
	}
	defer ls.Close()
	begin, end := base+20e9, base+21e9
	want := series * int((end-begin)/step)
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		c, err := ls.ReadChunk(buf[:0], nil, RowRange{Begin: &begin, End: &end}, 0)
		if err != nil {
			b.Fatal(err)
		}
		if c.Rows != want {
			b.Fatalf("%d rows, want %d", c.Rows, want)
		}
		buf = c.Data
	}
}

// BenchmarkSealMemory seals storage buckets held in the memory head, each
// with the peer harness's shape (1,000 series of three float fields,
// random walks of two decimals, a point every 100 ms for 50 s: 500 rows
// a series and 500,000 a bucket), as the sealer does while the harness
// writes 10 M points. It reports ns and bytes allocated per row sealed;
// the writes of each bucket are outside the timing.
func BenchmarkSealMemory(b *testing.B) {
	const ticks, interval = 500, int64(100e6)
	s := openBenchStore(b)
	if !s.memoryHead {
		b.Skip("no memory head (TSDB_TEST_MEMHEAD=0)")
	}
	r := createTestReplica(b, s)
	rows := benchRows()
	walk := newBenchWalk(len(rows))
	first := timeBucket(0) + 1
	var sealed int
	var sealTime time.Duration
	var ms0, ms1 runtime.MemStats
	var alloc uint64
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		bk := first + uint32(i)
		for k := range int64(ticks) {
			setBenchTime(rows, bucketStart(bk)+k*interval)
			walk.step(rows)
			if _, err := r.Apply(rows); err != nil {
				b.Fatal(err)
			}
		}
		runtime.ReadMemStats(&ms0)
		b.StartTimer()
		start := time.Now()
		st, err := r.Seal(b.Context(), bucketStart(bk+1))
		sealTime += time.Since(start)
		b.StopTimer()
		runtime.ReadMemStats(&ms1)
		alloc += ms1.TotalAlloc - ms0.TotalAlloc
		if err != nil {
			b.Fatal(err)
		}
		if st.Rows != ticks*benchBatch {
			b.Fatalf("sealed %d rows, want %d", st.Rows, ticks*benchBatch)
		}
		sealed += st.Rows
		b.StartTimer()
	}
	b.ReportMetric(float64(sealTime.Nanoseconds())/float64(sealed), "ns/row")
	b.ReportMetric(float64(alloc)/float64(sealed), "B/row")
}

// BenchmarkDropCoveredParent drops a split parent whose children on the
// same store cover its range, with the peer harness's shape in the memory
// head (1,000 series of three float fields, a point every 100 ms for 50
// s of one storage bucket: 500,000 rows, all the parent's): the drop
// writes every row as a merge operand of pebble's head, their durable
// form once the parent's log is deleted. It reports ns and bytes
// allocated per row of the drop.
func BenchmarkDropCoveredParent(b *testing.B) {
	const ticks, interval = 500, int64(100e6)
	var rowsDropped int
	var dropTime time.Duration
	var alloc uint64
	for b.Loop() {
		b.StopTimer()
		s, err := Open(Options{MemoryHead: true, Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		parent := createSharingReplica(b, s, nil, nil)
		rows := benchRows()
		start := bucketStart(timeBucket(0) + 1)
		for k := range int64(ticks) {
			setBenchTime(rows, start+k*interval)
			if _, err := parent.Apply(rows); err != nil {
				b.Fatal(err)
			}
		}
		mid := start + ticks*interval/2
		createSharingReplica(b, s, nil, &mid)
		createSharingReplica(b, s, &mid, nil)
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		drained := s.MemoryHeadDrainedRows()
		b.StartTimer()
		t0 := time.Now()
		err = s.DropReplica(parent.Info().Placement)
		dropTime += time.Since(t0)
		b.StopTimer()
		runtime.ReadMemStats(&ms1)
		alloc += ms1.TotalAlloc - ms0.TotalAlloc
		if err != nil {
			b.Fatal(err)
		}
		if n := s.MemoryHeadDrainedRows() - drained; n != ticks*benchBatch {
			b.Fatalf("the drop wrote %d rows, want %d", n, ticks*benchBatch)
		}
		rowsDropped += ticks * benchBatch
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(dropTime.Nanoseconds())/float64(rowsDropped), "ns/row")
	b.ReportMetric(float64(alloc)/float64(rowsDropped), "B/row")
}

// BenchmarkMemHeadInsert measures the memory head's insert of an Apply's
// written rows alone (Replica.insertMem, under the space lock in a
// server): batches of 1,000 rows of the peer harness's shape, one per
// series, a tick 100 ms apart, values random walks of two decimals, the
// bucket before kept as a server keeps it until its seal. With
// evict=8MiB the benchmark writes 8 MiB of other memory between batches,
// as the rest of a server's insert path (the parse, the log record,
// pebble's memtable and WAL) does, so that the series' memory is no
// longer in the core's caches when the next batch reaches it: the case of
// the 10 M write's profile. It reports ns per row of the insert alone.
// TSDB_BENCH_SERIES=N takes the first N series only (10 or 100: what
// the insert costs with every series in the core's nearer caches).
func BenchmarkMemHeadInsert(b *testing.B) {
	for _, evict := range []int{0, 8 << 20} {
		b.Run(fmt.Sprintf("evict=%dMiB", evict>>20), func(b *testing.B) {
			s := openBenchStore(b)
			r := createTestReplica(b, s)
			rows := benchRows()
			if n := os.Getenv("TSDB_BENCH_SERIES"); n != "" {
				k, err := strconv.Atoi(n)
				if err != nil || k < 1 || k > len(rows) {
					b.Fatalf("TSDB_BENCH_SERIES=%q: want 1 to %d", n, len(rows))
				}
				rows = rows[:k]
			}
			walk := newBenchWalk(len(rows))
			h := newMemHead()
			sc := &applyScratch{}
			var (
				enc  valueEncoder
				efs  []encField
				junk = make([]byte, evict)
				seq  uint64
				took time.Duration
			)
			const interval = int64(100e6)
			bk := timeBucket(0) + 1
			t := bucketStart(bk)
			for b.Loop() {
				t += interval
				if tb := timeBucket(t); tb != bk {
					// Keep the bucket before (series are sized from it)
					// and drop the one before that, as its seal would.
					h.mu.Lock()
					delete(h.buckets, bk-1)
					h.mu.Unlock()
					bk = tb
				}
				setBenchTime(rows, t)
				walk.step(rows)
				sc.vals, sc.valEnds, sc.written = sc.vals[:0], sc.valEnds[:0], sc.written[:0]
				for i := range rows {
					efs = efs[:0]
					for j := range rows[i].Fields {
						efs = append(efs, encFromModel(&rows[i].Fields[j]))
					}
					sc.vals = enc.appendValue(sc.vals, seq+uint64(i)+1, efs)
					sc.valEnds = append(sc.valEnds, int32(len(sc.vals)))
					sc.written = append(sc.written, int32(i))
				}
				for i := 0; i < len(junk); i += 64 {
					junk[i]++
				}
				start := time.Now()
				r.insertMem(h, sc, rows, seq)
				took += time.Since(start)
				seq += uint64(len(rows))
			}
			b.ReportMetric(float64(took.Nanoseconds())/float64(b.N*len(rows)), "ns/row")
		})
	}
}
