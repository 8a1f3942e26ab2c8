package smear

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkEnqueue measures synced, concurrent Enqueues: each op writes one
// entry of `rows` rows and returns after its fsync. goroutines=P×GOMAXPROCS
// writers run at once, so the figure shows what pebble's group commit makes
// of the fsyncs (ns/op falls as writers share syncs). SetBytes counts the
// codec's encoding of the rows (the entry adds a key and a small header).
func BenchmarkEnqueue(b *testing.B) {
	for _, rows := range []int{1, 100} {
		for _, par := range []int{1, 16} {
			b.Run(fmt.Sprintf("rows=%d/parallelism=%d", rows, par), func(b *testing.B) {
				benchEnqueue(b, rows, par)
			})
		}
	}
}

func benchEnqueue(b *testing.B, n, par int) {
	opts := testOptions(b)
	opts.MaxRows, opts.MaxBytes = 1<<40, 1<<40
	q := openQueue(b, b.TempDir(), opts)
	batch := makeRows(0, n)
	size := int64(len(codec.AppendRows(nil, batch)))
	due := time.Now().Add(time.Hour)
	ctx := context.Background()
	b.SetBytes(size)
	b.ReportAllocs()
	b.SetParallelism(par)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := q.Enqueue(ctx, "cpu", batch, due); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
