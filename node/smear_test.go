package node

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/smear"
)

// Insert smearing on real servers (DESIGN.md section 7, issue 7). The
// tables get a narrow partition [base+10s, base+20s) by hand: the tests
// insert there, where the 60 s threshold smears.

const smearBase = int64(1_700_000_000) * 1e9

// createSmearTable creates table with smearing on (max delay maxDelay) and
// splits it at base+10s and base+20s.
func (c *testCluster) createSmearTable(id, table string, rf int, maxDelay time.Duration) {
	c.t.Helper()
	cl := c.client(id)
	cl.must(201, cl.do("POST", "/api/v1/tables", []byte(fmt.Sprintf(
		`{"name":%q,"replication_factor":%d,"smear":{"enabled":true,"max_delay":%q,"keyrange_threshold":"60s"}}`,
		table, rf, maxDelay.String()))), nil)
	c.splitInto(id, table, smearBase, 10e9, 3)
	// Every front end decides on its own METADATA whether to smear: wait
	// until each has the narrow partition (the watch delivers it).
	waitFor(c.t, "every server to see the narrow partition", func() bool {
		for _, n := range c.nodes {
			_, f, ok := n.router.Cached(table)
			if !ok {
				return false
			}
			p, found := f.Find(smearBase + 15e9)
			if !found || p.Begin == nil || *p.Begin != smearBase+10e9 || p.End == nil || *p.End != smearBase+20e9 {
				return false
			}
		}
		return true
	})
}

// countIn counts table's rows in [from, to) through server id (quorum).
func (c *testCluster) countIn(id, table string, from, to int64) int64 {
	c.t.Helper()
	r := c.client(id).do("GET", fmt.Sprintf("/api/v1/tables/%s/query?agg=count&fields=v&group=none&from=%d&to=%d", table, from, to), nil,
		api.HeaderConsistency, api.ConsistencyQuorum)
	if r.status != 200 {
		c.t.Fatalf("count via %s: %d %s", id, r.status, r.body)
	}
	var resp struct {
		Series []struct {
			Buckets []struct {
				Values map[string]float64 `json:"values"`
			} `json:"buckets"`
		} `json:"series"`
	}
	if err := json.Unmarshal(r.body, &resp); err != nil {
		c.t.Fatal(err)
	}
	var n int64
	for _, s := range resp.Series {
		for _, b := range s.Buckets {
			n += int64(b.Values["v"])
		}
	}
	return n
}

// smearRows is line protocol for rows at base+from+i·step.
func smearRows(prefix string, n int, from, step int64) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "m,s=%s%d v=%d %d\n", prefix, i, i, smearBase+from+int64(i)*step)
	}
	return []byte(b.String())
}

// TestSmearDelaysVisibility: a row for the narrow partition is
// acknowledged at once, is not visible while it waits in the queue, and
// becomes visible once forwarded after the max delay; the same insert with
// X-TSDB-Smear: off, or into a wide partition, is visible at once.
func TestSmearDelaysVisibility(t *testing.T) {
	const maxDelay = 4 * time.Second
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.NoSmear = false
		cfg.knobs.smearDelay = func(max time.Duration) time.Duration { return max } // always the longest
	})
	c.createSmearTable("s1", "sm", 2, maxDelay)
	narrowFrom, narrowTo := smearBase+10e9, smearBase+20e9

	sent := time.Now() // before the rows are queued: they are due at least maxDelay after it
	c.insertLP("s2", "sm", smearRows("late", 5, 11e9, 1e9))
	acked := time.Now()
	got := c.countIn("s3", "sm", narrowFrom, narrowTo)
	if time.Since(sent) < maxDelay {
		// Checked only when the query answered before the rows were due
		// (always, unless the machine stalled for seconds).
		if got != 0 {
			t.Errorf("%d smeared rows visible before their delay", got)
		}
		if rows, _ := c.nodes["s2"].smearQ.Depth(); rows != 5 {
			t.Errorf("s2's smear queue holds %d rows, want 5", rows)
		}
	}
	waitFor(t, "the smeared rows to be forwarded", func() bool { return c.countIn("s3", "sm", narrowFrom, narrowTo) == 5 })
	if d := time.Since(sent); d < maxDelay {
		t.Errorf("the rows were visible %v after they were sent, before the %v delay", d, maxDelay)
	}
	t.Logf("visible %v after the acknowledgement (max delay %v)", time.Since(acked).Round(time.Millisecond), maxDelay)

	// Opted out by the header: written now.
	c.insertLP("s2", "sm", smearRows("now", 3, 12e9, 1e9), api.HeaderSmear, "off")
	if got := c.countIn("s3", "sm", narrowFrom, narrowTo); got != 8 {
		t.Errorf("after an opted-out insert: %d rows visible, want 8", got)
	}
	// A wide partition: written now.
	c.insertLP("s2", "sm", smearRows("wide", 3, 30e9, 1e9))
	if got := c.countIn("s3", "sm", narrowTo, smearBase+60e9); got != 3 {
		t.Errorf("rows in the open partition: %d visible, want 3", got)
	}
	// A bad header value is refused whole.
	if r := c.client("s2").do("POST", "/write?db=sm&precision=ns", smearRows("bad", 1, 13e9, 1), api.HeaderSmear, "maybe"); r.status != 400 {
		t.Errorf("bad X-TSDB-Smear: %d %s", r.status, r.body)
	}
}

