package block

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/tsdb/tsdb/partition/colcodec"
)

// Predicted fields (doc.go, "Predicted fields"): a decimal float field
// may be stored as its residual from a sum of other decimal float fields of
// the block, m = r + Σ c_j·m_j with each c_j +1 or −1, when that residual
// and its terms take at most seven eighths of the field's own column.
// Fields that add up to a whole (a CPU's user, system and idle shares;
// used, free and total bytes) or follow each other (bytes in and out)
// leave a residual of a few bits a value where each column of its own
// takes a byte or more.

const (
	// predictMinRows is the fewest rows a block predicts columns in:
	// below it a column takes a few bytes, and the terms would eat the
	// gain.
	predictMinRows = 32
	// maxPredictTerms bounds the terms of one predicted field.
	maxPredictTerms = 8
	// maxPredictFields bounds the fields a block weighs for prediction
	// (the first of its eligible fields, in name order): the search costs
	// the square of their number per row searched.
	maxPredictFields = 16
	// predictSample is the most deltas the search weighs a field by (the
	// first rows of the block): a block of many rows costs it no more than
	// one of this many, and the encoded sizes decide on all of them.
	predictSample = 256
)

// predCand is a field eligible for prediction, or for predicting others:
// every row has it, as a float, stored as a decimal column.
type predCand struct {
	field int     // index in e.fields
	exp   uint8   // the decimal exponent
	mant  []int64 // its mantissas, one per row
	delta []int64 // mant[i+1] − mant[i] of the first rows (predictSample at most)
	cost  int     // bits of those deltas (the search's measure)
	role  uint8   // roleFree, rolePredictor or rolePredicted
}

const (
	roleFree = iota
	rolePredictor
	rolePredicted
)

// addPredictCandidate records field j, just encoded, when it is eligible:
// present in every row of n, float only, in the decimal form.
func (e *Encoder) addPredictCandidate(j, n int) {
	if n < predictMinRows || len(e.cands) >= maxPredictFields {
		return
	}
	mant, exp, ok := e.fenc.Mantissas()
	if !ok || len(mant) != n {
		return
	}
	if len(e.cands) < cap(e.cands) {
		e.cands = e.cands[:len(e.cands)+1]
	} else {
		e.cands = append(e.cands, predCand{})
	}
	c := &e.cands[len(e.cands)-1]
	c.field, c.exp, c.role = j, exp, roleFree
	c.mant = append(c.mant[:0], mant...)
	c.delta = grow(c.delta, min(n-1, predictSample))
	for i := range c.delta {
		c.delta[i] = mant[i+1] - mant[i]
	}
	c.cost = deltaBits(c.delta, nil, 0)
}

// deltaBits is the search's measure of a column: the bits of its zigzagged
// deltas, d[i] + sign·o[i] (o nil: d alone). The encoder's own choice
// (order, packing) is made on the winner only.
func deltaBits(d, o []int64, sign int64) int {
	n := 0
	if o == nil {
		for _, x := range d {
			n += bits.Len64(uint64(x<<1) ^ uint64(x>>63))
		}
		return n
	}
	o = o[:len(d)]
	for i, x := range d {
		x += sign * o[i]
		n += bits.Len64(uint64(x<<1) ^ uint64(x>>63))
	}
	return n
}

