package smear

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
)

// The queue's side of forwarding: load the due entries (skipping those a
// forwarder has in flight), then settle them (delete, or requeue the rows
// that failed) in synced batches. The caller holds q.passMu while it loads
// and is inside q.gate.

// entry is a due entry loaded by a pass, with the pass's outcome for it.
type entry struct {
	key  []byte
	due  int64
	size int64 // key + value bytes, as counted in the depth
	h    header
	rows []model.Row

	// pending counts rows whose call has not answered yet.
	pending int
	// interrupted is set when a call with rows of this entry was cut
	// short by its context, or never made: the entry is left as it is.
	interrupted bool
	// failed are the rows the Sender did not accept; firstErr says why.
	failed   []model.Row
	firstErr error
	// discarded counts rows the Sender reported as discarded
	// (ErrDiscarded): gone, but not forwarded.
	discarded int
	// settled is set once the entry was deleted (its failed rows
	// requeued); an entry forgotten unsettled is counted back in its
	// due bucket.
	settled bool
}

// settleable reports whether every row of the entry has an outcome.
func (e *entry) settleable() bool { return e.pending == 0 && !e.interrupted }

// load reads the entries due at or before upTo (math.MaxInt64: all), in
// due order, until maxRows rows or maxBytes bytes are loaded (at least one
// entry); truncated reports that it stopped there with due entries left.
// next is the lowest due time an entry left in the queue can have once the
// loaded entries are settled; the caller passes it to endPass. Entries
// that do not decode are quarantined and not returned. Entries whose key
// skip reports (in flight) are passed over: not decoded, not counted.
func (q *Queue) load(upTo, maxRows, maxBytes int64, skip func(key []byte) bool) (entries []*entry, next int64, truncated bool, err error) {
	q.mu.Lock()
	from := q.mu.scanFrom
	q.mu.lowestPut = math.MaxInt64
	q.mu.Unlock()

	next = upTo
	if next < math.MaxInt64 {
		next++
	}
	if from > upTo {
		return nil, from, false, nil // nothing due; keep the tighter hint
	}
	it, err := q.db.NewIter(&pebble.IterOptions{LowerBound: dueBound(from), UpperBound: upperBoundAt(upTo)})
	if err != nil {
		return nil, 0, false, fmt.Errorf("smear: load: %w", err)
	}
	var rows, bytes int64
	var bad []kv
	for ok := it.First(); ok; ok = it.Next() {
		if len(entries) > 0 && (rows >= maxRows || bytes >= maxBytes) {
			if due, _, err := parseKey(it.Key()); err == nil {
				next = due
			} else {
				next = from // cannot tell: keep the old hint
			}
			truncated = true
			break
		}
		if skip != nil && skip(it.Key()) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, 0, false, fmt.Errorf("smear: load: %w", err)
		}
		e, err := q.decodeEntry(it.Key(), v)
		if err != nil {
			bad = append(bad, kv{key: clone(it.Key()), value: clone(v), err: err})
			continue
		}
		entries = append(entries, e)
		rows += int64(len(e.rows))
		bytes += e.size
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, 0, false, fmt.Errorf("smear: load: %w", err)
	}
	if len(bad) > 0 {
		if err := q.quarantineLoaded(bad); err != nil {
			return nil, 0, false, err
		}
	}
	if len(entries) > 0 {
		q.mu.Lock()
		for _, e := range entries {
			q.mu.adm.load(e.due, int64(len(e.rows)), e.h.attempts > 0)
		}
		q.mu.Unlock()
	}
	return entries, next, truncated, nil
}

// unload counts entries a forwarder gives up unsettled back in their due
// buckets.
func (q *Queue) unload(entries []*entry) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range entries {
		q.mu.adm.unload(e.due, int64(len(e.rows)), e.h.attempts > 0)
	}
}

