// Package router is the routing half of a tsdb server's front end
// (DESIGN.md sections 5, 6 and 11): it keeps a cache of each table's
// METADATA, sends every row of an insert to the partition whose [begin,
// end) covers its time, and fans a query (model.Query, raw or aggregate)
// out to every partition it overlaps, clipped to the partition's range
// (Query.Clip), merging the partial answers.
//
// # Responsibility
//
// The router decides where a request goes; it does not write or read a
// replica itself. Each partition's replicas are reached through the
// Replicas interface, which package replica implements for local and
// remote replicas alike (Config.Replicas; without one, the router writes
// to and reads from the local partition store only, which is how its own
// tests run). Versions are stamped by the replica that coordinates an
// insert, once (DESIGN.md rule 2); rows forwarded from the smear queue
// carry theirs (InsertOptions.Versioned).
//
// # Invariants
//
//   - A row is sent to exactly one partition of the METADATA the router
//     holds: the one covering its time (a valid file tiles the axis).
//   - An answer matching ErrMoved (a replica no longer serves the partition
//     under the sender's METADATA: split, moved, unloading) makes the router
//     reload the table's METADATA and route again only what was not yet
//     written or answered, so a split never duplicates or hides a row;
//     ErrUnavailable makes it try the partition's next replica; any other
//     error is the answer.
//   - A partition taken offline (SET_OFFLINE) is neither written nor read
//     (ErrOffline).
//   - A local replica is created only when the current METADATA lists this
//     server's placement for the partition (EnsureLocalReplicas, DESIGN.md
//     rule 4); the partition store refuses to re-create a dropped or lost
//     placement.
//   - An aggregate answer holds at most Query.MaxBuckets buckets summed
//     over its series, per partition and merged (partition.ErrTooManyBuckets).
//   - The metadata queries (meta.go: SeriesKeys, FieldKeys) ask one replica
//     of every partition of the table, whatever the query's time range,
//     chosen, failed over and re-routed after "moved" as for a query; the
//     answers are merged sorted without duplicates (series keys cut at the
//     limit after each merge). With Query.GroupBy, each partition answers a
//     group under its group key, so MergeSeriesAggs merges the partitions'
//     states of one group like those of one series.
package router
