package pebbleclose

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// WatchedFS is the vfs.FS a DB closed by Close is opened with: it notes
// the first failed write or sync of a WAL file. pebble keeps such a
// failure in its WAL writer, and the WAL rotation a flush starts with
// then panics while it holds the DB's mutexes (an unrecoverable fatal
// error, not a panic a caller can recover), so Close skips the flush of a
// DB whose WAL failed and closes it as it is.
type WatchedFS struct {
	vfs.FS
	failed atomic.Pointer[error]
}

// WatchWAL wraps fs (nil: vfs.Default).
func WatchWAL(fs vfs.FS) *WatchedFS {
	if fs == nil {
		fs = vfs.Default
	}
	return &WatchedFS{FS: fs}
}

// WALFailed returns the first failed write or sync of a WAL file, nil if
// none failed.
func (w *WatchedFS) WALFailed() error {
	if p := w.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (w *WatchedFS) note(name string, err error) {
	if err != nil {
		err = fmt.Errorf("WAL %s: %w", name, err)
		w.failed.CompareAndSwap(nil, &err)
	}
}

func (w *WatchedFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &watchedFile{File: f, w: w, name: name}, nil
}

// Create implements vfs.FS.
func (w *WatchedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.Create(name, category)
	return w.wrap(name, f, err)
}

// ReuseForWrite implements vfs.FS (a recycled WAL).
func (w *WatchedFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.ReuseForWrite(oldname, newname, category)
	return w.wrap(newname, f, err)
}

// OpenReadWrite implements vfs.FS.
func (w *WatchedFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := w.FS.OpenReadWrite(name, category, opts...)
	return w.wrap(name, f, err)
}

type watchedFile struct {
	vfs.File
	w    *WatchedFS
	name string
}

func (f *watchedFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.w.note(f.name, err)
	return n, err
}

func (f *watchedFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.w.note(f.name, err)
	return n, err
}

func (f *watchedFile) Sync() error {
	err := f.File.Sync()
	f.w.note(f.name, err)
	return err
}

func (f *watchedFile) SyncData() error {
	err := f.File.SyncData()
	f.w.note(f.name, err)
	return err
}

func (f *watchedFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	f.w.note(f.name, err)
	return full, err
}
