package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdb/tsdb/presplit"
)

// TestPresplitTracksRate: a steady insert rate at "now" into a table with
// a 64 KiB target. The master keeps at least three empty partitions of the
// planned width ahead of now, and when the rate quadruples the width of
// the partitions it adds ahead shrinks with it.
//
// Rows carry a 1 KB random string, so 10 rows/s is about 10.5 KB per
// second of the time axis (7.5 KB once sealed: the string keeps 6 bits a
// byte). The master's estimate weighs rows by where they are stored (the
// memory head's rows as a scan of pebble's head would, sealed ones by
// their block's share), so under load it measured 10.8 to 19.2 KB/s: 64
// KiB lasts 3.4–6.1 s, which rounds down to a 2 s or a 5 s width, both
// accepted (5 s only, as before, timed out in 1 run of 8 under -race:
// the estimate sat above 13.1 KB/s, the 5 s width's bound). Until the
// rate is known the width is 1 s, which the test tells apart. At 40 rows/s
// 64 KiB lasts 0.85–1.5 s: 500 ms or 1 s, at most half the first width.
// The writer stamps rows at evenly spaced times, so the bytes per second
// of the time axis do not depend on how fast the machine is.
func TestPresplitTracksRate(t *testing.T) {
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.NoPresplit = false
		cfg.MasterTick = 100 * time.Millisecond
		cfg.PresplitInterval = 250 * time.Millisecond
		cfg.LifecycleTick = 100 * time.Millisecond
		cfg.Presplit = presplit.Config{Horizon: 10 * time.Second, MinWidth: 500 * time.Millisecond, MaxWidth: time.Hour,
			UnknownWidth: time.Second, RateWindow: 15 * time.Second}
	})
	cl := c.client("s1")
	cl.must(201, cl.do("POST", "/api/v1/tables", []byte(`{"name":"ps","replication_factor":2,"partition_size_target":65536}`)), nil)

	var rate atomic.Int64 // rows per second of the time axis
	rate.Store(10)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var failed atomic.Int64
	wg.Go(func() { steadyWriter(ctx, c, "ps", &rate, &failed) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	// aheadOf reports the widths of the bounded partitions that begin at
	// or after now, in order.
	aheadOf := func() []time.Duration {
		f := c.currentFile("s1", "ps")
		now := time.Now().UnixNano()
		var out []time.Duration
		for _, p := range f.Partitions {
			if p.Begin != nil && p.End != nil && *p.Begin >= now {
				out = append(out, time.Duration(*p.End-*p.Begin))
			}
		}
		return out
	}
	// lastAhead is the width of the three partitions furthest ahead, if
	// they share one.
	lastAhead := func(ws []time.Duration) (time.Duration, bool) {
		if len(ws) < 3 {
			return 0, false
		}
		w := ws[len(ws)-1]
		return w, ws[len(ws)-2] == w && ws[len(ws)-3] == w
	}
	var widthA time.Duration
	waitLong(t, 2*time.Minute, "3 partitions 2 s or 5 s wide ahead of now at 10 rows/s", func() bool {
		time.Sleep(200 * time.Millisecond)
		ws := aheadOf()
		w, ok := lastAhead(ws)
		widthA = w
		return ok && (w == 2*time.Second || w == 5*time.Second)
	})
	checkEmptyAhead(t, c, "ps")
	t.Logf("10 rows/s: partitions ahead of now %v", aheadOf())

	rate.Store(40)
	var ws []time.Duration
	waitLong(t, 2*time.Minute, "the partitions ahead to narrow after the rate quadrupled", func() bool {
		time.Sleep(200 * time.Millisecond)
		ws = aheadOf()
		w, ok := lastAhead(ws)
		return ok && w <= widthA/2
	})
	t.Logf("40 rows/s: partitions ahead of now %v", ws)
	checkEmptyAhead(t, c, "ps")
	if n := failed.Load(); n > 0 {
		t.Errorf("%d inserts failed", n)
	}
}

// steadyWriter inserts rows stamped at evenly spaced times up to now, at
// rate rows per second of the time axis, every 100 ms, until ctx ends.
func steadyWriter(ctx context.Context, c *testCluster, table string, rate *atomic.Int64, failed *atomic.Int64) {
	rnd := rand.New(rand.NewPCG(1000, 5))
	next := time.Now().UnixNano()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	i := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		step := int64(time.Second) / rate.Load()
		now := time.Now().UnixNano()
		var b strings.Builder
		for ; next <= now; next += step {
			fmt.Fprintf(&b, "m,s=s%d v=%d,pad=%q %d\n", i%5, i, noise(rnd, 1000), next)
			i++
		}
		if b.Len() == 0 {
			continue
		}
		r := c.client("s2").do("POST", "/write?db="+table+"&precision=ns", []byte(b.String()))
		if r.status != 204 && ctx.Err() == nil {
			failed.Add(1)
		}
	}
}

