package main

import (
	"fmt"

	"github.com/spf13/pflag"

	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/internal/bytesize"
	"github.com/tsdb/tsdb/replica"
)

// limitFlags are tsdb server's memory bounds under load (issue 14 item 7).
type limitFlags struct {
	concurrent, buckets, subQueryBytes int
}

func (f *limitFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.concurrent, "max-concurrent-requests", tsdbhttp.DefaultMaxConcurrentRequests,
		"public requests served at once; one more is answered 503 overloaded with Retry-After (not /healthz, /metrics or the internal API)")
	fs.IntVar(&f.buckets, "max-query-buckets", tsdbhttp.DefaultMaxQueryBuckets,
		"most buckets an aggregate answer may hold, summed over all its series (422 too_many_buckets above)")
	f.subQueryBytes = replica.DefaultMaxSubQueryBytes
	fs.Var(bytesize.Var(&f.subQueryBytes), "max-subquery-bytes",
		"most bytes of one partition's answer read from another server; a replica refuses to send more (422 answer_too_large above)")
}

// validate refuses bounds that would refuse everything. None may be 0 for
// "unlimited": unbounded is what these flags exist to prevent.
func (f *limitFlags) validate() error {
	if f.concurrent < 1 || f.buckets < 1 {
		return fmt.Errorf("--max-concurrent-requests %d, --max-query-buckets %d: want at least 1", f.concurrent, f.buckets)
	}
	if f.subQueryBytes < 64<<10 {
		return fmt.Errorf("--max-subquery-bytes %d: want at least 65536", f.subQueryBytes)
	}
	return nil
}
