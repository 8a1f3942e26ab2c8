package partition

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// memHeadTests makes the tests' stores keep a memory head
// (Options.MemoryHead), as tsdb server's do by default; with
// TSDB_TEST_MEMHEAD=0 the whole suite runs without one (make test runs
// it both ways).
var memHeadTests = os.Getenv("TSDB_TEST_MEMHEAD") != "0"

// drainMem writes every memory head's rows to pebble's head (nothing
// without a memory head), for tests that read pebble's keys.
func drainMem(t testing.TB, s *Store) {
	t.Helper()
	for _, r := range s.Replicas() {
		for r.applyMu.mem != nil && r.store.MemoryHeadBytes() > 0 && !r.dropped.Load() {
			before := r.store.MemoryHeadBytes()
			if err := r.drainOldestBucket(); err != nil {
				t.Fatalf("drain the memory head: %v", err)
			}
			if r.store.MemoryHeadBytes() == before {
				break // another space's
			}
		}
	}
}

// countHeadRows counts r's data space's head rows: its row keys in
// pebble and its rows in the memory head.
func countHeadRows(t *testing.T, r *Replica) int {
	t.Helper()
	n := countKeys(t, r.store.db, r.ks.rowLo, r.ks.rowHi)
	if v := r.memView(nil, nil); v != nil {
		for _, b := range v.buckets {
			for _, s := range b.series {
				n += len(s.rows)
			}
		}
	}
	return n
}

// openTestStore opens a store in dir (a fresh temp dir when empty) and
// closes it at the end of the test.
func openTestStore(t testing.TB, dir string) *Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openPlainStore is openTestStore without a memory head, whatever
// TSDB_TEST_MEMHEAD says: for the tests of what a store without one writes
// (the tail-only log, legacy upgrades, row keys in pebble, the format
// marker).
func openPlainStore(t testing.TB, dir string) *Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s, err := Open(Options{Dir: dir, MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testInfo(p uuid.UUID) ReplicaInfo {
	return ReplicaInfo{Placement: p, Table: "metrics", PartitionID: uuid.New()}
}

// sharingTable is the creation time of the table of createSharingReplica:
// replicas of a table whose creation time is known share a data space
// when their ranges overlap (space.go).
var sharingTable = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// createSharingReplica creates a replica of [begin, end) of the table
// "metrics" created at sharingTable: it joins the data space of the live
// replicas of s whose ranges overlap it.
func createSharingReplica(t testing.TB, s *Store, begin, end *int64) *Replica {
	t.Helper()
	info := testInfo(uuid.New())
	info.Begin, info.End, info.TableCreatedAt = begin, end, sharingTable
	r, err := s.CreateReplica(info)
	if err != nil {
		t.Fatalf("CreateReplica: %v", err)
	}
	return r
}

// holdDrop starts the drop of r and returns once the drop holds the data
// space's apply lock (in dropLocked, r marked dropped); finish lets it go
// on and returns its error, and may be called more than once.
func holdDrop(s *Store, r *Replica) (finish func() error) {
	entered, release := make(chan struct{}), make(chan struct{})
	r.hookDropLocked = func() {
		close(entered)
		<-release
	}
	dropped := make(chan error, 1)
	go func() { dropped <- s.DropReplica(r.Info().Placement) }()
	<-entered
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			close(release)
			err = <-dropped
		})
		return err
	}
}

func createTestReplica(t testing.TB, s *Store) *Replica {
	t.Helper()
	r, err := s.CreateReplica(testInfo(uuid.New()))
	if err != nil {
		t.Fatalf("CreateReplica: %v", err)
	}
	return r
}

func ver(wall int64) model.Version { return model.Version{Wall: wall, Node: 1} }

func fl(name string, v float64, wall int64) model.Field {
	return model.Field{Name: name, Value: model.Float(v), Version: ver(wall)}
}

func row(series string, t int64, fields ...model.Field) model.Row {
	return model.Row{Time: t, Series: series, Fields: fields}
}

