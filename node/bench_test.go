package node

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/partition"
)

// Rows of the benchmark: 1000 series per timestamp, 3 float fields, as the
// issue's reference figures (1000 lines a request, 3 fields a line).
const benchRowsPerReq = 1000

func lpBody(req int) []byte {
	ts := t0 + int64(req)*int64(10*time.Second)
	b := make([]byte, 0, 96*benchRowsPerReq)
	for i := 0; i < benchRowsPerReq; i++ {
		b = append(b, "cpu,host=host_"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ",region=eu-west usage_user="...)
		b = strconv.AppendFloat(b, float64(i%100)+0.5, 'f', -1, 64)
		b = append(b, ",usage_system=2.5,usage_idle=96 "...)
		b = strconv.AppendInt(b, ts, 10)
		b = append(b, '\n')
	}
	return b
}

func jsonBody(req int) []byte {
	ts := t0 + int64(req)*int64(10*time.Second)
	b := make([]byte, 0, 128*benchRowsPerReq)
	b = append(b, '[')
	for i := 0; i < benchRowsPerReq; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"time":`...)
		b = strconv.AppendInt(b, ts, 10)
		b = append(b, `,"series":"cpu,host=host_`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,region=eu-west","fields":{"usage_user":`...)
		b = strconv.AppendFloat(b, float64(i%100)+0.5, 'f', -1, 64)
		b = append(b, `,"usage_system":2.5,"usage_idle":96}}`...)
	}
	return append(b, ']')
}

// BenchmarkIngest measures, in one run, the raw pebble ceiling (synced
// batches of 1000 keys shaped like stored rows) and the HTTP insert path end
// to end (line protocol and JSON, 1000 rows a request, concurrent clients,
// acknowledged after the WAL sync). Compare their rows/s for the ratio.
func BenchmarkIngest(b *testing.B) {
	for _, writers := range []int{1, 4} {
		b.Run(fmt.Sprintf("path=pebble-raw/writers=%d", writers), func(b *testing.B) {
			benchPebbleRaw(b, writers)
		})
	}
	for _, format := range []string{"lp", "json"} {
		for _, clients := range []int{4, 8} {
			b.Run(fmt.Sprintf("path=http-%s/clients=%d", format, clients), func(b *testing.B) {
				benchHTTP(b, format, clients)
			})
		}
	}
}

// benchPebbleRaw writes keys shaped like stored row keys and values of the
// size our rows take (about 62 and 90 bytes), one key per row, in synced
// 1000-key batches: what pebble alone can do with these rows. (The store also
// writes a sequence-index key per row; partition's BenchmarkPebbleCeiling
// has a with_seq_index case for that.)
func benchPebbleRaw(b *testing.B, writers int) {
	store, err := partition.Open(partition.Options{Dir: filepath.Join(b.TempDir(), "pebble")})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	db := store.DB()
	value := make([]byte, 90)
	for i := range value {
		value[i] = byte(i * 7)
	}
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := make([]byte, 0, 64)
			for {
				req := next.Add(1) - 1
				if req >= int64(b.N) {
					return
				}
				batch := db.NewBatch()
				ts := t0 + req*int64(10*time.Second)
				for i := 0; i < benchRowsPerReq; i++ {
					// The shape of a stored row key: a time bucket, then the
					// series, then the time (see docs/storage-format.md).
					key = key[:0]
					key = append(key, 0xfe) // outside the store's own key space
					key = binary.BigEndian.AppendUint32(key, uint32((uint64(ts)^1<<63)>>36))
					key = append(key, "cpu,host=host_"...)
					key = strconv.AppendInt(key, int64(i), 10)
					key = append(key, ",region=eu-west\x00"...)
					key = binary.BigEndian.AppendUint64(key, uint64(ts)^1<<63)
					if err := batch.Set(key, value, nil); err != nil {
						b.Error(err)
						return
					}
				}
				if err := db.Apply(batch, pebble.Sync); err != nil {
					b.Error(err)
					return
				}
				batch.Close()
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N*benchRowsPerReq)/time.Since(start).Seconds(), "rows/s")
}

func benchHTTP(b *testing.B, format string, clients int) {
	e := testEtcd(b)
	n := startNode(b, e, "s1", b.TempDir())
	c := &client{t: b, base: n.URL()}
	createTable(c, "bench")
	// Bodies are built before the timer starts so the client costs little.
	bodies := make([][]byte, b.N)
	for i := range bodies {
		if format == "lp" {
			bodies[i] = lpBody(i)
		} else {
			bodies[i] = jsonBody(i)
		}
	}
	uri := n.URL() + "/write?db=bench"
	ct := "text/plain"
	okStatus := 204
	if format == "json" {
		uri = n.URL() + "/api/v1/tables/bench/insert"
		ct = "application/json"
		okStatus = 200
	}
	hc := &fasthttp.Client{MaxConnsPerHost: clients * 2, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	var next atomic.Int64
	var bytesSent atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := fasthttp.AcquireRequest()
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				req.Reset()
				req.SetRequestURI(uri)
				req.Header.SetMethod("POST")
				req.Header.SetContentType(ct)
				req.SetBodyRaw(bodies[i])
				if err := hc.Do(req, resp); err != nil {
					b.Error(err)
					return
				}
				if resp.StatusCode() != okStatus {
					b.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
					return
				}
				bytesSent.Add(int64(len(bodies[i])))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N*benchRowsPerReq)/elapsed, "rows/s")
	b.ReportMetric(float64(bytesSent.Load())/elapsed/1e6, "MB/s")
}
