package pebbleclose

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/cockroachdb/pebble/v2/wal"
)

const keys = 20_000

func openDB(t *testing.T, dir string, fs vfs.FS) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, MemTableSize: 1 << 20, Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

type quiet struct{}

func (quiet) Infof(string, ...any)         {}
func (quiet) Errorf(string, ...any)        {}
func (quiet) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

// fill writes keys synced, 100 per batch: with a 1 MiB memtable the WAL
// rotates several times, so the DB holds recycled WAL files.
func fill(t *testing.T, db *pebble.DB) {
	t.Helper()
	val := []byte(strings.Repeat("v", 200))
	for i := 0; i < keys; i += 100 {
		b := db.NewBatch()
		for j := i; j < i+100; j++ {
			if err := b.Set(fmt.Appendf(nil, "k%08d", j), val, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(pebble.Sync); err != nil {
			t.Fatal(err)
		}
		_ = b.Close()
	}
}

// checkKeys reopens dir and counts the keys.
func checkKeys(t *testing.T, dir string) {
	t.Helper()
	db := openDB(t, dir, vfs.Default)
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != keys {
		t.Fatalf("%d keys after reopen, want %d", n, keys)
	}
}

func logFiles(t *testing.T, dir string) (n int, size int64) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := os.Stat(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			n++
			size += fi.Size()
		}
	}
	return n, size
}

func TestCloseTrimsWAL(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, vfs.Default)
	// Write on until pebble holds a recycled WAL (a rotation takes it
	// back, a flush adds one): nothing writes between the last check and
	// Close.
	for i := 0; i == 0 || db.Metrics().WAL.ObsoleteFiles == 0; i++ {
		if i == 100 {
			t.Fatal("no recycled WAL file after 100 rounds: the test tests nothing")
		}
		fill(t, db)
	}
	st, err := Close(db, dir, nil, DefaultFlushTimeout, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Flushed || st.Removed == 0 || !st.Emptied {
		t.Fatalf("stats %+v: want flushed, obsolete WALs removed and the newest emptied", st)
	}
	if n, size := logFiles(t, dir); n != 1 || size != 0 {
		t.Fatalf("%d WAL files of %d B after Close, want one empty", n, size)
	}
	checkKeys(t, dir)
}

// TestCloseWithoutFlush: a skipped flush (negative timeout) and a flush
// that keeps failing (bounded by the timeout) both close the DB with its
// WAL, which the next Open replays.
func TestCloseWithoutFlush(t *testing.T) {
	t.Run("skipped", func(t *testing.T) {
		dir := t.TempDir()
		db := openDB(t, dir, vfs.Default)
		fill(t, db)
		st, err := Close(db, dir, nil, -1, slog.New(slog.DiscardHandler))
		if err != nil || st.Flushed || st.Removed != 0 {
			t.Fatalf("Close = %+v, %v; want no flush, nothing removed", st, err)
		}
		if n, size := logFiles(t, dir); n == 0 || size == 0 {
			t.Fatalf("%d WAL files of %d B after a close without flush; want the WAL kept", n, size)
		}
		checkKeys(t, dir)
	})
	t.Run("failing", func(t *testing.T) {
		dir := t.TempDir()
		var fail atomic.Bool
		fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
			if fail.Load() && op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".sst") {
				return errorfs.ErrInjected
			}
			return nil
		}))
		db := openDB(t, dir, fs)
		val := []byte("v")
		if err := db.Set([]byte("late"), val, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		fail.Store(true)
		start := time.Now()
		st, err := Close(db, dir, fs, 200*time.Millisecond, slog.New(slog.DiscardHandler))
		if err != nil || st.Flushed || st.Removed != 0 {
			t.Fatalf("Close = %+v, %v; want a failed flush, nothing removed", st, err)
		}
		t.Logf("Close with a failing flush returned after %v", time.Since(start))
		db = openDB(t, dir, vfs.Default)
		defer db.Close()
		if _, closer, err := db.Get([]byte("late")); err != nil {
			t.Fatalf("the write of the failed flush's memtable is lost: %v", err)
		} else {
			_ = closer.Close()
		}
	})
}

// TestHasNoRecord: a WAL holding a record is never emptied.
func TestHasNoRecord(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, vfs.Default)
	if err := db.Set([]byte("k"), []byte("v"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	logs, err := wal.Scan(wal.Dir{FS: vfs.Default, Dirname: dir})
	if err != nil || len(logs) == 0 {
		t.Fatalf("Scan = %v, %v", logs, err)
	}
	empty, err := hasNoRecord(logs[len(logs)-1])
	if err != nil || empty {
		t.Fatalf("hasNoRecord of a WAL with a record = %v, %v", empty, err)
	}
}

// TestCloseAfterFailedWALSync: after a WAL sync failed, the flush at
// close would rotate the broken WAL, which panics inside pebble while it
// holds its mutexes (a fatal error that kills the process); Close skips
// the flush instead.
func TestCloseAfterFailedWALSync(t *testing.T) {
	dir := t.TempDir()
	var fail atomic.Bool
	wfs := WatchWAL(errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !fail.Load() || !strings.HasSuffix(op.Path, ".log") {
			return nil
		}
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			return errorfs.ErrInjected
		}
		return nil
	})))
	db := openDB(t, dir, wfs)
	if err := db.Set([]byte("a"), []byte("1"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	func() {
		defer func() { _ = recover() }() // pebble may panic on a failed WAL sync
		if err := db.Set([]byte("b"), []byte("2"), pebble.Sync); err == nil {
			t.Error("a synced write succeeded over a failing WAL sync")
		}
	}()
	fail.Store(false)
	if wfs.WALFailed() == nil {
		t.Fatal("WatchedFS did not see the failed WAL sync")
	}
	var st Stats
	func() {
		defer func() { _ = recover() }() // pebble may refuse to close cleanly
		st, _ = Close(db, dir, wfs, DefaultFlushTimeout, slog.New(slog.DiscardHandler))
	}()
	if st.Flushed || st.Removed != 0 {
		t.Fatalf("Close after a failed WAL sync = %+v; want no flush, nothing removed", st)
	}
}
