// Package pebbleclose closes a pebble DB so that its write-ahead log does
// not outlive its memtables at rest (issue 17, item 5), for every pebble DB
// a server opens (the partition store, the smear queue).
//
// pebble.DB.Close keeps the WAL of every unflushed memtable (it is replayed
// at the next Open), keeps up to MemTableStopWritesThreshold+1 obsolete
// WAL files for recycling, and leaves the active WAL preallocated to 110%
// of MemTableSize (fallocate with KEEP_SIZE: du counts the blocks). With a
// 64 MiB memtable a store that took a few hundred MiB of writes kept about
// 370 MiB of WAL blocks after a clean shutdown, whatever the size of its
// data.
//
// Close therefore flushes the memtables first (bounded by a timeout), closes
// the DB, and then removes what the flush made obsolete:
//
//   - every WAL numbered below the newest one: after a completed Flush
//     pebble's minimum unflushed WAL is the newest (Flush always rotates the
//     WAL and waits for every older memtable's flush), so these are the
//     files pebble itself deletes at its next Open (recycled ones included);
//   - the newest WAL's content and preallocated blocks, only when reading it
//     the way pebble's recovery does finds no record (a recycled file holds
//     the previous log's bytes, which recovery already ignores): it is
//     truncated to zero bytes, which recovery reads the same way.
//
// When the flush fails or times out nothing is removed: the DB is closed as
// it is, its WAL is valid for recovery and nothing acknowledged is lost.
// The flush is not even tried on a DB whose WAL write or sync failed
// before (seen by the WatchedFS it runs on): pebble's WAL rotation would
// panic holding its mutexes, a fatal error. The WAL rotation of a flush
// also panics inside pebble if the current WAL cannot be closed and synced
// or a new one cannot be created (as it does when a memtable fills during
// writes); that crashes the shutdown, with the WAL intact for the next
// Open.
package pebbleclose

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"
)

// DefaultFlushTimeout bounds the flush before a close: a clean shutdown
// never waits longer than this for it (plus what pebble.DB.Close itself
// waits for, a flush or compaction already running).
const DefaultFlushTimeout = 10 * time.Second

// Stats is what Close did.
type Stats struct {
	// Flushed reports that the memtables were flushed before the close.
	Flushed bool
	// Removed and RemovedBytes count the obsolete WAL files removed after
	// the close, and their sizes.
	Removed      int
	RemovedBytes int64
	// Emptied reports that the newest WAL held no record and was truncated
	// to zero bytes.
	Emptied bool
}

// Close flushes db's memtables (waiting at most flushTimeout; a negative
// timeout skips the flush), closes db, and, when the flush completed,
// removes the WAL files it made obsolete from dir (package comment). db
// must take no write from the moment Close is called (its owner has
// stopped its writers). fs is the FS db was opened with (nil: vfs.Default);
// when it is a WatchedFS that saw a WAL write or sync fail, Close skips
// the flush (WatchedFS).
// The error is the close's; a failed flush or cleanup is logged and leaves
// the WAL as pebble left it.
func Close(db *pebble.DB, dir string, fs vfs.FS, flushTimeout time.Duration, log *slog.Logger) (Stats, error) {
	if fs == nil {
		fs = vfs.Default
	}
	var st Stats
	var walErr error
	if w, ok := fs.(*WatchedFS); ok {
		walErr = w.WALFailed()
	}
	var flushedTo wal.NumWAL
	switch {
	case walErr != nil:
		log.Warn("pebble: no flush at close after a failed WAL write; closing with the WAL kept for recovery", "err", walErr)
	case flushTimeout >= 0:
		flushedTo, st.Flushed = flush(db, fs, dir, flushTimeout, log)
	}
	if err := db.Close(); err != nil {
		return st, err
	}
	if !st.Flushed {
		return st, nil
	}
	if err := trimWAL(fs, dir, flushedTo, &st); err != nil {
		log.Warn("pebble: could not remove the WAL files the flush at close made obsolete; pebble removes them at the next open",
			"dir", dir, "err", err)
	}
	if st.Removed > 0 || st.Emptied {
		log.Info("pebble: WAL trimmed after the flush at close", "dir", dir,
			"removed_files", st.Removed, "removed_bytes", st.RemovedBytes, "emptied_active", st.Emptied)
	}
	return st, nil
}

// flush flushes db's memtables and reports whether it completed within
// timeout, with the newest WAL right after the flush began (the one its
// rotation created): every WAL below it holds only rows the flush wrote
// to sstables. Should a write slip in after Close was called (its owner's
// contract forbids it) and rotate the WAL again, the WALs from that one on
// are kept.
func flush(db *pebble.DB, fs vfs.FS, dir string, timeout time.Duration, log *slog.Logger) (wal.NumWAL, bool) {
	done, err := db.AsyncFlush()
	if err != nil {
		log.Warn("pebble: flush at close failed; closing with the WAL kept for recovery", "err", err)
		return 0, false
	}
	logs, err := wal.Scan(wal.Dir{FS: fs, Dirname: dir})
	if err != nil || len(logs) == 0 {
		log.Warn("pebble: no WAL found after the flush at close began; the WAL is left as it is", "dir", dir, "err", err)
		return 0, false
	}
	newest := logs[len(logs)-1].Num
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return newest, true
	case <-t.C:
		log.Warn("pebble: flush at close did not finish in time; closing with the WAL kept for recovery", "timeout", timeout)
		return 0, false
	}
}

// trimWAL removes every WAL of dir below flushedTo (the newest WAL when
// the flush began) and empties flushedTo when it is still the newest and
// holds no record. It runs after the DB's close, on a flushed DB.
func trimWAL(fs vfs.FS, dir string, flushedTo wal.NumWAL, st *Stats) error {
	logs, err := wal.Scan(wal.Dir{FS: fs, Dirname: dir})
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		return nil
	}
	var errs []error
	for _, ll := range logs {
		if ll.Num >= flushedTo {
			break
		}
		for i := range ll.NumSegments() {
			sfs, path := ll.SegmentLocation(i)
			size := int64(0)
			if fi, err := sfs.Stat(path); err == nil {
				size = fi.Size()
			}
			if err := sfs.Remove(path); err != nil {
				errs = append(errs, err)
				continue
			}
			st.Removed++
			st.RemovedBytes += size
		}
	}
	newest := logs[len(logs)-1]
	if newest.Num != flushedTo {
		errs = append(errs, fmt.Errorf("WAL %s is newer than the flush at close: kept", newest))
		return errors.Join(append(errs, syncDir(fs, dir))...)
	}
	empty, err := hasNoRecord(newest)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("read WAL %s: %w", newest, err))
	case empty && newest.NumSegments() == 1:
		sfs, path := newest.SegmentLocation(0)
		f, err := sfs.Create(path, vfs.WriteCategoryUnspecified) // truncates
		if err == nil {
			err = errors.Join(f.Sync(), f.Close())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("empty WAL %s: %w", path, err))
		} else {
			st.Emptied = true
		}
	}
	return errors.Join(append(errs, syncDir(fs, dir))...)
}

// syncDir syncs the directory dir, so the removals are durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// hasNoRecord reports whether recovery would replay nothing from ll.
func hasNoRecord(ll wal.LogicalLog) (bool, error) {
	r := ll.OpenForRead()
	_, _, err := r.NextRecord()
	cerr := r.Close()
	switch {
	case errors.Is(err, io.EOF):
		return true, cerr
	case err != nil:
		return false, err
	default:
		return false, cerr
	}
}
