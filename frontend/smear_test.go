package frontend

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/smear"
)

// dueQueue refuses the first full draws with smear.ErrDueFull and records
// the due times it was offered.
type dueQueue struct {
	full    int
	dues    []time.Time
	refused int
	lead    time.Duration // what DueLead answers
	direct  int           // rows counted by NoteDirect
}

func (q *dueQueue) Enqueue(_ context.Context, _ string, _ []model.Row, due time.Time) error {
	q.dues = append(q.dues, due)
	if len(q.dues) <= q.full {
		return smear.ErrDueFull
	}
	return nil
}

func (q *dueQueue) RetryAfter() time.Duration { return time.Second }

func (q *dueQueue) RefusedDueFull() { q.refused++ }

func (q *dueQueue) DueLead(time.Duration) time.Duration { return q.lead }

func (q *dueQueue) NoteDirect(n int) { q.direct += n }

// TestEnqueueDrawsWithinLead: with a due lead, due times are drawn from
// [now, now+max delay−lead], and still spread over that window.
func TestEnqueueDrawsWithinLead(t *testing.T) {
	sc := metadata.SmearConfig{Enabled: true, MaxDelay: model.Duration(time.Minute)}
	rows := []model.Row{{Time: 1, Series: "m"}}
	q := &dueQueue{lead: 15 * time.Second}
	fe := &Frontend{queue: q}
	start := time.Now()
	for range 200 {
		if err := fe.enqueue(context.Background(), "t", sc, rows); err != nil {
			t.Fatal(err)
		}
	}
	var latest time.Duration
	for _, d := range q.dues {
		if d.Before(start) || d.After(time.Now().Add(45*time.Second)) {
			t.Fatalf("due %v outside [now, now+45s] (max delay 1m, lead 15s)", d.Sub(start))
		}
		latest = max(latest, d.Sub(start))
	}
	// 200 uniform draws over 45 s all below 40 s: probability (8/9)^200.
	if latest < 40*time.Second {
		t.Fatalf("latest due +%v of 200 draws: not spread over the window", latest)
	}
}

// TestEnqueueRedrawsDueTime: a due time whose second is full is drawn
// again, up to dueDraws times in all, each within [now, now+max delay];
// past that the refusal is returned.
func TestEnqueueRedrawsDueTime(t *testing.T) {
	sc := metadata.SmearConfig{Enabled: true, MaxDelay: model.Duration(time.Minute)}
	rows := []model.Row{{Time: 1, Series: "m"}}
	q := &dueQueue{full: dueDraws - 1}
	fe := &Frontend{queue: q}
	start := time.Now()
	if err := fe.enqueue(context.Background(), "t", sc, rows); err != nil {
		t.Fatalf("enqueue with a free last draw: %v", err)
	}
	if len(q.dues) != dueDraws || q.refused != 0 {
		t.Fatalf("%d draws, %d refusals counted; want %d, 0", len(q.dues), q.refused, dueDraws)
	}
	for _, d := range q.dues {
		if d.Before(start) || d.After(time.Now().Add(time.Minute)) {
			t.Fatalf("due %v outside [now, now+1m]", d)
		}
	}
	q = &dueQueue{full: dueDraws}
	fe.queue = q
	if err := fe.enqueue(context.Background(), "t", sc, rows); !errors.Is(err, smear.ErrDueFull) || len(q.dues) != dueDraws {
		t.Fatalf("every draw full: %v after %d draws, want ErrDueFull after %d", err, len(q.dues), dueDraws)
	}
	if q.refused != 1 {
		t.Fatalf("%d refusals counted for one refused insert, want 1", q.refused)
	}
}

// insertRouter is a Router that answers Table with cfg and records the
// rows of its Inserts, failing them with err.
type insertRouter struct {
	Router
	cfg  metadata.TableConfig
	rows int
	err  error
}

func (r *insertRouter) Table(context.Context, string) (metadata.TableConfig, *metadata.File, error) {
	return r.cfg, &metadata.File{}, nil
}

func (r *insertRouter) Insert(_ context.Context, _ string, rows []model.Row, _ model.InsertOptions) error {
	if r.err != nil {
		return r.err
	}
	r.rows += len(rows)
	return nil
}

// TestDirectRowsCounted: rows an insert writes straight to their
// partitions (the table does not smear, or the insert opts out) are
// counted for the smear queue's admission once written, and not when the
// write fails.
func TestDirectRowsCounted(t *testing.T) {
	rows := []model.Row{{Time: 1, Series: "m"}, {Time: 2, Series: "m"}, {Time: 3, Series: "m"}}
	q := &dueQueue{}
	r := &insertRouter{cfg: metadata.TableConfig{Name: "t", Smear: metadata.SmearConfig{Enabled: true, MaxDelay: model.Duration(time.Minute)}}}
	fe := &Frontend{queue: q, router: r}
	ctx := context.Background()
	if err := fe.insert(ctx, "t", rows, model.InsertOptions{NoSmear: true}); err != nil {
		t.Fatal(err)
	}
	r.cfg.Smear.Enabled = false
	if err := fe.insert(ctx, "t", rows[:2], model.InsertOptions{}); err != nil {
		t.Fatal(err)
	}
	if r.rows != 5 || q.direct != 5 {
		t.Fatalf("router wrote %d rows, %d counted as direct; want 5 and 5", r.rows, q.direct)
	}
	r.err = errors.New("replica set unavailable")
	if err := fe.insert(ctx, "t", rows, model.InsertOptions{}); err == nil {
		t.Fatal("a failed write answered nil")
	}
	if q.direct != 5 {
		t.Fatalf("%d rows counted as direct after a failed write, want still 5", q.direct)
	}
}
