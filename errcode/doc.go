// Package errcode is the cluster's error vocabulary: the sentinels of the
// errors that cross package and process boundaries (a partition moved, a
// placement is stale, a replica is unavailable, an insert's outcome is
// unknown, a table is not found, a metadata commit conflicted, …), the wire
// codes of the JSON error body {"error": {"code", "message"}}, and the one
// table that maps each sentinel to the HTTP status and code it is answered
// with (Classify) and each code a peer answers back to its sentinel
// (FromCode).
//
// It is a leaf: it imports the standard library only, so that partition,
// metadata, replication, router, smear, cluster/rpc, http/api and http can
// all use it.
//
// # Kinds and members
//
// The sentinels declared here are kinds. A package keeps its own sentinels,
// with their own text (which reaches HTTP answers and logs, so it must not
// change), and declares them members of a kind with New:
//
//	ErrUnloading = errcode.New(errcode.ErrMoved, "partition: replica is unloading")
//
// errors.Is(err, partition.ErrUnloading) still matches that error only, while
// errors.Is(err, errcode.ErrMoved) matches it and every other member of
// "moved" (http's, router's, a peer's 409 "moved" answer). Code that needs
// to tell a member apart tests the member; code that needs the meaning tests
// the kind.
//
// # Invariants
//
//   - The code strings never change: they are the public API's (package
//     http/api re-exports them) and the internal API's.
//   - Classify walks its table in order and answers the first kind the error
//     matches; the order is the precedence of the public answer (an answer
//     over a limit before "moved", "moved" before anything that revealed it,
//     the metadata commit errors before "unavailable", no quorum before a
//     missing file). TestTable pins every row.
//   - Classify answers what this server knows: it does not look through a
//     peer's answer (an error with a RemoteAnswer method, such as
//     *rpc.StatusError) that no layer here translated. A peer's 401 means
//     this server's cluster secret is wrong, a peer's 400 that this server
//     sent a bad request: both are this server's internal error, not the
//     client's. A layer that means to pass a peer's refusal on wraps it in
//     a kind or a member (Translate does it for a list of members, as
//     metadata.FromPeer does for the metadata errors), or rebuilds it with
//     FromCode.
//   - FromCode(status, code, msg) returns an error whose text is msg and
//     that matches the code's kind; an unknown code gives an error that
//     matches no kind.
package errcode
