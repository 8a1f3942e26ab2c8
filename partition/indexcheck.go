package partition

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
)

// nsIndexed is the store's tag index marker: 0x07 → indexVersion. A store
// written before the tag index existed has rows but no marker; Open then
// builds every replica's index (CheckIndex with repair) before writing it.
const nsIndexed byte = 0x07

var indexedKey = []byte{nsIndexed}

// indexVersion is the value of the marker: the index layout of index.go.
const indexVersion = "1"

// IndexReport is what CheckIndex found.
type IndexReport struct {
	// Series is the number of distinct series in the rows, FieldKeys the
	// number of distinct (measurement, field, kind) in them.
	Series, FieldKeys int
	// Missing counts the index entries the rows need and the index lacks;
	// Extra the index entries no row needs.
	Missing, Extra int
	// Examples describes up to maxIndexExamples of the differences.
	Examples []string
	// Repaired reports that the differences were fixed.
	Repaired bool
}

// OK reports whether the index matched the rows.
func (r IndexReport) OK() bool { return r.Missing == 0 && r.Extra == 0 }

const maxIndexExamples = 10

// CheckIndex walks every row of the replica and compares the tag index
// with what the rows need (index.go): missing and extra entries. With
// repair it rewrites the differences in one synced batch; it then holds
// the apply lock for the whole walk, so writes to the replica wait for
// it. Without repair it reads one snapshot and blocks nothing.
func (r *Replica) CheckIndex(repair bool) (IndexReport, error) {
	if err := r.enter(); err != nil {
		return IndexReport{}, err
	}
	defer r.store.gate.Exit()
	if !repair {
		mem := r.memView(nil, nil) // before the snapshot
		snap := r.store.db.NewSnapshot()
		defer snap.Close()
		rep, _, _, err := r.diffIndex(snap, mem)
		return rep, err
	}
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.dropped.Load() {
		return IndexReport{}, fmt.Errorf("replica %s: %w", r.info.Placement, ErrDropped)
	}
	return r.repairIndexLocked()
}

