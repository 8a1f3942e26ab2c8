package partition

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// errWALSync is the injected failure of TestRule1NoAckWithoutSync.
var errWALSync = errors.New("injected WAL fsync failure")

// TestRule1NoAckWithoutSync breaks DESIGN.md rule 1 on purpose: the WAL
// fsync of a batch fails. Apply must not acknowledge the rows, the synced
// watermark (what replication may push) must not cover them, and no later
// Apply may be acknowledged on top of the failed one.
func TestRule1NoAckWithoutSync(t *testing.T) {
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !strings.HasSuffix(op.Path, ".log") {
			return nil // only the WAL
		}
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			return errWALSync
		}
		return nil
	})
	failing := &errorfs.Toggle{Injector: inj}
	fs := errorfs.Wrap(vfs.Default, failing)
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: filepath.Join(t.TempDir(), "pebble"), FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Pebble may refuse to close cleanly after a failed WAL sync; the
		// test is about what Apply acknowledged before that.
		defer func() { _ = recover() }()
		s.Close()
	}()
	r, err := s.CreateReplica(testInfo(uuid.New()))
	if err != nil {
		t.Fatal(err)
	}
	res := mustApply(t, r, row("cpu", 1, fl("v", 1, 10)))
	synced := r.SyncedSeq()
	if synced != res.LastSeq {
		t.Fatalf("synced %d after an acknowledged apply at %d", synced, res.LastSeq)
	}

	failing.On()
	acked := func() (ok bool) {
		defer func() {
			if p := recover(); p != nil {
				t.Logf("apply panicked (pebble treats a failed WAL sync as fatal): %v", p)
				ok = false
			}
		}()
		_, err := r.Apply([]model.Row{row("cpu", 2, fl("v", 2, 20))})
		if err != nil {
			if !errors.Is(err, errWALSync) && !strings.Contains(err.Error(), errWALSync.Error()) {
				t.Fatalf("apply failed, but not with the injected fsync error: %v", err)
			}
			t.Logf("apply failed as it must: %v", err)
		}
		return err == nil
	}()
	if acked {
		t.Fatal("Apply acknowledged rows whose WAL fsync failed")
	}
	if got := r.SyncedSeq(); got != synced {
		t.Fatalf("synced watermark moved from %d to %d over a batch that never synced", synced, got)
	}
	// Nothing later is acknowledged on top of the failed batch either.
	failing.Off()
	func() {
		defer func() { _ = recover() }()
		if _, err := r.Apply([]model.Row{row("cpu", 3, fl("v", 3, 30))}); err == nil {
			t.Fatal("Apply acknowledged a batch after an earlier batch failed to sync")
		}
	}()
	if got := r.SyncedSeq(); got != synced {
		t.Fatalf("synced watermark moved from %d to %d after a failed sync", synced, got)
	}
}
