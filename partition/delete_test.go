package partition

import (
	"testing"

	"github.com/tsdb/tsdb/model"
)

// tomb is a tombstone of field name at version wall.
func tomb(name string, wall int64) model.Field {
	return model.Field{Name: name, Value: model.Deleted(), Version: ver(wall)}
}

// TestTombstones: a tombstone (model.KindDeleted) merges like any value by
// version. A newer tombstone hides the older value; an older write
// arriving late (a smeared insert, a push) stays hidden; a newer write
// brings the field back. Scan and Aggregate skip deleted fields and rows
// whose fields are all deleted, while the log (what pushes send) keeps
// the tombstones.
func TestTombstones(t *testing.T) {
	s := openTestStore(t, "")
	r := lookingUp(createTestReplica(t, s))
	mustApply(t, r,
		row("cpu", 10, fl("a", 1, 5), fl("b", 2, 5)),
		row("cpu", 20, fl("a", 3, 5)),
		row("mem", 10, fl("a", 4, 5)))

	steps := []struct {
		name        string
		write       model.Row
		wantChanged int
		want        []model.Row
	}{
		{"a newer tombstone hides one field", row("cpu", 10, tomb("a", 6)), 1,
			[]model.Row{row("cpu", 10, fl("b", 2, 5)), row("mem", 10, fl("a", 4, 5)), row("cpu", 20, fl("a", 3, 5))}},
		{"an older tombstone changes nothing", row("cpu", 20, tomb("a", 4)), 0,
			[]model.Row{row("cpu", 10, fl("b", 2, 5)), row("mem", 10, fl("a", 4, 5)), row("cpu", 20, fl("a", 3, 5))}},
		{"a row of only tombstones is not returned", row("cpu", 20, tomb("a", 6)), 1,
			[]model.Row{row("cpu", 10, fl("b", 2, 5)), row("mem", 10, fl("a", 4, 5))}},
		{"an older write arriving late stays hidden", row("cpu", 20, fl("a", 9, 4)), 0,
			[]model.Row{row("cpu", 10, fl("b", 2, 5)), row("mem", 10, fl("a", 4, 5))}},
		{"a newer write brings the field back", row("cpu", 20, fl("a", 7, 8)), 1,
			[]model.Row{row("cpu", 10, fl("b", 2, 5)), row("mem", 10, fl("a", 4, 5)), row("cpu", 20, fl("a", 7, 8))}},
		{"a tombstone of a field never written hides nothing", row("mem", 10, tomb("z", 6)), 1,
			[]model.Row{row("cpu", 10, fl("b", 2, 5)), row("mem", 10, fl("a", 4, 5)), row("cpu", 20, fl("a", 7, 8))}},
		{"a tombstone of a row never written returns nothing", row("disk", 30, tomb("a", 6)), 1,
			[]model.Row{row("cpu", 10, fl("b", 2, 5)), row("mem", 10, fl("a", 4, 5)), row("cpu", 20, fl("a", 7, 8))}},
	}
	for _, st := range steps {
		if res := mustApply(t, r, st.write); res.Changed != st.wantChanged {
			t.Errorf("%s: changed %d, want %d", st.name, res.Changed, st.wantChanged)
		}
		if err := sameRows(scanAll(t, r), st.want); err != nil {
			t.Errorf("%s: %v", st.name, err)
		}
	}

	// A projection on a deleted field finds nothing; the live one is kept.
	rows, _, err := r.Scan(model.Query{From: minTime, To: maxTime, Fields: []string{"a"}, Series: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRows(rows, []model.Row{row("cpu", 20, fl("a", 7, 8))}); err != nil {
		t.Errorf("projection on a: %v", err)
	}
	// A limit counts returned rows only: the deleted disk row takes none.
	rows, truncated, err := r.Scan(model.Query{From: 15, To: maxTime, Limit: 1})
	if err != nil || truncated || len(rows) != 1 || rows[0].Series != "cpu" {
		t.Errorf("limit 1 from 15: %v truncated %v err %v, want the cpu row at 20 alone", rows, truncated, err)
	}

	// Aggregates count live values only, and make no bucket for a row of
	// tombstones.
	aggs, err := r.Aggregate(model.Query{From: minTime, To: maxTime, Step: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sa := range aggs {
		for _, b := range sa.Buckets {
			for _, f := range b.Fields {
				got[sa.Series+"/"+f.Name] += f.State.Count
			}
		}
		if sa.Series == "disk" {
			t.Errorf("a series of tombstones only has an aggregate: %+v", sa)
		}
	}
	want := map[string]int64{"cpu/a": 1, "cpu/b": 1, "mem/a": 1}
	if len(got) != len(want) {
		t.Errorf("aggregate counts %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("aggregate counts %v, want %v", got, want)
		}
	}

	// The log keeps the tombstones, with their versions: pushes carry them.
	entries, err := r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	logged := foldLog(entries)
	wantLog := []model.Row{
		row("cpu", 10, tomb("a", 6), fl("b", 2, 5)),
		row("mem", 10, fl("a", 4, 5), tomb("z", 6)),
		row("cpu", 20, fl("a", 7, 8)),
		row("disk", 30, tomb("a", 6)),
	}
	sortRows(wantLog)
	if err := sameRows(logged, wantLog); err != nil {
		t.Errorf("log: %v", err)
	}
}

// TestTombstonesPushed: replicas converge on tombstones whatever order
// the values and tombstones reach them in (a push of the log, or each
// write), with equal checksums, and a checksum tells a tombstone from the
// value it hides.
func TestTombstonesPushed(t *testing.T) {
	s := openTestStore(t, "")
	a, b := createTestReplica(t, s), createTestReplica(t, s)
	writes := []model.Row{
		row("cpu", 10, fl("a", 1, 5), fl("b", 2, 5)),
		row("cpu", 10, tomb("a", 6), tomb("b", 6)),
		row("cpu", 20, fl("a", 3, 5)),
		row("cpu", 20, tomb("a", 6)),
		row("cpu", 20, fl("a", 4, 7)),
	}
	for _, w := range writes {
		mustApply(t, a, w)
	}
	for i := len(writes) - 1; i >= 0; i-- { // reverse order: late older writes
		mustApply(t, b, writes[i])
	}
	c := createTestReplica(t, s)
	entries, err := a.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var pushed []model.Row
	for _, e := range entries {
		pushed = append(pushed, e.Row)
	}
	if _, err := c.ApplyFrom(pushed, a.Info().Placement, 0); err != nil {
		t.Fatal(err)
	}
	want := []model.Row{row("cpu", 20, fl("a", 4, 7))}
	for name, r := range map[string]*Replica{"a": a, "b": b, "pushed": c} {
		if err := sameRows(scanAll(t, r), want); err != nil {
			t.Errorf("replica %s: %v", name, err)
		}
	}
	sa, sb, sc := checksum(t, a), checksum(t, b), checksum(t, c)
	if sa != sb || sa != sc {
		t.Errorf("checksums differ: %v %v %v", sa, sb, sc)
	}
	if sa.Rows != 2 {
		t.Errorf("checksum over %d rows, want 2 (a row of tombstones is still a stored row)", sa.Rows)
	}
	d := createTestReplica(t, s)
	mustApply(t, d, row("cpu", 10, fl("a", 0, 6), fl("b", 0, 6)), row("cpu", 20, fl("a", 4, 7)))
	if checksum(t, d) == sa {
		t.Error("a checksum does not tell tombstones from values")
	}
}

// TestTombstoneValue: a tombstone round-trips through the row value
// encoding with no payload, and a stored tombstone followed by garbage is
// still refused.
func TestTombstoneValue(t *testing.T) {
	fs := []model.Field{tomb("a", 6), fl("b", 2, 5)}
	seq, got := decodeRow(t, encodeRow(7, fs))
	if seq != 7 || len(got) != 2 || got[0] != fs[0] || got[1] != fs[1] {
		t.Fatalf("round trip: %d %+v, want 7 %+v", seq, got, fs)
	}
	var raw rawRow
	if err := decodeRaw(append(encodeRow(7, fs), 0), &raw); err == nil {
		t.Error("trailing byte after a tombstone accepted")
	}
}

func checksum(t *testing.T, r *Replica) ReplicaChecksum {
	t.Helper()
	c, err := r.Checksum()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
