// Package operator stores an operator's standing requests to the master in
// etcd (DESIGN.md section 9): the servers being drained, under
// <prefix>drain/<server_id> (JSON {"since": time}), and the last rebalance
// request, at <prefix>rebalance (JSON {"requested_at": time}). They are
// plain JSON so that `etcdctl get --prefix /tsdb/drain/` shows them, and
// they stay until undone: a drain mark outlives the master that acted on
// it and the server it names. A server's own request is stored the same
// way: a placement whose data it lost (a wiped disk, DESIGN.md section 5),
// under <prefix>lost/<placement_id> (JSON LostMark), which the master
// answers by removing and re-joining the server.
//
// The functions take the etcd client and prefix; Marks bundles them (and
// the elected leader's id, from cluster/election) as the one value that
// satisfies the master's and the front end's Marks interfaces.
package operator
