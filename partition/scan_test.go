package partition

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// naiveScan is the reference implementation of Scan over all, the rows
// of a naiveModel sorted by (time, series).
func naiveScan(all []model.Row, q model.Query) ([]model.Row, bool) {
	var out []model.Row
	for _, r := range all {
		if r.Time < q.From || (r.Time >= q.To && q.To != maxTime) {
			continue
		}
		if !naiveSeriesMatch(r.Series, q.Series, q.Prefix) || !naiveTagMatch(r.Series, q) {
			continue
		}
		if len(q.Fields) > 0 {
			var kept []model.Field
			for _, f := range r.Fields {
				for _, name := range q.Fields {
					if f.Name == name {
						kept = append(kept, f)
						break
					}
				}
			}
			if len(kept) == 0 {
				continue
			}
			r.Fields = kept
		}
		out = append(out, r)
	}
	if q.Limit > 0 && len(out) > q.Limit {
		return out[:q.Limit], true
	}
	return out, false
}

func naiveSeriesMatch(series, want string, prefix bool) bool {
	switch {
	case want == "":
		return true
	case prefix:
		return strings.HasPrefix(series, want)
	}
	return series == want
}

// naiveTags splits a test series (nothing escaped) into measurement and
// tags by hand.
func naiveTags(series string) (string, map[string]string) {
	parts := strings.Split(series, ",")
	tags := map[string]string{}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		tags[k] = v
	}
	return parts[0], tags
}

// naiveTagMatch is the reference of q's Measurement and Tags.
func naiveTagMatch(series string, q model.Query) bool {
	m, tags := naiveTags(series)
	if q.Measurement != "" && m != q.Measurement {
		return false
	}
	return q.Tags == nil || naiveEval(q.Tags, tags)
}

func naiveEval(e *model.TagExpr, tags map[string]string) bool {
	switch e.Op {
	case model.TagAnd:
		for i := range e.Args {
			if !naiveEval(&e.Args[i], tags) {
				return false
			}
		}
		return true
	case model.TagOr:
		for i := range e.Args {
			if naiveEval(&e.Args[i], tags) {
				return true
			}
		}
		return false
	case model.TagEq:
		return tags[e.Key] == e.Value
	case model.TagNeq:
		return tags[e.Key] != e.Value
	case model.TagMatch:
		return regexp.MustCompile(e.Value).MatchString(tags[e.Key])
	case model.TagNotMatch:
		return !regexp.MustCompile(e.Value).MatchString(tags[e.Key])
	}
	panic("unknown op " + e.Op)
}

// randTagExpr returns a random predicate over the tags of testSeries.
func randTagExpr(rng *rand.Rand, depth int) model.TagExpr {
	if depth < 2 && rng.Intn(3) == 0 {
		op := []model.TagOp{model.TagAnd, model.TagOr}[rng.Intn(2)]
		return model.TagExpr{Op: op, Args: []model.TagExpr{randTagExpr(rng, depth+1), randTagExpr(rng, depth+1)}}
	}
	key := []string{"host", "region", "zone"}[rng.Intn(3)]
	switch op := []model.TagOp{model.TagEq, model.TagNeq, model.TagMatch, model.TagNotMatch}[rng.Intn(4)]; op {
	case model.TagMatch, model.TagNotMatch:
		return model.TagExpr{Op: op, Key: key, Value: []string{"^a$", "b", "^$", "e.", "."}[rng.Intn(5)]}
	default:
		return model.TagExpr{Op: op, Key: key, Value: []string{"a", "b", "eu", ""}[rng.Intn(4)]}
	}
}

// randSelect sets a random Measurement and Tags on q, often none.
func randSelect(rng *rand.Rand, q *model.Query) {
	if rng.Intn(2) == 0 {
		q.Measurement = []string{"cpu", "disk", "mem", "cp", "nope"}[rng.Intn(5)]
	}
	if rng.Intn(2) == 0 {
		e := randTagExpr(rng, 0)
		q.Tags = &e
	}
}

