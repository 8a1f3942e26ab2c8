package smear

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/replication"
)

// codec is the production row codec (tests only import replication).
var codec = CodecFuncs{Append: replication.AppendRows, Decode: replication.DecodeRows}

// waitLong bounds every poll; the tests assert outcomes, not timings.
const waitLong = 30 * time.Second

// testOptions returns queue options for tests: the real codec, the
// metrics the test can read, and no logging unless -v.
func testOptions(t testing.TB) Options {
	return Options{Codec: codec, Metrics: NewMetrics(nil), Logger: testLogger(t)}
}

// clockedOptions returns testOptions on a settable clock that starts at
// a fixed time (Unix 1,700,000,000).
func clockedOptions(t testing.TB) (*clock, Options) {
	clk := newClock(time.Unix(1_700_000_000, 0))
	opts := testOptions(t)
	opts.Now = clk.Now
	return clk, opts
}

func openQueue(t testing.TB, dir string, opts Options) *Queue {
	t.Helper()
	q, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// makeRows returns n rows of one batch: distinct series and times, two
// fields of different kinds, each with its own version.
func makeRows(batch, n int) []model.Row {
	rows := make([]model.Row, n)
	for i := range rows {
		v := model.Version{Wall: int64(1_000_000 + batch*10_000 + i), Node: uint64(7 + i%3)}
		rows[i] = model.Row{
			Time:   int64(1_700_000_000_000_000_000 + batch*1000 + i),
			Series: fmt.Sprintf("cpu,batch=%d,host=h%d", batch, i),
			Fields: []model.Field{
				{Name: "usage", Value: model.Float(float64(i) + 0.5), Version: v},
				{Name: "zone", Value: model.String(fmt.Sprintf("z%d", i%4)), Version: model.Version{Wall: v.Wall + 1, Node: v.Node}},
			},
		}
	}
	return rows
}

// rowKey identifies a row for delivery bookkeeping.
func rowKey(r model.Row) string { return fmt.Sprintf("%s@%d", r.Series, r.Time) }

// clock is a settable clock for Options.Now.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *clock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// storedEntries reads every entry under the entry namespace, decoded.
func storedEntries(t testing.TB, q *Queue) []*entry {
	t.Helper()
	it, err := q.db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsEntry}, UpperBound: []byte{nsEntry + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []*entry
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			t.Fatal(err)
		}
		e, err := q.decodeEntry(it.Key(), v)
		if err != nil {
			t.Fatalf("stored entry %x: %v", it.Key(), err)
		}
		out = append(out, e)
	}
	return out
}

// recorder is a Sender that records every row it accepts and can fail
// calls or rows through a hook.
type recorder struct {
	mu struct {
		sync.Mutex
		calls    int
		rows     map[string][]model.Row // accepted, by rowKey
		tables   map[string]string      // rowKey → table
		callSize []int
		order    []string // rowKeys in the order accepted
	}
	// fail, when set, decides per call: a non-nil error fails the whole
	// call; otherwise rowFail says per row.
	fail    func(call int, table string, rows []model.Row) error
	rowFail func(table string, r model.Row) error
	block   chan struct{} // when set, Forward waits on it or ctx
}

func newRecorder() *recorder {
	r := &recorder{}
	r.mu.rows = make(map[string][]model.Row)
	r.mu.tables = make(map[string]string)
	return r
}

func (s *recorder) Forward(ctx context.Context, table string, rows []model.Row) ([]error, error) {
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	call := s.mu.calls
	s.mu.calls++
	s.mu.callSize = append(s.mu.callSize, len(rows))
	if s.fail != nil {
		if err := s.fail(call, table, rows); err != nil {
			return nil, err
		}
	}
	var errs []error
	for i, r := range rows {
		if s.rowFail != nil {
			if err := s.rowFail(table, r); err != nil {
				if errs == nil {
					errs = make([]error, len(rows))
				}
				errs[i] = err
				continue
			}
		}
		k := rowKey(r)
		s.mu.rows[k] = append(s.mu.rows[k], r)
		s.mu.tables[k] = table
		s.mu.order = append(s.mu.order, k)
	}
	return errs, nil
}

func (s *recorder) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.rows)
}

// checkDelivered fails unless every row of want was accepted, for its
// table, exactly as enqueued (versions included).
func (s *recorder) checkDelivered(t testing.TB, want map[string][]model.Row) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for table, rows := range want {
		for _, r := range rows {
			k := rowKey(r)
			got := s.mu.rows[k]
			if len(got) == 0 {
				t.Fatalf("row %s of %s never delivered", k, table)
			}
			if s.mu.tables[k] != table {
				t.Fatalf("row %s delivered for table %q, want %q", k, s.mu.tables[k], table)
			}
			for _, g := range got {
				if !reflect.DeepEqual(g, r) {
					t.Fatalf("row %s delivered as %+v, want %+v", k, g, r)
				}
			}
		}
	}
}

// eventually polls cond until it holds or waitLong passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// runForwarder runs f.Run in a goroutine and returns a stop function that
// cancels it and returns Run's result.
func runForwarder(t testing.TB, f *Forwarder) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(waitLong):
				t.Fatalf("Run did not return after cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// fastForwarder returns options with small intervals for tests.
func fastForwarder() ForwarderOptions {
	return ForwarderOptions{
		PollInterval:   2 * time.Millisecond,
		InitialBackoff: time.Millisecond,
		MaxBackoff:     5 * time.Millisecond,
	}
}

func metricValue(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

// testLogger logs through t with -v and discards otherwise.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startedAdmission returns an admission state with the default options,
// its clock started by a first tick at now (ns).
func startedAdmission(now int64) *admission {
	o := Options{}
	o.EnsureDefaults()
	a := newAdmission(&o)
	a.update(now, true)
	return &a
}