// TestSmearedRowsFollowASplit: rows wait in the queue while their
// partition splits; forwarded after SPLIT_FINALIZE, each lands in the
// child covering it (routed by the METADATA current when it is sent).
func TestSmearedRowsFollowASplit(t *testing.T) {
	var hold atomic.Bool
	hold.Store(true)
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.NoSmear = false
		cfg.knobs.smearDelay = func(time.Duration) time.Duration {
			if hold.Load() {
				return time.Hour // held until the test drains the queue
			}
			return 0
		}
	})
	c.createSmearTable("s1", "sp", 2, time.Minute)
	c.insertLP("s1", "sp", smearRows("q", 10, 10e9, 1e9)) // 10 rows over the narrow partition
	if rows, _ := c.nodes["s1"].smearQ.Depth(); rows != 10 {
		t.Fatalf("s1's smear queue holds %d rows, want 10", rows)
	}
	if got := c.countIn("s2", "sp", smearBase+10e9, smearBase+20e9); got != 0 {
		t.Fatalf("%d rows visible while held in the queue", got)
	}
	// Split the narrow partition at base+13s and wait for the children.
	c.splitInto("s1", "sp", smearBase+10e9, 3e9, 2)
	f := c.currentFile("s1", "sp")
	if len(f.Partitions) != 4 {
		t.Fatalf("after the split: %d partitions, want 4", len(f.Partitions))
	}
	hold.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.nodes["s1"].smearFwd.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	left, right := f.Partitions[1], f.Partitions[2]
	if got := c.countIn("s3", "sp", *left.Begin, *left.End); got != 3 {
		t.Errorf("child [%d, %d): %d rows, want 3", *left.Begin, *left.End, got)
	}
	if got := c.countIn("s3", "sp", *right.Begin, *right.End); got != 7 {
		t.Errorf("child [%d, %d): %d rows, want 7", *right.Begin, *right.End, got)
	}
	// Each child's replicas hold exactly their rows, all with the one
	// version s1 stamped when it took the insert (rule 2): the children's
	// coordinators kept it.
	var version model.Version
	for _, p := range []int{1, 2} {
		waitFor(t, "the children's replicas converging", func() bool {
			for _, pl := range f.Partitions[p].Servers {
				rep, ok := c.nodes[pl.ServerID].store.Replica(pl.PlacementID)
				if !ok {
					return false
				}
				rows, _, err := rep.Scan(model.Query{From: math.MinInt64, To: math.MaxInt64, Limit: 100})
				if err != nil || len(rows) != map[int]int{1: 3, 2: 7}[p] {
					return false
				}
				for _, r := range rows {
					if version == (model.Version{}) {
						version = r.Fields[0].Version
					}
					if r.Fields[0].Version != version {
						t.Fatalf("row %s on %s has version %v, another row %v: not the one the front end stamped", r.Series, pl.ServerID, r.Fields[0].Version, version)
					}
				}
			}
			return true
		})
	}
}

