package partition

import (
	"encoding/binary"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/block"
)

// sealDense holds the rows of the series a seal reads column by column,
// while every one of them is a compact row of the memory head of one
// shape (the peer harness's rows all are): the seal encodes them with
// block.EncodeDense, without a model.Row per row and a model.Field per
// value (which had been the most of the seal's CPU after the encoder
// itself: BenchmarkSealMemory, docs/performance.md). A row of any other
// form turns the columns into rows (sealScratch.undense) and the series
// goes on as rows.
type sealDense struct {
	shape  *rowShape // nil: no row taken
	times  []int64
	fields []block.DenseField // the shape's fields, their slices reused
}

// rows returns the number of rows the columns hold.
func (d *sealDense) rows() int { return len(d.times) }

// reset forgets the rows, keeping the slices.
func (d *sealDense) reset() {
	d.shape, d.times = nil, d.times[:0]
	for j := range d.fields {
		f := &d.fields[j]
		f.Name, f.Floats, f.Ints, f.Versions = "", f.Floats[:0], f.Ints[:0], f.Versions[:0]
	}
	d.fields = d.fields[:0]
}

// denseShape reports whether rows of shape sh can be held as columns:
// one field at least, each a float, an int or a bool (a tombstone holds
// no value).
func denseShape(sh *rowShape) bool {
	if len(sh.fields) == 0 {
		return false
	}
	for i := range sh.fields {
		switch sh.fields[i].kind {
		case model.KindFloat, model.KindInt, model.KindBool:
		default:
			return false
		}
	}
	return true
}

// takeDense adds c, a compact row of shape sh at time t, to the series'
// columns. It takes nothing and reports false when the series is read as
// rows already, or its columns are of another shape, or sh's rows cannot
// be columns; the caller then reads the row as a row.
func (sc *sealScratch) takeDense(sh *rowShape, t int64, c []byte) (bool, error) {
	d := &sc.dense
	if len(sc.rows) > 0 || (d.shape != nil && d.shape != sh) {
		return false, nil
	}
	if d.shape == nil {
		if !denseShape(sh) {
			return false, nil
		}
		names := sc.shapeNames(sh)
		d.shape = sh
		if cap(d.fields) < len(sh.fields) {
			d.fields = append(d.fields[:cap(d.fields)], make([]block.DenseField, len(sh.fields)-cap(d.fields))...)
		}
		d.fields = d.fields[:len(sh.fields)]
		for j := range d.fields {
			d.fields[j].Name, d.fields[j].Kind = names[j], sh.fields[j].kind
		}
	}
	pre := len(c) - sh.payLen
	if pre < 0 {
		return false, corrupt("compact row in memory without its sequence and versions")
	}
	if p, ok := sc.raw.decodeVersions(c[:pre]); !ok || p != pre || uint64(len(sc.raw.versions)) < sh.minVersions {
		return false, corrupt("compact row in memory without its sequence and versions")
	}
	pays := c[pre:]
	d.times = append(d.times, t)
	for j := range sh.fields {
		f, df := &sh.fields[j], &d.fields[j]
		switch f.kind {
		case model.KindFloat:
			df.Floats = append(df.Floats, f.float(pays))
		case model.KindInt:
			x, _ := binary.Varint(pays[f.poff : f.poff+f.to-f.off])
			df.Ints = append(df.Ints, x)
		case model.KindBool:
			df.Ints = append(df.Ints, int64(pays[f.poff]))
		}
		df.Versions = append(df.Versions, sc.raw.versions[f.ver])
	}
	return true, nil
}

// undense turns the series' columns into rows (sc.rows), the rows
// readRow returns for them, and empties the columns.
func (sc *sealScratch) undense() {
	d := &sc.dense
	for i, t := range d.times {
		row := model.Row{Time: t, Series: sc.series, Fields: sc.slab.take(len(d.fields))}
		for j := range d.fields {
			df := &d.fields[j]
			v := model.Value{Kind: df.Kind}
			if df.Kind == model.KindFloat {
				v.F = df.Floats[i]
			} else {
				v.I = df.Ints[i]
			}
			row.Fields = append(row.Fields, model.Field{Name: df.Name, Value: v, Version: df.Versions[i]})
		}
		sc.rows = append(sc.rows, row)
	}
	d.reset()
}

// read adds the row under it at time t to the series' rows: to its
// columns while every row of the series is a compact row of one shape,
// else as a model.Row. It returns the row's field count, tombstones
// included (0: a row without fields, not taken).
func (sc *sealScratch) read(it *rowIter, t int64) (int, error) {
	if sh, c, ok := it.memCompact(); ok {
		taken, err := sc.takeDense(sh, t, c)
		if err != nil {
			return 0, err
		}
		if taken {
			return len(sh.fields), nil
		}
	}
	if sc.dense.rows() > 0 {
		sc.undense()
	}
	row, err := sc.readRow(it, t)
	if err != nil || len(row.Fields) == 0 {
		return 0, err
	}
	sc.rows = append(sc.rows, row)
	return len(row.Fields), nil
}

// count returns the number of rows of the series read so far.
func (sc *sealScratch) count() int { return len(sc.rows) + sc.dense.rows() }

// resetSeries forgets the series' rows, keeping the scratch's memory.
func (sc *sealScratch) resetSeries() {
	clear(sc.rows)
	sc.rows, sc.values, sc.head, sc.headLen = sc.rows[:0], 0, false, 0
	sc.dense.reset()
	sc.slab.reset()
}

// encode appends the block of the series' rows to sc.buf's start.
func (sc *sealScratch) encode() error {
	var err error
	if sc.dense.rows() > 0 {
		sc.buf, err = sc.enc.EncodeDense(sc.buf[:0], sc.dense.times, sc.dense.fields)
	} else {
		sc.buf, err = sc.enc.Encode(sc.buf[:0], sc.rows)
	}
	return err
}
