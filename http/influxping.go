package http

import (
	"encoding/json"

	"github.com/valyala/fasthttp"
)

// InfluxCompatVersion is the InfluxDB version tsdb answers as, in
// X-Influxdb-Version and the version of /ping?verbose=true and /health:
// InfluxDB 1.8.10, the last 1.x release, whose API tsdb serves (/write,
// /query, /api/v2/write, the Token scheme, /health). A 1.x version tells
// clients that probe it (the influx CLI, Grafana, the client libraries)
// to speak InfluxQL and the 1.x endpoints, not the 2.x API (orgs,
// buckets, Flux) that tsdb does not serve. The version string is
// "1.8.10-tsdb-<tsdb version>": still a semantic version ordered with
// 1.8.x for clients that compare it, and tsdb's own version is visible.
const InfluxCompatVersion = "1.8.10"

// influxVersion is the X-Influxdb-Version answered.
func (s *Server) influxVersion() string {
	return InfluxCompatVersion + "-tsdb-" + s.cfg.Version
}

// setInfluxHeaders sets the headers InfluxDB puts on every answer of its
// API: its version and build ("OSS"), and tsdb's own version.
func (s *Server) setInfluxHeaders(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	h.Set("X-Influxdb-Version", s.influxVersion())
	h.Set("X-Influxdb-Build", "OSS")
	h.Set("X-Tsdb-Version", s.cfg.Version)
}

// handlePing serves GET|HEAD /ping as InfluxDB 1.8 does: 204, or with
// ?verbose= set to anything but "", "0" or "false", 200 and
// {"version":"..."}. It needs no credentials (InfluxDB's ping is open) and
// answers whether or not the cluster can serve: it says the process is up.
func (s *Server) handlePing(ctx *fasthttp.RequestCtx) {
	switch string(ctx.QueryArgs().Peek("verbose")) {
	case "", "0", "false":
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return
	}
	body, _ := json.Marshal(struct {
		Version string `json:"version"`
	}{s.influxVersion()})
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// influxHealth is the body of /health, InfluxDB 2's (and 1.8's) shape.
type influxHealth struct {
	Name    string   `json:"name"`
	Message string   `json:"message"`
	Status  string   `json:"status"`
	Checks  []string `json:"checks"`
	Version string   `json:"version"`
	Commit  string   `json:"commit"`
}

// handleInfluxHealth serves GET|HEAD /health in InfluxDB 2's shape: 200
// "pass" while the server serves, 503 "fail" once it is shutting down.
// Open like InfluxDB's /health (and tsdb's /healthz): load balancers and
// client libraries call it without credentials, and it tells nothing but
// the version, which /ping tells anyone too.
func (s *Server) handleInfluxHealth(ctx *fasthttp.RequestCtx) {
	h := influxHealth{Name: "tsdb", Message: "ready for queries and writes", Status: "pass",
		Checks: []string{}, Version: s.influxVersion(), Commit: s.cfg.Commit}
	status := fasthttp.StatusOK
	if s.stopping.Load() {
		h.Message, h.Status = "shutting down", "fail"
		status = fasthttp.StatusServiceUnavailable
	}
	body, _ := json.Marshal(h)
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json; charset=utf-8")
	ctx.SetBody(body)
}
