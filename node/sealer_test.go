package node

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSealerWakesForQuietBucket: a storage bucket that has ended and gone
// quiet is sealed as soon as it may be, not at the sealer's next full
// pass: with an hour between full passes, rows of a bucket that ended a
// few minutes ago (younger than SealAfter) are sealed once they took no
// write for SealQuiet (SealIdle off).
func TestSealerWakesForQuietBucket(t *testing.T) {
	sealsRecentRows(t, func(c *Config) {
		c.SealInterval, c.SealQuiet, c.SealIdle = time.Hour, 200*time.Millisecond, -1
	})
}

// TestSealerSealsIdleStore: with SealQuiet and full passes an hour away,
// rows of a bucket that ended a few minutes ago are sealed once their
// partition has taken no write for SealIdle: the sealer wakes for it.
func TestSealerSealsIdleStore(t *testing.T) {
	sealsRecentRows(t, func(c *Config) {
		c.SealInterval, c.SealQuiet, c.SealIdle = time.Hour, time.Hour, 200*time.Millisecond
	})
}

// sealsRecentRows starts a server configured by configure, writes two rows
// of a bucket that ended a few minutes ago (younger than SealAfter), and
// waits until the server has sealed them.
func sealsRecentRows(t *testing.T, configure func(*Config)) {
	e := testEtcd(t)
	n := startNode(t, e, "s1", t.TempDir(), configure)
	c := &client{t: t, base: n.URL()}
	createTable(c, "recent")
	ts := time.Now().Add(-3 * time.Minute).UnixNano()
	if r := c.do("POST", "/write?db=recent", fmt.Appendf(nil, "m v=1 %d\nm v=2 %d\n", ts, ts+1)); r.status != 204 {
		t.Fatalf("write: %d %s", r.status, r.body)
	}
	waitFor(t, "2 rows sealed", func() bool { return sealedRows(c) >= 2 })
}

// sealedRows returns the server's tsdb_seal_rows_total.
func sealedRows(c *client) float64 {
	r := c.do("GET", "/metrics", nil)
	for _, line := range strings.Split(string(r.body), "\n") {
		if v, ok := strings.CutPrefix(line, "tsdb_seal_rows_total "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	return 0
}
