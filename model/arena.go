package model

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

// arenaKeep bounds, in rows and in fields, what Reset keeps for the next
// answer: an arena that served a large answer does not pin its memory
// for every later small one (an arena sits in a pool between requests).
const arenaKeep = 1 << 16

// Rows returns an empty slice with capacity at least n, lent until Reset.
func (a *RowArena) Rows(n int) []Row {
	var s []Row
	if i := bestFit(a.rows, n); i >= 0 {
		s = a.rows[i][:0]
		a.rows = removeAt(a.rows, i)
	} else {
		s = make([]Row, 0, n)
	}
	a.lentRows = append(a.lentRows, s)
	return s
}

// Fields returns an empty slice with capacity at least n, lent until
// Reset.
func (a *RowArena) Fields(n int) []Field {
	var s []Field
	if i := bestFit(a.fields, n); i >= 0 {
		s = a.fields[i][:0]
		a.fields = removeAt(a.fields, i)
	} else {
		s = make([]Field, 0, n)
	}
	a.lentFields = append(a.lentFields, s)
	return s
}

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
