package partition

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
)

// The tag index of a replica (docs/storage-format.md, "Tag index"). Three
// key kinds under the replica's prefix, all with empty values:
//
//	prefix|'s'|measurement|0x00|series                          one per series
//	prefix|'i'|measurement|0x00|tagkey|0x00|tagvalue|0x00|series one per tag of a series
//	prefix|'f'|measurement|0x00|field|0x00|kind                 one per field name and kind
//
// Measurements, tag keys and values are unescaped; a series never holds a
// NUL byte (Apply refuses it), so 0x00 separates the parts and sorts a
// shorter part first. A series whose key does not parse
// (model.SplitSeries) is indexed under 's' with its whole key as the
// measurement and no tags. The entries are written by Apply in the batch
// of the rows, the first time the replica stores a series (or a field name
// and kind of a measurement), so they move with the rows through every
// path that stores rows (inserts, pushes, split backfills, joins) and the
// drop's DeleteRange removes them with the rest of the prefix.

// Index key kinds.
const (
	kindField    byte = 'f'
	kindTag      byte = 'i'
	kindSeriesIx byte = 's'
)

// seriesIndexKey appends prefix|'s'|measurement|0|series.
func (ks *keyspace) appendSeriesIndexKey(dst []byte, measurement, series string) []byte {
	dst = append(append(dst, ks.space...), kindSeriesIx)
	dst = append(append(dst, measurement...), 0)
	return append(dst, series...)
}

// appendTagIndexKey appends prefix|'i'|measurement|0|key|0|value|0|series.
func (ks *keyspace) appendTagIndexKey(dst []byte, measurement string, tag model.Tag, series string) []byte {
	dst = append(append(dst, ks.space...), kindTag)
	dst = append(append(dst, measurement...), 0)
	dst = append(append(dst, tag.Key...), 0)
	dst = append(append(dst, tag.Value...), 0)
	return append(dst, series...)
}

// appendFieldIndexKey appends prefix|'f'|measurement|0|field|0|kind.
func (ks *keyspace) appendFieldIndexKey(dst []byte, measurement, field string, kind model.Kind) []byte {
	dst = append(append(dst, ks.space...), kindField)
	dst = append(append(dst, measurement...), 0)
	dst = append(append(dst, field...), 0)
	return append(dst, byte(kind))
}

// kindRange returns the bounds of every key of kind k, or of those whose
// part after the kind starts with sub.
func (ks *keyspace) kindRange(k byte, sub []byte) (lo, hi []byte) {
	lo = append(append(append([]byte(nil), ks.space...), k), sub...)
	return lo, prefixSuccessor(lo)
}

// splitMeasurement returns the measurement and tags a series is indexed
// under.
func splitMeasurement(series string) (string, []model.Tag) {
	m, tags, err := model.SplitSeries(series)
	if err != nil {
		return series, nil
	}
	return m, tags
}

// indexState is the replica's in-memory record of what its index holds,
// guarded by applyMu: the series and the field kinds of each measurement.
// It is loaded from the index by the first Apply (loadIndexState) and
// costs about the series key's length plus 70 bytes per series (the map
// entry, the key's header and its measurement's header; the measurement
// shares the key's bytes when it is not escaped).
type indexState struct {
	// series maps each indexed series to its measurement.
	series map[string]string
	// fields maps measurement → field name → bit set of kinds (1<<kind).
	fields map[string]map[string]uint8
}

// covers reports whether the index holds series and every value field of
// fields with its kind, so that writing the row adds nothing to it: Apply
// then needs no merged row to note (a field that loses to a stored one of
// another kind would otherwise be indexed with a kind no row holds).
func (st *indexState) covers(series string, fields []model.Field) bool {
	meas, ok := st.series[series]
	if !ok {
		return false
	}
	fm := st.fields[meas]
	for i := range fields {
		k := fields[i].Value.Kind
		if k < model.KindFloat || k > model.KindString {
			continue // not a value: no field key
		}
		if fm[fields[i].Name]&(1<<k) == 0 {
			return false
		}
	}
	return true
}