func randTimeBound(rng *rand.Rand, times []int64) int64 {
	switch rng.Intn(5) {
	case 0:
		return minTime
	case 1:
		return maxTime
	case 2:
		return times[rng.Intn(len(times))] + int64(rng.Intn(3)-1)
	}
	return times[rng.Intn(len(times))]
}

func randScanQuery(rng *rand.Rand, times []int64) model.Query {
	q := model.Query{From: randTimeBound(rng, times), To: randTimeBound(rng, times)}
	if rng.Intn(3) == 0 && q.From > q.To {
		q.From, q.To = q.To, q.From
	}
	switch rng.Intn(4) {
	case 0:
		q.Series = testSeries[rng.Intn(len(testSeries))]
	case 1:
		q.Series = []string{"cpu", "cpu,host=b", "d", "x", "cpu,"}[rng.Intn(5)]
		q.Prefix = true
	case 2:
		q.Series = "nope"
	}
	q.Fields = [][]string{nil, nil, {"a"}, {"b", "d"}, {"zz"}, {}}[rng.Intn(6)]
	randSelect(rng, &q)
	q.Limit = []int{0, 0, 1, 3, 10, 1000}[rng.Intn(6)]
	return q
}

// TestScanRandomAgainstModel compares Scan with the naive model on random
// data spread over many storage buckets, negative times and the extremes.
func TestScanRandomAgainstModel(t *testing.T) {
	r, all, rng, times := randomReplica(t)
	// At least 600 queries, and more (up to 3,000) until enough of them
	// answered rows and were truncated: the tag filters of randSelect make
	// many answers empty, so a fixed count would be too weak for some seeds.
	nonEmpty, truncs, n := 0, 0, 0
	for ; n < 600 || (n < 3000 && (nonEmpty < 100 || truncs < 20)); n++ {
		got, truncated := scanAgainstModel(t, r, all, randScanQuery(rng, times))
		if len(got) > 0 {
			nonEmpty++
		}
		if truncated {
			truncs++
		}
	}
	t.Logf("%d of %d queries returned rows, %d truncated", nonEmpty, n, truncs)
	if nonEmpty < 100 || truncs < 20 {
		t.Fatalf("random queries too weak: %d non-empty, %d truncated", nonEmpty, truncs)
	}
}

// TestScanWithArena: a scan whose rows an arena lends (model.RowArena)
// answers as the model does; a second scan with the same arena before its
// Reset leaves the first's answer as it was (the partitions of one query
// share an arena), and scans after a Reset reuse its memory. Half the
// buckets are sealed, half in the head, and a second batch of rows over
// the sealed ones lies in the head over blocks.
func TestScanWithArena(t *testing.T) {
	r, all, rng, times := randomReplica(t)
	slices.Sort(times)
	if _, err := r.Seal(t.Context(), times[len(times)/2]); err != nil {
		t.Fatal(err)
	}
	m := naiveModel{}
	m.apply(all)
	batch := randRows(rng, 100, testSeries, times)
	m.apply(batch)
	mustApply(t, r, batch...)
	all = m.rows()
	arena := new(model.RowArena)
	reused := 0
	for range 300 {
		q1, q2 := randScanQuery(rng, times), randScanQuery(rng, times)
		q1.Arena, q2.Arena = arena, arena
		first, _ := scanAgainstModel(t, r, all, q1)
		scanAgainstModel(t, r, all, q2)
		want, _ := naiveScan(all, q1)
		if err := sameRows(first, want); err != nil {
			t.Fatalf("query %+v, after a second scan with the arena: %v", q1, err)
		}
		arena.Reset()
		again, _ := scanAgainstModel(t, r, all, q1)
		if cap(again) > 0 && cap(first) > 0 && &again[:1][0] == &first[:1][0] {
			reused++
		}
		arena.Reset()
	}
	if reused == 0 {
		t.Fatal("no scan after a Reset reused the arena's rows")
	}
}

