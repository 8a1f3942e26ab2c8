package model

import "sync"

// RowArena lends the rows of a raw query's answer and their fields their
// memory (Query.Arena). Its owner, which reads the answer and then drops
// it (the HTTP API, once it has printed it), calls Reset, and the next
// answer built with the arena reuses the memory instead of allocating it
// and clearing it again: at one series' 2,000 points read from one
// server, allocating the answer's rows and fields and collecting them
// were about a fifth of the server's CPU per query (docs/performance.md).
//
// An arena never lends the same memory twice before Reset, so two
// answers built with it (the partitions of one query) never overwrite
// each other. It is for one goroutine at a time. The zero value is ready
// to use.
type RowArena struct {
	rows       [][]Row   // free
	fields     [][]Field // free
	lentRows   [][]Row
	lentFields [][]Field
}

// arenas are the arenas of the queries in flight (GetRowArena).
var arenas = sync.Pool{New: func() any { return new(RowArena) }}

// GetRowArena returns an arena from a pool the server's raw queries
// share; Release gives it back.
func GetRowArena() *RowArena { return arenas.Get().(*RowArena) }

// Release Resets a and returns it to GetRowArena's pool: neither a nor
// anything it lent may be used after.
func (a *RowArena) Release() {
	a.Reset()
	arenas.Put(a)
}

// arenaKeep bounds, in rows and in fields, what Reset keeps for the next
// answer: an arena that served a large answer does not pin its memory
// for every later small one (an arena sits in a pool between requests).
const arenaKeep = 1 << 16

// Rows returns an empty slice with capacity at least n, lent until Reset.
func (a *RowArena) Rows(n int) []Row { return lend(&a.rows, &a.lentRows, n) }

// Fields returns an empty slice with capacity at least n, lent until
// Reset.
func (a *RowArena) Fields(n int) []Field { return lend(&a.fields, &a.lentFields, n) }

// lend takes the smallest slice in free with capacity at least n (or
// makes one) and notes it in lent.
func lend[T any](free, lent *[][]T, n int) []T {
	var s []T
	if i := bestFit(*free, n); i >= 0 {
		s = (*free)[i][:0]
		*free = removeAt(*free, i)
	} else {
		s = make([]T, 0, n)
	}
	*lent = append(*lent, s)
	return s
}

// Lent returns how many slices the arena has lent since its last Reset
// (0 after it). Tests that fake a backend use it to tell that rows they
// lent are dead.
func (a *RowArena) Lent() int { return len(a.lentRows) + len(a.lentFields) }

// Reset takes back everything lent: no row or field lent before may be
// read after it. What it keeps is not cleared (the next answer overwrites
// it), so until then it may keep the strings it points to alive.
func (a *RowArena) Reset() {
	a.rows = keepFree(a.rows, a.lentRows)
	a.fields = keepFree(a.fields, a.lentFields)
	clear(a.lentRows)
	clear(a.lentFields)
	a.lentRows, a.lentFields = a.lentRows[:0], a.lentFields[:0]
}

// bestFit returns the index of the smallest slice in free with capacity
// at least n, or -1.
func bestFit[T any](free [][]T, n int) int {
	best := -1
	for i, s := range free {
		if cap(s) >= n && (best < 0 || cap(s) < cap(free[best])) {
			best = i
		}
	}
	return best
}

func removeAt[T any](free [][]T, i int) [][]T {
	last := len(free) - 1
	free[i] = free[last]
	free[last] = nil
	return free[:last]
}

// keepFree returns free with lent added, as long as the capacity kept
// stays within arenaKeep.
func keepFree[T any](free, lent [][]T) [][]T {
	total := 0
	for _, s := range free {
		total += cap(s)
	}
	for _, s := range lent {
		if total+cap(s) > arenaKeep {
			continue
		}
		total += cap(s)
		free = append(free, s[:0])
	}
	return free
}