// TestSmearQueueFull: a full queue answers 503 queue_full with Retry-After
// and takes nothing of that insert; every acknowledged row arrives.
func TestSmearQueueFull(t *testing.T) {
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.NoSmear = false
		cfg.SmearMaxRows = 10
		cfg.knobs.smearDelay = func(time.Duration) time.Duration { return time.Hour }
	})
	c.createSmearTable("s1", "qf", 2, time.Minute)
	c.insertLP("s2", "qf", smearRows("a", 8, 10e9, 1e8))
	r := c.client("s2").do("POST", "/write?db=qf&precision=ns", smearRows("b", 5, 11e9, 1e8))
	if code, _ := errorOf(t, r); r.status != 503 || code != api.CodeQueueFull || r.header.Get("Retry-After") == "" {
		t.Fatalf("insert into a full queue: %d %s (Retry-After %q), want 503 %s with Retry-After", r.status, r.body, r.header.Get("Retry-After"), api.CodeQueueFull)
	}
	if rows, _ := c.nodes["s2"].smearQ.Depth(); rows != 8 {
		t.Fatalf("queue depth %d after the refusal, want 8", rows)
	}
	// The refused insert, opted out of smearing, is written now.
	c.insertLP("s2", "qf", smearRows("b", 5, 11e9, 1e8), api.HeaderSmear, "off")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.nodes["s2"].smearFwd.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.countIn("s1", "qf", smearBase+10e9, smearBase+20e9); got != 13 {
		t.Errorf("%d rows after the drain, want 13 (8 queued, 5 direct)", got)
	}
}

// TestKill9WithQueuedRows: three `tsdb server` processes; rows for a
// narrow partition are acknowledged by s2 and wait in its smear queue (max
// delay 20 s) when s2 is killed with SIGKILL. Restarted, s2 replays its
// queue and forwards them: every acknowledged row arrives, once.
func TestKill9WithQueuedRows(t *testing.T) {
	e := testEtcd(t)
	procs := make([]*proc, 3)
	for i := range procs {
		procs[i] = startProc(t, fmt.Sprintf("s%d", i+1), t.TempDir(), e.Endpoint(), "--smear=true")
	}
	c := procs[0].client()
	c.must(201, c.do("POST", "/api/v1/tables", []byte(
		`{"name":"kq","replication_factor":3,"smear":{"enabled":true,"max_delay":"20s","keyrange_threshold":"60s"}}`)), nil)
	// The narrow partition [base+10s, base+20s).
	for _, at := range []int64{smearBase + 10e9, smearBase + 20e9} {
		var tr struct {
			Partitions []struct {
				ID    string `json:"id"`
				Begin *int64 `json:"begin"`
				End   *int64 `json:"end"`
			} `json:"partitions"`
		}
		c.must(200, c.do("GET", "/api/v1/tables/kq", nil), &tr)
		pid := ""
		for _, p := range tr.Partitions {
			if (p.Begin == nil || *p.Begin <= at) && (p.End == nil || at < *p.End) {
				pid = p.ID
			}
		}
		c.must(200, c.do("POST", "/api/v1/tables/kq/partitions/"+pid+"/split", []byte(fmt.Sprintf(`{"at":"%d"}`, at))), nil)
		waitFor(t, "the split to finalize", func() bool {
			var tr2 struct {
				Partitions []struct {
					Split   any   `json:"split"`
					Joining []any `json:"joining"`
				} `json:"partitions"`
			}
			c.must(200, c.do("GET", "/api/v1/tables/kq", nil), &tr2)
			for _, p := range tr2.Partitions {
				if p.Split != nil || len(p.Joining) > 0 {
					return false
				}
			}
			return len(tr2.Partitions) == len(tr.Partitions)+1
		})
	}
	s2 := procs[1].client()
	// s2 decides on its own METADATA whether to smear: wait until it has
	// the narrow partition.
	waitFor(t, "s2 to see the narrow partition", func() bool {
		var tr struct {
			Partitions []any `json:"partitions"`
		}
		s2.must(200, s2.do("GET", "/api/v1/tables/kq", nil), &tr)
		return len(tr.Partitions) == 3
	})
	const batches, per = 20, 50
	for b := range batches {
		r := s2.do("POST", "/write?db=kq&precision=ns", smearRows(fmt.Sprintf("b%d-", b), per, 10e9+int64(b)*1e8, 1e6))
		if r.status != 204 {
			t.Fatalf("batch %d: %d %s", b, r.status, r.body)
		}
	}
	procs[1].kill9()
	r0 := c.do("GET", fmt.Sprintf("/api/v1/tables/kq/query?agg=count&fields=v&group=none&from=%d&to=%d", smearBase+10e9, smearBase+20e9), nil)
	t.Logf("visible right after the kill (the rest waits in s2's queue): %s", r0.body)
	procs[1].start()
	waitLong(t, 90*time.Second, "every acknowledged smeared row to arrive", func() bool {
		time.Sleep(200 * time.Millisecond)
		r := c.do("GET", fmt.Sprintf("/api/v1/tables/kq/query?agg=count&fields=v&group=none&from=%d&to=%d", smearBase+10e9, smearBase+20e9), nil,
			api.HeaderConsistency, api.ConsistencyQuorum)
		return r.status == 200 && strings.Contains(string(r.body), fmt.Sprintf(`"v":%d}`, batches*per))
	})
	// Once each: the distinct series number batches·per and each has one row.
	r := c.do("GET", fmt.Sprintf("/api/v1/tables/kq/query?limit=100000&from=%d&to=%d", smearBase+10e9, smearBase+20e9), nil,
		api.HeaderConsistency, api.ConsistencyQuorum)
	var rows api.RawQueryResponse
	if r.status != 200 || json.Unmarshal(r.body, &rows) != nil || len(rows.Rows) != batches*per {
		t.Fatalf("raw rows: %d, %d of %d", r.status, len(rows.Rows), batches*per)
	}
}

