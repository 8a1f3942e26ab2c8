package metadata

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// bigFile returns a valid file of n partitions with three servers each.
func bigFile(n int) *File {
	f := &File{Table: "cpu", TxnID: NewTxnID(), TxnSeq: 2, ParentTxnID: NewTxnID()}
	for i := range n {
		p := Partition{ID: uuid.New(), Joining: []Placement{}}
		if i > 0 {
			p.Begin = i64(int64(i) * 1e10)
		}
		if i < n-1 {
			p.End = i64(int64(i+1) * 1e10)
		}
		for s := range 3 {
			p.Servers = append(p.Servers, Placement{ServerID: fmt.Sprintf("server-%d", (i+s)%10), PlacementID: uuid.New()})
		}
		f.Partitions = append(f.Partitions, p)
	}
	return f
}

func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			f := bigFile(n)
			var enc []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if enc, err = Encode(f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(enc)), "encoded_bytes")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			enc, err := Encode(bigFile(n))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFind(b *testing.B) {
	f := bigFile(10000)
	b.ReportAllocs()
	var t int64
	for b.Loop() {
		t = (t + 7919e6) % 1e14
		if _, ok := f.Find(t); !ok {
			b.Fatal("not found")
		}
	}
}
