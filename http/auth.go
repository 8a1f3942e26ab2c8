package http

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/http/api"
)

// Authentication of the public API. With Config.AuthToken set, a request
// must present that token in one of the ways InfluxDB's clients send
// credentials:
//
//   - "Authorization: Bearer T" (tsdb's own clients, Grafana's token auth);
//   - "Authorization: Token T" (InfluxDB 2 clients and Telegraf's
//     outputs.influxdb_v2), also "Token user:T" (InfluxDB 1.8's form of
//     it, which 2.x clients send to a 1.8 server);
//   - "Authorization: Basic" with any user name and T as the password
//     (InfluxDB 1.x clients, the influx CLI, Grafana's basic auth);
//   - on the InfluxDB 1.x routes (/write, /query) only, the query
//     parameters u (any) and p = T, when no Authorization header is sent.
//     Not elsewhere: a token in a URL ends up in access logs, and only
//     1.x clients need it.
//
// The Authorization header, when present, is the only credential looked
// at. Every comparison is of SHA-256 digests in constant time (the
// length of the token does not leak either). The internal API (/internal/)
// takes none of these: the cluster secret is its only credential.

// authResult is the outcome of checking a request's credentials.
type authResult int

const (
	authOK      authResult = iota
	authMissing            // no credential presented
	authInvalid            // a credential that is not the token
)

// tokenSum is the digest tokens are compared by.
func tokenSum(tok []byte) [sha256.Size]byte { return sha256.Sum256(tok) }

// checkAuth checks the credentials of a public request to path.
func (s *Server) checkAuth(ctx *fasthttp.RequestCtx, path string) authResult {
	if s.cfg.AuthToken == "" {
		return authOK
	}
	if h := ctx.Request.Header.Peek("Authorization"); len(h) > 0 {
		if s.headerAuthorized(h) {
			return authOK
		}
		return authInvalid
	}
	if errorShape(path) == shapeInfluxV1 && path != "/ping" {
		args := ctx.QueryArgs()
		if args.Has("p") {
			if s.tokenIs(args.Peek("p")) {
				return authOK
			}
			return authInvalid
		}
	}
	return authMissing
}

// headerAuthorized reports whether an Authorization header carries the
// token in one of the accepted schemes.
func (s *Server) headerAuthorized(h []byte) bool {
	h = bytes.TrimSpace(h)
	scheme, cred, _ := bytes.Cut(h, []byte(" "))
	cred = bytes.TrimSpace(cred)
	switch {
	case bytes.EqualFold(scheme, []byte("Bearer")):
		return s.tokenIs(cred)
	case bytes.EqualFold(scheme, []byte("Token")):
		whole := s.tokenIs(cred)
		afterUser := false
		if _, pass, ok := bytes.Cut(cred, []byte(":")); ok {
			afterUser = s.tokenIs(pass)
		}
		return whole || afterUser
	case bytes.EqualFold(scheme, []byte("Basic")):
		dec := make([]byte, base64.StdEncoding.DecodedLen(len(cred)))
		n, err := base64.StdEncoding.Decode(dec, cred)
		if err != nil {
			return false
		}
		_, pass, ok := bytes.Cut(dec[:n], []byte(":"))
		return ok && s.tokenIs(pass)
	}
	return false
}

// tokenIs reports whether cred is the token, in constant time.
func (s *Server) tokenIs(cred []byte) bool {
	if len(cred) == 0 {
		return false
	}
	sum := tokenSum(cred)
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

// writeUnauthorized answers 401 in the route's shape (writeAPIError),
// with the challenges of the schemes a client may answer.
func (s *Server) writeUnauthorized(ctx *fasthttp.RequestCtx, res authResult) {
	ctx.Response.Header.Add("WWW-Authenticate", `Bearer realm="tsdb"`)
	ctx.Response.Header.Add("WWW-Authenticate", `Basic realm="tsdb"`)
	msg := "missing credentials: send the token as \"Authorization: Token T\" or \"Bearer T\", " +
		"as the password of HTTP basic authentication, or, on /write and /query, as ?p=T"
	if res == authInvalid {
		msg = "authorization failed: the credentials are not the server's token"
	}
	s.writeAPIError(ctx, 401, api.CodeUnauthorized, msg)
}
