package replica

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/replication"
)

// TestDepartedSharers: a dropped replica's record answers for the members
// of its data space created after it whose range it covered, and for
// nobody else; a target it served without delivering everything gets the
// row snapshot whatever the live sharers say.
func TestDepartedSharers(t *testing.T) {
	ptr := func(v int64) *int64 { return &v }
	t0 := time.Unix(1000, 0)
	space, other := uuid.New(), uuid.New()
	delivered, undelivered, unknown := uuid.New(), uuid.New(), uuid.New()
	var d departedSharers
	parent, covered := uuid.New(), uuid.New()
	d.note(partition.ReplicaInfo{Placement: parent, Begin: ptr(0), End: ptr(100), CreatedAt: t0},
		space, map[uuid.UUID]bool{delivered: true, undelivered: false}, []uuid.UUID{covered}, t0.Add(time.Minute))
	if got := d.aliases(covered); len(got) != 1 || got[0] != parent {
		t.Errorf("aliases of a covered member: %v, want [%v]", got, parent)
	}
	if got := d.aliases(uuid.New()); len(got) != 0 {
		t.Errorf("aliases of another replica: %v, want none", got)
	}

	child := partition.ReplicaInfo{Placement: uuid.New(), Begin: ptr(0), End: ptr(50), CreatedAt: t0.Add(time.Second)}
	older := child
	older.CreatedAt = t0.Add(-time.Second)
	wider := child
	wider.End = ptr(101)
	for _, tc := range []struct {
		name   string
		info   partition.ReplicaInfo
		space  uuid.UUID
		target uuid.UUID
		live   replication.Inheritance
		want   replication.Inheritance
	}{
		{"delivered", child, space, delivered, replication.InheritNone, replication.InheritHeld},
		{"a live sharer still delivering", child, space, delivered, replication.InheritPending, replication.InheritPending},
		{"not delivered", child, space, undelivered, replication.InheritHeld, replication.InheritNone},
		{"not served", child, space, unknown, replication.InheritHeld, replication.InheritHeld},
		{"not served, nothing live", child, space, unknown, replication.InheritNone, replication.InheritNone},
		{"another space", child, other, delivered, replication.InheritNone, replication.InheritNone},
		{"created before the departed", older, space, delivered, replication.InheritNone, replication.InheritNone},
		{"range not covered", wider, space, delivered, replication.InheritNone, replication.InheritNone},
	} {
		if got := d.inherited(tc.info, tc.space, tc.target, tc.live); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}

	// Records expire, and their number is bounded.
	d.note(partition.ReplicaInfo{Placement: uuid.New(), CreatedAt: t0}, other, nil, nil, t0.Add(time.Minute+departedTTL+time.Second))
	if got := d.inherited(child, space, delivered, replication.InheritNone); got != replication.InheritNone {
		t.Errorf("after the record's TTL: %v, want InheritNone", got)
	}
	if got := d.aliases(covered); len(got) != 0 {
		t.Errorf("aliases after the record's TTL: %v, want none", got)
	}
	for i := range maxDeparted + 10 {
		d.note(partition.ReplicaInfo{Placement: uuid.New(), CreatedAt: t0}, other, nil, nil, t0.Add(2*departedTTL+time.Duration(i)))
	}
	if n := len(d.m); n > maxDeparted {
		t.Errorf("%d records kept, at most %d wanted", n, maxDeparted)
	}
}