// indexBuilder collects the index entries one Apply adds. It is part of
// the Apply's scratch; pending entries become part of indexState only once
// the batch is visible.
type indexBuilder struct {
	keys     [][]byte
	arena    []byte
	series   []string
	measOf   []string            // measOf[i] is the measurement of series[i]
	pending  map[string]struct{} // series, once it holds many
	kbuf     []byte
	fieldsOf []pendingField
	// lastSeries and lastMeas cache the measurement of the last row.
	have       bool
	lastSeries string
	lastMeas   string
	// shape is the fields (names and kinds) of a row of measurement
	// shapeMeas that noteIndex found all indexed or pending: a row of the
	// same measurement and fields needs no lookup of them (the rows of
	// one insert usually share their fields). Names are the rows' own
	// strings (nameS), which outlive the Apply.
	shape     []shapeField
	shapeMeas string
	shapeOK   bool
}

type shapeField struct {
	name string
	kind model.Kind
}

type pendingField struct {
	meas, name string
	kind       model.Kind
}

func (ib *indexBuilder) reset() {
	ib.keys = ib.keys[:0]
	ib.arena = ib.arena[:0]
	clear(ib.series)
	ib.series = ib.series[:0]
	clear(ib.measOf)
	ib.measOf = ib.measOf[:0]
	clear(ib.pending)
	clear(ib.fieldsOf)
	ib.fieldsOf = ib.fieldsOf[:0]
	ib.have, ib.lastSeries, ib.lastMeas = false, "", ""
	clear(ib.shape)
	ib.shape, ib.shapeMeas, ib.shapeOK = ib.shape[:0], "", false
}

// sameShape reports whether merged has the fields of the last shape
// noted for meas.
func (ib *indexBuilder) sameShape(meas string, merged []encField) bool {
	if !ib.shapeOK || meas != ib.shapeMeas || len(merged) != len(ib.shape) {
		return false
	}
	for i := range merged {
		f := &merged[i]
		if f.nameB != nil || f.kind != ib.shape[i].kind || f.nameS != ib.shape[i].name {
			return false
		}
	}
	return true
}

// noteShape records merged's fields, all indexed or pending, as the
// shape of meas; fields named by stored bytes are not kept.
func (ib *indexBuilder) noteShape(meas string, merged []encField) {
	ib.shape, ib.shapeOK = ib.shape[:0], false
	for i := range merged {
		if merged[i].nameB != nil {
			return
		}
		ib.shape = append(ib.shape, shapeField{name: merged[i].nameS, kind: merged[i].kind})
	}
	ib.shapeMeas, ib.shapeOK = meas, true
}

// pendingSeriesAbove is the count of new series of one Apply past which
// they are also kept in a map.
const pendingSeriesAbove = 8

// isPending reports whether series is among the new series of the Apply.
func (ib *indexBuilder) isPending(series string) bool {
	if len(ib.series) <= pendingSeriesAbove {
		return slices.Contains(ib.series, series)
	}
	if len(ib.pending) == 0 {
		if ib.pending == nil {
			ib.pending = make(map[string]struct{}, 2*len(ib.series))
		}
		for _, s := range ib.series {
			ib.pending[s] = struct{}{}
		}
	}
	_, ok := ib.pending[series]
	return ok
}

func (ib *indexBuilder) addPending(series, meas string) {
	ib.series = append(ib.series, series)
	ib.measOf = append(ib.measOf, meas)
	if len(ib.pending) > 0 {
		ib.pending[series] = struct{}{}
	}
}

func (ib *indexBuilder) addKey(k []byte) {
	off := len(ib.arena)
	ib.arena = append(ib.arena, k...)
	ib.keys = append(ib.keys, ib.arena[off:len(ib.arena):len(ib.arena)])
}

