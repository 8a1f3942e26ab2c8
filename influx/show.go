package influx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/influxdata/influxql"

	"github.com/tsdb/tsdb/model"
)

// sources is the FROM of a SHOW or DROP: measurement names (none: every
// measurement) or a regular expression.
type sources struct {
	names []string
	// set holds names, for match (a FROM list can be long).
	set map[string]struct{}
	re  *regexp.Regexp
	// db is the database a source names (FROM db.rp.m), "" for none.
	db string
}

func parseSources(ss influxql.Sources) (sources, error) {
	var out sources
	for _, s := range ss {
		m, ok := s.(*influxql.Measurement)
		if !ok {
			return out, fmt.Errorf("subqueries are not supported")
		}
		if err := checkRP(m.RetentionPolicy); err != nil {
			return out, err
		}
		if m.Database != "" {
			if out.db != "" && out.db != m.Database {
				return out, fmt.Errorf("sources name two databases, %s and %s", out.db, m.Database)
			}
			out.db = m.Database
		}
		if m.Regex != nil {
			if len(ss) > 1 {
				return out, fmt.Errorf("a regular expression source must be the only one")
			}
			out.re = m.Regex.Val
			continue
		}
		out.names = append(out.names, m.Name)
		if out.set == nil {
			out.set = map[string]struct{}{}
		}
		out.set[m.Name] = struct{}{}
	}
	return out, nil
}

// match reports whether a measurement is among the sources.
func (s sources) match(meas string) bool {
	if s.re != nil {
		return s.re.MatchString(meas)
	}
	if len(s.names) == 0 {
		return true
	}
	if s.set == nil { // sources built without parseSources
		return slices.Contains(s.names, meas)
	}
	_, ok := s.set[meas]
	return ok
}

// ctxEvery is how many iterations of a per-series or per-measurement loop
// run between checks of the request's context.
const ctxEvery = 1024

// checkCtx returns ctx's error every ctxEvery-th iteration i.

func checkCtx(ctx context.Context, i int) error {
	if i%ctxEvery == 0 {
		return ctx.Err()
	}
	return nil
}

// pushed is the measurement a backend query can filter on: the one name.
func (s sources) pushed() string {
	if s.re == nil && len(s.names) == 1 {
		return s.names[0]
	}
	return ""
}

// seriesKeys reads the keys of the series of the sources that satisfy a
// tag condition. A time range in it is ignored: the tag index has none, so
// the answer holds the series of every time (Grafana adds $timeFilter to
// some SHOW statements; a superset of InfluxDB's answer serves it).
func (e *Executor) seriesKeys(ctx context.Context, db string, src sources, cond influxql.Expr) ([]string, error) {
	db = pick(src.db, db)
	if db == "" {
		return nil, errDBRequired
	}
	w, err := splitWhere(cond, e.cfg.Now())
	if err != nil {
		return nil, err
	}
	q := model.Query{From: math.MinInt64, To: math.MaxInt64, Measurement: src.pushed(), Tags: w.tags}
	keys, err := e.be.SeriesKeys(ctx, db, q, e.cfg.MaxSeries+1)
	if err != nil {
		return nil, backendErr(db, err)
	}
	if len(keys) > e.cfg.MaxSeries {
		return nil, fmt.Errorf("the statement matches more than %d series (the limit of series per statement); narrow it with FROM or WHERE", e.cfg.MaxSeries)
	}
	out := keys[:0:0]
	for i, k := range keys {
		if err := checkCtx(ctx, i); err != nil {
			return nil, err
		}
		if m, err := model.Measurement(k); err == nil && src.match(m) {
			out = append(out, k)
		}
	}
	return out, nil
}

func (e *Executor) showDatabases(ctx context.Context) ([]*Series, error) {
	tables, err := e.be.ListTables(ctx)
	if err != nil {
		return nil, err
	}
	s := &Series{Name: "databases", Columns: []string{"name"}}
	for _, t := range tables {
		s.Values = append(s.Values, []any{t.Name})
	}
	return []*Series{s}, nil
}

