// Package influx executes InfluxQL (InfluxDB 1.x's query language, parsed
// with github.com/influxdata/influxql, the reference parser) on tsdb's query
// interface, and answers in InfluxDB 1.x's JSON shape. A database is a
// table; the measurement of a series is the part of its key before the
// first unescaped comma, its tags the rest.
//
// The Executor parses a request's statements and runs each on its own: an
// error of one statement is that statement's result ({"statement_id":N,
// "error":"..."}), the others still run, as in InfluxDB. Everything it needs
// from the cluster is behind Backend, an interface declared here (the
// consumer) and implemented by package frontend.
//
// Work is pushed down: the time range, measurement and tag predicate of
// every statement travel in the model.Query, so the replicas filter series
// from their tag index; count, sum, mean, min, max, first, last, spread
// and stddev are answered from the mergeable partial states of
// Backend.Aggregate (the replicas aggregate, the front end merges). median
// and percentile need the values themselves: they read the one field they need with Backend.Query, bounded
// by Config.MaxRawRows, and compute at the front end. fill() and the
// grouping by every tag (GROUP BY *) are done here too.
//
// Unsupported parts of InfluxQL (conditions on fields, regular expressions
// as sources or group keys, subqueries, SELECT INTO, tz(), functions other
// than those listed in docs/influx.md) are refused with an error naming
// them, never silently ignored.
package influx
