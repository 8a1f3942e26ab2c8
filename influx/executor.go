package influx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/influxdata/influxql"

	"github.com/tsdb/tsdb/errcode"
)

// Defaults of Config.
const (
	DefaultMaxRawRows = 1_000_000
	DefaultMaxSeries  = 100_000
	DefaultMaxBuckets = 1_000_000
	// DefaultMaxQueryBytes bounds the text of one request's query.
	DefaultMaxQueryBytes = 1 << 20
	// DefaultMaxQueryDepth bounds the nesting of parentheses in a query.
	DefaultMaxQueryDepth = 100
	// DefaultMaxBoolOps bounds the AND and OR operators of a query.
	// influxql.ConditionExpr is quadratic in them (it reduces the whole
	// subtree at every level of a chain): 1,000 cost about 70 ms, 10,000
	// about 7 s.
	DefaultMaxBoolOps = 1_000
	// DefaultMaxStatements bounds the statements of one request.
	DefaultMaxStatements = 100
)

// Config bounds what one statement may read and answer.
type Config struct {
	// MaxRawRows bounds the rows one statement reads with Backend.Query (a
	// raw SELECT, median, percentile, stddev); a statement matching more
	// fails naming the limit. 0: DefaultMaxRawRows.
	MaxRawRows int
	// MaxSeries bounds the series keys a SHOW statement reads. 0:
	// DefaultMaxSeries.
	MaxSeries int
	// MaxBuckets bounds an aggregate answer's buckets summed over its
	// series, filled ones included (Query.MaxBuckets of the pushed-down
	// part). 0: DefaultMaxBuckets.
	MaxBuckets int
	// MaxQueryBytes bounds the length of a request's query text, checked
	// before parsing. 0: DefaultMaxQueryBytes.
	MaxQueryBytes int
	// MaxQueryDepth bounds the nesting of parentheses in a query, and
	// MaxBoolOps its AND and OR operators (the influxql parser and
	// influxql.ConditionExpr recurse on both and would overflow the stack
	// on a deep enough query). Both are checked before parsing. 0:
	// DefaultMaxQueryDepth, DefaultMaxBoolOps.
	MaxQueryDepth int
	MaxBoolOps    int
	// MaxRequestRows bounds one request's answer: the rows (values of
	// raw series, buckets of aggregates, lines of SHOW answers) summed over
	// its statements. The statement that passes it, and every later one,
	// answers an error instead of series. 0: 2 × MaxRawRows.
	MaxRequestRows int
	// MaxStatements bounds the statements of one request; a query with
	// more fails as a whole. 0: DefaultMaxStatements.
	MaxStatements int
	// Now returns the current time (now() of InfluxQL); nil: time.Now.
	Now func() time.Time
}

// Options are one request's settings.
type Options struct {
	// DB is the default database (/query's db parameter).
	DB string
	// Epoch is the unit of the time column: ns, u, µ, ms, s, m or h (any
	// other value is ns, as in InfluxDB); "" answers RFC 3339 strings.
	Epoch string
	// Params are bound parameters ($name in the query), as decoded from
	// /query's params JSON object.
	Params map[string]any
}

// Executor runs InfluxQL statements on a Backend. It is safe for
// concurrent use.
type Executor struct {
	be  Backend
	cfg Config
}

// NewExecutor returns an executor over be.
func NewExecutor(be Backend, cfg Config) *Executor {
	if cfg.MaxRawRows <= 0 {
		cfg.MaxRawRows = DefaultMaxRawRows
	}
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = DefaultMaxSeries
	}
	if cfg.MaxBuckets <= 0 {
		cfg.MaxBuckets = DefaultMaxBuckets
	}
	if cfg.MaxQueryBytes <= 0 {
		cfg.MaxQueryBytes = DefaultMaxQueryBytes
	}
	if cfg.MaxQueryDepth <= 0 {
		cfg.MaxQueryDepth = DefaultMaxQueryDepth
	}
	if cfg.MaxBoolOps <= 0 {
		cfg.MaxBoolOps = DefaultMaxBoolOps
	}
	if cfg.MaxRequestRows <= 0 {
		cfg.MaxRequestRows = 2 * cfg.MaxRawRows
	}
	if cfg.MaxStatements <= 0 {
		cfg.MaxStatements = DefaultMaxStatements
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Executor{be: be, cfg: cfg}
}

// requestError fails a whole request ({"error":"..."}, 400 on /query): a
// query that does not parse or an invalid option. It is a member of
// errcode.ErrInvalidQuery; its text is InfluxDB's.
func requestError(format string, args ...any) error {
	return errcode.Mark(fmt.Errorf(format, args...), errcode.ErrInvalidQuery)
}

// errDBRequired is InfluxDB's answer to a statement that needs a database
// when none is given.
var errDBRequired = errors.New("database name required")

