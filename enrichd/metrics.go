package enrichd

import (
	"fmt"
	"net/http"
	"net/http/pprof"

	"github.com/lutkit/lutkit/enrichd/serve"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// collector exports the daemon's atomic counters. The hot path only does
// atomic adds, once per batch; label sets are built here, at scrape time.
type collector struct{ d *Daemon }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("enrichd_"+name, help, labels, nil)
}

var (
	mEventsIn     = desc("events_in_total", "Events accepted by an input.", "input", "type")
	mBytesIn      = desc("input_bytes_total", "Message bytes accepted by an input.", "input", "type")
	mDropped      = desc("events_dropped_total", "Events dropped by an input (UDP: queue full).", "input", "type")
	mParseErrors  = desc("parse_errors_total", "Malformed events (tagged and passed on).", "input", "type")
	mTruncated    = desc("events_truncated_total", "Oversize events truncated to max_message_size (tagged).", "input", "type")
	mFrameErrors  = desc("frame_errors_total", "Connections ended inside a frame, bad octet counts, read errors.", "input", "type")
	mConns        = desc("connections_total", "Connections accepted.", "input")
	mConnsReject  = desc("connections_rejected_total", "Connections refused over max_connections.", "input")
	mConnsIdle    = desc("connections_idle_closed_total", "Connections closed by idle_timeout.", "input")
	mConnsActive  = desc("connections_active", "Open connections.", "input")
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
	mQueue        = desc("queue_depth", "Batches waiting in a queue.", "queue")
	mQueueCap     = desc("queue_capacity", "Capacity of a queue.", "queue")
	mOutBytes     = desc("output_bytes_total", "Bytes written by an output.", "output", "type")
	mOutErrors    = desc("output_errors_total", "Write, flush and connect errors of an output.", "output", "type")
	mOutReconn    = desc("output_reconnects_total", "Connections made by a TCP output.", "output")
	mReady        = desc("ready", "1 when the daemon serves.")

	mMcConns        = desc("memcached_connections_total", "Connections the memcached listener accepted.")
	mMcConnsReject  = desc("memcached_connections_rejected_total", "Connections the memcached listener refused over memcached.max_connections.")
	mMcConnsIdle    = desc("memcached_connections_idle_closed_total", "memcached connections closed by memcached.idle_timeout.")
	mMcConnsActive  = desc("memcached_connections_active", "Open memcached connections.")
	mMcRequests     = desc("memcached_requests_total", "memcached commands read, by protocol (text, meta, binary).", "protocol")
	mMcWritesRefuse = desc("memcached_writes_refused_total", "memcached writes refused (the listener is read-only), by protocol.", "protocol")
	mMcLookups      = desc("memcached_lookups_total", "Keys the memcached listener looked up, by result (hit, miss).", "result")

	mKafkaLag         = desc("kafka_consumer_lag", "High watermark minus the group's committed offset, as the brokers report them at the scrape, by assigned partition.", "input", "topic", "partition")
	mKafkaCommitted   = desc("kafka_committed_offset", "The group's committed offset (the next to read), by assigned partition.", "input", "topic", "partition")
	mKafkaCommits     = desc("kafka_commits_total", "Offset commits by result.", "input", "result")
	mKafkaUncommitted = desc("kafka_uncommitted_events", "Events fetched and not yet committed (at most max_uncommitted).", "input")
	mKafkaStale       = desc("kafka_stale_offsets_total", "Delivered offsets not committed because a rebalance came between their fetch and the commit (the partition's owner reads them again).", "input")
	mKafkaRebalances  = desc("kafka_rebalances_total", "Consumer group rebalances seen by the input.", "input")
	mKafkaReadErrors  = desc("kafka_fetch_errors_total", "Fetch and group errors reported by the consumer.", "input")
	mKafkaProduced    = desc("kafka_produced_total", "Events the brokers acknowledged.", "output")
	mKafkaRetries     = desc("kafka_produce_retries_total", "Events produced again after a failed attempt.", "output")
	mKafkaDeadLetter  = desc("kafka_dead_letter_total", "Events sent to the dead letter after max_attempts.", "output")
	mKafkaNotProduced = desc("kafka_not_produced_total", "Events neither produced nor dead-lettered (logged, or left uncommitted on shutdown).", "output")
)

