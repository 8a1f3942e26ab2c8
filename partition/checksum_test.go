package partition

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// versionedRows returns n random writes over a small key space where each
// version carries one value (as in the system: a version is assigned once,
// to one write), so the merged state does not depend on the order the
// writes are applied in, while versions still collide and lose.
func versionedRows(rng *rand.Rand, n int, times []int64) []model.Row {
	rows := make([]model.Row, n)
	for i := range rows {
		r := model.Row{Series: testSeries[rng.Intn(len(testSeries))], Time: times[rng.Intn(len(times))]}
		for _, name := range []string{"a", "b", "c", "d"} {
			if len(r.Fields) > 0 && rng.Intn(2) == 0 {
				continue
			}
			v := model.Version{Wall: int64(1 + rng.Intn(6)), Node: uint64(1 + rng.Intn(2))}
			r.Fields = append(r.Fields, model.Field{Name: name, Version: v, Value: valueOf(r, name, v)})
		}
		rows[i] = r
	}
	return rows
}

// valueOf is the one value of a (row, field, version), of any kind.
func valueOf(r model.Row, name string, v model.Version) model.Value {
	h := uint64(len(r.Series))*31 + uint64(r.Time)*7 + uint64(name[0])*13 + uint64(v.Wall)*17 + v.Node*19
	switch h % 4 {
	case 0:
		return model.Float(float64(h%100) / 4)
	case 1:
		return model.Int(int64(h%50) - 25)
	case 2:
		return model.Bool(h%2 == 0)
	}
	return model.String(fmt.Sprint("s", h%10))
}

func mustChecksum(t *testing.T, r *Replica) ReplicaChecksum {
	t.Helper()
	c, err := r.Checksum()
	if err != nil {
		t.Fatalf("Checksum: %v", err)
	}
	return c
}

// TestChecksumIndependentOfPath feeds the same writes to replicas in
// different orders, batchings and through ReadLog (the replication path):
// the checksums agree and count the rows of the naive model.
func TestChecksumIndependentOfPath(t *testing.T) {
	s := openTestStore(t, "")
	rng := newSeededRand(t)
	times := testTimes(rng, 30)
	writes := versionedRows(rng, 600, times)
	m := naiveModel{}
	m.apply(writes)

	inOrder := createTestReplica(t, s)
	mustApply(t, inOrder, writes...)

	shuffled := createTestReplica(t, s)
	perm := rng.Perm(len(writes))
	for i := 0; i < len(perm); {
		n := 1 + rng.Intn(50)
		var batch []model.Row
		for _, j := range perm[i:min(i+n, len(perm))] {
			batch = append(batch, writes[j])
		}
		mustApply(t, shuffled, batch...)
		i += n
	}

	reversed := createTestReplica(t, s)
	for i := len(writes) - 1; i >= 0; i-- {
		mustApply(t, reversed, writes[i])
	}

	pushed := createTestReplica(t, s) // receives shuffled's log
	log, err := shuffled.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		mustApply(t, pushed, e.Row)
	}

	want := mustChecksum(t, inOrder)
	if want.Rows != int64(len(m)) {
		t.Fatalf("Rows = %d, want %d", want.Rows, len(m))
	}
	if len(want.Sum) != 64 {
		t.Fatalf("Sum %q is not hex SHA-256", want.Sum)
	}
	for name, r := range map[string]*Replica{"shuffled": shuffled, "reversed": reversed, "pushed": pushed} {
		if got := mustChecksum(t, r); got != want {
			t.Errorf("%s: checksum %+v, want %+v", name, got, want)
		}
	}
	// The paths differ: some took overwrites (more sequences than rows).
	if shuffled.HighSeq() == uint64(want.Rows) && reversed.HighSeq() == uint64(want.Rows) {
		t.Fatal("no path overwrote a row; the test does not exercise last-writer-wins")
	}
}

