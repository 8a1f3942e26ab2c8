package partition

import (
	"fmt"
	"testing"
)

// TestRecentRelaysUseEverySlot: keys spread over the whole table (a slot
// index taken from bits the tag forces would use half of it), and a key
// recorded is found until another key takes its slot.
func TestRecentRelaysUseEverySlot(t *testing.T) {
	rr := new(recentRelays)
	const keys = 4 * recentRelaySlots
	for i := 0; i < keys; i++ {
		rr.add(fmt.Appendf(nil, "key-%d", i))
	}
	used, odd := 0, 0
	for i := range rr.slots {
		if rr.slots[i].Load() != 0 {
			used++
			odd += i & 1
		}
	}
	// 4 keys per slot on average leave e^-4 (under 2%) of the slots empty.
	if used < recentRelaySlots*95/100 || odd < used*45/100 || odd > used*55/100 {
		t.Fatalf("%d of %d slots used, %d of them odd", used, recentRelaySlots, odd)
	}
	last := fmt.Appendf(nil, "key-%d", keys-1)
	if !rr.has(last) {
		t.Fatal("the last key recorded is not found")
	}
	if rr.has([]byte("never recorded")) {
		t.Fatal("a key never recorded is found")
	}
}
