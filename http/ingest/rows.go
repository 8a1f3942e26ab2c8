package ingest

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/tsdb/tsdb/model"
)

// b2s returns a string that shares b's memory (the zero-copy strings of the
// aliasing contract in doc.go).
func b2s(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Field slab sizing: the first chunk is small; later chunks are sized from
// the fields per row seen so far times the rows still expected, within bounds.
const (
	firstChunk = 64
	minChunk   = 32
	maxChunk   = 1 << 14
)

// maxPrealloc bounds the rows preallocated from an estimate, so that a body
// of blank lines or braces cannot make the parser allocate far more than it
// holds.
const maxPrealloc = 1 << 14

// estimateRows returns an estimate of the rows in a body of size bytes
// holding count row markers (line ends, braces), given the smallest size a
// row can have.
func estimateRows(count, size, minRow int) int {
	return max(min(count, size/minRow+1), 1)
}

// scratchFields is the size of the stack buffer a row's fields are parsed
// into before they are sorted and stored.
const scratchFields = 32

// fieldSlab hands out the Fields of many rows from a few large allocations
// instead of one per row. Each row gets a full slice expression (cap == len),
// so appending to one row's Fields never overwrites the next row's.
//
// A row's fields are first parsed into a scratch slice (a stack array, or
// big when a row has more fields than that holds), then sorted by index and
// copied into the slab once. Building rows in place instead, with zeroing
// and swaps of pointer-holding structs in the heap, spent about a quarter of
// the parsing time in GC write barriers.
type fieldSlab struct {
	mem      *FieldMemory  // lends the chunks when set
	buf      []model.Field // current chunk, filled up to len
	big      []model.Field // reusable scratch for rows with many fields
	estRows  int           // rows the body is expected to hold in total
	rowsDone int           // rows stored so far
	fields   int           // fields of the stored rows

	// The order found for the last unsorted row: rows of one body usually
	// carry the same fields in the same order, and checking the names is
	// cheaper than sorting them again.
	lastNames [scratchFields]string // its field names, in input order
	lastIdx   [scratchFields]uint8  // input indexes of the fields to store, in order
	lastN     int                   // its number of input fields; 0 if none
	lastOut   int                   // its number of fields after deduplication
}

// grow extends the scratch slice fs by one field, spilling to s.big when fs
// is full. The new field holds the zero Version and whatever Name and Value
// an earlier row left: the caller sets both.
func (s *fieldSlab) grow(fs []model.Field) []model.Field {
	if len(fs) == cap(fs) {
		if cap(s.big) <= len(fs) {
			s.big = make([]model.Field, 0, max(2*len(fs), 64))
		}
		fs = append(s.big[:0], fs...)
	}
	return fs[:len(fs)+1]
}

// reserve makes room for n more fields in the current chunk.
func (s *fieldSlab) reserve(n int) {
	if cap(s.buf)-len(s.buf) >= n {
		return
	}
	size := firstChunk
	if s.rowsDone > 0 {
		perRow := (s.fields + s.rowsDone - 1) / s.rowsDone
		size = perRow * max(s.estRows-s.rowsDone, 1)
		size = min(max(size, minChunk), maxChunk)
	}
	if s.mem != nil {
		s.buf = s.mem.take(max(size, n))
		return
	}
	s.buf = make([]model.Field, 0, max(size, n))
}

// FieldMemory keeps the memory of parsed rows' Fields from one parse to
// the next: a server parsing request after request otherwise allocates the
// Fields of every row it takes (72 bytes a field, most of what an insert
// allocates), and the collector then clears and reclaims it. Its
// ParseLineProtocol, ParseJSON and ParseNDJSON are the package's, their
// rows' Fields lent from it until Reset.
//
// A FieldMemory is not safe for concurrent use: one parse at a time, then
// Reset once none of the rows it returned is used any more.
type FieldMemory struct {
	chunks [][]model.Field
	next   int // chunks lent since the last Reset
}

// maxFieldMemory bounds the fields a FieldMemory keeps at Reset (72 bytes
// each): the chunks of a larger body are left to the collector.
const maxFieldMemory = 1 << 16

// take lends a chunk of capacity n or more, empty.
func (m *FieldMemory) take(n int) []model.Field {
	if m.next < len(m.chunks) && cap(m.chunks[m.next]) >= n {
		c := m.chunks[m.next][:0]
		m.next++
		return c
	}
	c := make([]model.Field, 0, n)
	if m.next < len(m.chunks) {
		m.chunks[m.next] = c // a chunk too small for this body's rows
	} else {
		m.chunks = append(m.chunks, c)
	}
	m.next++
	return c
}

// Reset takes back the Fields of every row parsed since the last Reset:
// the caller uses none of them any more. They are cleared (they hold
// strings over the request bodies parsed) and lent again by the next
// parses.
func (m *FieldMemory) Reset() {
	kept := 0
	for i, c := range m.chunks {
		if i < m.next {
			clear(c[:cap(c)])
		}
		if kept += cap(c); kept > maxFieldMemory {
			clear(m.chunks[i:])
			m.chunks = m.chunks[:i]
			break
		}
	}
	m.next = 0
}

// ParseLineProtocol is the package's ParseLineProtocol with the rows'
// Fields lent by m.
func (m *FieldMemory) ParseLineProtocol(body []byte, prec Precision, now int64, rows []model.Row) ([]model.Row, error) {
	return parseLineProtocol(body, prec, now, rows, m)
}

// ParseJSON is the package's ParseJSON with the rows' Fields lent by m.
func (m *FieldMemory) ParseJSON(body []byte, rows []model.Row) ([]model.Row, error) {
	return parseJSON(body, rows, m)
}

// ParseNDJSON is the package's ParseNDJSON with the rows' Fields lent by m.
func (m *FieldMemory) ParseNDJSON(body []byte, rows []model.Row) ([]model.Row, error) {
	return parseNDJSON(body, rows, m)
}

// store sorts the scratch fields fs by name, drops earlier duplicates so
// that the last occurrence of a name wins, copies them into the slab and
// returns the stored slice. Sorting here rather than in Row.Normalize avoids
// its allocations (sort.SliceStable); Normalize then finds the fields in
// order and returns at once.
func (s *fieldSlab) store(fs []model.Field) []model.Field {
	n := len(fs)
	s.reserve(n)
	start := len(s.buf)
	switch {
	case isSorted(fs):
		s.buf = append(s.buf, fs...)
	case n <= scratchFields:
		if n != s.lastN || !sameNames(fs, s.lastNames[:n]) {
			s.order(fs)
		}
		for _, i := range s.lastIdx[:s.lastOut] {
			s.buf = append(s.buf, fs[i])
		}
	default:
		slices.SortStableFunc(fs, func(a, b model.Field) int { return strings.Compare(a.Name, b.Name) })
		for k := 0; k < n; k++ {
			if k+1 < n && fs[k+1].Name == fs[k].Name {
				continue
			}
			s.buf = append(s.buf, fs[k])
		}
	}
	end := len(s.buf)
	s.rowsDone++
	s.fields += end - start
	return s.buf[start:end:end]
}

// order sorts the unsorted fields fs (at most scratchFields) by index and
// records the order in lastIdx, dropping all but the last field of each name.
func (s *fieldSlab) order(fs []model.Field) {
	n := len(fs)
	var idx [scratchFields]uint8
	for i := range n {
		idx[i] = uint8(i)
		s.lastNames[i] = fs[i].Name
	}
	// Insertion sort: stable, so equal names keep their input order.
	for i := 1; i < n; i++ {
		for j := i; j > 0 && fs[idx[j]].Name < fs[idx[j-1]].Name; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	out := 0
	for k := 0; k < n; k++ {
		if k+1 < n && fs[idx[k+1]].Name == fs[idx[k]].Name {
			continue // a later field of the same name follows
		}
		s.lastIdx[out] = idx[k]
		out++
	}
	s.lastN, s.lastOut = n, out
}

// sameNames reports whether fs has exactly the given names, in order.
func sameNames(fs []model.Field, names []string) bool {
	for i := range fs {
		if fs[i].Name != names[i] {
			return false
		}
	}
	return true
}

// isSorted reports whether the names of fs strictly increase.
func isSorted(fs []model.Field) bool {
	for i := 1; i < len(fs); i++ {
		if fs[i-1].Name >= fs[i].Name {
			return false
		}
	}
	return true
}

// finishRow stores the scratch fields fs as r's fields (sorted, deduplicated),
// normalizes and validates r.
func finishRow(s *fieldSlab, r *model.Row, fs []model.Field) *ParseError {
	r.Fields = s.store(fs)
	r.Normalize()
	if err := r.Validate(); err != nil {
		return modelErr(err)
	}
	return nil
}
