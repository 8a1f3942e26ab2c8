package rpc

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/valyala/fasthttp"
)

type benchRow struct {
	Time   int64              `json:"time"`
	Series string             `json:"series"`
	Fields map[string]float64 `json:"fields"`
}

type benchPush struct {
	Partition string     `json:"partition"`
	Cursor    uint64     `json:"cursor"`
	Rows      []benchRow `json:"rows"`
}

type benchAck struct {
	Cursor uint64 `json:"cursor"`
}

// BenchmarkCall measures one call on loopback: encode and compress the
// request, the server's DecodeRequest and WriteResponse, and decoding the
// answer. SetBytes is the uncompressed request JSON.
func BenchmarkCall(b *testing.B) {
	addr := startServer(b, func(ctx *fasthttp.RequestCtx) {
		var p benchPush
		if DecodeRequest(ctx, 64<<20, &p) != nil {
			return
		}
		WriteResponse(ctx, 200, benchAck{Cursor: p.Cursor + uint64(len(p.Rows))})
	})
	for _, rows := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			req := benchPush{Partition: "3f1c9a4e-7b2d-4c1e-9f0a-1b2c3d4e5f60", Cursor: 42}
			for i := range rows {
				req.Rows = append(req.Rows, benchRow{
					Time:   1_700_000_000_000_000_000 + int64(i)*1_000_000_000,
					Series: fmt.Sprintf("cpu,host=server%02d,region=eu-west", i%50),
					Fields: map[string]float64{"usage_user": float64(i%100) / 3, "usage_system": float64(i%7) / 11},
				})
			}
			js, _ := json.Marshal(req)
			b.SetBytes(int64(len(js)))
			b.ReportAllocs()
			c := NewClient(Config{})
			defer c.Close()
			var ack benchAck
			for b.Loop() {
				if err := c.Call(b.Context(), addr, "/internal/replicate", req, &ack); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
