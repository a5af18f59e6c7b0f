// Package enrichd is the enrichment daemon: it receives log events
// (syslog over UDP and TCP, JSON or raw lines over TCP or from a file,
// messages of Kafka topics as a consumer group member), enriches each
// from the .lut and .mmdb tables of a live table set (package tables)
// and writes enriched JSON lines to stdout, a file, a TCP peer or a Kafka
// topic.
//
// # Shape
//
// An input goroutine per socket or connection frames messages into a
// pooled batch (one byte buffer and message offsets, up to
// pipeline.batch_size messages or pipeline.batch_bytes bytes, flushed
// also after pipeline.flush_interval of quiet) and sends it on a bounded
// queue. Workers (GOMAXPROCS by default) take a batch, parse every event,
// extract the fields the rules need, acquire one snapshot of the table
// set for the whole batch, run each rule as one batch lookup
// (reader.Table.LookupBatch for .lut tables), encode the JSON lines into a
// pooled output buffer and release the snapshot. One output goroutine
// writes the buffers. Batches and output buffers come from fixed pools,
// so memory is bounded: when the output is slow the pools run dry and
// TCP and file inputs wait (backpressure) while UDP inputs drop and count.
// In steady state processing allocates nothing per event.
//
// # Output
//
// Each event becomes one JSON object with ECS names: @timestamp,
// host.name, log.syslog.{facility.code,severity.code,appname,msgid,
// procid,structured_data}, process.pid, message, the key=value pairs the
// rules read (pipeline.kv_fields), each rule's target object, and tags
// (_malformed, _truncated, _jsonparsefailure, _table_missing and the
// rules' miss tags). A JSON input line is kept as it is, with the rules'
// targets and tags appended as members.
//
// # Kafka
//
// A Kafka input's batches carry an acknowledgement (ackEntry) that the
// outputs release once they have delivered the batch; offsets are
// committed only for the delivered prefix of the batches, so delivery is
// at least once, and max_uncommitted bounds what a crash reads again
// (kafka.go).
//
// Counters are atomics added once per batch and exported at /metrics by
// a Prometheus collector; /healthz and /readyz report liveness and
// readiness. See docs/enrichd.md for the configuration.
package enrichd
