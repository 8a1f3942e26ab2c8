// Package node assembles one tsdb server from its parts (DESIGN.md section
// 11): the partition store (one pebble DB), the metadata file store, the etcd
// coordination store, the router and the public HTTP API. `tsdb server`,
// `tsdb dev` and the integration tests all start servers through Start, so
// tests run the same wiring as production.
//
// Every background goroutine is started by the node, stops when Stop cancels
// its context, and is waited for before Stop returns.
package node