func (e *Executor) createDatabase(ctx context.Context, s *influxql.CreateDatabaseStatement) error {
	if s.RetentionPolicyName != "" && s.RetentionPolicyName != "autogen" {
		return fmt.Errorf("retention policy %q is not supported: a tsdb database has one policy, autogen", s.RetentionPolicyName)
	}
	var retention time.Duration
	if s.RetentionPolicyDuration != nil {
		retention = *s.RetentionPolicyDuration
	}
	return e.be.CreateTable(ctx, s.Name, retention)
}

// alterRetentionPolicy changes the retention of a database's one policy,
// autogen: its DURATION is the table's retention (INF: forever). The
// other options (replication, shard duration, default) cannot change.
func (e *Executor) alterRetentionPolicy(ctx context.Context, s *influxql.AlterRetentionPolicyStatement) error {
	if s.Name != "autogen" {
		return fmt.Errorf("retention policy %q is not supported: a tsdb database has one policy, autogen", s.Name)
	}
	if s.Replication != nil || s.ShardGroupDuration != nil {
		return errors.New("ALTER RETENTION POLICY can change only the DURATION of autogen (replication and shard duration are the table's own)")
	}
	if s.Duration == nil {
		return errors.New("ALTER RETENTION POLICY needs a DURATION")
	}
	return e.be.SetRetention(ctx, s.Database, *s.Duration)
}

// showRetentionPolicies answers the one policy of a database, autogen,
// with the table's retention as its duration.
func (e *Executor) showRetentionPolicies(ctx context.Context, db string) ([]*Series, error) {
	if db == "" {
		return nil, errDBRequired
	}
	tables, err := e.be.ListTables(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		if t.Name != db {
			continue
		}
		d := t.Retention.Std()
		return []*Series{{Columns: []string{"name", "duration", "shardGroupDuration", "replicaN", "default"},
			Values: [][]any{{"autogen", formatDuration(d), formatDuration(shardGroupDuration(d)), t.ReplicationFactor, true}}}}, nil
	}
	return nil, &dbNotFound{db: db}
}

// formatDuration writes a duration as InfluxDB does ("0s" is infinite).
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	return d.String()
}

// shardGroupDuration is InfluxDB's default shard group duration of a
// retention (reported for clients that read it; tsdb has no shard groups).
func shardGroupDuration(d time.Duration) time.Duration {
	switch {
	case d == 0 || d >= 180*24*time.Hour:
		return 7 * 24 * time.Hour
	case d >= 2*24*time.Hour:
		return 24 * time.Hour
	}
	return time.Hour
}

func (e *Executor) showMeasurements(ctx context.Context, s *influxql.ShowMeasurementsStatement, db string) ([]*Series, error) {
	if db == "" {
		return nil, errDBRequired
	}
	var src sources
	if s.Source != nil {
		var err error
		if src, err = parseSources(influxql.Sources{s.Source}); err != nil {
			return nil, err
		}
	}
	set := map[string]bool{}
	if s.Condition == nil {
		// The field index lists every measurement without reading series.
		fks, err := e.be.FieldKeys(ctx, db, src.pushed())
		if err != nil {
			return nil, backendErr(db, err)
		}
		for i, fk := range fks {
			if err := checkCtx(ctx, i); err != nil {
				return nil, err
			}
			if src.match(fk.Measurement) {
				set[fk.Measurement] = true
			}
		}
	} else {
		keys, err := e.seriesKeys(ctx, db, src, s.Condition)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			m, _ := model.Measurement(k)
			set[m] = true
		}
	}
	names := page(sortedSet(set), s.Offset, s.Limit)
	if len(names) == 0 {
		return nil, nil
	}
	out := &Series{Name: "measurements", Columns: []string{"name"}}
	for _, n := range names {
		out.Values = append(out.Values, []any{n})
	}
	return []*Series{out}, nil
}

