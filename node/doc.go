// Package node assembles one tsdb server from its parts (DESIGN.md section
// 11): the partition store (one pebble DB), the metadata file store, the etcd
// coordination store, the router and the public HTTP API. `tsdb server`,
// `tsdb dev` and the integration tests all start servers through Start, so
// tests run the same wiring as production.
//
// The local replicas' machinery is package replica: Start builds its
// replica.Server (which builds the router) once the server is registered,
// and runs its loops (reconciliation, replica lifecycle, split checks,
// resyncs, session re-confirmation, the table watch's events); the
// replica.Server's own goroutines (one pusher per local replica) stop in
// its Close, which Stop calls after those loops have returned.
//
// Every background goroutine is started by the node, stops when Stop cancels
// its context, and is waited for before Stop returns.
package node