// note records that a row of series with the fields merged is written;
// the caller holds applyMu and st is loaded.
func (r *Replica) noteIndex(ib *indexBuilder, st *indexState, series string, merged []encField) {
	if !ib.have || series != ib.lastSeries {
		ib.have, ib.lastSeries = true, series
		meas, known := st.series[series]
		if known {
			ib.lastMeas = meas
		} else if !ib.isPending(series) {
			// A copy: the row's series may share the memory of a whole
			// decoded push (replication.DecodeRows), which the index
			// state would otherwise keep alive.
			series = strings.Clone(series)
			ib.lastSeries = series
			var tags []model.Tag
			ib.lastMeas, tags = splitMeasurement(series)
			ib.addPending(series, ib.lastMeas)
			ib.kbuf = r.ks.appendSeriesIndexKey(ib.kbuf[:0], ib.lastMeas, series)
			ib.addKey(ib.kbuf)
			for _, t := range tags {
				ib.kbuf = r.ks.appendTagIndexKey(ib.kbuf[:0], ib.lastMeas, t, series)
				ib.addKey(ib.kbuf)
			}
		} else {
			ib.lastMeas, _ = splitMeasurement(series) // twice in one Apply: rare
		}
	}
	if ib.sameShape(ib.lastMeas, merged) {
		return
	}
	fm := st.fields[ib.lastMeas]
	defer ib.noteShape(ib.lastMeas, merged)
	for i := range merged {
		f := &merged[i]
		if f.kind < model.KindFloat || f.kind > model.KindString {
			continue // not a value (a deletion marker, say): no field key
		}
		if f.nameB != nil && fm[string(f.nameB)]&(1<<f.kind) != 0 {
			continue // stored already: the common case of a merged row
		}
		name := f.nameS
		if f.nameB != nil {
			name = string(f.nameB)
		}
		if fm[name]&(1<<f.kind) != 0 || ib.hasField(ib.lastMeas, name, f.kind) {
			continue
		}
		ib.fieldsOf = append(ib.fieldsOf, pendingField{meas: ib.lastMeas, name: name, kind: f.kind})
		ib.kbuf = r.ks.appendFieldIndexKey(ib.kbuf[:0], ib.lastMeas, name, f.kind)
		ib.addKey(ib.kbuf)
	}
}

func (ib *indexBuilder) hasField(meas, name string, kind model.Kind) bool {
	for _, p := range ib.fieldsOf {
		if p.kind == kind && p.name == name && p.meas == meas {
			return true
		}
	}
	return false
}

// addToBatch writes the collected index keys, sorted, to batch.
func (ib *indexBuilder) addToBatch(batch *pebble.Batch) error {
	slices.SortFunc(ib.keys, bytes.Compare)
	for _, k := range ib.keys {
		if err := batch.Set(k, nil, nil); err != nil {
			return fmt.Errorf("partition: batch set: %w", err)
		}
	}
	return nil
}

// commit adds the entries of a visible batch to st.
func (ib *indexBuilder) commit(st *indexState) {
	for i, s := range ib.series {
		st.series[s] = ib.measOf[i]
	}
	for _, p := range ib.fieldsOf {
		fm := st.fields[p.meas]
		if fm == nil {
			fm = map[string]uint8{}
			st.fields[p.meas] = fm
		}
		fm[p.name] |= 1 << p.kind
	}
}

