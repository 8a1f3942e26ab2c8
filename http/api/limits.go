package api

// DefaultMaxBodyBytes is the default limit of a request body, both as sent
// and after decompression.
const DefaultMaxBodyBytes = 32 << 20

// DefaultMaxConcurrentRequests is the default bound of the public requests
// a server serves at once (the HTTP server's MaxConcurrentRequests).
// Requests mostly wait (on replicas, fsyncs, catch-ups) rather than
// compute, so the bound is well above the core count; it is there to cap
// the memory that bodies and answers in flight hold.
const DefaultMaxConcurrentRequests = 256

// DefaultMaxQueryBuckets is the default bound of an aggregate answer's
// buckets summed over all its series (the HTTP server's MaxQueryBuckets):
// about 100-200 MB of partial states and JSON at one field.
const DefaultMaxQueryBuckets = 1_000_000
