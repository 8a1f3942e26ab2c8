package colcodec

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/tsdb/tsdb/model"
)

// VersionEncoder encodes version columns reusing its scratch buffers, so
// repeated calls do not allocate. Not safe for concurrent use; the zero
// value is ready.
type VersionEncoder struct {
	walls  []int64 // whole milliseconds
	rems   []int64 // nanoseconds within the millisecond
	idx    []int64
	nodes  []uint64
	lookup map[uint64]int // node → index, once nodes is long
}

// linearNodes is the dictionary size up to which a linear search finds a
// node's index (blocks hold the writes of a few servers).
const linearNodes = 8

// Encode appends the column of versions src to dst and returns the
// extended slice: the walls as two integer streams, their whole
// milliseconds and the nanoseconds within the millisecond (the clock reads
// whole milliseconds, model.Clock, so the first compresses like
// millisecond timestamps and the second is almost all 0), then the nodes
// as a dictionary of distinct values in order of first appearance and,
// when it has more than one entry, an integer stream of indices.
func (e *VersionEncoder) Encode(dst []byte, src []model.Version) ([]byte, error) {
	if len(src) > MaxCount {
		return dst, fmt.Errorf("%w: %d versions", ErrTooMany, len(src))
	}
	dst = appendHeader(dst, CodecVersions, len(src))
	if len(src) == 0 {
		return dst, nil
	}
	e.walls, e.rems, e.idx, e.nodes = e.walls[:0], e.rems[:0], e.idx[:0], e.nodes[:0]
	for _, v := range src {
		ms, rem := splitWall(v.Wall)
		e.walls = append(e.walls, ms)
		e.rems = append(e.rems, rem)
		e.idx = append(e.idx, int64(e.nodeIndex(v.Node)))
	}
	dst = appendStream(dst, e.walls)
	dst = appendStream(dst, e.rems)
	dst = binary.AppendUvarint(dst, uint64(len(e.nodes)))
	for _, n := range e.nodes {
		dst = binary.LittleEndian.AppendUint64(dst, n)
	}
	if len(e.nodes) > 1 {
		dst = appendStream(dst, e.idx)
	}
	return dst, nil
}

// splitWall splits a version wall (ns) into whole milliseconds (rounded
// towards minus infinity) and the nanoseconds above them, in [0, 1e6).
func splitWall(wall int64) (ms, rem int64) {
	ms, rem = wall/1e6, wall%1e6
	if rem < 0 {
		ms, rem = ms-1, rem+1e6
	}
	return ms, rem
}

// nodeIndex returns the dictionary index of node, adding it if new.
func (e *VersionEncoder) nodeIndex(node uint64) int {
	if n := len(e.idx); n > 0 && e.nodes[e.idx[n-1]] == node {
		return int(e.idx[n-1]) // the common case: the same node again
	}
	if len(e.nodes) <= linearNodes {
		for j, n := range e.nodes {
			if n == node {
				return j
			}
		}
	} else if j, ok := e.lookup[node]; ok {
		return j
	}
	k := len(e.nodes)
	e.nodes = append(e.nodes, node)
	if len(e.nodes) == linearNodes+1 {
		if e.lookup == nil {
			e.lookup = make(map[uint64]int)
		}
		clear(e.lookup)
		for j, n := range e.nodes {
			e.lookup[n] = j
		}
	} else if len(e.nodes) > linearNodes+1 {
		e.lookup[node] = k
	}
	return k
}

// EncodeVersions is VersionEncoder.Encode with a pooled encoder: it
// allocates only when dst must grow.
func EncodeVersions(dst []byte, src []model.Version) ([]byte, error) {
	e := versionEncoders.Get().(*VersionEncoder)
	dst, err := e.Encode(dst, src)
	if cap(e.walls) <= 64<<10 && cap(e.rems) <= 64<<10 && len(e.nodes) <= linearNodes {
		versionEncoders.Put(e)
	}
	return dst, err
}

var versionEncoders = sync.Pool{New: func() any { return new(VersionEncoder) }}

// scratchPool holds the int64 buffers DecodeVersions decodes walls and
// node indices into.
var scratchPool = sync.Pool{New: func() any { return new([]int64) }}

// DecodeVersions decodes a column written by EncodeVersions into dst[:0]
// (reused when large enough) and returns it. It allocates only when dst
// must grow (its scratch buffer comes from a pool).
func DecodeVersions(dst []model.Version, src []byte) ([]model.Version, error) {
	sp := scratchPool.Get().(*[]int64)
	dst, scratch, err := decodeVersions(dst, src, *sp)
	if cap(scratch) <= 64<<10 {
		*sp = scratch
		scratchPool.Put(sp)
	}
	return dst, err
}

func decodeVersions(dst []model.Version, src []byte, scratch []int64) ([]model.Version, []int64, error) {
	c, n, rest, err := readHeader(src, "versions", CodecVersions)
	if err != nil {
		return dst[:0], scratch, err
	}
	if n == 0 {
		if len(rest) != 0 {
			return dst[:0], scratch, fmt.Errorf("%w: %s column: trailing bytes", ErrCorrupt, c)
		}
		return dst[:0], scratch, nil
	}
	if err := checkStream(rest, 0, n); err != nil {
		return dst[:0], scratch, fmt.Errorf("%s column walls: %w", c, err)
	}
	dst = grow(dst, n)
	scratch = grow(scratch, n)
	pos := 0
	if err := decodeStream(scratch, rest, &pos); err != nil {
		return dst[:0], scratch, fmt.Errorf("%s column walls: %w", c, err)
	}
	for i, ms := range scratch {
		dst[i].Wall = ms * 1e6 // wraps for the extreme walls; the remainder below wraps it back
	}
	if err := decodeStream(scratch, rest, &pos); err != nil {
		return dst[:0], scratch, fmt.Errorf("%s column wall remainders: %w", c, err)
	}
	for i, rem := range scratch {
		if rem < 0 || rem >= 1e6 {
			return dst[:0], scratch, fmt.Errorf("%w: %s column: wall remainder %d outside [0, 1e6)", ErrCorrupt, c, rem)
		}
		dst[i].Wall += rem
	}
	k, err := readUvarint(rest, &pos, "node count")
	if err != nil {
		return dst[:0], scratch, err
	}
	if k == 0 || k > uint64(n) || k > uint64(len(rest)-pos)/8 {
		return dst[:0], scratch, fmt.Errorf("%w: %s column: %d nodes for %d values in %d bytes", ErrCorrupt, c, k, n, len(rest)-pos)
	}
	nodes := rest[pos : pos+8*int(k)]
	pos += 8 * int(k)
	if k == 1 {
		node := binary.LittleEndian.Uint64(nodes)
		for i := range dst {
			dst[i].Node = node
		}
	} else {
		if err := decodeStream(scratch, rest, &pos); err != nil {
			return dst[:0], scratch, fmt.Errorf("%s column nodes: %w", c, err)
		}
		for i, j := range scratch {
			if j < 0 || uint64(j) >= k {
				return dst[:0], scratch, fmt.Errorf("%w: %s column: node index %d of %d", ErrCorrupt, c, j, k)
			}
			dst[i].Node = binary.LittleEndian.Uint64(nodes[8*j:])
		}
	}
	if pos != len(rest) {
		return dst[:0], scratch, fmt.Errorf("%w: %s column: %d trailing bytes", ErrCorrupt, c, len(rest)-pos)
	}
	return dst, scratch, nil
}
