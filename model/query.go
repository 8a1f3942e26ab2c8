package model

// Query selects rows of one table, raw or aggregated. It is the one form a
// query takes from the HTTP API down to a partition's scan: http parses
// it, the router splits it into per-partition parts with Clip, each part
// travels to a replica (its JSON form is the query of an internal
// sub-query) and is read there by partition.Replica.Scan (raw) or
// partition.Replica.Aggregate (aggregate). Whether a query is raw or an
// aggregate is the caller's choice of method, not a field: the raw fields
// (Limit, MaxBytes) are ignored by an aggregate and the aggregate fields
// (Step, Origin, GroupAll, MaxBuckets) by a raw scan.
//
// The zero Query selects nothing (From == To); callers set From and To.
type Query struct {
	// From and To bound the time range [From, To) in ns; pass
	// math.MinInt64 and math.MaxInt64 for open ends. To == math.MaxInt64
	// is an open end: it includes a row at time math.MaxInt64.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Series is "" for all series, else an exact series key, or a prefix
	// when Prefix is true.
	Series string `json:"series,omitempty"`
	// Prefix makes Series a prefix.
	Prefix bool `json:"prefix,omitempty"`
	// Measurement, when set, keeps only the series whose measurement (the
	// part of the key before the first comma, unescaped) equals it.
	Measurement string `json:"measurement,omitempty"`
	// Tags, when set, keeps only the series whose tags satisfy it
	// (InfluxQL's WHERE on tags); Query.Matcher compiles both.
	Tags *TagExpr `json:"tags,omitempty"`
	// Fields is the projection; nil or empty means all fields. Rows holding
	// none of the fields are omitted.
	Fields []string `json:"fields,omitempty"`

	// Limit is the most raw rows returned; <= 0 means no limit to a
	// partition's scan. The HTTP API always sets one (its default is
	// 10,000), and the router answers at most Limit rows, truncated when
	// more matched.
	Limit int `json:"limit,omitempty"`
	// MaxBytes, when > 0, bounds the values of the raw rows a partition's
	// scan returns: once their ValueBytes sum is over it, the scan stops
	// and fails with partition.ErrAnswerTooLarge. The sum is a lower bound
	// of the rows' size in any encoding, so only answers certainly over a
	// byte limit are refused. It is set by the replica serving a
	// sub-query (from the sub-query's own byte bound), never sent.
	MaxBytes int `json:"-"`

	// Step is the aggregate bucket width in ns: a value at t goes to the
	// bucket starting at floor(t/Step)*Step (aligned to the epoch, also for
	// negative t; a start below math.MinInt64 is clamped to it). Step 0
	// means one bucket, starting at Origin. A negative Step is an error.
	Step int64 `json:"step,omitempty"`
	// Origin is the start of the single bucket when Step is 0: the whole
	// query's From, which the router sets before clipping the query to
	// each partition (Clip keeps it).
	Origin int64 `json:"origin,omitempty"`
	// Offset shifts the step buckets (InfluxQL's GROUP BY time(step,
	// offset)): with Step > 0 a value at t goes to the bucket starting at
	// floor((t-Offset)/Step)*Step + Offset. 0 is epoch-aligned.
	Offset int64 `json:"offset,omitempty"`
	// GroupBy, for an aggregate, merges the series that have the same
	// values of these tag keys into one result series, named by the
	// canonical key of the measurement and those tags (a tag the series
	// lacks is left out of the name). Empty: one result per series (or
	// one in all with GroupAll). GroupAll and GroupBy are exclusive.
	GroupBy []string `json:"group_by,omitempty"`
	// GroupAll merges all series into one aggregate result with Series "*"
	// (ties of first and last are broken by the real series).
	GroupAll bool `json:"group_all,omitempty"`
	// MaxBuckets, when > 0, bounds an aggregate answer's buckets summed
	// over all its series: each partition's part (the replica stops
	// walking as soon as one more would be made) and the merged answer
	// (partition.ErrTooManyBuckets above it). The HTTP API sets it to the
	// server's --max-query-buckets.
	MaxBuckets int `json:"max_buckets,omitempty"`
	// NoVariance, for an aggregate, says that no answer will be asked for
	// its variance (stddev): a replica may then leave each state's M2 at
	// 0 and skip the second pass over a run of floats that computes it
	// (model.FloatRunNoVariance). Every other member of the states is
	// exact as without it. A replica that does not know it computes M2
	// anyway.
	NoVariance bool `json:"no_variance,omitempty"`
	// SumsOnly, for an aggregate, says that no answer will be asked for
	// but counts, sums and means (count, sum, avg), nor its variance: a
	// replica may then answer states whose Min, Max, First and Last are
	// NaN (unknown) and whose M2 is short, as with NoVariance, and take
	// the sum of a block's rows after a bucket's start from the block's
	// summary less the rows before it, decoding only those
	// (model.SumRun). Count, N, Sum and Mean are exact as without it. A
	// replica that does not know it answers whole states.
	SumsOnly bool `json:"sums_only,omitempty"`
	// NoVersions, for a raw query, says that the answer's field versions
	// will not be read (the HTTP API prints none): a replica may then
	// leave them zero and skip decoding the version columns of its
	// sealed blocks. Values are exact as without it. A replica that does
	// not know it returns the versions anyway. A reader that merges or
	// compares versions (a delete's read) must not set it.
	NoVersions bool `json:"no_versions,omitempty"`
	// Arena, for a raw query, lends the answer's rows and fields their
	// memory (nil: they are allocated). The caller Resets it once it no
	// longer reads the answer. It never leaves the server: a sub-query
	// to another server goes without it.
	Arena *RowArena `json:"-"`

	// Consistency is how the replica read for each partition is brought
	// up to date first: "" or "one" reads one replica as it is; "quorum"
	// or "all" has it catch up from that many of its peers first
	// (DESIGN.md section 5). The HTTP API defaults to "one". A
	// partition's scan ignores it.
	Consistency string `json:"consistency,omitempty"`
}

// Clip returns q narrowed to its part in a partition's range [begin, end):
// From and To intersected with it, every other field as in q (Origin
// included, so step-0 buckets of every part start at the same time). A nil
// begin or end is an open end, as in a partition's METADATA.
func (q Query) Clip(begin, end *int64) Query {
	if begin != nil && *begin > q.From {
		q.From = *begin
	}
	if end != nil && *end < q.To {
		q.To = *end
	}
	return q
}

// InsertOptions are an insert's per-request settings, from the HTTP API
// (its X-TSDB-Consistency and X-TSDB-Smear headers) through the router to
// the replica coordinating a partition's rows. Its JSON form is the options
// of an internal forwarded insert (NoSmear is not sent).
type InsertOptions struct {
	// Consistency is how many replicas must hold the rows before the
	// insert returns: "one", "quorum" ("" means quorum) or "all".
	Consistency string `json:"consistency"`
	// NoSmear is set by the header X-TSDB-Smear: off: the rows are written
	// now even into a narrow partition (DESIGN.md section 7). The router
	// ignores it: it is read by the front end before routing.
	NoSmear bool `json:"-"`
	// Versioned rows carry the versions a front end stamped when it first
	// accepted them (a smeared insert, forwarded later): the coordinating
	// replica keeps them instead of stamping its own (DESIGN.md rule 2).
	Versioned bool `json:"versioned,omitempty"`
}