func (c collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	counter := func(desc *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	for _, s := range d.inStats {
		counter(mEventsIn, s.events.Load(), s.name, s.typ)
		counter(mBytesIn, s.bytes.Load(), s.name, s.typ)
		counter(mDropped, s.dropped.Load(), s.name, s.typ)
		counter(mParseErrors, s.malformed.Load(), s.name, s.typ)
		counter(mTruncated, s.truncated.Load(), s.name, s.typ)
		counter(mFrameErrors, s.frameErrors.Load(), s.name, s.typ)
		if s.typ == "tcp" {
			counter(mConns, s.connsTotal.Load(), s.name)
			counter(mConnsReject, s.connsReject.Load(), s.name)
			counter(mConnsIdle, s.connsIdle.Load(), s.name)
			gauge(mConnsActive, float64(s.connsActive.Load()), s.name)
		}
	}
	counter(mEventsOut, d.eventsOut.Load())
	for _, r := range d.pipe.rules {
		counter(mLookups, r.stats.hits.Load(), r.cfg.Name, r.cfg.Table, "hit")
		counter(mLookups, r.stats.misses.Load(), r.cfg.Name, r.cfg.Table, "miss")
		counter(mLookupNoTbl, r.stats.noTable.Load(), r.cfg.Name, r.cfg.Table)
		if r.mmFields != nil {
			counter(mLookupBadKey, r.stats.badKey.Load(), r.cfg.Name, r.cfg.Table)
		}
	}
	if d.set != nil {
		st := d.set.Stats()
		gauge(mGen, float64(st.Generation))
		counter(mSwaps, st.Swaps)
		counter(mRejections, st.Rejections)
		for _, t := range st.Tables {
			gauge(mTblGen, float64(t.Generation), t.Name, string(t.Kind))
			gauge(mTblRows, float64(t.Rows), t.Name, string(t.Kind))
			gauge(mTblLoaded, float64(t.LoadedAt.UnixNano())/1e9, t.Name, string(t.Kind))
		}
		for _, r := range st.Rejected {
			counter(mTblRejects, r.Rejections, r.Name)
		}
	}
	gauge(mQueue, float64(len(d.work)), "work")
	gauge(mQueueCap, float64(cap(d.work)), "work")
	gauge(mQueue, float64(len(d.outCh)), "output")
	gauge(mQueueCap, float64(cap(d.outCh)), "output")
	for _, k := range d.kafkaIns {
		k.collect(func(d *prometheus.Desc, v float64, l ...string) { counter(d, uint64(v), l...) }, gauge, ch)
	}
	for _, k := range d.kafkaOut {
		k.collect(func(d *prometheus.Desc, v float64, l ...string) { counter(d, uint64(v), l...) })
	}
	stats := make([]*outputStats, 0, len(d.sinks)+len(d.kafkaOut))
	for _, s := range d.sinks {
		stats = append(stats, s.Stats())
	}
	for _, k := range d.kafkaOut {
		stats = append(stats, k.Stats())
	}
	for _, st := range stats {
		counter(mOutBytes, st.bytes.Load(), st.name, st.typ)
		counter(mOutErrors, st.errors.Load(), st.name, st.typ)
		if st.typ == "tcp" {
			counter(mOutReconn, st.reconnects.Load(), st.name)
		}
	}
	if d.mc != nil {
		st := d.mc.Stats()
		counter(mMcConns, st.TotalConnections)
		counter(mMcConnsReject, st.RejectedConnections)
		counter(mMcConnsIdle, st.IdleClosed)
		gauge(mMcConnsActive, float64(st.CurrConnections))
		for p, name := range serve.ProtocolNames {
			counter(mMcRequests, st.Requests[p], name)
			counter(mMcWritesRefuse, st.Refused[p], name)
		}
		counter(mMcLookups, st.Hits, "hit")
		counter(mMcLookups, st.Misses, "miss")
	}
	r := 0.0
	if d.ready.Load() {
		r = 1
	}
	gauge(mReady, r)
}

// httpHandler serves /metrics, /healthz and /readyz.
func (d *Daemon) httpHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{d}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !d.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if d.cfg.HTTP.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/heap", pprof.Index)
	}
	return mux
}
