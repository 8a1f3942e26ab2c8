package partition

import (
	"sync"
	"sync/atomic"
)

// syncTracker keeps a replica's synced watermark: the highest sequence s
// such that every batch holding a sequence <= s has been fsynced. Batches
// are registered in sequence order (under applyMu) once pebble has made
// them visible, and reported done, in any order, when their WAL sync
// returns; the watermark advances only over a contiguous prefix of done
// batches.
type syncTracker struct {
	// synced mirrors mu.synced for lock-free reads.
	synced atomic.Uint64

	mu struct {
		sync.Mutex
		// cond is signalled (Broadcast) whenever synced advances or err is
		// set.
		cond sync.Cond
		// synced is the watermark.
		synced uint64
		// pending are the registered batches not yet below the watermark,
		// in sequence order.
		pending []seqRange
		// err is the first WAL sync error; once set the watermark never
		// advances again and every waiter fails with it.
		err error
	}
}

// seqRange is the sequences [first, last] of one batch.
type seqRange struct {
	first, last uint64
	done        bool
}

func newSyncTracker(synced uint64) *syncTracker {
	t := &syncTracker{}
	t.mu.cond.L = &t.mu.Mutex
	t.mu.synced = synced
	t.synced.Store(synced)
	return t
}

// add registers a batch that is visible but not yet synced. Batches must be
// added in sequence order.
func (t *syncTracker) add(first, last uint64) {
	t.mu.Lock()
	t.mu.pending = append(t.mu.pending, seqRange{first: first, last: last})
	t.mu.Unlock()
}

// done records the outcome of the WAL sync of the batch that starts at
// first.
func (t *syncTracker) done(first uint64, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		if t.mu.err == nil {
			t.mu.err = err
		}
		t.mu.cond.Broadcast()
		return
	}
	p := t.mu.pending
	for i := range p {
		if p[i].first == first {
			p[i].done = true
			break
		}
	}
	n := 0
	for n < len(p) && p[n].done {
		n++
	}
	if n == 0 || t.mu.err != nil {
		return
	}
	t.mu.synced = p[n-1].last
	t.synced.Store(t.mu.synced)
	// Shift rather than reslice so the backing array is reused.
	t.mu.pending = p[:copy(p, p[n:])]
	t.mu.cond.Broadcast()
}

// wait blocks until the watermark reaches seq, or a sync failed.
func (t *syncTracker) wait(seq uint64) error {
	if t.synced.Load() >= seq {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.mu.synced < seq && t.mu.err == nil {
		t.mu.cond.Wait()
	}
	if t.mu.synced >= seq {
		return nil
	}
	return t.mu.err
}

// failed returns the sticky sync error, if any.
func (t *syncTracker) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.err
}