// TestChecksumDetectsDifferences changes one detail of one row at a time:
// each change gives a different Sum.
func TestChecksumDetectsDifferences(t *testing.T) {
	s := openTestStore(t, "")
	base := []model.Row{
		row("cpu", 1, fl("a", 1, 5), fl("b", 2, 5)),
		row("cpu", 2, model.Field{Name: "s", Value: model.String("x"), Version: ver(5)}),
		row("mem", 1, model.Field{Name: "i", Value: model.Int(7), Version: ver(5)}),
	}
	sumOf := func(rows []model.Row) ReplicaChecksum {
		r := createTestReplica(t, s)
		mustApply(t, r, rows...)
		return mustChecksum(t, r)
	}
	want := sumOf(base)
	if want.Rows != 3 {
		t.Fatalf("Rows = %d, want 3", want.Rows)
	}
	variants := map[string]func(rows []model.Row){
		"float value":  func(rows []model.Row) { rows[0].Fields[1].Value = model.Float(3) },
		"negative 0":   func(rows []model.Row) { rows[0].Fields[0].Value = model.Float(math.Copysign(0, -1)) },
		"kind":         func(rows []model.Row) { rows[2].Fields[0].Value = model.Float(7) },
		"version wall": func(rows []model.Row) { rows[0].Fields[0].Version.Wall = 6 },
		"version node": func(rows []model.Row) { rows[0].Fields[0].Version.Node = 2 },
		"field name":   func(rows []model.Row) { rows[0].Fields[1].Name = "c" },
		"string":       func(rows []model.Row) { rows[1].Fields[0].Value = model.String("y") },
		"time":         func(rows []model.Row) { rows[1].Time = 3 },
		"series":       func(rows []model.Row) { rows[2].Series = "mem,host=a" },
		"extra field":  func(rows []model.Row) { rows[2].Fields = append(rows[2].Fields, fl("j", 0, 5)) },
		"missing row":  func(rows []model.Row) { rows[1] = rows[0] },
	}
	for name, change := range variants {
		rows := cloneRows(base)
		change(rows)
		if got := sumOf(rows); got.Sum == want.Sum {
			t.Errorf("%s: same Sum as the original", name)
		}
	}
	if got := sumOf(cloneRows(base)); got != want {
		t.Fatalf("same rows, different checksum: %+v, %+v", got, want)
	}
}

func cloneRows(rows []model.Row) []model.Row {
	out := make([]model.Row, len(rows))
	for i, r := range rows {
		r.Fields = append([]model.Field(nil), r.Fields...)
		out[i] = r
	}
	return out
}

// TestChecksumRange checks that the checksum of a time range equals the
// checksum of a replica holding only that range's rows, that an empty
// replica and an empty range agree, and that the checksum survives a
// reopen.
func TestChecksumRange(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	rng := newSeededRand(t)
	writes := versionedRows(rng, 400, testTimes(rng, 40))
	all := createTestReplica(t, s)
	mustApply(t, all, writes...)
	empty := mustChecksum(t, createTestReplica(t, s))
	if empty.Rows != 0 {
		t.Fatalf("empty replica: %+v", empty)
	}
	ranges := [][2]int64{
		{minTime, 0}, {0, maxTime}, {-3 << bucketShift, 2<<bucketShift + 12345},
		{1, 1}, {5, 2}, {minTime, maxTime},
	}
	for _, rg := range ranges {
		part := createTestReplica(t, s)
		var in []model.Row
		for _, w := range writes {
			if w.Time >= rg[0] && (w.Time < rg[1] || rg[1] == maxTime) {
				in = append(in, w)
			}
		}
		want := empty
		if len(in) > 0 {
			mustApply(t, part, in...)
			want = mustChecksum(t, part)
		}
		got, err := all.ChecksumRange(rg[0], rg[1])
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("range [%d, %d): %+v, want %+v", rg[0], rg[1], got, want)
		}
	}
	want := mustChecksum(t, all)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTestStore(t, dir)
	r2, _ := s2.Replica(all.Info().Placement)
	if got := mustChecksum(t, r2); got != want {
		t.Fatalf("checksum after reopen %+v, want %+v", got, want)
	}
}
