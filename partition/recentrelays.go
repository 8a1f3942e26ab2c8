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
const recentRelaySlots = 1 << 16

var recentRelaySeed = maphash.MakeSeed()

func relayKeyHash(key []byte) uint64 {
	return maphash.Bytes(recentRelaySeed, key) | 1 // 0 marks an empty slot
}

// add records key.
func (rr *recentRelays) add(key []byte) {
	h := relayKeyHash(key)
	rr.slots[h&(recentRelaySlots-1)].Store(h)
}

// has reports whether key may have been relayed lately.
func (rr *recentRelays) has(key []byte) bool {
	h := relayKeyHash(key)
	return rr.slots[h&(recentRelaySlots-1)].Load() == h
}