func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// byMeasurement groups the tags of series keys by measurement.
func byMeasurement(keys []string) (map[string][][]model.Tag, []string) {
	m := map[string][][]model.Tag{}
	for _, k := range keys {
		meas, tags, err := model.SplitSeries(k)
		if err != nil {
			continue
		}
		m[meas] = append(m[meas], tags)
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return m, names
}

func (e *Executor) showTagKeys(ctx context.Context, s *influxql.ShowTagKeysStatement, db string) ([]*Series, error) {
	src, err := parseSources(s.Sources)
	if err != nil {
		return nil, err
	}
	keys, err := e.seriesKeys(ctx, db, src, s.Condition)
	if err != nil {
		return nil, err
	}
	m, names := byMeasurement(keys)
	var out []*Series
	for _, meas := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		set := map[string]bool{}
		for _, tags := range m[meas] {
			for _, t := range tags {
				set[t.Key] = true
			}
		}
		tk := page(sortedSet(set), s.Offset, s.Limit)
		if len(tk) == 0 {
			continue
		}
		ser := &Series{Name: meas, Columns: []string{"tagKey"}}
		for _, k := range tk {
			ser.Values = append(ser.Values, []any{k})
		}
		out = append(out, ser)
	}
	return page(out, s.SOffset, s.SLimit), nil
}

// tagKeyFilter compiles SHOW TAG VALUES' WITH KEY clause.
func tagKeyFilter(op influxql.Token, lit influxql.Literal) (func(string) bool, error) {
	switch l := lit.(type) {
	case *influxql.StringLiteral:
		switch op {
		case influxql.EQ:
			return func(k string) bool { return k == l.Val }, nil
		case influxql.NEQ:
			return func(k string) bool { return k != l.Val }, nil
		}
	case *influxql.ListLiteral:
		if op == influxql.IN {
			set := make(map[string]struct{}, len(l.Vals))
			for _, v := range l.Vals {
				set[v] = struct{}{}
			}
			return func(k string) bool { _, ok := set[k]; return ok }, nil
		}
	case *influxql.RegexLiteral:
		switch op {
		case influxql.EQREGEX:
			return l.Val.MatchString, nil
		case influxql.NEQREGEX:
			return func(k string) bool { return !l.Val.MatchString(k) }, nil
		}
	}
	return nil, fmt.Errorf("unsupported WITH KEY clause: %s %s", op, lit)
}

func (e *Executor) showTagValues(ctx context.Context, s *influxql.ShowTagValuesStatement, db string) ([]*Series, error) {
	src, err := parseSources(s.Sources)
	if err != nil {
		return nil, err
	}
	keep, err := tagKeyFilter(s.Op, s.TagKeyExpr)
	if err != nil {
		return nil, err
	}
	keys, err := e.seriesKeys(ctx, db, src, s.Condition)
	if err != nil {
		return nil, err
	}
	m, names := byMeasurement(keys)
	var out []*Series
	for _, meas := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		type kv struct{ k, v string }
		set := map[kv]bool{}
		for _, tags := range m[meas] {
			for _, t := range tags {
				if keep(t.Key) {
					set[kv{t.Key, t.Value}] = true
				}
			}
		}
		pairs := make([]kv, 0, len(set))
		for p := range set {
			pairs = append(pairs, p)
		}
		sort.Slice(pairs, func(i, j int) bool {
			if pairs[i].k != pairs[j].k {
				return pairs[i].k < pairs[j].k
			}
			return pairs[i].v < pairs[j].v
		})
		pairs = page(pairs, s.Offset, s.Limit)
		if len(pairs) == 0 {
			continue
		}
		ser := &Series{Name: meas, Columns: []string{"key", "value"}}
		for _, p := range pairs {
			ser.Values = append(ser.Values, []any{p.k, p.v})
		}
		out = append(out, ser)
	}
	return out, nil
}

// fieldType is InfluxDB's name of a field kind.
func fieldType(k model.Kind) string {
	switch k {
	case model.KindFloat:
		return "float"
	case model.KindInt:
		return "integer"
	case model.KindBool:
		return "boolean"
	case model.KindString:
		return "string"
	}
	return k.String()
}

