package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// nsLogFormat is the store's log format marker: 0x08 → logFormat. A store
// written before log entries carried their rows (issue 16) has no marker;
// Open then rewrites every legacy entry of every replica in the current
// form (upgradeLog) before writing it.
const nsLogFormat byte = 0x08

var logFormatKey = []byte{nsLogFormat}

// logFormat is the value of the marker: the log layout of keys.go, one
// record per batch (appendLogRecordHeader), whose entries may be compact
// (recordWriter), or one entry per change (appendSeqValue).
const logFormat = "4"

// logFormatRecords is the marker of a store whose records hold whole
// entries only (before compact ones), and logFormatEntries the marker of
// one whose log holds entries only (before log records): Open reads both
// as they are and marks them logFormat.
const (
	logFormatRecords = "3"
	logFormatEntries = "2"
)

// upgradeBatchBytes is the size at which the upgrade commits a batch.
const upgradeBatchBytes = 4 << 20

// maxSkipLogs is how many skipped entries per replica the upgrade logs one
// by one (the count is logged in any case).
const maxSkipLogs = 10

// upgradeLogEvery is how often the upgrade logs its progress.
const upgradeLogEvery = 5 * time.Second

// upgradeLog rewrites the legacy log entries of every replica of a store
// written before the marker existed, then writes the marker. It runs in
// Open, before the store serves anything. An upgrade interrupted by a
// crash is harmless: readLog reads both forms, the marker is written only
// at the end, and the next Open rewrites the entries still legacy.
func (s *Store) upgradeLog() error {
	v, closer, err := s.db.Get(logFormatKey)
	switch {
	case err == nil:
		have := string(v)
		_ = closer.Close()
		switch have {
		case logFormat:
			return nil
		case logFormatEntries, logFormatRecords:
			// Entries and records read as they are; the marker keeps an
			// older build, which would read a record, or a compact entry
			// of one, as corrupt, from opening the store once they are
			// written.
			if err := s.db.Set(logFormatKey, []byte(logFormat), pebble.Sync); err != nil {
				return fmt.Errorf("partition: write log format marker: %w", err)
			}
			return nil
		}
		return fmt.Errorf("%w: log format %q, this build knows %q, %q and %q", ErrCorrupt, have, logFormatEntries, logFormatRecords, logFormat)
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("partition: read log format marker: %w", err)
	}
	reps := len(s.mu.replicas)
	if reps > 0 {
		s.log.Info("upgrading log entries to carry their rows", "replicas", reps)
	}
	start := time.Now()
	total := 0
	for _, r := range s.Replicas() {
		r.applyMu.Lock()
		n, err := r.upgradeLogLocked()
		r.applyMu.Unlock()
		if err != nil {
			return err
		}
		total += n
	}
	if err := s.db.Set(logFormatKey, []byte(logFormat), pebble.Sync); err != nil {
		return fmt.Errorf("partition: write log format marker: %w", err)
	}
	if reps > 0 {
		s.log.Info("log entries upgraded", "replicas", reps, "entries", total, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// upgradeLogLocked rewrites the replica's legacy log entries in the
// current form, each with the row it points at (an entry whose row is
// missing, or stored with another sequence, is logged, counted in
// Store.UpgradeSkipped and left as it is), in batches of about
// upgradeBatchBytes (the last one synced). It returns how many it
// rewrote. It reads the log and the rows sequentially in their own
// orders, the rows by monotone seeks when ingest was time-ordered.
func (r *Replica) upgradeLogLocked() (int, error) {
	db := r.store.db
	snap := db.NewSnapshot()
	defer snap.Close()
	seqIt, err := snap.NewIter(&pebble.IterOptions{LowerBound: r.ks.seqLo, UpperBound: r.ks.seqHi})
	if err != nil {
		return 0, fmt.Errorf("partition: replica %s: upgrade log: %w", r.info.Placement, err)
	}
	defer seqIt.Close()
	rowIt, err := snap.NewIter(&pebble.IterOptions{LowerBound: r.ks.rowLo, UpperBound: r.ks.rowHi})
	if err != nil {
		return 0, fmt.Errorf("partition: replica %s: upgrade log: %w", r.info.Placement, err)
	}
	defer rowIt.Close()

	batch := db.NewBatch()
	defer func() { _ = batch.Close() }()
	var (
		n, seen  int
		key, val []byte
		last     = time.Now()
	)
	// skip leaves a legacy entry that names no row stored at its
	// sequence as it is (a reader of it fails with ErrCorrupt, as before
	// the upgrade) rather than failing the whole store's Open.
	skipped := 0
	skip := func(seq uint64, key []byte, why string) {
		skipped++
		if skipped <= maxSkipLogs {
			r.store.log.Warn("log upgrade: legacy entry left as it is: "+why, "placement", r.info.Placement, "seq", seq, "row_key", fmt.Sprintf("%x", key))
		}
	}
	commit := func(opts *pebble.WriteOptions) error {
		if batch.Empty() {
			return nil
		}
		if err := batch.Commit(opts); err != nil {
			return fmt.Errorf("partition: replica %s: upgrade log: %w", r.info.Placement, err)
		}
		batch.Reset()
		return nil
	}
	for ok := seqIt.First(); ok; ok = seqIt.Next() {
		seen++
		seq, err := seqFromKey(seqIt.Key())
		if err != nil {
			return n, err
		}
		v, err := seqIt.ValueAndErr()
		if err != nil {
			return n, fmt.Errorf("partition: replica %s: upgrade log: %w", r.info.Placement, err)
		}
		if isLogRecord(v) {
			continue // written by this build: never legacy
		}
		e, err := seqValueParts(v)
		if err != nil {
			return n, err
		}
		if e.rowValue != nil {
			continue // already in the current form
		}
		key = r.ks.appendRowKey(key[:0], string(e.series), e.t)
		if !rowIt.SeekGE(key) || string(rowIt.Key()) != string(key) {
			if err := rowIt.Error(); err != nil {
				return n, fmt.Errorf("partition: replica %s: upgrade log: %w", r.info.Placement, err)
			}
			skip(seq, key, "its row is missing")
			continue
		}
		rv, err := rowIt.ValueAndErr()
		if err != nil {
			return n, fmt.Errorf("partition: replica %s: upgrade log: %w", r.info.Placement, err)
		}
		if rs, w := binary.Uvarint(rv); w <= 0 || rs != seq {
			skip(seq, key, fmt.Sprintf("its row is stored with sequence %d", rs))
			continue
		}
		val = appendSeqValue(val[:0], string(e.series), e.t, e.origin, rv)
		if err := batch.Set(seqIt.Key(), val, nil); err != nil {
			return n, fmt.Errorf("partition: replica %s: upgrade log: %w", r.info.Placement, err)
		}
		n++
		if batch.Len() >= upgradeBatchBytes {
			if err := commit(pebble.NoSync); err != nil {
				return n, err
			}
		}
		if time.Since(last) >= upgradeLogEvery {
			last = time.Now()
			r.store.log.Info("upgrading log entries", "placement", r.info.Placement, "read", seen, "rewritten", n, "at_seq", seq)
		}
	}
	if err := seqIt.Error(); err != nil {
		return n, fmt.Errorf("partition: replica %s: upgrade log: %w", r.info.Placement, err)
	}
	if err := commit(pebble.Sync); err != nil {
		return n, err
	}
	if n > 0 || skipped > 0 {
		r.store.log.Info("replica log upgraded", "placement", r.info.Placement, "entries", seen, "rewritten", n, "skipped", skipped)
	}
	if skipped > 0 {
		r.store.log.Warn("log upgrade: legacy entries without their row left as they were", "placement", r.info.Placement, "skipped", skipped)
	}
	r.store.upgradeSkipped.Add(int64(skipped))
	return n, nil
}
