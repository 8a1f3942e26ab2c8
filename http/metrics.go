package http

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's Prometheus collectors.
type metrics struct {
	requests     *prometheus.CounterVec   // by route and status code
	duration     *prometheus.HistogramVec // by route
	insertRows   *prometheus.CounterVec   // by format
	insertBytes  *prometheus.CounterVec   // by format, as received
	queryRows    prometheus.Counter       // raw rows returned
	queryBuckets prometheus.Counter       // aggregate buckets returned
	rejected     prometheus.Counter       // public requests refused as overloaded
	// internalUnauthorized counts /internal/ requests refused for a
	// missing or wrong cluster secret.
	internalUnauthorized prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tsdb_http_requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tsdb_http_request_duration_seconds",
			Help:    "HTTP request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"route"}),
		insertRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tsdb_insert_rows_total",
			Help: "Rows accepted by inserts, by format.",
		}, []string{"format"}),
		insertBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tsdb_insert_bytes_total",
			Help: "Insert request body bytes as received, by format.",
		}, []string{"format"}),
		queryRows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_query_rows_total",
			Help: "Rows returned by raw queries.",
		}),
		queryBuckets: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_query_buckets_total",
			Help: "Buckets returned by aggregate queries.",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_http_rejected_requests_total",
			Help: "Public requests answered 503 overloaded: the server was serving --max-concurrent-requests already.",
		}),
		internalUnauthorized: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tsdb_internal_unauthorized_total",
			Help: "Internal API requests refused with 401: no cluster secret, a wrong one, or none configured while the public API wants a bearer token.",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.insertRows, m.insertBytes, m.queryRows, m.queryBuckets, m.rejected, m.internalUnauthorized)
	for _, f := range []string{formatJSON, formatNDJSON, formatLineProtocol} {
		m.insertRows.WithLabelValues(f)
		m.insertBytes.WithLabelValues(f)
	}
	return m
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}
