package partition

import (
	"bytes"
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/google/uuid"
)

type keyTuple struct {
	series string
	t      int64
}

func compareTuples(a, b keyTuple) int {
	if ba, bb := timeBucket(a.t), timeBucket(b.t); ba != bb {
		if ba < bb {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.series, b.series); c != 0 {
		return c
	}
	return cmpInt64(a.t, b.t)
}

func randKeyTime(rng *rand.Rand) int64 {
	switch rng.Intn(6) {
	case 0:
		return []int64{minTime, minTime + 1, -1, 0, 1, maxTime - 1, maxTime}[rng.Intn(7)]
	case 1:
		return int64(rng.Uint64()) // anywhere, either sign
	case 2:
		// Near a bucket boundary.
		return int64(rng.Intn(9)-4)<<bucketShift + int64(rng.Intn(5)-2)
	}
	return rng.Int63n(1<<40) - 1<<39
}

func randKeySeries(rng *rand.Rand) string {
	alphabet := []byte{'a', 'b', ',', '=', 0x01, 0xff, 'z'}
	n := 1 + rng.Intn(6)
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.Intn(len(alphabet))]
	}
	return string(b)
}

// TestRowKeyOrder checks that byte order of row keys equals the order of
// (bucket, series, time) and that keys decode back to their parts.
func TestRowKeyOrder(t *testing.T) {
	rng := newSeededRand(t)
	ks := newKeyspace(uuid.New(), uuid.Nil)
	for i := 0; i < 20000; i++ {
		a := keyTuple{randKeySeries(rng), randKeyTime(rng)}
		b := keyTuple{randKeySeries(rng), randKeyTime(rng)}
		if rng.Intn(4) == 0 {
			b.series = a.series
		}
		ka := ks.appendRowKey(nil, a.series, a.t)
		kb := ks.appendRowKey(nil, b.series, b.t)
		if got, want := bytes.Compare(ka, kb), compareTuples(a, b); got != want {
			t.Fatalf("%+v vs %+v: key order %d, tuple order %d", a, b, got, want)
		}
		for _, tc := range []struct {
			key []byte
			tup keyTuple
		}{{ka, a}, {kb, b}} {
			bucket, series, tm, err := rowKeyParts(tc.key)
			if err != nil || bucket != timeBucket(tc.tup.t) || string(series) != tc.tup.series || tm != tc.tup.t {
				t.Fatalf("rowKeyParts(%+v) = %d, %q, %d, %v", tc.tup, bucket, series, tm, err)
			}
			if !bytes.HasPrefix(tc.key, ks.rowLo) || bytes.Compare(tc.key, ks.rowHi) >= 0 {
				t.Fatalf("key %x outside the row range", tc.key)
			}
		}
	}
}

func TestTimeBuckets(t *testing.T) {
	tests := []struct {
		t      int64
		bucket uint32
	}{
		{minTime, 0},
		{minTime + 1<<bucketShift - 1, 0},
		{minTime + 1<<bucketShift, 1},
		{-1, 1<<27 - 1},
		{0, 1 << 27},
		{1<<bucketShift - 1, 1 << 27},
		{1 << bucketShift, 1<<27 + 1},
		{maxTime, maxBucket},
	}
	for _, tt := range tests {
		if got := timeBucket(tt.t); got != tt.bucket {
			t.Errorf("timeBucket(%d) = %d, want %d", tt.t, got, tt.bucket)
		}
		if start := bucketStart(tt.bucket); timeBucket(start) != tt.bucket || (start != minTime && timeBucket(start-1) == tt.bucket) {
			t.Errorf("bucketStart(%d) = %d is not the bucket's first time", tt.bucket, start)
		}
	}
	for _, tm := range []int64{minTime, -1, 0, 1, maxTime, 12345678901234} {
		if got := timeFromOrdered(orderedTime(tm)); got != tm {
			t.Errorf("ordered time round trip of %d = %d", tm, got)
		}
	}
}