// Execute parses query and runs its statements in order. A parse error or
// an invalid option fails the whole request (an error matching
// errcode.ErrInvalidQuery);
// otherwise every statement has its Result, failed statements included.
func (e *Executor) Execute(ctx context.Context, query string, opts Options) (*Response, error) {
	div := epochDivisor(opts.Epoch)
	if err := e.checkQueryShape(query); err != nil {
		return nil, err
	}
	p := influxql.NewParser(strings.NewReader(query))
	if opts.Params != nil {
		p.SetParams(opts.Params)
	}
	q, err := p.ParseQuery()
	if err != nil {
		return nil, requestError("error parsing query: %v", err)
	}
	if n := len(q.Statements); n > e.cfg.MaxStatements {
		return nil, requestError("too many statements: %d (the limit is %d per request)", n, e.cfg.MaxStatements)
	}
	resp := &Response{Results: make([]Result, 0, len(q.Statements))}
	now := e.cfg.Now()
	total := 0 // rows answered so far
	for i, stmt := range q.Statements {
		if total > e.cfg.MaxRequestRows {
			resp.Results = append(resp.Results, Result{StatementID: i, Err: e.tooLarge()})
			continue
		}
		series, err := e.statement(ctx, stmt, opts.DB, now, div)
		r := Result{StatementID: i, Series: series}
		if err != nil {
			r = Result{StatementID: i, Err: errorText(err)}
		}
		for _, s := range series {
			total += len(s.Values)
		}
		if total > e.cfg.MaxRequestRows {
			r = Result{StatementID: i, Err: e.tooLarge()}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

// tooLarge is the error of the statements of a request past
// MaxRequestRows.
func (e *Executor) tooLarge() string {
	return fmt.Sprintf("request answer too large: the statements of the request answer more than %d rows (the limit per request); split the request", e.cfg.MaxRequestRows)
}

// checkQueryShape refuses, before parsing, a query longer than
// MaxQueryBytes, nesting parentheses deeper than MaxQueryDepth or joining
// more than MaxBoolOps conditions with AND or OR: the influxql parser and
// influxql.ConditionExpr recurse on each, and a deep enough query would
// overflow the goroutine's stack, which kills the process. Parentheses and
// words in quoted strings and identifiers are skipped; those in regular
// expressions are counted (a conservative count: telling a regex from a
// division needs the parser).
func (e *Executor) checkQueryShape(query string) error {
	if len(query) > e.cfg.MaxQueryBytes {
		return requestError("query too long: %d bytes (the limit is %d bytes)", len(query), e.cfg.MaxQueryBytes)
	}
	depth, ops := 0, 0
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			// A quoted string or identifier; a backslash escapes.
			i++
			for i < len(query) && query[i] != c {
				if query[i] == '\\' {
					i++
				}
				i++
			}
			i++
			continue
		case c == '(':
			if depth++; depth > e.cfg.MaxQueryDepth {
				return requestError("query nests parentheses deeper than %d (the limit of nesting per query)", e.cfg.MaxQueryDepth)
			}
		case c == ')':
			if depth > 0 {
				depth--
			}
		case isWordByte(c):
			j := i
			for j < len(query) && isWordByte(query[j]) {
				j++
			}
			if w := query[i:j]; strings.EqualFold(w, "and") || strings.EqualFold(w, "or") {
				if ops++; ops > e.cfg.MaxBoolOps {
					return requestError("query has more than %d AND/OR operators (the limit per query)", e.cfg.MaxBoolOps)
				}
			}
			i = j
			continue
		}
		i++
	}
	return nil
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// errorText is a statement's error as InfluxDB words the common ones.
func errorText(err error) string {
	var nf *dbNotFound
	if errors.As(err, &nf) {
		return "database not found: " + nf.db
	}
	return err.Error()
}

// dbNotFound marks a backend's table-not-found for a database.
type dbNotFound struct {
	db  string
	err error
}

func (e *dbNotFound) Error() string { return "database not found: " + e.db }
func (e *dbNotFound) Unwrap() error { return e.err }

// backendErr names a missing table as InfluxDB names a missing database.
func backendErr(db string, err error) error {
	if err != nil && errors.Is(err, errcode.ErrTableNotFound) {
		return &dbNotFound{db: db, err: err}
	}
	return err
}

// statement runs one statement.
func (e *Executor) statement(ctx context.Context, stmt influxql.Statement, db string, now time.Time, div int64) ([]*Series, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch s := stmt.(type) {
	case *influxql.SelectStatement:
		return e.selectStmt(ctx, s, db, now, div)
	case *influxql.ShowDatabasesStatement:
		return e.showDatabases(ctx)
	case *influxql.CreateDatabaseStatement:
		return nil, e.createDatabase(ctx, s)
	case *influxql.DropDatabaseStatement:
		err := e.be.DropTable(ctx, s.Name)
		if errors.Is(err, errcode.ErrTableNotFound) {
			err = nil // InfluxDB: dropping a missing database is no error
		}
		return nil, err
	case *influxql.AlterRetentionPolicyStatement:
		return nil, e.alterRetentionPolicy(ctx, s)
	case *influxql.ShowRetentionPoliciesStatement:
		return e.showRetentionPolicies(ctx, pick(s.Database, db))
	case *influxql.ShowMeasurementsStatement:
		return e.showMeasurements(ctx, s, pick(s.Database, db))
	case *influxql.ShowTagKeysStatement:
		return e.showTagKeys(ctx, s, pick(s.Database, db))
	case *influxql.ShowTagValuesStatement:
		return e.showTagValues(ctx, s, pick(s.Database, db))
	case *influxql.ShowFieldKeysStatement:
		return e.showFieldKeys(ctx, s, pick(s.Database, db))
	case *influxql.ShowSeriesStatement:
		return e.showSeries(ctx, s, pick(s.Database, db))
	case *influxql.DropSeriesStatement:
		return nil, e.dropSeries(ctx, s, db)
	case *influxql.DeleteSeriesStatement:
		return nil, e.deleteStmt(ctx, s, db, now)
	case *influxql.DropMeasurementStatement:
		return nil, e.dropMeasurement(ctx, s, db)
	}
	return nil, fmt.Errorf("statement not supported: %s", stmtKind(stmt))
}

// stmtKind names a statement by its first words (its String without
// arguments could be long).
func stmtKind(stmt influxql.Statement) string {
	t := fmt.Sprintf("%T", stmt)
	t = strings.TrimPrefix(t, "*influxql.")
	return strings.TrimSuffix(t, "Statement")
}

func pick(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
