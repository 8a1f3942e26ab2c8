package model

import "testing"

// TestRowArena: an arena lends distinct memory until Reset, the smallest
// free slice that fits after it, and keeps at most arenaKeep rows and
// fields for the next answer.
func TestRowArena(t *testing.T) {
	var a RowArena
	r1, r2 := a.Rows(10), a.Rows(10)
	f1, f2 := a.Fields(5), a.Fields(5)
	if cap(r1) < 10 || cap(f1) < 5 || len(r1) != 0 || len(f1) != 0 {
		t.Fatalf("lent rows cap %d len %d, fields cap %d len %d", cap(r1), len(r1), cap(f1), len(f1))
	}
	r1, r2 = r1[:1], r2[:1]
	f1, f2 = f1[:1], f2[:1]
	if &r1[0] == &r2[0] || &f1[0] == &f2[0] {
		t.Fatal("the same memory lent twice before a Reset")
	}
	big := a.Rows(100)[:1]
	a.Reset()
	if got := a.Rows(50)[:1]; &got[0] != &big[0] {
		t.Fatal("a Reset arena did not lend its free rows again")
	}
	if got := a.Rows(8)[:1]; &got[0] != &r1[0] && &got[0] != &r2[0] {
		t.Fatal("a request of 8 rows did not get one of the two slices of 10 (the smallest that fit)")
	}
	if got := a.Fields(5)[:1]; &got[0] != &f1[0] && &got[0] != &f2[0] {
		t.Fatal("a Reset arena did not lend its free fields again")
	}
	a.Reset()

	// A large answer's memory is not kept past arenaKeep.
	var b RowArena
	for range 4 {
		b.Rows(arenaKeep / 2)
		b.Fields(arenaKeep / 2)
	}
	b.Rows(arenaKeep * 2)
	b.Reset()
	rows, fields := 0, 0
	for _, s := range b.rows {
		rows += cap(s)
	}
	for _, s := range b.fields {
		fields += cap(s)
	}
	if rows > arenaKeep || fields > arenaKeep || rows == 0 || fields == 0 {
		t.Fatalf("kept %d rows and %d fields after a Reset; want some, at most %d", rows, fields, arenaKeep)
	}
	if len(b.lentRows) != 0 || len(b.lentFields) != 0 {
		t.Fatal("a Reset arena still counts slices as lent")
	}
}