// checkEmptyAhead checks no row lies in a partition that begins after now.
func checkEmptyAhead(t *testing.T, c *testCluster, table string) {
	t.Helper()
	f := c.currentFile("s1", table)
	now := time.Now().UnixNano()
	for _, p := range f.Partitions {
		if p.Begin == nil || *p.Begin < now {
			continue
		}
		q := fmt.Sprintf("/api/v1/tables/%s/query?agg=count&fields=v&from=%d", table, *p.Begin)
		if p.End != nil {
			q += fmt.Sprintf("&to=%d", *p.End)
		}
		r := c.client("s3").do("GET", q, nil)
		if r.status != 200 || strings.Contains(string(r.body), `"v"`) {
			t.Errorf("partition %s ahead of now: %d %s, want no rows", p.ID, r.status, r.body)
		}
	}
}

// TestNewTableBornPresplit: with pre-split on, a new table's first
// METADATA already holds the partitions of the master's first pre-split,
// so rows written at once (at now and in the hours ahead) are never
// copied by a split: the file stays at its first transaction, each
// partition on its own replication-factor servers, and every row is
// answered once.
func TestNewTableBornPresplit(t *testing.T) {
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.NoPresplit = false
		cfg.MasterTick = 100 * time.Millisecond
		cfg.PresplitInterval = 100 * time.Millisecond
		cfg.Presplit = presplit.Config{UnknownWidth: time.Hour}
	})
	cl := c.client("s1")
	cl.must(201, cl.do("POST", "/api/v1/tables", []byte(`{"name":"born","replication_factor":2}`)), nil)
	f := c.currentFile("s1", "born")
	if len(f.Partitions) < 4 || f.TxnSeq != 1 {
		t.Fatalf("new table: %d partitions at txnseq %d, want at least 4 at txnseq 1", len(f.Partitions), f.TxnSeq)
	}
	now := time.Now().UnixNano()
	if p, ok := f.Find(now); !ok || p.End == nil || p.Begin != nil {
		t.Fatalf("now is not in the first partition [-inf, end): %+v", p)
	}
	for _, p := range f.Partitions {
		if len(p.Servers) != 2 {
			t.Fatalf("partition %s has %d servers, want the replication factor 2", p.ID, len(p.Servers))
		}
	}

	// Rows at now and up to three hours ahead, through every server.
	var body strings.Builder
	const rows = 600
	for i := range rows {
		fmt.Fprintf(&body, "m,s=s%d v=%d %d\n", i%6, i, now+int64(i)*int64(18*time.Second))
	}
	for i, id := range []string{"s1", "s2", "s3"} {
		lines := strings.SplitAfter(body.String(), "\n")
		part := strings.Join(lines[i*rows/3:(i+1)*rows/3], "")
		c.insertLP(id, "born", []byte(part))
	}
	c.checkRowsEverywhere("born", rows)
	if f := c.currentFile("s2", "born"); f.TxnSeq != 1 {
		t.Fatalf("the table's METADATA moved to txnseq %d: a split or another change ran on a table born pre-split", f.TxnSeq)
	}
}
