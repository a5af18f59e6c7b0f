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
// its own type implements MetricsCollector.
type collector struct{ d *Daemon }

// MetricDesc describes a metric of enrichd's: name is prefixed with
// "enrichd_". Inputs and outputs declare theirs with it at package level.
func MetricDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("enrichd_"+name, help, labels, nil)
}

// MetricsCollector is implemented by inputs and outputs that export
// metrics of their own type (connections, Kafka offsets).
type MetricsCollector interface {
	Collect(m MetricSink)
}

// MetricSink is where Collect writes samples.
type MetricSink struct{ ch chan<- prometheus.Metric }

// Counter writes a counter's sample.
func (m MetricSink) Counter(d *prometheus.Desc, v uint64, labels ...string) {
	m.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

// Gauge writes a gauge's sample.
func (m MetricSink) Gauge(d *prometheus.Desc, v float64, labels ...string) {
	m.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

var (
	mLnAccepted  = MetricDesc("listener_connections_total", "Connections a listener accepted from its socket, refused ones included.", "listener", "tls")
	mLnActive    = MetricDesc("listener_connections_active", "Open connections of a listener (those in their TLS handshake included).", "listener")
	mLnRefused   = MetricDesc("listener_connections_refused_total", "Connections a listener refused, by reason.", "listener", "reason")
	mLnCertLoads = MetricDesc("listener_tls_certificate_loads_total", "Loads of a listener's TLS certificate files (the first included).", "listener")
	mLnCertFails = MetricDesc("listener_tls_certificate_reload_failures_total", "Reloads of a listener's TLS certificate files that failed (the previous certificate stays).", "listener")
	mLnIdle      = MetricDesc("listener_connections_idle_closed_total", "Connections of a listener closed by its idle_timeout (tcp inputs, memcached).", "listener")
)

// Listener writes the samples of a Listener named name.
func (m MetricSink) Listener(name string, ln *listen.Listener) { m.listener(name, ln, 0) }

// ListenerIdleClosed writes the count of a listener's connections closed
// by its idle timeout, for a listener whose server counts them.
func (m MetricSink) ListenerIdleClosed(name string, n uint64) { m.Counter(mLnIdle, n, name) }

// listener writes the samples of ln, with moreOverMax connections refused
// over max_connections by its server (not by the listener itself).
func (m MetricSink) listener(name string, ln *listen.Listener, moreOverMax uint64) {
	st := ln.Stats()
	m.Counter(mLnAccepted, st.Accepted, name, strconv.FormatBool(ln.TLS()))
	m.Gauge(mLnActive, float64(st.Active), name)
	for i, r := range listen.Reasons {
		n := st.Refused[i]
		if r == listen.ReasonMaxConnections {
			n += moreOverMax
		}
		m.Counter(mLnRefused, n, name, r)
	}
	if ln.TLS() {
		m.Counter(mLnCertLoads, st.CertLoads, name)
		m.Counter(mLnCertFails, st.CertReloadFailures, name)
	}
}

// Collect passes on the samples of a Prometheus collector (a histogram).
func (m MetricSink) Collect(c prometheus.Collector) { c.Collect(m.ch) }

var (
	mEventsIn     = MetricDesc("events_in_total", "Events accepted by an input.", "input", "type")
	mBytesIn      = MetricDesc("input_bytes_total", "Message bytes accepted by an input.", "input", "type")
	mDropped      = MetricDesc("events_dropped_total", "Events dropped by an input, by reason (UDP: queue_full, kernel; too_large: an event larger than the persistent queue's records).", "input", "type", "reason")
	mParseErrors  = MetricDesc("parse_errors_total", "Malformed events (tagged and passed on).", "input", "type")
	mTruncated    = MetricDesc("events_truncated_total", "Oversize events truncated to max_message_size (tagged).", "input", "type")
	mFrameErrors  = MetricDesc("frame_errors_total", "Connections ended inside a frame, bad octet counts, read errors.", "input", "type")
	mEventsOut    = MetricDesc("events_out_total", "Events every output delivered (written and flushed, or acknowledged; with delivery: exactly_once, in a committed transaction).")
	mLookups      = MetricDesc("lookups_total", "Lookups by rule and result (hit, miss; skipped: the events the rule's when did not hold for).", "rule", "table", "result")
	mTimeFallback = MetricDesc("event_time_fallback_total", "Lookups of a rule with an event time made at the receive time, the event having no time of the source (missing) or one that does not parse (bad).", "rule", "table", "reason")
	mLookupNoTbl  = MetricDesc("lookup_table_missing_total", "Events a rule could not look up because its table is not loaded.", "rule", "table")
	mLookupBadKey = MetricDesc("lookup_bad_key_total", "Lookups whose key is not an IP address (mmdb rules).", "rule", "table")
	mGen          = MetricDesc("table_generation", "Generation of the live table set.")
	mTblGen       = MetricDesc("table_loaded_generation", "Set generation at which a table's version was loaded.", "table", "kind")
	mTblRows      = MetricDesc("table_rows", "Rows of a .lut table, networks of an .mmdb table (counted in the background after it loads).", "table", "kind")
	mTblLoaded    = MetricDesc("table_loaded_timestamp_seconds", "When a table's version was loaded.", "table", "kind")
	mSwaps        = MetricDesc("table_swaps_total", "Table set publishes (including the first load).")
	mRejections   = MetricDesc("table_swap_rejections_total", "Table files or manifests rejected (the previous version stays live).")
	mTblRejects   = MetricDesc("table_rejections_total", "Rejected versions by table.", "table")
	mTblFaults    = MetricDesc("table_faults_total", "Memory faults caught in lookups of a table (its file truncated or rewritten in place under the mapping).", "table")
	mTblDamaged   = MetricDesc("table_damaged", "1 while the live version of a table is damaged (its file changed under the mapping): its lookups miss until a good version is published.", "table", "kind")
	mTblMissing   = MetricDesc("table_file_missing", "1 while the file of a live table is gone (removed, or its directory): the version mapped stays live.", "table", "kind")
	mTblVersion   = MetricDesc("tables_version_info", "The table set's version: the SHA256 of the manifest served, and where it came from.", "version", "source")
	mTblStale     = MetricDesc("tables_stale", "1 when the last check of the remote store failed: the node serves the version it has, which may not be the newest.")
	mTblAge       = MetricDesc("tables_last_success_age_seconds", "Seconds since the last successful check of the remote store (kept across restarts in the cache).")
	mTblChecks    = MetricDesc("tables_remote_checks_total", "Checks of the remote manifest.")
	mTblNotMod    = MetricDesc("tables_remote_not_modified_total", "Checks of the remote manifest answered \"not modified\" (no bytes transferred).")
	mTblDownloads = MetricDesc("tables_remote_downloads_total", "Artifacts downloaded and verified.")
	mTblBytes     = MetricDesc("tables_remote_bytes_total", "Bytes received from the remote store (manifests and artifacts).")
	mTblFailures  = MetricDesc("tables_remote_failures_total", "Failed requests and rejected versions of the remote store, by reason.", "reason")
	mTblDeltas    = MetricDesc("tables_remote_delta_applied_total", "Artifacts rebuilt from a delta and the previous version, and verified against the manifest's digest.")
	mTblDeltaFall = MetricDesc("tables_remote_delta_fallbacks_total", "Deltas not used, by reason: the full artifact was downloaded instead.", "reason")
	mQueue        = MetricDesc("queue_depth", "Batches waiting in a queue.", "queue")
	mQueueCap     = MetricDesc("queue_capacity", "Capacity of a queue.", "queue")
	mOutBytes     = MetricDesc("output_bytes_total", "Bytes written by an output.", "output", "type")
	mOutErrors    = MetricDesc("output_errors_total", "Write, flush and connect errors of an output, by reason (the output's events wait and are retried).", "output", "type", "reason")
	mOutEvents    = MetricDesc("output_events_total", "Events an output delivered.", "output", "type")
	mReady        = MetricDesc("ready", "1 when the daemon serves.")

	mMcRequests     = MetricDesc("memcached_requests_total", "memcached commands read, by protocol (text, meta, binary).", "protocol")
	mMcWritesRefuse = MetricDesc("memcached_writes_refused_total", "memcached writes refused (the listener is read-only), by protocol.", "protocol")
	mMcLookups      = MetricDesc("memcached_lookups_total", "Keys the memcached listener looked up, by result (hit, miss).", "result")
)

// The reasons of enrichd_events_dropped_total.
const (
	dropQueueFull = "queue_full" // no free batch, or the work queue full (InputStats.Dropped)
	dropKernel    = "kernel"     // dropped by the kernel (a UDP socket's receive buffer full)
	dropTooLarge  = "too_large"  // larger than a record of the persistent queue (InputStats.TooLarge)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	m := MetricSink{ch}
	collectBuildInfo(m)
	d.inMu.RLock()
	defer d.inMu.RUnlock()
	for _, in := range d.inputs {
		s := in.Stats()
		m.Counter(mEventsIn, s.Events.Load(), s.Name, s.Type)
		m.Counter(mBytesIn, s.Bytes.Load(), s.Name, s.Type)
		m.Counter(mDropped, s.Dropped.Load(), s.Name, s.Type, dropQueueFull)
		m.Counter(mDropped, s.TooLarge.Load(), s.Name, s.Type, dropTooLarge)
		m.Counter(mParseErrors, s.Malformed.Load(), s.Name, s.Type)
		m.Counter(mTruncated, s.Truncated.Load(), s.Name, s.Type)
		m.Counter(mFrameErrors, s.FrameErrors.Load(), s.Name, s.Type)
		if mc, ok := in.(MetricsCollector); ok {
			mc.Collect(m)
		}
	}
	if d.httpLn != nil {
		m.Listener("http", d.httpLn)
	}
	m.Counter(mEventsOut, d.eventsOut.Load())
	for _, r := range d.engines.stats() {
		m.Counter(mLookups, r.Hits, r.Name, r.Table, "hit")
		m.Counter(mLookups, r.Misses, r.Name, r.Table, "miss")
		m.Counter(mLookups, r.Skipped, r.Name, r.Table, "skipped")
		m.Counter(mTimeFallback, r.TimeMissing, r.Name, r.Table, "missing")
		m.Counter(mTimeFallback, r.TimeBad, r.Name, r.Table, "bad")
		m.Counter(mLookupNoTbl, r.NoTable, r.Name, r.Table)
		if r.MMDB {
			m.Counter(mLookupBadKey, r.BadKey, r.Name, r.Table)
		}
	}
	if set := d.set.Load(); set != nil {
		st := set.Stats()
		m.Gauge(mGen, float64(st.Generation))
		m.Counter(mSwaps, st.Swaps+d.setCarry.swaps.Load())
		m.Counter(mRejections, st.Rejections+d.setCarry.rejections.Load())
		for _, t := range st.Tables {
			m.Gauge(mTblGen, float64(t.Generation), t.Name, string(t.Kind))
			d.collectTableRows(m, set, t)
			m.Gauge(mTblLoaded, float64(t.LoadedAt.UnixNano())/1e9, t.Name, string(t.Kind))
			m.Gauge(mTblDamaged, b2f(t.Damaged), t.Name, string(t.Kind))
			m.Gauge(mTblMissing, b2f(t.Missing), t.Name, string(t.Kind))
		}
		for _, r := range st.Rejected {
			m.Counter(mTblRejects, r.Rejections, r.Name)
		}
		for _, f := range st.Faults {
			m.Counter(mTblFaults, f.Faults, f.Name)
		}
		if st.Version != "" {
			m.Gauge(mTblVersion, 1, st.Version, st.VersionSource)
		}
		if r := st.Remote; r != nil {
			collectRemote(m, r)
		}
	}
	m.Gauge(mQueue, float64(len(d.q.work)), "work")
	m.Gauge(mQueueCap, float64(cap(d.q.work)), "work")
	m.Gauge(mQueue, float64(len(d.outCh)), "output")
	m.Gauge(mQueueCap, float64(cap(d.outCh)), "output")
	d.outMu.RLock()
	for _, o := range d.outputs {
		st := o.Stats()
		m.Counter(mOutBytes, st.Bytes.Load(), st.Name, st.Type)
		m.Counter(mOutEvents, st.Delivered.Load(), st.Name, st.Type)
		for r, reason := range errorReasons {
			n := st.failures[r].Load()
			if r == reasonOther {
				n += st.Errors.Load()
			}
			m.Counter(mOutErrors, n, st.Name, st.Type, reason)
		}
		if mc, ok := o.(MetricsCollector); ok {
			mc.Collect(m)
		}
	}
	d.outMu.RUnlock()
	if d.mc != nil {
		st := d.mc.Stats()
		// Its connections are the listener's: the server's refusals over
		// max_connections (plaintext) are counted with the listener's.
		m.listener("memcached", d.mcLn, st.RejectedConnections)
		m.ListenerIdleClosed("memcached", st.IdleClosed)
		for p, name := range serve.ProtocolNames {
			m.Counter(mMcRequests, st.Requests[p], name)
			m.Counter(mMcWritesRefuse, st.Refused[p], name)
		}
		m.Counter(mMcLookups, st.Hits, "hit")
		m.Counter(mMcLookups, st.Misses, "miss")
	}
	for i, name := range reloadResults {
		m.Counter(mReloads, d.reloads[i].Load(), name)
	}
	m.Counter(mReloadInputs, d.inputsStarted.Load(), "started")
	m.Counter(mReloadInputs, d.inputsStopped.Load(), "stopped")
	m.Counter(mReloadTables, d.tableSwitches.Load())
	if d.queue != nil {
		d.queue.Collect(m)
	}
	r := 0.0
	if d.Ready() {
		r = 1
	}
	m.Gauge(mReady, r)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collectRemote exports the counters of a remote table set.
func collectRemote(m MetricSink, r *tables.RemoteStats) {
	stale := 0.0
	if r.Stale {
		stale = 1
	}
	m.Gauge(mTblStale, stale)
	if !r.LastSuccess.IsZero() {
		m.Gauge(mTblAge, time.Since(r.LastSuccess).Seconds())
	}
	m.Counter(mTblChecks, r.Checks)
	m.Counter(mTblNotMod, r.NotModified)
	m.Counter(mTblDownloads, r.Downloads)
	m.Counter(mTblBytes, r.Bytes)
	for _, reason := range tables.FailureReasons {
		m.Counter(mTblFailures, r.Failures[reason], reason)
	}
	m.Counter(mTblDeltas, r.DeltasApplied)
	for _, reason := range tables.DeltaFallbackReasons {
		m.Counter(mTblDeltaFall, r.DeltaFallbacks[reason], reason)
	}
}

// httpHandler serves /metrics, /healthz and /readyz.
func (d *Daemon) httpHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{d}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(d.ops.collectors()...)
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
		if d.queueFull() {
			http.Error(w, "not ready: the persistent queue is full (queue.max_bytes): the inputs wait until the outputs deliver", http.StatusServiceUnavailable)
			return
		}
		if d.queueFailing() {
			http.Error(w, "not ready: the persistent queue cannot write (its file system full, or failing; see the log): the inputs wait until it can", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
		if set := d.set.Load(); set != nil {
			st := set.Stats()
			for _, t := range st.Tables {
				// Serving, without this table's lookups or its file.
				switch {
				case t.Damaged:
					fmt.Fprintf(w, "table %s damaged: its lookups miss: %s\n", t.Name, t.DamageReason)
				case t.Missing:
					fmt.Fprintf(w, "table %s: its file is gone: the version mapped is served\n", t.Name)
				}
			}
			for _, l := range d.rulesWatch.readyLines(set) {
				// Serving, without this rule's lookups.
				fmt.Fprintln(w, l)
			}
			if r := st.Remote; r != nil && r.Stale {
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