func TestScanDenseBuckets(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	m := naiveModel{}
	// Three series, a point every 7 s over ~10 storage buckets around 0.
	var batch []model.Row
	for ts := int64(-350e9); ts < 350e9; ts += 7e9 {
		for _, series := range []string{"a", "b", "c"} {
			batch = append(batch, row(series, ts, fl("v", float64(ts/1e9), 1)))
		}
	}
	m.apply(batch)
	mustApply(t, r, batch...)
	tests := []model.Query{
		{From: -100e9, To: 100e9},
		{From: -100e9, To: 100e9, Series: "b"},
		{From: -1, To: 1},
		{From: -100e9 + 1, To: 200e9 - 1, Series: "c", Limit: 5},
		{From: minTime, To: maxTime, Limit: 300},
		{From: 5, To: 5},
		{From: 5, To: 4},
	}
	for _, q := range tests {
		scanAgainstModel(t, r, m.rows(), q)
	}
}

// scanAgainstModel scans q on r and fails t unless the rows and the
// truncation are the naive model's over all; it returns them.
func scanAgainstModel(t *testing.T, r *Replica, all []model.Row, q model.Query) ([]model.Row, bool) {
	t.Helper()
	got, truncated, err := r.Scan(q)
	if err != nil {
		t.Fatalf("query %+v: %v", q, err)
	}
	want, wantTrunc := naiveScan(all, q)
	if err := sameRows(got, want); err != nil {
		t.Fatalf("query %+v: %v", q, err)
	}
	if truncated != wantTrunc {
		t.Fatalf("query %+v: truncated %v, want %v", q, truncated, wantTrunc)
	}
	return got, truncated
}

