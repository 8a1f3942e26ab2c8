package partition

import (
	"hash/maphash"
	"sync/atomic"
)

// recentRelays remembers the row keys that pushes relayed to the store's
// replicas lately: a lossy, direct-mapped table of key hashes, one per
// store (a row key names its data space, so a hit means the space holds
// the row). A relay that overtakes the origin's own push of the same row
// is stored first; the origin's push then finds the key here and is
// looked up (a tie: not stored, not relayed again) instead of written
// blind and relayed once more. A key evicted by a later one only costs
// that extra relay, and a hash collision only a lookup. Slots are atomic:
// the replicas of different spaces use it under their own apply locks.
type recentRelays struct {
	slots [recentRelaySlots]atomic.Uint64
}

// recentRelaySlots is the table's size: 512 KiB per store, about the rows
// of the last several pushes of 1,000 rows.
const (
	recentRelayBits  = 16
	recentRelaySlots = 1 << recentRelayBits
)

var recentRelaySeed = maphash.MakeSeed()

// relayKeySlot returns key's slot and the tag stored there: the hash with
// its lowest bit set (0 marks an empty slot). The slot is taken from the
// high bits, which the tag's forced bit does not touch.
func relayKeySlot(key []byte) (slot int, tag uint64) {
	h := maphash.Bytes(recentRelaySeed, key)
	return int(h >> (64 - recentRelayBits)), h | 1
}

// add records key.
func (rr *recentRelays) add(key []byte) {
	slot, tag := relayKeySlot(key)
	rr.slots[slot].Store(tag)
}

// has reports whether key may have been relayed lately.
func (rr *recentRelays) has(key []byte) bool {
	slot, tag := relayKeySlot(key)
	return rr.slots[slot].Load() == tag
}