func (e *Executor) showFieldKeys(ctx context.Context, s *influxql.ShowFieldKeysStatement, db string) ([]*Series, error) {
	src, err := parseSources(s.Sources)
	if err != nil {
		return nil, err
	}
	if db = pick(src.db, db); db == "" {
		return nil, errDBRequired
	}
	fks, err := e.be.FieldKeys(ctx, db, src.pushed())
	if err != nil {
		return nil, backendErr(db, err)
	}
	var out []*Series
	var cur *Series
	var vals [][]any
	flush := func() {
		if cur != nil {
			if cur.Values = page(vals, s.Offset, s.Limit); len(cur.Values) > 0 {
				out = append(out, cur)
			}
		}
	}
	for i, fk := range fks {
		if err := checkCtx(ctx, i); err != nil {
			return nil, err
		}
		if !src.match(fk.Measurement) {
			continue
		}
		if cur == nil || cur.Name != fk.Measurement {
			flush()
			cur, vals = &Series{Name: fk.Measurement, Columns: []string{"fieldKey", "fieldType"}}, nil
		}
		vals = append(vals, []any{fk.Name, fieldType(fk.Kind)})
	}
	flush()
	return out, nil
}

func (e *Executor) showSeries(ctx context.Context, s *influxql.ShowSeriesStatement, db string) ([]*Series, error) {
	src, err := parseSources(s.Sources)
	if err != nil {
		return nil, err
	}
	keys, err := e.seriesKeys(ctx, pick(s.Database, db), src, s.Condition)
	if err != nil {
		return nil, err
	}
	keys = page(keys, s.Offset, s.Limit)
	if len(keys) == 0 {
		return nil, nil
	}
	out := &Series{Columns: []string{"key"}}
	for _, k := range keys {
		out.Values = append(out.Values, []any{k})
	}
	return []*Series{out}, nil
}

// deleteSeries deletes the rows of the sources in w (one Backend.Delete
// per named measurement).
func (e *Executor) deleteSeries(ctx context.Context, db string, src sources, w where) error {
	db = pick(src.db, db)
	if db == "" {
		return errDBRequired
	}
	if src.re != nil {
		return fmt.Errorf("a regular expression as measurement is not supported in DROP SERIES and DELETE")
	}
	meas := src.names
	if len(meas) == 0 {
		meas = []string{""}
	}
	for _, m := range meas {
		if err := ctx.Err(); err != nil {
			return err
		}
		q := model.Query{From: w.from, To: w.to, Measurement: m, Tags: w.tags}
		if err := e.be.Delete(ctx, db, q); err != nil {
			return backendErr(db, err)
		}
	}
	return nil
}

func (e *Executor) dropSeries(ctx context.Context, s *influxql.DropSeriesStatement, db string) error {
	if len(s.Sources) == 0 && s.Condition == nil {
		return fmt.Errorf("DROP SERIES needs FROM or WHERE")
	}
	src, err := parseSources(s.Sources)
	if err != nil {
		return err
	}
	w, err := splitWhere(s.Condition, e.cfg.Now())
	if err != nil {
		return err
	}
	if w.hasFrom || w.hasTo {
		return fmt.Errorf("DROP SERIES doesn't support time in WHERE clause")
	}
	return e.deleteSeries(ctx, db, src, w)
}

// deleteStmt is DELETE [FROM m] [WHERE tags AND time] (the parser's
// DeleteSeriesStatement).
func (e *Executor) deleteStmt(ctx context.Context, s *influxql.DeleteSeriesStatement, db string, now time.Time) error {
	if len(s.Sources) == 0 && s.Condition == nil {
		return fmt.Errorf("DELETE needs FROM or WHERE")
	}
	src, err := parseSources(s.Sources)
	if err != nil {
		return err
	}
	w, err := splitWhere(s.Condition, now)
	if err != nil {
		return err
	}
	if w.from >= w.to {
		return nil
	}
	return e.deleteSeries(ctx, db, src, w)
}

func (e *Executor) dropMeasurement(ctx context.Context, s *influxql.DropMeasurementStatement, db string) error {
	w := where{from: math.MinInt64, to: math.MaxInt64}
	return e.deleteSeries(ctx, db, sources{names: []string{s.Name}}, w)
}