// repairIndexLocked is CheckIndex(true) under applyMu.
func (r *Replica) repairIndexLocked() (IndexReport, error) {
	rep, missing, extra, err := r.diffIndex(r.store.db, r.memView(nil, nil))
	if err != nil || rep.OK() {
		return rep, err
	}
	b := r.store.db.NewBatch()
	defer b.Close()
	for _, k := range extra {
		if err := b.Delete(k, nil); err != nil {
			return rep, fmt.Errorf("partition: replica %s: repair index: %w", r.info.Placement, err)
		}
	}
	for _, k := range missing {
		if err := b.Set(k, nil, nil); err != nil {
			return rep, fmt.Errorf("partition: replica %s: repair index: %w", r.info.Placement, err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return rep, fmt.Errorf("partition: replica %s: repair index: %w", r.info.Placement, err)
	}
	r.applyMu.index = nil // reloaded from the repaired index by the next Apply
	rep.Repaired = true
	return rep, nil
}

// diffIndex compares the index with the rows as db shows them and returns
// the missing and extra keys.
func (r *Replica) diffIndex(db reader, mem *memView) (rep IndexReport, missing, extra [][]byte, err error) {
	want, err := r.wantedIndex(db, mem, &rep)
	if err != nil {
		return rep, nil, nil, err
	}
	note := func(what string, k []byte) {
		if len(rep.Examples) < maxIndexExamples {
			rep.Examples = append(rep.Examples, fmt.Sprintf("%s %q", what, k[prefixLen:]))
		}
	}
	for _, kind := range []byte{kindField, kindTag, kindSeriesIx} {
		lo, hi := r.ks.kindRange(kind, nil)
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return rep, nil, nil, fmt.Errorf("partition: replica %s: read index: %w", r.info.Placement, err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			if _, ok := want[string(it.Key())]; ok {
				delete(want, string(it.Key()))
				continue
			}
			k := slices.Clone(it.Key())
			extra = append(extra, k)
			note("extra", k)
		}
		err = errors.Join(it.Error(), it.Close())
		if err != nil {
			return rep, nil, nil, fmt.Errorf("partition: replica %s: read index: %w", r.info.Placement, err)
		}
	}
	for k := range want {
		missing = append(missing, []byte(k))
	}
	slices.SortFunc(missing, bytes.Compare)
	for _, k := range missing {
		note("missing", k)
	}
	rep.Missing, rep.Extra = len(missing), len(extra)
	return rep, missing, extra, nil
}

// wantedIndex walks the rows and returns every index key they need.
func (r *Replica) wantedIndex(db reader, mem *memView, rep *IndexReport) (map[string]struct{}, error) {
	it, err := newRowIter(db, mem, &r.ks, nil, nil) // the head and the sealed rows
	if err != nil {
		return nil, fmt.Errorf("partition: replica %s: read rows: %w", r.info.Placement, err)
	}
	defer it.Close()
	want := map[string]struct{}{}
	seen := map[string]string{} // series → measurement
	var (
		raw  rawRow
		key  []byte
		meas string
		last []byte
	)
	for ok := it.First(); ok; ok = it.Next() {
		_, series, _, err := rowKeyParts(it.Key())
		if err != nil {
			return nil, err
		}
		if last == nil || string(series) != string(last) {
			last = append(last[:0], series...)
			s := string(series)
			m, ok := seen[s]
			if !ok {
				var tags []model.Tag
				m, tags = splitMeasurement(s)
				seen[s] = m
				key = r.ks.appendSeriesIndexKey(key[:0], m, s)
				want[string(key)] = struct{}{}
				for _, t := range tags {
					key = r.ks.appendTagIndexKey(key[:0], m, t, s)
					want[string(key)] = struct{}{}
				}
			}
			meas = m
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("partition: replica %s: read rows: %w", r.info.Placement, err)
		}
		if err := decodeRaw(v, &raw); err != nil {
			return nil, fmt.Errorf("row of %s: %w", series, err)
		}
		for i := range raw.fields {
			f := &raw.fields[i]
			if f.kind < model.KindFloat || f.kind > model.KindString {
				continue // as noteIndex: only values have field keys
			}
			key = r.ks.appendFieldIndexKey(key[:0], meas, string(f.name), f.kind)
			if _, ok := want[string(key)]; !ok {
				want[string(key)] = struct{}{}
				rep.FieldKeys++
			}
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("partition: replica %s: read rows: %w", r.info.Placement, err)
	}
	rep.Series = len(seen)
	return want, nil
}

// upgradeIndex builds the tag index of every replica of a store written
// before it existed (no marker), then writes the marker; with
// Options.CheckIndex it checks and repairs every replica's index whatever
// the marker says.
func (s *Store) upgradeIndex() error {
	v, closer, err := s.db.Get(indexedKey)
	switch {
	case err == nil:
		have := string(v)
		_ = closer.Close()
		if have != indexVersion {
			return fmt.Errorf("%w: tag index version %q, this build knows %q", ErrCorrupt, have, indexVersion)
		}
		if !s.checkIndex {
			return nil
		}
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("partition: read index marker: %w", err)
	}
	for _, r := range s.mu.replicas {
		r.applyMu.Lock()
		rep, err := r.repairIndexLocked()
		r.applyMu.Unlock()
		if err != nil {
			return err
		}
		switch {
		case !rep.OK() && s.checkIndex:
			s.log.Warn("tag index repaired", "placement", r.info.Placement, "series", rep.Series,
				"field_keys", rep.FieldKeys, "added", rep.Missing, "removed", rep.Extra)
		case s.checkIndex:
			s.log.Info("tag index checked", "placement", r.info.Placement, "series", rep.Series, "field_keys", rep.FieldKeys)
		case !rep.OK():
			s.log.Info("tag index built", "placement", r.info.Placement, "series", rep.Series,
				"field_keys", rep.FieldKeys, "added", rep.Missing, "removed", rep.Extra)
		}
	}
	if err := s.db.Set(indexedKey, []byte(indexVersion), pebble.Sync); err != nil {
		return fmt.Errorf("partition: write index marker: %w", err)
	}
	return nil
}
