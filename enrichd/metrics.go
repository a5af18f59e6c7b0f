package enrichd

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lutkit/lutkit/enrichd/internal/listen"
	"github.com/lutkit/lutkit/enrichd/serve"
	"github.com/lutkit/lutkit/tables"
)

// collector exports the daemon's atomic counters. The hot path only does
// atomic adds, once per batch; label sets are built here, at scrape time.
// Every input and output exports its common counters; one with metrics of
// its own type implements metricsCollector.
type collector struct{ d *Daemon }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("enrichd_"+name, help, labels, nil)
}

// metricsCollector is implemented by inputs and outputs that export
// metrics of their own type (connections, Kafka offsets).
type metricsCollector interface {
	Collect(m metricSink)
}

// metricSink is where Collect writes samples.
type metricSink struct{ ch chan<- prometheus.Metric }

func (m metricSink) counter(d *prometheus.Desc, v uint64, labels ...string) {
	m.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func (m metricSink) gauge(d *prometheus.Desc, v float64, labels ...string) {
	m.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

var (
	mLnAccepted  = desc("listener_connections_total", "Connections a listener accepted from its socket, refused ones included.", "listener", "tls")
	mLnActive    = desc("listener_connections_active", "Open connections of a listener (those in their TLS handshake included).", "listener")
	mLnRefused   = desc("listener_connections_refused_total", "Connections a listener refused, by reason.", "listener", "reason")
	mLnCertLoads = desc("listener_tls_certificate_loads_total", "Loads of a listener's TLS certificate files (the first included).", "listener")
	mLnCertFails = desc("listener_tls_certificate_reload_failures_total", "Reloads of a listener's TLS certificate files that failed (the previous certificate stays).", "listener")
)

// listener writes the samples of a listener named name.
func (m metricSink) listener(name string, ln *listen.Listener) {
	st := ln.Stats()
	m.counter(mLnAccepted, st.Accepted, name, strconv.FormatBool(ln.TLS()))
	m.gauge(mLnActive, float64(st.Active), name)
	for i, r := range listen.Reasons {
		m.counter(mLnRefused, st.Refused[i], name, r)
	}
	if ln.TLS() {
		m.counter(mLnCertLoads, st.CertLoads, name)
		m.counter(mLnCertFails, st.CertReloadFailures, name)
	}
}

// collect passes on the samples of a Prometheus collector (a histogram).
func (m metricSink) collect(c prometheus.Collector) { c.Collect(m.ch) }

var (
	mEventsIn     = desc("events_in_total", "Events accepted by an input.", "input", "type")
	mBytesIn      = desc("input_bytes_total", "Message bytes accepted by an input.", "input", "type")
	mDropped      = desc("events_dropped_total", "Events dropped by an input (UDP: queue full).", "input", "type")
	mParseErrors  = desc("parse_errors_total", "Malformed events (tagged and passed on).", "input", "type")
	mTruncated    = desc("events_truncated_total", "Oversize events truncated to max_message_size (tagged).", "input", "type")
	mFrameErrors  = desc("frame_errors_total", "Connections ended inside a frame, bad octet counts, read errors.", "input", "type")
	mEventsOut    = desc("events_out_total", "Events written to the outputs.")
	mLookups      = desc("lookups_total", "Lookups by rule and result (hit, miss).", "rule", "table", "result")
	mLookupNoTbl  = desc("lookup_table_missing_total", "Events a rule could not look up because its table is not loaded.", "rule", "table")
	mLookupBadKey = desc("lookup_bad_key_total", "Lookups whose key is not an IP address (mmdb rules).", "rule", "table")
	mGen          = desc("table_generation", "Generation of the live table set.")
	mTblGen       = desc("table_loaded_generation", "Set generation at which a table's version was loaded.", "table", "kind")
	mTblRows      = desc("table_rows", "Rows of a .lut table, search tree nodes of an .mmdb table.", "table", "kind")
	mTblLoaded    = desc("table_loaded_timestamp_seconds", "When a table's version was loaded.", "table", "kind")
	mSwaps        = desc("table_swaps_total", "Table set publishes (including the first load).")
	mRejections   = desc("table_swap_rejections_total", "Table files or manifests rejected (the previous version stays live).")
	mTblRejects   = desc("table_rejections_total", "Rejected versions by table.", "table")
	mTblVersion   = desc("tables_version_info", "The table set's version: the SHA256 of the manifest served, and where it came from.", "version", "source")
	mTblStale     = desc("tables_stale", "1 when the last check of the remote store failed: the node serves the version it has, which may not be the newest.")
	mTblAge       = desc("tables_last_success_age_seconds", "Seconds since the last successful check of the remote store (kept across restarts in the cache).")
	mTblChecks    = desc("tables_remote_checks_total", "Checks of the remote manifest.")
	mTblNotMod    = desc("tables_remote_not_modified_total", "Checks of the remote manifest answered \"not modified\" (no bytes transferred).")
	mTblDownloads = desc("tables_remote_downloads_total", "Artifacts downloaded and verified.")
	mTblBytes     = desc("tables_remote_bytes_total", "Bytes received from the remote store (manifests and artifacts).")
	mTblFailures  = desc("tables_remote_failures_total", "Failed requests and rejected versions of the remote store, by reason.", "reason")
	mQueue        = desc("queue_depth", "Batches waiting in a queue.", "queue")
	mQueueCap     = desc("queue_capacity", "Capacity of a queue.", "queue")
	mOutBytes     = desc("output_bytes_total", "Bytes written by an output.", "output", "type")
	mOutErrors    = desc("output_errors_total", "Write, flush and connect errors of an output.", "output", "type")
	mReady        = desc("ready", "1 when the daemon serves.")

	mMcConns        = desc("memcached_connections_total", "Connections the memcached listener accepted.")
	mMcConnsReject  = desc("memcached_connections_rejected_total", "Connections the memcached listener refused over memcached.max_connections.")
	mMcConnsIdle    = desc("memcached_connections_idle_closed_total", "memcached connections closed by memcached.idle_timeout.")
	mMcConnsActive  = desc("memcached_connections_active", "Open memcached connections.")
	mMcRequests     = desc("memcached_requests_total", "memcached commands read, by protocol (text, meta, binary).", "protocol")
	mMcWritesRefuse = desc("memcached_writes_refused_total", "memcached writes refused (the listener is read-only), by protocol.", "protocol")
	mMcLookups      = desc("memcached_lookups_total", "Keys the memcached listener looked up, by result (hit, miss).", "result")
)

func (c collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	m := metricSink{ch}
	for _, in := range d.inputs {
		s := in.Stats()
		m.counter(mEventsIn, s.events.Load(), s.name, s.typ)
		m.counter(mBytesIn, s.bytes.Load(), s.name, s.typ)
		m.counter(mDropped, s.dropped.Load(), s.name, s.typ)
		m.counter(mParseErrors, s.malformed.Load(), s.name, s.typ)
		m.counter(mTruncated, s.truncated.Load(), s.name, s.typ)
		m.counter(mFrameErrors, s.frameErrors.Load(), s.name, s.typ)
		if mc, ok := in.(metricsCollector); ok {
			mc.Collect(m)
		}
	}
	if d.httpLn != nil {
		m.listener("http", d.httpLn)
	}
	if d.mcLn != nil {
		m.listener("memcached", d.mcLn)
	}
	m.counter(mEventsOut, d.eventsOut.Load())
	for _, r := range d.eng.Stats() {
		m.counter(mLookups, r.Hits, r.Name, r.Table, "hit")
		m.counter(mLookups, r.Misses, r.Name, r.Table, "miss")
		m.counter(mLookupNoTbl, r.NoTable, r.Name, r.Table)
		if r.MMDB {
			m.counter(mLookupBadKey, r.BadKey, r.Name, r.Table)
		}
	}
	if d.set != nil {
		st := d.set.Stats()
		m.gauge(mGen, float64(st.Generation))
		m.counter(mSwaps, st.Swaps)
		m.counter(mRejections, st.Rejections)
		for _, t := range st.Tables {
			m.gauge(mTblGen, float64(t.Generation), t.Name, string(t.Kind))
			m.gauge(mTblRows, float64(t.Rows), t.Name, string(t.Kind))
			m.gauge(mTblLoaded, float64(t.LoadedAt.UnixNano())/1e9, t.Name, string(t.Kind))
		}
		for _, r := range st.Rejected {
			m.counter(mTblRejects, r.Rejections, r.Name)
		}
		if st.Version != "" {
			m.gauge(mTblVersion, 1, st.Version, st.VersionSource)
		}
		if r := st.Remote; r != nil {
			collectRemote(m, r)
		}
	}
	m.gauge(mQueue, float64(len(d.q.work)), "work")
	m.gauge(mQueueCap, float64(cap(d.q.work)), "work")
	m.gauge(mQueue, float64(len(d.outCh)), "output")
	m.gauge(mQueueCap, float64(cap(d.outCh)), "output")
	for _, o := range d.outputs {
		st := o.Stats()
		m.counter(mOutBytes, st.bytes.Load(), st.name, st.typ)
		m.counter(mOutErrors, st.errors.Load(), st.name, st.typ)
		if mc, ok := o.(metricsCollector); ok {
			mc.Collect(m)
		}
	}
	if d.mc != nil {
		st := d.mc.Stats()
		m.counter(mMcConns, st.TotalConnections)
		m.counter(mMcConnsReject, st.RejectedConnections)
		m.counter(mMcConnsIdle, st.IdleClosed)
		m.gauge(mMcConnsActive, float64(st.CurrConnections))
		for p, name := range serve.ProtocolNames {
			m.counter(mMcRequests, st.Requests[p], name)
			m.counter(mMcWritesRefuse, st.Refused[p], name)
		}
		m.counter(mMcLookups, st.Hits, "hit")
		m.counter(mMcLookups, st.Misses, "miss")
	}
	r := 0.0
	if d.ready.Load() {
		r = 1
	}
	m.gauge(mReady, r)
}

// collectRemote exports the counters of a remote table set.
func collectRemote(m metricSink, r *tables.RemoteStats) {
	stale := 0.0
	if r.Stale {
		stale = 1
	}
	m.gauge(mTblStale, stale)
	if !r.LastSuccess.IsZero() {
		m.gauge(mTblAge, time.Since(r.LastSuccess).Seconds())
	}
	m.counter(mTblChecks, r.Checks)
	m.counter(mTblNotMod, r.NotModified)
	m.counter(mTblDownloads, r.Downloads)
	m.counter(mTblBytes, r.Bytes)
	for _, reason := range tables.FailureReasons {
		m.counter(mTblFailures, r.Failures[reason], reason)
	}
}

// httpHandler serves /metrics, /healthz and /readyz.
func (d *Daemon) httpHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{d}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	metricsAuth := serve.Auth{Token: d.cfg.HTTP.MetricsToken, Clients: d.cfg.HTTP.MetricsClients}
	mux.Handle("/metrics", metricsAuth.Guard(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !d.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
		if d.set != nil {
			if r := d.set.Stats().Remote; r != nil && r.Stale {
				// Serving, but maybe not the newest version: say so.
				age := "never"
				if !r.LastSuccess.IsZero() {
					age = time.Since(r.LastSuccess).Round(time.Second).String() + " ago"
				}
				fmt.Fprintf(w, "tables stale: last successful check %s: %s\n", age, r.StaleReason)
			}
		}
	})
	if d.cfg.HTTP.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/heap", pprof.Index)
	}
	return mux
}