func mustApply(t testing.TB, r *Replica, rows ...model.Row) ApplyResult {
	t.Helper()
	res, err := r.Apply(rows)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

func scanAll(t testing.TB, r *Replica) []model.Row {
	t.Helper()
	rows, truncated, err := r.Scan(model.Query{From: minTime, To: maxTime})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if truncated {
		t.Fatal("Scan without a limit reported truncated")
	}
	return rows
}

const (
	minTime = -1 << 63
	maxTime = 1<<63 - 1
)

// newSeededRand returns a random source seeded from the clock and logs the
// seed; TSDB_TEST_SEED=<seed> replays a failed run.
func newSeededRand(t testing.TB) *rand.Rand {
	seed := time.Now().UnixNano()
	if s := os.Getenv("TSDB_TEST_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("TSDB_TEST_SEED: %v", err)
		}
	}
	t.Logf("seed %d", seed)
	return rand.New(rand.NewSource(seed))
}

// rowKey identifies a row in the naive model.
type rowKey struct {
	series string
	t      int64
}

// naiveModel is the reference the tests compare the store with: a map of
// rows merged field by field under last-writer-wins.
type naiveModel map[rowKey]map[string]model.Field

// apply merges rows and reports how many rows changed.
func (m naiveModel) apply(rows []model.Row) int {
	changed := map[rowKey]bool{}
	for _, r := range rows {
		k := rowKey{r.Series, r.Time}
		fs := m[k]
		if fs == nil {
			fs = map[string]model.Field{}
			m[k] = fs
		}
		for _, f := range r.Fields {
			old, ok := fs[f.Name]
			if !ok || old.Version.Less(f.Version) {
				fs[f.Name] = f
				changed[k] = true
			}
		}
	}
	return len(changed)
}

// rows returns the model's rows sorted by (time, series), fields by name.
func (m naiveModel) rows() []model.Row {
	var out []model.Row
	for k, fs := range m {
		r := model.Row{Time: k.t, Series: k.series}
		for _, f := range fs {
			r.Fields = append(r.Fields, f)
		}
		slices.SortFunc(r.Fields, func(a, b model.Field) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, r)
	}
	sortRows(out)
	return out
}

// foldLog folds log entries into rows, field by field by version (rule
// 2), sorted as sortRows does: what a receiver of the whole log holds.
func foldLog(entries []LogEntry) []model.Row {
	folded := map[string]model.Row{}
	for _, e := range entries {
		k := fmt.Sprintf("%s@%d", e.Row.Series, e.Row.Time)
		f, ok := folded[k]
		if !ok {
			f = model.Row{Series: e.Row.Series, Time: e.Row.Time}
		}
		f.Fields = mergeIncoming(f.Fields, normalized(e.Row.Fields))
		folded[k] = f
	}
	out := make([]model.Row, 0, len(folded))
	for _, row := range folded {
		out = append(out, row)
	}
	sortRows(out)
	return out
}

func sortRows(rows []model.Row) {
	slices.SortFunc(rows, func(a, b model.Row) int {
		if a.Time != b.Time {
			return cmpInt64(a.Time, b.Time)
		}
		return strings.Compare(a.Series, b.Series)
	})
}

// sameRows compares rows exactly, floats by bit pattern.
func sameRows(a, b []model.Row) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d rows, want %d", len(a), len(b))
	}
	for i := range a {
		if err := sameRow(a[i], b[i]); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
	}
	return nil
}

func sameRow(a, b model.Row) error {
	if a.Time != b.Time || a.Series != b.Series || len(a.Fields) != len(b.Fields) {
		return fmt.Errorf("got %s@%d with %d fields, want %s@%d with %d fields",
			a.Series, a.Time, len(a.Fields), b.Series, b.Time, len(b.Fields))
	}
	for j := range a.Fields {
		fa, fb := a.Fields[j], b.Fields[j]
		if fa.Name != fb.Name || fa.Version != fb.Version || !fa.Value.Equal(fb.Value) {
			return fmt.Errorf("%s@%d: field %d = %+v, want %+v", a.Series, a.Time, j, fa, fb)
		}
	}
	return nil
}

