package enrichd

import (
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lutkit/lutkit/internal/version"
)

// opsMetrics are the daemon's histograms and the HTTP endpoint's
// request counters: metrics a Prometheus collector keeps, beside the
// atomic counters exported at scrape time (metrics.go).
type opsMetrics struct {
	// latency is the time from the receipt of a batch's first event to
	// its lines being written to every output, observed once per batch.
	latency prometheus.Histogram
	// requests and requestSeconds are the HTTP endpoint's requests by
	// route and status code.
	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
}

var mBuildInfo = MetricDesc("build_info", "1, labelled with the version and commit enrichd was built from and the Go release that built it.", "version", "commit", "goversion")

func newOpsMetrics() *opsMetrics {
	return &opsMetrics{
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "enrichd_event_latency_seconds",
			Help: "Seconds from the receipt of a batch's first event to its lines written to every output (observed once per batch).",
			// 100µs to about 13s.
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enrichd_http_requests_total",
			Help: "Requests the HTTP endpoint answered, by route and status code.",
		}, []string{"route", "code"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "enrichd_http_request_duration_seconds",
			Help:    "Seconds the HTTP endpoint took to answer a request, by route and status code.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
		}, []string{"route", "code"}),
	}
}

// collectors are what the metrics registry gathers from o.
func (o *opsMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{o.latency, o.requests, o.requestSeconds}
}

// observeLatency records the latency of one batch received at recv.
func (o *opsMetrics) observeLatency(recv time.Time) {
	if !recv.IsZero() {
		o.latency.Observe(time.Since(recv).Seconds())
	}
}

// collectBuildInfo writes enrichd_build_info.
func collectBuildInfo(m MetricSink) {
	m.Gauge(mBuildInfo, 1, version.Version, version.Commit, runtime.Version())
}

// instrument counts and times the requests h answers.
func (o *opsMetrics) instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		route, code := httpRoute(r.URL.Path), strconv.Itoa(sw.code)
		o.requests.WithLabelValues(route, code).Inc()
		o.requestSeconds.WithLabelValues(route, code).Observe(time.Since(start).Seconds())
	})
}

// httpRoute is the route label of a request path: a fixed set, so that
// table names and keys do not make label values.
func httpRoute(p string) string {
	switch p {
	case "/metrics", "/healthz", "/readyz", "/v1/tables":
		return p
	case "/v1/tables/":
		return "/v1/tables"
	}
	switch {
	case strings.HasPrefix(p, "/debug/pprof/"):
		return "/debug/pprof/"
	case strings.HasPrefix(p, "/v1/tables/"):
		rest := strings.TrimPrefix(p, "/v1/tables/")
		if _, key, ok := strings.Cut(rest, "/"); ok {
			if key == "_batch" {
				return "/v1/tables/{table}/_batch"
			}
			return "/v1/tables/{table}/{key}"
		}
	}
	return "other"
}

// statusWriter records the status code of an answer.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the connection's writer (for
// flushes and deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
