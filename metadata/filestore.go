package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tsdb/tsdb/model"
)

// tmpPrefix starts the name of a file being written; a crash can leave one
// behind, and Sweep removes it once it is older than the grace period.
const tmpPrefix = ".tmp-"

// FileStore keeps the METADATA files a metadata server holds, one file per
// transaction at <dir>/<table>/<txnid>, durably: each is written to a
// temporary file, fsynced, renamed into place, and the directory fsynced.
// Files are immutable once stored. Nothing deletes them but Sweep.
//
// Put, Sweep and the header cache are serialized by one mutex; Get and List
// read the file system directly.
type FileStore struct {
	dir string
	mu  struct {
		sync.Mutex
		// headers caches the header of stored files, by (table, txnid),
		// for walking parent chains. Files never change, so entries are
		// dropped only when Sweep deletes the file.
		headers map[fileKey]fileHeader
	}
}

type fileKey struct{ table, txnID string }

// OpenFileStore opens (creating if needed) the file store rooted at dir.
func OpenFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("metadata: open file store: %w", err)
	}
	s := &FileStore{dir: dir}
	s.mu.headers = make(map[fileKey]fileHeader)
	return s, nil
}

// checkFileKey refuses names that are not a table and a txnid, so no input
// can escape the store's directory.
func checkFileKey(table, txnID string) error {
	if err := model.ValidateTableName(table); err != nil {
		return fmt.Errorf("metadata: file store: %w", err)
	}
	if !ValidTxnID(txnID) {
		return fmt.Errorf("metadata: file store: %w: txnid %q is not 40 lowercase hex characters", ErrInvalidFile, txnID)
	}
	return nil
}

func (s *FileStore) path(table, txnID string) string {
	return filepath.Join(s.dir, table, txnID)
}

// Put stores the encoded file of (table, txnID) durably. Storing the same
// bytes again succeeds (and refreshes the file's mtime, so a retried commit
// of an old orphan is not swept under it); different bytes fail with
// ErrTxnMismatch. Put does not decode the bytes: a receiver of a file from
// another server checks it first with CheckEncoded.
func (s *FileStore) Put(table, txnID string, encoded []byte) error {
	if err := checkFileKey(table, txnID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.path(table, txnID)
	existing, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(existing, encoded):
		now := time.Now()
		if err := os.Chtimes(path, now, now); err != nil {
			return fmt.Errorf("metadata: touch %s: %w", path, err)
		}
		return nil
	case err == nil:
		return fmt.Errorf("%w: %s/%s", ErrTxnMismatch, table, txnID)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("metadata: read %s: %w", path, err)
	}
	if err := s.ensureTableDirLocked(table); err != nil {
		return err
	}
	return writeDurably(filepath.Dir(path), path, encoded)
}

// ensureTableDirLocked creates the table's directory, and makes its entry in
// the root durable, the first time.
func (s *FileStore) ensureTableDirLocked(table string) error {
	dir := filepath.Join(s.dir, table)
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metadata: create %s: %w", dir, err)
	}
	return syncDir(s.dir)
}

