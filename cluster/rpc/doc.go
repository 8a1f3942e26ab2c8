// Package rpc is the transport of tsdb's internal API: the /internal/...
// endpoints servers call on each other (replication pushes, metadata
// store/fetch/change, discovery, sub-queries, statistics; DESIGN.md section
// 10). They are served by the same fasthttp server as the public API and
// guarded by a cluster secret.
//
// # Model
//
// A call is one POST of a JSON request to http://addr/path, answered with a
// JSON body. Bodies are compressed with zstd both ways: the request always
// (Content-Encoding: zstd), the answer when the request says Accept-Encoding:
// zstd, which the Client always does. Errors use the public API's shape,
// {"error": {"code": "...", "message": "..."}}, with a 4xx/5xx status, and
// reach the caller as a *StatusError, which matches (errors.Is) the kind of
// package errcode its code maps to (errcode.ErrMoved for "moved", ...);
// the codes are errcode's, the one vocabulary of the cluster. The secret travels in SecretHeader and
// is checked in constant time by Authorized. A peer serving TLS is called
// at https://host:port (the address its membership entry marks as TLS),
// its certificate verified against Config.TLS. With Config.Clock set,
// requests carry the caller's wall clock in ClockHeader and the answers'
// stamps are handed back to it (the server side stamps answers the same
// way), so both ends of every call sample each other's clock offset. Both
// directions have a size limit that holds after decompression
// (Config.MaxResponseBytes, the maxBytes of DecodeRequest), so a small
// compressed body cannot inflate into an out-of-memory.
//
// A request that implements PayloadRequest (a push, a forwarded insert:
// package wire) is sent as its JSON without its bulk bytes, then those
// bytes raw (Content-Type application/x-tsdb-json-payload, payload.go):
// base64 inside JSON cost more to encode and decode than the rest of a
// push. DecodeRequest gives the bytes back to a PayloadReceiver.
//
// Handlers use the server helpers: Authorized, then DecodeRequest (which
// answers 400/413/415 itself on failure), then WriteResponse or WriteError.
// The zstd encoder and decoders are shared by the whole process.
//
// # Retry policy
//
// Every call has a timeout and a retry policy with backoff. Each attempt is
// bounded by Config.Timeout and by the context's deadline, whichever comes
// first; fasthttp takes no context, so an attempt also returns as soon as the
// context is cancelled. After a retryable failure the client waits
//
//	rand[0,1) * min(MaxBackoff, BaseBackoff * 2^(n-1))   (n = failed attempts so far)
//
// ("full jitter", drawn by internal/backoff, the module's one retry-delay
// policy: clients that failed together spread out instead of retrying in
// lockstep). A Retry-After on a 429 or 503 answer raises that
// wait to what the server asked, but never beyond MaxBackoff. After
// MaxAttempts attempts the call fails with ErrUnavailable, which wraps the
// last error and says how many attempts were made. Once the context is done
// no further attempt starts and the call returns the context's error at once.
//
// Retried, because the request most likely did not run or the condition is
// transient: connection errors (refused, reset, closed before an answer),
// an attempt that timed out, 502 and 504 (a proxy or peer in between
// failed), 503 (the server is starting, draining or lacks the data for now)
// and 429 (the server sheds load).
//
// Not retried, because the same request would fail the same way: any other
// 4xx (a bad request, 401 wrong secret, 404, 409 conflict, 413), 500 (a bug
// or a failure the server already reported; repeating it only multiplies the
// load), an oversized or undecodable answer, a refused TLS handshake
// (ErrTLS: an untrusted certificate or a peer not speaking TLS), and a
// cancelled or expired context.
//
// # Idempotency is the caller's job
//
// A timeout or a dropped connection does not say whether the server ran the
// request: it may have applied it and lost only the answer. The client
// retries such failures anyway, so every internal endpoint must be safe to
// receive twice. A call that is not naturally idempotent must be made
// idempotent by its caller, by carrying what makes a repeat harmless: a
// replication push names its log cursor, a metadata store is keyed by txnid
// and accepted again only with the same bytes, a change carries
// base_txnid/new_txnid (DESIGN.md sections 4 and 12). Set MaxAttempts to 1
// for a call that cannot be made idempotent.
//
// # Compatibility
//
// DecodeRequest rejects unknown fields, while the client ignores unknown
// fields of an answer. A new request field must therefore be sent only to
// servers known to understand it (for example behind a cluster version
// gate), whereas answers can grow fields freely.
package rpc
