package membership

import (
	"context"
	"slices"
	"testing"
)

// TestDirectory: the list as Set delivered it answers Known, Count and Live
// (sorted by id), and Addr gives https:// for a server serving TLS, with no
// etcd read for a known id.
func TestDirectory(t *testing.T) {
	d := NewDirectory(nil, "/tsdb/") // no client: a known id must not read etcd
	d.Set([]Info{{ID: "s2", Addr: "h2:2", TLS: true}, {ID: "s1", Addr: "h1:1"}})
	if !d.Known("s1") || d.Known("s3") || d.Count() != 2 {
		t.Fatalf("known s1 %t, s3 %t, count %d; want true, false, 2", d.Known("s1"), d.Known("s3"), d.Count())
	}
	var ids []string
	for _, i := range d.Live() {
		ids = append(ids, i.ID)
	}
	if !slices.Equal(ids, []string{"s1", "s2"}) {
		t.Fatalf("live %v, want [s1 s2]", ids)
	}
	for id, want := range map[string]string{"s1": "h1:1", "s2": "https://h2:2"} {
		if got, err := d.Addr(context.Background(), id); err != nil || got != want {
			t.Errorf("addr of %s: %q, %v; want %q", id, got, err, want)
		}
	}
	d.Set([]Info{{ID: "s1", Addr: "h1:1"}})
	if d.Known("s2") || d.Count() != 1 {
		t.Fatalf("after a new list: s2 known %t, count %d; want false, 1", d.Known("s2"), d.Count())
	}
}
