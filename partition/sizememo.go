package partition

import (
	"sync"
	"time"
)

// sizeMemoTTL is how long a size scan's memo may answer SizeOver in its
// place (the bound on a growth the memo's projection misses: rows that
// came without a sequence of this replica, or rows much larger than the
// range's average).
const sizeMemoTTL = 10 * time.Second

// sizeMemoIdleTTL is how long the memo answers while no sequence was
// assigned since its scan: the replica took no row, and its size can only
// have changed by rows that came without one (a split parent's rows in a
// child's range of their shared space, in the moment before the parent's
// drop). Most replicas a server checks are such idle ones (the
// partitions of the past): their scans every sizeMemoTTL were two thirds
// of the scans' time in the smear load test.
const sizeMemoIdleTTL = time.Minute

// sizeMemo remembers the last size scan of a replica that found it under
// its limit, so that the split trigger's next checks can project the size
// instead of scanning again. A scan in a shared data space walks every
// series of the storage buckets the range touches, the siblings' rows
// included, and the narrow partitions of the present, checked about once
// a second while inserts arrive, made it 12% of a server's CPU under the
// smear load test (docs/performance.md, "The split trigger's scans").
//
// The projection is the scanned bytes plus, per sequence assigned since
// (one per row changed: an insert, an overwrite or a pushed row), the
// range's average row bytes at the scan. Overwrites and seals only make
// it larger than the truth; rows larger than the average, or rows that
// came without a sequence, make it smaller, for at most sizeMemoTTL (a
// minute, sizeMemoIdleTTL, when the replica took no row at all).
type sizeMemo struct {
	mu    sync.Mutex
	at    time.Time // when the scan began (zero: no memo)
	seq   uint64    // the replica's high sequence when the scan began
	bytes uint64    // the bytes the scan counted
	rows  uint64    // the rows it counted
}

// project returns the projected size at high sequence seq and time now,
// and whether the memo may answer: it is younger than sizeMemoTTL
// (sizeMemoIdleTTL when no sequence was assigned since) and the
// projection stays within limit (past it, only a scan can tell).
func (m *sizeMemo) project(seq, limit uint64, now time.Time) (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at.IsZero() || seq < m.seq {
		return 0, false
	}
	grown := seq - m.seq
	if grown == 0 {
		return m.bytes, m.bytes <= limit && now.Sub(m.at) <= sizeMemoIdleTTL
	}
	if now.Sub(m.at) > sizeMemoTTL {
		return 0, false
	}
	if m.rows == 0 {
		return 0, false // no average to project by
	}
	perRow := (m.bytes + m.rows - 1) / m.rows
	n := m.bytes + grown*perRow
	// grown > limit: at least a byte a row passes limit (and the product
	// might have overflowed).
	if grown > limit || n > limit {
		return 0, false
	}
	return n, true
}

// remember records a scan that began at at and seq and counted bytes in
// rows, all of the range (a scan that stopped past its limit is not
// remembered: its count is partial, and the replica splits).
func (m *sizeMemo) remember(at time.Time, seq, bytes, rows uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.at, m.seq, m.bytes, m.rows = at, seq, bytes, rows
}
