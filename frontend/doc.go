// Package frontend is the public API's backend on one server: what the HTTP
// server (package http) calls for every public request. It implements that
// server's Backend interface structurally, without importing it, and
// reaches the cluster through the router and the small interfaces declared
// in frontend.go, which package node fills with the concrete values.
//
// An insert goes http → frontend → router → replica: the front end splits
// the rows a table's smear settings call narrow into this server's smear
// queue, stamped with their versions here (DESIGN.md section 7), and hands
// the others to the router, which routes them to the partitions' replicas.
// The smear forwarder (owned by node) sends the queued rows when due
// through SmearSender, routed by the METADATA current then (it routes a
// pass's rows once through SmearSender.Route and sends each partition's
// rows as their own calls). Queries and
// aggregates go to the router, their range clipped to the table's
// retention (clipRetention: rows older than now - retention, or than the
// METADATA's retention horizon, are never answered, even while still on
// disk); its routing failures become the public API's 503 (publicError).
//
// InfluxBackend (influx.go, from Frontend.Influx) is the front end as the
// InfluxQL executor's backend (influx.Backend, declared in package
// influx): a database is a table; CreateTable is idempotent with the
// public API's defaults; SeriesKeys and FieldKeys are the router's
// fan-outs to every partition; DropTable and Delete call the drop of a
// table and the deletion of rows.
//
// A delete (DeleteRows; InfluxQL's DELETE and DROP SERIES) reads the rows
// it selects page by page at quorum and writes a tombstone for each of
// their fields, stamped here past every version read, at quorum and never
// smeared (delete.go; docs/influx.md, "Deletes").
//
// The table and operator calls: CreateTable picks the first partition's
// servers (least loaded live servers) and metadata servers and installs
// the created METADATA; Metadata reads a named transaction from this server
// or another metadata server; SetOffline, JoinServer, RemoveServer and
// SplitPartition commit METADATA changes; PatchTable changes a table's
// retention (a compare-and-swap of its TableConfig); DropTable (dropTable)
// deletes a table's TableConfig, after which every server drops its
// replicas (droptable.go gives the crash-safe order); Drain and Rebalance record an
// operator's marks in etcd for the master; Health and Cluster report the
// cluster.
//
// # Invariants
//
//   - A smeared insert is written to the queue before anything else of it,
//     so a full queue, or one whose forwarder is behind (smear admission
//     control: ErrBehind, or ErrDueFull after four draws of the due
//     time), refuses the whole insert (503 queue_full with Retry-After)
//     with nothing written; the smeared rows are stamped only when this
//     server's clock passes its check (rule 2).
//   - No table is created while fewer than MinServers servers are live or
//     while this server's own registration is not live.
//   - Errors keep their sentinels (errors.go: cluster/wire's and http/api's
//     members of errcode's kinds, with the texts answers carry): the HTTP
//     server maps them to statuses. The package does not import the HTTP
//     server.
//
// # Goroutines
//
// None: every method runs on its caller's goroutine (an HTTP request's, or
// the smear forwarder's for SmearSender).
package frontend