func (q *Queue) decodeEntry(key, value []byte) (*entry, error) {
	due, _, err := parseKey(key)
	if err != nil {
		return nil, err
	}
	h, body, err := parseHeader(value)
	if err != nil {
		return nil, err
	}
	rows, err := q.opts.Codec.DecodeRows(body)
	if err != nil {
		return nil, fmt.Errorf("%w: rows: %w", ErrCorrupt, err)
	}
	if len(rows) != h.rows {
		return nil, fmt.Errorf("%w: header counts %d rows, the body holds %d", ErrCorrupt, h.rows, len(rows))
	}
	return &entry{
		key: clone(key), due: due, size: int64(len(key) + len(value)),
		h: h, rows: rows, pending: len(rows),
	}, nil
}

// quarantineLoaded quarantines entries found bad by a pass and takes them
// out of the depth (the rows their header claims, when it decodes).
func (q *Queue) quarantineLoaded(bad []kv) error {
	if err := q.quarantine(bad); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range bad {
		var rows int64
		var retry bool
		if h, _, err := parseHeader(e.value); err == nil {
			rows, retry = int64(h.rows), h.attempts > 0
		}
		if due, _, err := parseKey(e.key); err == nil {
			q.mu.adm.remove(due, rows, retry)
		}
		q.adjustLocked(-rows, -int64(len(e.key)+len(e.value)))
	}
	return nil
}

// resetHint forgets the scan hint, so that the next pass scans the whole
// queue. The forwarder does so now and then as a safety net: a wrong hint
// would strand rows, a reset only costs one scan over tombstones.
func (q *Queue) resetHint() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.scanFrom = math.MinInt64
}

// endPass records that every entry due before next has been settled (see
// Queue.mu.scanFrom).
func (q *Queue) endPass(next int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.scanFrom = min(next, q.mu.lowestPut)
}

// settle deletes the given entries and, for those with failed rows, writes
// a new entry holding only those rows, due at retryDue(attempts) with the
// attempt count incremented and the first enqueue time kept, all in one
// synced batch. It returns the number of rows requeued. On error nothing
// changed.
func (q *Queue) settle(ctx context.Context, done []*entry, retryDue func(attempts uint64) int64) (requeued int, err error) {
	if len(done) == 0 {
		return 0, nil
	}
	b := q.db.NewBatch()
	defer b.Close()
	var scratch []byte
	var rows, bytes int64 // depth change
	var written int
	var loaded, back, discarded int64 // admission counts: rows settled, requeued, discarded
	lowest := int64(math.MaxInt64)
	for _, e := range done {
		if err := b.Delete(e.key, nil); err != nil {
			return 0, fmt.Errorf("smear: settle: %w", err)
		}
		written += len(e.key)
		rows -= int64(len(e.rows))
		bytes -= e.size
		loaded += int64(len(e.rows))
		discarded += int64(e.discarded)
		if len(e.failed) == 0 {
			continue
		}
		h := e.h
		h.attempts++
		h.rows = len(e.failed)
		due := retryDue(h.attempts)
		lowest = min(lowest, due)
		scratch = appendKey(scratch[:0], due, q.seq.Add(1))
		scratch = appendHeader(scratch, &h)
		scratch = q.opts.Codec.AppendRows(scratch, e.failed)
		if err := b.Set(scratch[:keyLen], scratch[keyLen:], nil); err != nil {
			return 0, fmt.Errorf("smear: settle: %w", err)
		}
		written += len(scratch)
		back += int64(len(e.failed))
		rows += int64(len(e.failed))
		bytes += int64(len(scratch))
		requeued += len(e.failed)
	}
	if err := q.beforeWrite(ctx, written); err != nil {
		return 0, err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, fmt.Errorf("smear: settle: %w", err)
	}
	q.mu.Lock()
	a := &q.mu.adm
	a.inflight = max(a.inflight-loaded, 0)
	a.add(0, back, true)
	a.forwarded += loaded - back - discarded // rows that left the queue forwarded
	a.handled += loaded
	for _, e := range done {
		e.settled = true
	}
	q.adjustLocked(rows, bytes)
	q.tickLocked()
	q.mu.Unlock()
	if lowest < math.MaxInt64 {
		q.notePut(lowest)
	}
	return requeued, nil
}
