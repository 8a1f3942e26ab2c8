package smear

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
)

func TestKeyOrder(t *testing.T) {
	dues := []int64{math.MinInt64, -5, -1, 0, 1, 1_700_000_000_000_000_000, math.MaxInt64 - 1}
	var keys [][]byte
	for i, d := range dues {
		for seq := uint64(1); seq <= 2; seq++ {
			k := appendKey(nil, d, seq)
			if len(k) != keyLen {
				t.Fatalf("key of %d bytes", len(k))
			}
			gotDue, gotSeq, err := parseKey(k)
			if err != nil || gotDue != d || gotSeq != seq {
				t.Fatalf("parseKey(appendKey(%d, %d)) = %d, %d, %v", d, seq, gotDue, gotSeq, err)
			}
			keys = append(keys, k)
			// Every key of an earlier due time sorts below this one's bound.
			if i > 0 && bytes.Compare(appendKey(nil, dues[i-1], math.MaxUint64), dueBound(d)) >= 0 {
				t.Fatalf("due %d does not sort before %d", dues[i-1], d)
			}
		}
	}
	if !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Fatal("keys do not sort in due, then sequence order")
	}
	k := appendKey(nil, 10, 3)
	if bytes.Compare(k, upperBoundAt(10)) >= 0 || bytes.Compare(k, upperBoundAt(9)) < 0 {
		t.Fatal("upperBoundAt does not select due <= now")
	}
	if bytes.Compare(appendKey(nil, math.MaxInt64, math.MaxUint64), upperBoundAt(math.MaxInt64)) >= 0 {
		t.Fatal("upperBoundAt(MaxInt64) does not select every entry")
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	h := header{enqueued: -42, attempts: 300, table: "cpu_1", rows: 7}
	v := appendHeader(nil, &h)
	hl := len(v)
	const rest = "the encoded rows, at least one byte per row"
	v = append(v, rest...)
	got, body, err := parseHeader(v)
	if err != nil || got != h || string(body) != rest {
		t.Fatalf("parseHeader = %+v, %q, %v", got, body, err)
	}
	zeroRows := appendHeader(nil, &header{table: "t", rows: 0})
	for _, bad := range [][]byte{nil, {2}, v[:1], v[:3], v[:hl-1], v[:hl+3], zeroRows} {
		if _, _, err := parseHeader(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("parseHeader(%x) = %v, want ErrCorrupt", bad, err)
		}
	}
	if _, _, err := parseKey([]byte{nsQuarantine, 1}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("parseKey of a short key: %v", err)
	}
}