func TestScanOnDroppedReplica(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	mustApply(t, r, row("a", 1, fl("v", 1, 1)))
	if err := s.DropReplica(r.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Scan(model.Query{From: minTime, To: maxTime}); !errors.Is(err, ErrDropped) {
		t.Fatalf("Scan after drop: %v, want ErrDropped", err)
	}
	if _, err := r.Aggregate(model.Query{From: minTime, To: maxTime}); !errors.Is(err, ErrDropped) {
		t.Fatalf("Aggregate after drop: %v, want ErrDropped", err)
	}
	if _, err := r.ReadLog(0, 0); !errors.Is(err, ErrDropped) {
		t.Fatalf("ReadLog after drop: %v, want ErrDropped", err)
	}
}

// TestScanMaxBytes (issue 14 item 7): a scan whose rows' values are over
// MaxBytes stops with ErrAnswerTooLarge; rows its Limit drops do not count,
// and a scan at or under the bound answers.
func TestScanMaxBytes(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	// 3 series × 100 points of one float: 8 value bytes a row, 2400 in
	// all, over ~10 storage buckets.
	var batch []model.Row
	for ts := int64(-350e9); ts < 350e9; ts += 7e9 {
		for _, series := range []string{"a", "b", "c"} {
			batch = append(batch, row(series, ts, fl("v", 1, 1)))
		}
	}
	mustApply(t, r, batch...)
	for _, tc := range []struct {
		q        model.Query
		wantFail bool
	}{
		{model.Query{From: minTime, To: maxTime, MaxBytes: 2399}, true},
		{model.Query{From: minTime, To: maxTime, MaxBytes: 800}, true},
		{model.Query{From: minTime, To: maxTime, MaxBytes: 2400}, false},
		{model.Query{From: minTime, To: maxTime, MaxBytes: 800, Limit: 100}, false}, // the limit keeps 800 bytes
		{model.Query{From: minTime, To: maxTime, MaxBytes: 800, Limit: 101}, true},
	} {
		rows, _, err := r.Scan(tc.q)
		switch {
		case tc.wantFail && !errors.Is(err, ErrAnswerTooLarge):
			t.Fatalf("%+v: %d rows, err %v, want ErrAnswerTooLarge", tc.q, len(rows), err)
		case !tc.wantFail && err != nil:
			t.Fatalf("%+v: %v", tc.q, err)
		}
	}
	if n := ValueBytes(&model.Row{Fields: []model.Field{{Value: model.Float(1)}, {Value: model.Int(1 << 40)},
		{Value: model.Bool(true)}, {Value: model.String("abc")}}}); n != 8+1+1+3 {
		t.Fatalf("ValueBytes %d, want 13", n)
	}
}

// TestFieldFilter: the filter of one field, of a few (compared one by
// one) and of many (hashed) accepts exactly the names asked for.
func TestFieldFilter(t *testing.T) {
	if fieldFilter(nil) != nil {
		t.Fatal("no fields: a filter, want nil (every field)")
	}
	names := []string{"a", "b", "usage_user", "usage_idle", "x", "", "é", "usage"}
	for _, n := range []int{1, 3, smallFieldSet, smallFieldSet + 1, 20} {
		var fields []string
		want := map[string]bool{}
		for i := range n {
			f := fmt.Sprintf("f%d", i)
			if i < len(names) && names[i] != "" {
				f = names[i]
			}
			fields = append(fields, f)
			want[f] = true
		}
		keep := fieldFilter(fields)
		for _, name := range append(append([]string{}, names...), "f3", "f19", "f20", "usage_use", "usage_userx") {
			if got := keep([]byte(name)); got != want[name] {
				t.Errorf("%d fields %v: keep(%q) = %v, want %v", n, fields, name, got, want[name])
			}
		}
	}
}

// TestScannerGrow: the raw answer's rows grow by what the part of a bounded
// range already read foretells (a uniform series fills its answer in a few
// growths, with no more room than a twentieth over), at least twice and at
// most four times their length (twice from 65,536 rows), and not past the
// limit.
func TestScannerGrow(t *testing.T) {
	const n = 10_000
	s := &scanner{q: model.Query{From: 0, To: n * 1000}}
	grows := 0
	for i := range n {
		if len(s.out) == cap(s.out) {
			grows++
		}
		c := cap(s.out)
		s.add(model.Row{Time: int64(i) * 1000})
		// The allocator may round a capacity up by up to an eighth.
		if c != cap(s.out) && (cap(s.out) < 2*c || cap(s.out) > max(4*c, 16)*9/8) {
			t.Fatalf("row %d: grew from %d to %d, want 2 to 4 times", i, c, cap(s.out))
		}
	}
	if grows > 8 || cap(s.out) > n*21/20*9/8 {
		t.Fatalf("%d rows: %d growths, capacity %d; want at most 8 and %d", n, grows, cap(s.out), n*21/20*9/8)
	}
	// A large answer whose rows all come early in the range: at most
	// twice its length past 65,536 rows.
	s = &scanner{q: model.Query{From: 0, To: 1 << 40}}
	for i := range 200_000 {
		c := cap(s.out)
		s.add(model.Row{Time: int64(i)})
		if c != cap(s.out) && c >= 1<<16 && cap(s.out) > 2*c*9/8 {
			t.Fatalf("row %d: grew from %d to %d, want at most twice past 65,536 rows", i, c, cap(s.out))
		}
	}
	// Unbounded: doubling. With a limit under it: not past the limit.
	for _, q := range []model.Query{{From: math.MinInt64, To: math.MaxInt64}, {From: 0, To: n * 1000, Limit: 500}} {
		s := &scanner{q: q}
		for i := range 1000 {
			c := cap(s.out)
			s.add(model.Row{Time: int64(i)})
			if c != cap(s.out) && len(s.out) <= q.Limit && cap(s.out) > (q.Limit+1)*9/8 {
				t.Fatalf("%+v: capacity %d for %d rows, past the limit", q, cap(s.out), len(s.out))
			}
		}
	}
}