// gatedSender holds every forward until open is closed: a forwarder far
// slower than the inserts.
type gatedSender struct {
	smear.Sender
	open chan struct{}
}

func (g gatedSender) Forward(ctx context.Context, table string, rows []model.Row) ([]error, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Sender.Forward(ctx, table, rows)
}

func (g gatedSender) Route(ctx context.Context, table string, rows []model.Row) ([]int, error) {
	return g.Sender.(smear.Partitioner).Route(ctx, table, rows)
}

// TestSmearAdmission: three servers whose forwarders are held (admission
// on short periods, rows due at once). Inserts through s2 are acknowledged
// until its rows are overdue while it accepts faster than it forwards;
// then it answers 503 queue_full with Retry-After and writes nothing of
// the refused inserts. Released, the forwarder delivers the backlog and
// s2 admits smeared inserts again. Every acknowledged row is stored, and
// no refused one.
func TestSmearAdmission(t *testing.T) {
	open := make(chan struct{})
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.NoSmear = false
		cfg.knobs.smearDelay = func(time.Duration) time.Duration { return 0 }
		cfg.knobs.smearQueue = func(o *smear.Options) {
			o.AdmitTick, o.RateWindow = 20*time.Millisecond, 40*time.Millisecond
			o.OverdueAfter, o.BehindFor = 20*time.Millisecond, 60*time.Millisecond
		}
		cfg.knobs.smearSender = func(s smear.Sender) smear.Sender { return gatedSender{Sender: s, open: open} }
	})
	c.createSmearTable("s1", "adm", 2, time.Minute)
	acked := int64(0)
	attempt := 0
	insert := func() response {
		attempt++
		r := c.client("s2").do("POST", "/write?db=adm&precision=ns", smearRows(fmt.Sprintf("a%d-", attempt), 5, 10e9, 1e8))
		switch r.status {
		case 204:
			acked += 5
		case 503:
		default:
			t.Fatalf("insert: %d %s", r.status, r.body)
		}
		return r
	}
	var refused response
	waitFor(t, "a refusal while the forwarder is held", func() bool {
		refused = insert()
		return refused.status == 503
	})
	if code, _ := errorOf(t, refused); code != api.CodeQueueFull || refused.header.Get("Retry-After") == "" {
		t.Fatalf("refusal %d %s (Retry-After %q), want 503 %s with Retry-After", refused.status, refused.body, refused.header.Get("Retry-After"), api.CodeQueueFull)
	}
	if st := c.nodes["s2"].smearQ.Admission(); !st.Closed {
		t.Fatalf("admission %+v after a refusal, want closed", st)
	}
	close(open)
	waitFor(t, "smeared inserts admitted again", func() bool { return insert().status == 204 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.nodes["s2"].smearFwd.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.countIn("s1", "adm", smearBase+10e9, smearBase+20e9); got != acked {
		t.Fatalf("%d rows stored, want the %d acknowledged (and none of the refused)", got, acked)
	}
}