// writeDurably writes data to path through a synced temporary file in dir,
// then renames it and syncs dir.
func writeDurably(dir, path string, data []byte) (err error) {
	tmp, err := os.CreateTemp(dir, tmpPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("metadata: create temp file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("metadata: write %s: %w", tmp.Name(), err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("metadata: sync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("metadata: close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("metadata: rename to %s: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("metadata: open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("metadata: sync dir %s: %w", dir, err)
	}
	return nil
}

// Get returns the encoded file of (table, txnID), or ErrFileNotFound.
func (s *FileStore) Get(table, txnID string) ([]byte, error) {
	if err := checkFileKey(table, txnID); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(s.path(table, txnID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s/%s", ErrFileNotFound, table, txnID)
	}
	if err != nil {
		return nil, fmt.Errorf("metadata: read %s/%s: %w", table, txnID, err)
	}
	return b, nil
}

// List returns the txnids stored for table, sorted; none if the table is
// unknown here.
func (s *FileStore) List(table string) ([]string, error) {
	if err := model.ValidateTableName(table); err != nil {
		return nil, fmt.Errorf("metadata: file store: %w", err)
	}
	entries, err := os.ReadDir(filepath.Join(s.dir, table))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metadata: list %s: %w", table, err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && ValidTxnID(e.Name()) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Tables returns the tables that have a directory in the store, sorted.
func (s *FileStore) Tables() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("metadata: list %s: %w", s.dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && model.ValidateTableName(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Sweep deletes the files that are off the committed chain and older than
// grace (by mtime, compared with now), and leftover temporary files older
// than grace. It returns how many files it deleted.
//
// current reports each table's committed txnid from TableConfig. The chain
// is that file and its keep most recent ancestors, followed through
// parent_txnid as far as this store holds them; they are never deleted.
// When this store lacks the current file, it cannot tell the chain, so it
// deletes no txn file of that table. current must answer ok=false only when
// the table is known not to exist (never on a lookup error); then its files
// are deleted only if every one of them is older than grace, so a CREATE in
// flight is safe. Errors on one table do not stop the others.
func (s *FileStore) Sweep(now time.Time, grace time.Duration, keep int, current func(table string) (txnID string, ok bool)) (deleted int, err error) {
	tables, err := s.Tables()
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, table := range tables {
		cur, ok := current(table)
		n, err := s.sweepTable(table, now.Add(-grace), keep, cur, ok)
		deleted += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return deleted, errors.Join(errs...)
}

// sweepTable sweeps one table's directory; files with an mtime before
// cutoff are old.
func (s *FileStore) sweepTable(table string, cutoff time.Time, keep int, cur string, ok bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := filepath.Join(s.dir, table)
	files, err := listSweepable(dir)
	if err != nil {
		return 0, err
	}
	var victims []sweepable
	switch {
	case !ok:
		for _, f := range files {
			if !f.mtime.Before(cutoff) {
				return 0, nil // something is recent: a create may be in flight
			}
		}
		victims = files
	default:
		chain := s.chainLocked(table, cur, keep)
		for _, f := range files {
			if !f.mtime.Before(cutoff) {
				continue
			}
			if f.tmp || (chain != nil && !chain[f.name]) {
				victims = append(victims, f)
			}
		}
	}
	n, err := s.removeLocked(table, dir, victims)
	if !ok && err == nil {
		_ = os.Remove(dir) // only succeeds if empty; a stray file keeps it
	}
	return n, err
}

type sweepable struct {
	name  string
	tmp   bool
	mtime time.Time
}

// listSweepable lists the txn and temporary files of a table directory.
func listSweepable(dir string) ([]sweepable, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("metadata: sweep %s: %w", dir, err)
	}
	var out []sweepable
	for _, e := range entries {
		tmp := strings.HasPrefix(e.Name(), tmpPrefix)
		if !e.Type().IsRegular() || !tmp && !ValidTxnID(e.Name()) {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("metadata: sweep %s: %w", dir, err)
		}
		out = append(out, sweepable{name: e.Name(), tmp: tmp, mtime: info.ModTime()})
	}
	return out, nil
}

// chainLocked returns cur and its keep most recent ancestors, or nil when cur
// itself is not readable here.
func (s *FileStore) chainLocked(table, cur string, keep int) map[string]bool {
	if _, err := s.headerLocked(table, cur); err != nil {
		return nil
	}
	chain := map[string]bool{cur: true}
	id := cur
	for range max(keep, 0) {
		h, err := s.headerLocked(table, id)
		if err != nil || h.ParentTxnID == "" {
			break
		}
		id = h.ParentTxnID
		chain[id] = true
	}
	return chain
}

// headerLocked returns the header of a stored file, cached.
func (s *FileStore) headerLocked(table, txnID string) (fileHeader, error) {
	k := fileKey{table, txnID}
	if h, ok := s.mu.headers[k]; ok {
		return h, nil
	}
	b, err := s.Get(table, txnID)
	if err != nil {
		return fileHeader{}, err
	}
	h, err := decodeHeader(b)
	if err != nil {
		return fileHeader{}, fmt.Errorf("%s/%s: %w", table, txnID, err)
	}
	if h.Table != table || h.TxnID != txnID {
		return fileHeader{}, fmt.Errorf("%w: %s/%s holds %s/%s", ErrCorruptFile, table, txnID, h.Table, h.TxnID)
	}
	s.mu.headers[k] = h
	return h, nil
}

// header returns the header of a stored file.
func (s *FileStore) header(table, txnID string) (fileHeader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headerLocked(table, txnID)
}

func (s *FileStore) removeLocked(table, dir string, victims []sweepable) (int, error) {
	n := 0
	var errs []error
	for _, f := range victims {
		err := os.Remove(filepath.Join(dir, f.name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("metadata: sweep: %w", err))
			continue
		}
		delete(s.mu.headers, fileKey{table, f.name})
		if err == nil {
			n++
		}
	}
	return n, errors.Join(errs...)
}