// randValue returns a random value of any kind.
func randValue(rng *rand.Rand) model.Value {
	switch rng.Intn(4) {
	case 0:
		return model.Int(int64(rng.Intn(200) - 100))
	case 1:
		return model.Bool(rng.Intn(2) == 0)
	case 2:
		return model.String([]string{"", "a", "bb", "ccc"}[rng.Intn(4)])
	}
	return model.Float(float64(rng.Intn(200)-100) / 4)
}

// randRows returns n random rows over a small key space so that rows
// collide and overwrite each other. Times spread over many storage buckets
// on both sides of 0.
func randRows(rng *rand.Rand, n int, series []string, times []int64) []model.Row {
	fields := []string{"a", "b", "c", "d"}
	rows := make([]model.Row, n)
	for i := range rows {
		r := model.Row{Series: series[rng.Intn(len(series))], Time: times[rng.Intn(len(times))]}
		for _, f := range fields {
			if rng.Intn(2) == 0 {
				r.Fields = append(r.Fields, model.Field{Name: f, Value: randValue(rng),
					Version: model.Version{Wall: int64(1 + rng.Intn(5)), Node: uint64(1 + rng.Intn(2))}})
			}
		}
		if len(r.Fields) == 0 {
			r.Fields = append(r.Fields, model.Field{Name: "a", Value: randValue(rng), Version: ver(1)})
		}
		rows[i] = r
	}
	return rows
}

var testSeries = []string{"cpu", "cpu,host=a", "cpu,host=b", "cpu,host=b,region=eu", "disk", "disk,host=a", "mem"}

// testTimes spans many storage buckets, negative times and the extremes.
func testTimes(rng *rand.Rand, n int) []int64 {
	times := []int64{minTime, minTime + 1, -1, 0, 1, maxTime - 1, maxTime, 1 << bucketShift, 1<<bucketShift - 1}
	for len(times) < n {
		bucket := int64(rng.Intn(20) - 10)
		times = append(times, bucket<<bucketShift+rng.Int63n(1<<bucketShift))
	}
	return times
}

// randomReplica fills a new replica with 1000 random rows (10 batches over
// testSeries and 60 random times) and returns it with the rows the naive
// model holds, the seeded source and the times used.
func randomReplica(t testing.TB) (*Replica, []model.Row, *rand.Rand, []int64) {
	t.Helper()
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	rng := newSeededRand(t)
	times := testTimes(rng, 60)
	m := naiveModel{}
	for i := 0; i < 10; i++ {
		batch := randRows(rng, 100, testSeries, times)
		m.apply(batch)
		mustApply(t, r, batch...)
	}
	return r, m.rows(), rng, times
}

// lookingUp makes r read every row before writing it (Replica.lookUpAlways),
// for the tests of what that read decides.
func lookingUp(r *Replica) *Replica {
	r.lookUpAlways = true
	return r
}

// Store churn for the differential tests: what a store's rows go through
// between two reads.
const (
	churnFlush = iota
	churnCompact
	churnReopen
)

// churn flushes, compacts or reopens (closing them first) the stores in
// dirs, and returns the stores open afterwards.
func churn(t *testing.T, what int, stores []*Store, dirs []string) []*Store {
	t.Helper()
	for i, s := range stores {
		var err error
		switch what {
		case churnFlush:
			err = s.DB().Flush()
		case churnCompact:
			err = s.DB().Compact(t.Context(), []byte{0}, []byte{0xff}, true)
		case churnReopen:
			if err = s.Close(); err == nil {
				stores[i] = openTestStore(t, dirs[i])
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return stores
}

// twinReplicas opens a store in each of dirs and creates the same
// placement in both: the two sides of a differential test.
func twinReplicas(t *testing.T, dirs ...string) (stores []*Store, info ReplicaInfo, reps []*Replica) {
	t.Helper()
	info = testInfo(uuid.New())
	for _, dir := range dirs {
		s := openTestStore(t, dir)
		r, err := s.CreateReplica(info)
		if err != nil {
			t.Fatal(err)
		}
		stores, reps = append(stores, s), append(reps, r)
	}
	return stores, info, reps
}