// indexStateLocked returns the replica's index state, loading it from the
// index on first use. The caller holds applyMu.
func (r *Replica) indexStateLocked() (*indexState, error) {
	if r.applyMu.index != nil {
		return r.applyMu.index, nil
	}
	st := &indexState{series: map[string]string{}, fields: map[string]map[string]uint8{}}
	err := r.scanIndex(r.store.db, kindSeriesIx, nil, func(rest []byte) bool {
		if i := bytes.IndexByte(rest, 0); i >= 0 {
			s := string(rest[i+1:])
			st.series[s], _ = splitMeasurement(s)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	err = r.scanIndex(r.store.db, kindField, nil, func(rest []byte) bool {
		if fk, ok := parseFieldKey(rest); ok {
			fm := st.fields[fk.Measurement]
			if fm == nil {
				fm = map[string]uint8{}
				st.fields[fk.Measurement] = fm
			}
			fm[fk.Name] |= 1 << fk.Kind
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	r.applyMu.index = st
	return st, nil
}

// reader is what index reads need of a DB or a snapshot.
type reader interface {
	NewIter(*pebble.IterOptions) (*pebble.Iterator, error)
}

// scanIndex calls fn with the part after the kind byte of every index key
// of kind k starting with sub, in key order, until fn returns false.
func (r *Replica) scanIndex(db reader, k byte, sub []byte, fn func(rest []byte) bool) error {
	lo, hi := r.ks.kindRange(k, sub)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("partition: replica %s: read index: %w", r.info.Placement, err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if !fn(it.Key()[prefixLen+1:]) {
			break
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("partition: replica %s: read index: %w", r.info.Placement, err)
	}
	return nil
}

// parseFieldKey decodes the part after 'f' of a field index key.
func parseFieldKey(rest []byte) (model.FieldKey, bool) {
	i := bytes.IndexByte(rest, 0)
	if i < 0 || len(rest) < i+3 || rest[len(rest)-2] != 0 {
		return model.FieldKey{}, false
	}
	return model.FieldKey{Measurement: string(rest[:i]), Name: string(rest[i+1 : len(rest)-2]),
		Kind: model.Kind(rest[len(rest)-1])}, true
}

// SeriesKeys returns the keys of the replica's series that match q's
// Series/Prefix, Measurement and Tags (its time range is ignored), sorted,
// at most limit of them (limit <= 0: all). It reads the tag index, not
// rows.
func (r *Replica) SeriesKeys(q model.Query, limit int) ([]string, error) {
	sm, err := q.Matcher()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidQuery, err)
	}
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.store.gate.Exit()
	out, _, err := r.matchingSeries(r.store.db, q, sm)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// matchingSeries returns the sorted keys of the indexed series that match
// q's Series/Prefix and sm, and how many index entries it read to find
// them. With a measurement it reads that measurement's entries only; an
// `=` on a tag with a non-empty value (alone or under an and) narrows the
// read to that tag value's entries.
func (r *Replica) matchingSeries(db reader, q model.Query, sm *model.SeriesMatcher) ([]string, int, error) {
	keep := func(s string) bool {
		switch {
		case q.Series == "":
		case q.Prefix:
			if !strings.HasPrefix(s, q.Series) {
				return false
			}
		default:
			if s != q.Series {
				return false
			}
		}
		return sm == nil || sm.Match(s)
	}
	var out []string
	read := 0
	collect := func(rest []byte) bool {
		read++
		// The series is after the last NUL (a series holds none).
		s := string(rest[bytes.LastIndexByte(rest, 0)+1:])
		if keep(s) {
			out = append(out, s)
		}
		return true
	}
	var err error
	switch eq, ok := narrowingTag(q.Tags); {
	case q.Measurement != "" && ok:
		sub := append(append(append(append([]byte(q.Measurement), 0), eq.Key...), 0), eq.Value...)
		err = r.scanIndex(db, kindTag, append(sub, 0), collect)
	case q.Measurement != "":
		err = r.scanIndex(db, kindSeriesIx, append([]byte(q.Measurement), 0), collect)
	case q.Series != "" && !q.Prefix:
		m, _ := splitMeasurement(q.Series)
		err = r.scanIndex(db, kindSeriesIx, append(append([]byte(m), 0), q.Series...), func(rest []byte) bool {
			read++
			if string(rest[len(m)+1:]) == q.Series && keep(q.Series) {
				out = append(out, q.Series)
			}
			return true
		})
	default:
		err = r.scanIndex(db, kindSeriesIx, nil, collect)
	}
	if err != nil {
		return nil, 0, err
	}
	slices.Sort(out)
	return slices.Compact(out), read, nil
}

// narrowingTag returns a comparison `key = value` (value not empty) that
// every series matching e satisfies: e itself or an operand of a top-level
// and.
func narrowingTag(e *model.TagExpr) (model.TagExpr, bool) {
	if e == nil {
		return model.TagExpr{}, false
	}
	switch e.Op {
	case model.TagEq:
		return *e, e.Value != ""
	case model.TagAnd:
		for i := range e.Args {
			if a, ok := narrowingTag(&e.Args[i]); ok {
				return a, true
			}
		}
	}
	return model.TagExpr{}, false
}

// FieldKeys returns the field names and kinds of the replica's rows of a
// measurement ("" = every measurement), sorted by measurement then name
// (then kind, when a name was written with several kinds).
func (r *Replica) FieldKeys(measurement string) ([]model.FieldKey, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.store.gate.Exit()
	var sub []byte
	if measurement != "" {
		sub = append([]byte(measurement), 0)
	}
	var out []model.FieldKey
	err := r.scanIndex(r.store.db, kindField, sub, func(rest []byte) bool {
		if fk, ok := parseFieldKey(rest); ok {
			out = append(out, fk)
		}
		return true
	})
	return out, err
}
