package partition

import (
	"sort"
	"sync"

	"github.com/google/uuid"
)

// relayHints remembers, in memory, for the log entries that a push wrote
// whole (LogEntry.Origin is set), a sequence of the pushing replica's log
// at or above the one that holds the pushed value there: the push's
// LastSeq. ReadLog reports it as LogEntry.OriginSeq, and the pushes that
// relay the entry carry it, so a receiver that has already applied the
// origin's log that far drops the relayed copy without looking the row up
// (replication.Applied). A hint is an optimisation only: one lost (a
// restart, or one of the oldest when the list is full) makes the relay
// look the row up as before.
type relayHints struct {
	mu sync.Mutex
	// spans are in ascending order of lo (sequences are assigned in
	// order), and never overlap.
	spans []hintSpan
}

// hintSpan says that the entries with sequences in [lo, hi] whose origin
// is origin came from pushes of origin's log up to bound.
type hintSpan struct {
	lo, hi uint64
	origin uuid.UUID
	bound  uint64
}

// maxHintSpans bounds the spans kept (40 bytes each, so 160 KiB for a
// replica that receives pushes): one per Apply call of a push. Spans of
// different pushes are not merged, though a merged span could keep the
// larger bound safely: the bound of the newest push would then hold back
// the drops of all the earlier ones until the receiver has it too. When
// full, the oldest half is forgotten: pushes read the newest entries.
const maxHintSpans = 1 << 12

// add records that the entries lo..hi with origin came from origin's log
// up to bound. Calls come in ascending order of sequence (under the apply
// lock).
func (h *relayHints) add(lo, hi uint64, origin uuid.UUID, bound uint64) {
	if origin == uuid.Nil || bound == 0 || hi < lo {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.spans); n > 0 && h.spans[n-1].hi >= lo {
		// Never expected (sequences only grow); a span that would
		// overlap is not recorded rather than recorded wrong.
		return
	}
	if n := len(h.spans); n > 0 && h.spans[n-1].hi+1 == lo && h.spans[n-1].origin == origin && h.spans[n-1].bound == bound {
		h.spans[n-1].hi = hi // the same push applied in parts
		return
	}
	if len(h.spans) == maxHintSpans {
		h.spans = append(h.spans[:0], h.spans[maxHintSpans/2:]...)
	}
	h.spans = append(h.spans, hintSpan{lo: lo, hi: hi, origin: origin, bound: bound})
}

// lookup returns the bound recorded for the entry seq pushed from origin,
// or 0 when none is known.
func (h *relayHints) lookup(seq uint64, origin uuid.UUID) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.Search(len(h.spans), func(i int) bool { return h.spans[i].hi >= seq })
	if i == len(h.spans) {
		return 0
	}
	if s := &h.spans[i]; s.lo <= seq && s.origin == origin {
		return s.bound
	}
	return 0
}
