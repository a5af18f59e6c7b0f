// Package engine is enrichd's enrichment engine, without any I/O: rules
// compiled once against a live table set, a batch of raw events in,
// enriched JSON lines out. It has no sockets, no Kafka and no daemon; the
// daemon (package enrichd) feeds it batches from its inputs and hands its
// output buffers to its outputs.
//
//	eng, err := engine.New(rules, engine.Options{}, set)
//	w := eng.NewWorker(512)               // one per goroutine
//	var b engine.Batch
//	b.Format = engine.Syslog
//	b.Add([]byte("<13>1 - h app - - - cust=42"), 0)
//	var out engine.Lines
//	w.Process(&b, &out, time.Now())       // out.B holds one JSON line per event
//
// A worker processes a batch in three passes: it parses every event
// (syslog header, JSON validity) and extracts the key=value pairs the rules
// read in one pass over each message (field.go); it acquires one snapshot
// of the table set for the whole batch and runs each rule as one batch
// lookup, LookupBatch for .lut tables and LookupFieldsBatch for .mmdb
// tables behind a small per-worker cache of matched networks (lookup.go,
// ipcache.go, ip.go); then it encodes each event by running the encoding
// program compiled from the output tree (tree.go, encode.go), copying
// whole rows with fixed-size moves (row.go), and prefetching the rows and
// MMDB strings of the events a few ahead of the one it writes. In the
// steady state it allocates nothing. A table file truncated or rewritten
// in place faults when its mapping is read: the worker recovers the fault,
// the set marks the table's version damaged, and the events are processed
// again without it (tagged _table_missing and with the rule's miss tag).
//
// Each event becomes one JSON object with ECS names: @timestamp,
// host.name, log.syslog.{facility.code,severity.code,appname,msgid,
// procid,structured_data}, process.pid, message, the key=value pairs the
// rules read (Options.KV), each rule's target object, and tags
// (_malformed, _truncated, _jsonparsefailure, _table_missing and the
// rules' miss tags). A JSON input line is kept as it is, with the rules'
// targets and tags appended as members. Strings are escaped by
// internal/jsonstr and whole rows written by internal/rowjson, as every
// program of the project writes them.
//
// The files: engine.go (Engine, Rule, Options, rule statistics), batch.go
// (Batch and Lines, what goes in and out), field.go (event field names and
// their values), tree.go (the output object and its encoding program),
// worker.go (the passes), lookup.go, ipcache.go and ip.go (the lookups),
// encode.go and row.go (the JSON), fault.go (a table that faults under
// its mapping: the part of the batch done again without it),
// field_chain.go (a rule's key read from what an earlier rule wrote),
// rule_when.go (a rule's condition), each_lookup.go (a rule over the
// elements of an array), event_time.go (the time lookups are made at,
// and the Matcher interface of tables that answer by time).
package engine