// predict rewrites the bodies of the fields it predicts (flagPredicted).
// Fields are tried by descending cost; each grows its terms greedily, one
// other field at a time with the sign that lowers its measure most, while
// that takes off at least an eighth of a bit a delta (over the first
// predictSample rows). A predicted field predicts no other, and a field
// that predicts one is not predicted itself, so that a reader decodes a
// predicted field from plain columns.
// The rewrite is kept only when the encoded residual and its terms take at
// most seven eighths of the field's own column.
func (e *Encoder) predict() error {
	cs := e.cands
	if len(cs) < 2 || e.noPredict {
		return nil
	}
	e.order = e.order[:0]
	for i := range cs {
		e.order = append(e.order, i)
	}
	slices.SortStableFunc(e.order, func(a, b int) int { return cs[b].cost - cs[a].cost })
	for _, k := range e.order {
		ck := &cs[k]
		if ck.role != roleFree {
			continue
		}
		e.rdelta = append(e.rdelta[:0], ck.delta...)
		cost := ck.cost
		e.terms = e.terms[:0]
		for len(e.terms) < maxPredictTerms {
			// A term must take off an eighth of a bit a delta: a relation
			// of several fields may pay off only with all its terms
			// (idle = 100 − user − system gains little from user alone).
			best, bestSign, bestCost := -1, int64(0), cost-len(e.rdelta)/8
			for j := range cs {
				cj := &cs[j]
				if j == k || cj.role == rolePredicted || cj.exp != ck.exp || e.inTerms(j) {
					continue
				}
				for _, s := range [2]int64{1, -1} {
					if c := deltaBits(e.rdelta, cj.delta, s); c < bestCost {
						best, bestSign, bestCost = j, s, c
					}
				}
			}
			if best < 0 {
				break
			}
			o := cs[best].delta
			for i := range e.rdelta {
				e.rdelta[i] += bestSign * o[i]
			}
			cost = bestCost
			// r = m_k + s·m_j, so m_k = r − s·m_j: the term's coefficient
			// is −s.
			e.terms = append(e.terms, predTerm{cand: best, neg: bestSign > 0})
		}
		if len(e.terms) == 0 {
			continue
		}
		ok, err := e.rewritePredicted(k)
		if err != nil {
			return err
		}
		if ok {
			ck.role = rolePredicted
			for _, t := range e.terms {
				cs[t.cand].role = rolePredictor
			}
		}
	}
	return nil
}

// inTerms reports whether candidate j is a term of the field being
// predicted.
func (e *Encoder) inTerms(j int) bool {
	for _, t := range e.terms {
		if t.cand == j {
			return true
		}
	}
	return false
}

// predTerm is a term of a predicted field: the candidate and whether its
// coefficient is −1 (else +1).
type predTerm struct {
	cand int
	neg  bool
}

// rewritePredicted writes candidate k's body as its terms (e.terms) and its
// residual column when that is smaller than its own, and reports whether it
// did:
//
//	body = t:uvarint | t × (index<<1 | neg):uvarint | len | residual column
//
// where index is the term's field in the block and the residual column a
// decimal column (colcodec.EncodeDecimals) of the field's exponent.
func (e *Encoder) rewritePredicted(k int) (bool, error) {
	ck := &e.cands[k]
	f := &e.fields[ck.field]
	e.res = append(e.res[:0], ck.mant...)
	for _, t := range e.terms {
		m := e.cands[t.cand].mant
		if t.neg {
			for i := range e.res {
				e.res[i] += m[i]
			}
		} else {
			for i := range e.res {
				e.res[i] -= m[i]
			}
		}
	}
	for _, r := range e.res {
		// Mantissas are below 2^53 in magnitude and the terms at most 8:
		// no overflow; a residual the decimal column cannot hold keeps the
		// field's own column.
		if r <= -1<<53 || r >= 1<<53 {
			return false, nil
		}
	}
	body := binary.AppendUvarint(e.pbody[:0], uint64(len(e.terms)))
	for _, t := range e.terms {
		x := uint64(e.cands[t.cand].field) << 1
		if t.neg {
			x |= 1
		}
		body = binary.AppendUvarint(body, x)
	}
	col, err := colcodec.EncodeDecimals(e.col[:0], e.res, ck.exp)
	e.col = col
	if err != nil {
		return false, fmt.Errorf("%w: field %q: residual: %w", ErrInvalid, f.name, err)
	}
	body = appendBytes(body, col)
	e.pbody = body
	if len(body) > len(f.body)-len(f.body)/8 {
		// Less than an eighth of the field's bytes: not worth decoding
		// its terms too.
		return false, nil
	}
	f.body = append(f.body[:0], body...)
	f.head[0] |= flagPredicted
	return true, nil
}
