// Package master is the master's term and its decisions (DESIGN.md section
// 9): one server at a time holds the term (cluster/election), and while it
// does, every Tick it reads the cluster (membership, drain and lost marks,
// every table's METADATA) and makes at most one change per partition:
//
//   - failure handling and drains (master.go): a placement lost with a
//     wiped disk is removed as dead (lost.go); a replacement joins for a
//     dead or draining server, which is removed once the partition is back
//     at its replication factor (join new, then remove old); a partition
//     below its factor gets a server;
//   - a table's metadata servers kept at N live and eligible, and
//     SPLIT_ABORT of a split whose child has had no live majority for
//     DeadAfter (meta.go);
//   - rebalancing at the term's start, when a server joins and on an
//     operator's request (balance.go);
//   - pre-split of every table's open tail (presplit.go);
//   - retention: DROP_PARTITIONS of the partitions that end before now -
//     retention, planned by metadata.PlanRetention (retention.go).
//
// Master.Health reports the servers and the problems of the cluster (tsdb
// admin stale) from the same view of the cluster (view.go, health.go).
//
// # Invariants
//
//   - The master acts only under the term's context, which ends as soon as
//     the lease may have lapsed, and checks the lease before each table.
//   - Every change is planned against the METADATA current when it is sent
//     (a planner that finds the partition changed returns errRepairSettled
//     and the change is dropped until the next tick), so a master acting on
//     a stale read changes nothing.
//   - A partition never drops below its replication factor by the master's
//     hand: a live server is removed only once its replacement finalized
//     its join; only a dead or lost server's removal may go below it.
//   - Nothing is assigned while fewer than MinServers are live.
//   - The deciders are pure (no I/O; the time and the randomness are
//     inputs): planMoves, placementCounts, balance, the health report's
//     problem listing (clusterView.health), recentPlacements, and
//     presplit.PlanTable. Their tests build a clusterView by hand.
//   - A new master keeps no state of the previous one: the state of a move
//     or a replacement is the METADATA itself, and every absent server gets
//     the full DeadAfter again.
//
// # Dependencies
//
// The master reaches the rest of the server through small interfaces
// declared here (config.go): Changes (the replica code's RequestChange),
// Replicas (replica sizes for pre-split), Servers (the live-server
// directory), Marks (etcd: the election's leader, drain and lost marks,
// rebalance requests), Tables, Cache (the router's METADATA), Committer
// (metadata-server join and removal), RPC and Lease. Package node wires the
// concrete values in. The master's counters (Metrics) are built by
// NewMetrics and registered by their Register (metrics.go).
//
// # Goroutines
//
// The package starts none. Lead runs on the goroutine of election.Run
// (started and stopped by node) for the length of one term and returns when
// the term's context ends; Health runs on its caller's.
package master
