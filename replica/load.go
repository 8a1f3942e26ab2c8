package replica

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/partition"
)

// Load measures the load a server publishes in its membership key
// (membership.Config.Summary): its replicas, their bytes on disk, and its
// insert rate, in rows coordinated (Metrics.CoordinatedRows) per second
// over the time since the previous summary. It reads only the store and
// the counter, so it can serve the registration before the Server exists.
type Load struct {
	store *partition.Store
	rows  prometheus.Counter

	mu struct {
		sync.Mutex
		// at and rows are the previous insert-rate sample.
		at   time.Time
		rows float64
	}
}

// NewLoad measures the load of store's replicas and m's coordinated rows.
func NewLoad(store *partition.Store, m *Metrics) *Load {
	return &Load{store: store, rows: m.CoordinatedRows}
}

// Summary returns the load now; the insert rate is over the time since the
// previous call (zero on the first).
func (l *Load) Summary() membership.Summary {
	reps := l.store.Replicas()
	s := membership.Summary{Partitions: len(reps)}
	now, rows := time.Now(), counterValue(l.rows)
	l.mu.Lock()
	if !l.mu.at.IsZero() {
		if d := now.Sub(l.mu.at).Seconds(); d > 0 {
			s.InsertRowsPerSec = (rows - l.mu.rows) / d
		}
	}
	l.mu.at, l.mu.rows = now, rows
	l.mu.Unlock()
	for _, r := range reps {
		if b, err := r.DiskUsage(); err == nil {
			s.Bytes += b
		}
	}
	return s
}

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil || m.Counter == nil {
		return 0
	}
	return m.Counter.GetValue()
}