func TestSeqKeyAndValue(t *testing.T) {
	ks := newKeyspace(uuid.New(), uuid.Nil)
	prev := []byte(nil)
	for _, seq := range []uint64{0, 1, 2, 255, 256, 1 << 32, 1<<64 - 1} {
		k := ks.appendSeqKey(nil, seq)
		got, err := seqFromKey(k)
		if err != nil || got != seq {
			t.Fatalf("seqFromKey(seqKey(%d)) = %d, %v", seq, got, err)
		}
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Fatalf("sequence keys out of order at %d", seq)
		}
		if bytes.Compare(k, ks.seqLo) < 0 || bytes.Compare(k, ks.seqHi) >= 0 {
			t.Fatalf("sequence key %x outside its range", k)
		}
		prev = k
	}
	origin := uuid.New()
	rowVal := []byte{5, 0, 0} // any non-empty bytes: seqValueParts does not decode them
	for _, tm := range []int64{minTime, -5, 0, maxTime} {
		for _, o := range []uuid.UUID{uuid.Nil, origin} {
			e, err := seqValueParts(appendSeqValue(nil, "cpu,host=a", tm, o, rowVal))
			if err != nil || e.t != tm || string(e.series) != "cpu,host=a" || e.origin != o || !bytes.Equal(e.rowValue, rowVal) {
				t.Fatalf("seq value round trip of %d, %s = %+v, %v", tm, o, e, err)
			}
			// The legacy form (no row) still decodes, with a nil rowValue.
			e, err = seqValueParts(appendLegacySeqValue(nil, "cpu,host=a", tm, o))
			if err != nil || e.t != tm || string(e.series) != "cpu,host=a" || e.origin != o || e.rowValue != nil {
				t.Fatalf("legacy seq value round trip of %d, %s = %+v, %v", tm, o, e, err)
			}
		}
	}
	good := appendSeqValue(nil, "cpu", 1, origin, rowVal)
	for _, bad := range [][]byte{
		{1, 2}, // short
		append(appendLegacySeqValue(nil, "cpu", 1, uuid.Nil), 0, 1),            // truncated origin
		append(appendLegacySeqValue(nil, "cpu", 1, origin), 7),                 // origin too long
		append(appendLegacySeqValue(nil, "x", 1, uuid.Nil)[:timeLen], 0, 1, 2), // bad flags
		appendSeqValue(nil, "cpu", 1, origin, nil),                             // no row
		appendSeqValue(nil, "cpu", 1, uuid.Nil, nil),                           // no row
		good[:timeLen+1],      // no flags
		good[:timeLen+2],      // no series length
		good[:timeLen+5],      // series cut
		good[:timeLen+3+3+10], // origin cut
		append(good[:timeLen:timeLen], 0, 3, 3, 'c', 'p', 'u'),       // unknown flag
		append(good[:timeLen:timeLen], 0, 0, 0, 1),                   // empty series
		append(good[:timeLen:timeLen], 0, 0, 2, 'a', 0, 1),           // NUL in series
		append(good[:timeLen:timeLen], 0, 0, 0xff, 0xff, 0xff, 0xff), // series longer than the value
	} {
		if _, err := seqValueParts(bad); err == nil {
			t.Fatalf("bad sequence value %x decoded", bad)
		}
	}
	if _, err := seqFromKey([]byte{1}); err == nil {
		t.Fatal("short sequence key decoded")
	}
	if _, _, _, err := rowKeyParts([]byte{1, 2, 3}); err == nil {
		t.Fatal("short row key decoded")
	}
}

func TestCursorKeyAndValue(t *testing.T) {
	ks := newKeyspace(uuid.New(), uuid.Nil)
	target := uuid.New()
	key := ks.appendCursorKey(nil, target)
	if !bytes.HasPrefix(key, ks.curLo) || bytes.Compare(key, ks.curHi) >= 0 {
		t.Fatalf("cursor key %x outside [%x, %x)", key, ks.curLo, ks.curHi)
	}
	for _, seq := range []uint64{0, 1, 1 << 40, 1<<64 - 1} {
		got, gotSeq, err := cursorParts(key, appendCursorValue(nil, seq))
		if err != nil || got != target || gotSeq != seq {
			t.Fatalf("cursorParts = %s, %d, %v; want %s, %d", got, gotSeq, err, target, seq)
		}
	}
	bad := []struct{ key, value []byte }{
		{key[:len(key)-1], appendCursorValue(nil, 1)},
		{ks.appendSeqKey(nil, 1)[:cursorKeyLen-8], appendCursorValue(nil, 1)},
		{append(append([]byte(nil), ks.seqLo...), target[:]...), appendCursorValue(nil, 1)},
		{key, []byte{1, 2, 3}},
	}
	for i, b := range bad {
		if _, _, err := cursorParts(b.key, b.value); !errors.Is(err, ErrCorrupt) {
			t.Errorf("bad cursor %d decoded: %v", i, err)
		}
	}
}

func TestKeyspaceRanges(t *testing.T) {
	max := uuid.UUID{}
	for i := range max {
		max[i] = 0xff
	}
	for _, p := range []uuid.UUID{uuid.New(), max, {}} {
		ks := newKeyspace(p, uuid.Nil)
		// Every kind range lies inside the data range.
		for _, k := range [][]byte{ks.rowLo, ks.rowHi, ks.seqLo, ks.seqHi, ks.curLo, ks.curHi} {
			if bytes.Compare(k, ks.prefix) < 0 || bytes.Compare(k, ks.dataEnd) >= 0 {
				t.Fatalf("placement %s: key %x outside [%x, %x)", p, k, ks.prefix, ks.dataEnd)
			}
		}
		if bytes.Compare(ks.dataEnd, []byte{nsRegistry}) > 0 {
			t.Fatalf("placement %s: data range end %x reaches the registry", p, ks.dataEnd)
		}
	}
	if got := prefixSuccessor([]byte{1, 0xff, 0xff}); !bytes.Equal(got, []byte{2}) {
		t.Fatalf("prefixSuccessor = %x", got)
	}
	if got := prefixSuccessor([]byte{0xff}); got != nil {
		t.Fatalf("prefixSuccessor(ff) = %x", got)
	}
}

// TestRowKeyLen checks rowKeyLen against the key appendRowKey writes.
func TestRowKeyLen(t *testing.T) {
	ks := newKeyspace(uuid.New(), uuid.New())
	for _, series := range []string{"a", "cpu,host=host007,region=r7"} {
		for _, ts := range []int64{math.MinInt64, -1, 0, 1 << 40} {
			if got, want := ks.rowKeyLen(series), len(ks.appendRowKey(nil, series, ts)); got != want {
				t.Errorf("rowKeyLen(%q) = %d, appendRowKey wrote %d", series, got, want)
			}
		}
	}
}
