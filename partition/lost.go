package partition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"
)

// A wiped disk (DESIGN.md section 5): a server restarted on an empty data
// directory keeps its server id, so the METADATA still lists it for the
// placements it held, while their data is gone. The store tells the two
// cases of a listed placement with no registry entry apart:
//
//   - the placement was assigned after the store was created (a table
//     created later, a join): the server never held or confirmed a row of
//     it, and it is created empty;
//   - the placement was listed when the store was created empty: it is
//     lost, never created, and its server asks the master to remove and
//     re-join it under a new placement.
//
// For that the store records its birth: a store opened on an empty
// directory is Fresh until RecordBirth notes the tables that existed then
// (as pending). The first METADATA of a pending table the server installs
// settles it (Settle): the placements it lists for this server are marked
// lost, in one synced batch with clearing the table's pending mark. Lost
// marks, like tombstones, are kept for good (placement ids are never
// reused).

// birthRecord is the value of the birth key.
type birthRecord struct {
	// CreatedAt is when the birth was recorded.
	CreatedAt time.Time `json:"created_at"`
	// Tables is how many tables were pending then.
	Tables int `json:"tables"`
}

var birthKey = []byte{nsBirth}

// loadBirth reads the birth record, the pending tables and the lost
// placements. A store without a birth record that holds replicas or
// tombstones was written before birth records existed: it is not fresh,
// and its record is written now with no pending table.
func (s *Store) loadBirth() error {
	s.mu.pending = make(map[string]bool)
	s.mu.lost = make(map[uuid.UUID]ReplicaInfo)
	_, closer, err := s.db.Get(birthKey)
	switch {
	case err == nil:
		_ = closer.Close()
	case errors.Is(err, pebble.ErrNotFound):
		used, err := s.hasAny(nsRegistry, nsTombstone+1)
		if err != nil {
			return err
		}
		if !used {
			s.fresh = true
		} else if err := s.writeBirth(nil, time.Now()); err != nil {
			return err
		}
	default:
		return fmt.Errorf("partition: read birth record: %w", err)
	}
	if err := s.scan(nsPending, func(k, _ []byte) error {
		s.mu.pending[string(k[1:])] = true
		return nil
	}); err != nil {
		return err
	}
	return s.scan(nsLost, func(k, v []byte) error {
		var info ReplicaInfo
		if err := json.Unmarshal(v, &info); err != nil || !bytes.Equal(k, lostKey(info.Placement)) {
			return fmt.Errorf("%w: lost mark %x: %v", ErrCorrupt, k, err)
		}
		s.mu.lost[info.Placement] = info
		s.anyLost.Store(true)
		return nil
	})
}

// hasAny reports whether any key lies in [lo, hi).
func (s *Store) hasAny(lo, hi byte) (bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{lo}, UpperBound: []byte{hi}})
	if err != nil {
		return false, fmt.Errorf("partition: read keys %#x-%#x: %w", lo, hi, err)
	}
	defer it.Close()
	ok := it.First()
	return ok, it.Error()
}

// scan calls f for every key of namespace ns.
func (s *Store) scan(ns byte, f func(k, v []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{ns}, UpperBound: []byte{ns + 1}})
	if err != nil {
		return fmt.Errorf("partition: read namespace %#x: %w", ns, err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("partition: read namespace %#x: %w", ns, err)
		}
		if err := f(it.Key(), v); err != nil {
			return err
		}
	}
	return it.Error()
}

// writeBirth writes the birth record and the pending marks of tables in
// one synced batch.
func (s *Store) writeBirth(tables []string, now time.Time) error {
	enc, err := json.Marshal(birthRecord{CreatedAt: now.UTC(), Tables: len(tables)})
	if err != nil {
		return fmt.Errorf("partition: encode birth record: %w", err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, t := range tables {
		if err := b.Set(pendingKey(t), nil, nil); err != nil {
			return fmt.Errorf("partition: record birth: %w", err)
		}
	}
	if err := b.Set(birthKey, enc, nil); err != nil {
		return fmt.Errorf("partition: record birth: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("partition: record birth: %w", err)
	}
	return nil
}

// Fresh reports whether the store was opened on an empty directory and
// has not recorded its birth yet (RecordBirth). A server must then learn
// which tables exist before it creates any replica.
func (s *Store) Fresh() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fresh
}

// RecordBirth records, durably, that the store was created empty while
// tables existed: each is pending until Settle. It does nothing once the
// store is not Fresh.
func (s *Store) RecordBirth(tables []string, now time.Time) error {
	if err := s.gate.Enter(ErrClosed); err != nil {
		return err
	}
	defer s.gate.Exit()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.fresh {
		return nil
	}
	if err := s.writeBirth(tables, now); err != nil {
		return err
	}
	for _, t := range tables {
		s.mu.pending[t] = true
	}
	s.fresh = false
	if len(tables) > 0 {
		// Worth a line only when there was data this server may have held.
		s.log.Info("partition store created empty while tables exist: placements their METADATA already lists for this server are lost, to be re-joined",
			"tables", len(tables))
	}
	return nil
}

// Pending reports whether table existed when the store was created empty
// and has not been settled yet: its placements listed for this server
// must be passed to Settle before any replica of it is created.
func (s *Store) Pending(table string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.pending[table]
}

// Settle marks the placements of lost lost (skipping any with a replica)
// and clears table's pending mark, in one synced batch. lost are the
// placements the first METADATA of table installed since the store's
// birth lists for this server.
func (s *Store) Settle(table string, lost []ReplicaInfo) error {
	if err := s.gate.Enter(ErrClosed); err != nil {
		return err
	}
	defer s.gate.Exit()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	var marked []ReplicaInfo
	for _, info := range lost {
		if err := info.validate(); err != nil {
			return err
		}
		if _, ok := s.mu.replicas[info.Placement]; ok {
			continue
		}
		enc, err := json.Marshal(info)
		if err != nil {
			return fmt.Errorf("partition: encode lost mark: %w", err)
		}
		if err := b.Set(lostKey(info.Placement), enc, nil); err != nil {
			return fmt.Errorf("partition: mark %s lost: %w", info.Placement, err)
		}
		marked = append(marked, info.clone())
	}
	if err := b.Delete(pendingKey(table), nil); err != nil {
		return fmt.Errorf("partition: settle table %q: %w", table, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("partition: settle table %q: %w", table, err)
	}
	delete(s.mu.pending, table)
	for _, info := range marked {
		s.mu.lost[info.Placement] = info
		s.anyLost.Store(true)
		s.log.Warn("placement lost: listed for this server, whose store was created empty; never served here",
			"placement", info.Placement, "table", info.Table, "partition", info.PartitionID)
	}
	return nil
}

// Lost reports whether placement is marked lost.
func (s *Store) Lost(placement uuid.UUID) bool {
	if !s.anyLost.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.mu.lost[placement]
	return ok
}

// LostReplicas returns the placements marked lost, sorted by placement.
func (s *Store) LostReplicas() []ReplicaInfo {
	s.mu.Lock()
	out := slices.Collect(maps.Values(s.mu.lost))
	s.mu.Unlock()
	for i := range out {
		out[i] = out[i].clone()
	}
	slices.SortFunc(out, func(a, b ReplicaInfo) int { return bytes.Compare(a.Placement[:], b.Placement[:]) })
	return out
}
