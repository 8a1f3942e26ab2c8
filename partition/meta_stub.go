package partition

// Replaced by the tag index (helper index) at merge.
//
// A brute-force stand-in for the metadata queries the tag index answers,
// so that the plumbing through router, replica and frontend (helper meta)
// compiles and is tested before the merge: it walks every row of the
// replica. Nothing else may live in this file.

import (
	"cmp"
	"math"
	"slices"

	"github.com/tsdb/tsdb/model"
)

// SeriesKeys returns the keys of the replica's series that match q's
// Series/Prefix, Measurement and Tags (its time range is ignored), sorted,
// at most limit of them (limit <= 0: all).
//
// Replaced by the tag index (helper index) at merge.
func (r *Replica) SeriesKeys(q model.Query, limit int) ([]string, error) {
	m, err := q.Matcher()
	if err != nil {
		return nil, err
	}
	rows, _, err := r.Scan(model.Query{From: math.MinInt64, To: math.MaxInt64, Series: q.Series, Prefix: q.Prefix})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for i := range rows {
		s := rows[i].Series
		if seen[s] || m != nil && !m.Match(s) {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	slices.Sort(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// FieldKeys returns the field names and kinds of the replica's rows of a
// measurement ("" = every measurement), sorted by measurement then name.
//
// Replaced by the tag index (helper index) at merge.
func (r *Replica) FieldKeys(measurement string) ([]model.FieldKey, error) {
	rows, _, err := r.Scan(model.Query{From: math.MinInt64, To: math.MaxInt64})
	if err != nil {
		return nil, err
	}
	seen := map[model.FieldKey]bool{}
	var out []model.FieldKey
	for i := range rows {
		meas, err := model.Measurement(rows[i].Series)
		if err != nil || measurement != "" && meas != measurement {
			continue
		}
		for _, f := range rows[i].Fields {
			k := model.FieldKey{Measurement: meas, Name: f.Name, Kind: f.Value.Kind}
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	slices.SortFunc(out, func(a, b model.FieldKey) int {
		return cmp.Or(cmp.Compare(a.Measurement, b.Measurement), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	return out, nil
}
