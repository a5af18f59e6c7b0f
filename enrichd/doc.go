// Package enrichd is the enrichment daemon: it receives log events
// (syslog over UDP and TCP, JSON or raw lines over TCP or from a file,
// messages of Kafka topics as a consumer group member), enriches each
// with package engine from the .lut and .mmdb tables of a live table set
// (package tables) and writes enriched JSON lines to stdout, a file, a TCP
// peer or a Kafka topic.
//
// # Shape
//
// The daemon (daemon.go) knows inputs and outputs only by two interfaces.
// Every input implements Input and every output Output; each type
// registers itself (RegisterInput, RegisterOutput) with its settings, its
// constructor and its own metrics, if it has any: in this package
// input_tcp.go, input_udp.go, input_file.go, output_stdout.go,
// output_file.go and output_tcp.go; in packages of their own, which a
// program imports for their registration, the Kafka input and output
// (package enrichd/kafka, imported by cmd/enrichd). Adding a type is
// adding such a file or package; see Input and InputKind. The package
// itself imports no Kafka client.
//
// An input's goroutines frame messages into pooled batches with a Batcher
// (one byte buffer and message offsets, up to pipeline.batch_size
// messages or pipeline.batch_bytes bytes, sent also after
// pipeline.flush_interval of quiet) and send them on a bounded queue.
// Workers (GOMAXPROCS by default) run each batch through the engine into a
// pooled output buffer. One output goroutine hands every buffer to every
// output, flushing them when the queue is empty. Batches and output
// buffers come from fixed pools, so memory is bounded: when the outputs
// are slow the pools run dry and TCP, file and Kafka inputs wait
// (backpressure) while UDP inputs drop and count. In the steady state
// processing allocates nothing per event.
//
// # Acknowledgements
//
// An input that must know when its events are delivered attaches an Ack
// to its batches; each output reports its delivery of the batch's buffer,
// and the last report tells the input (Acker). A Kafka input is the one
// that does: its offsets are committed only for the delivered prefix of
// its batches, so delivery is at least once, and max_uncommitted bounds
// what a crash reads again (see package enrichd/kafka).
//
// # Configuration
//
// Config is read with internal/config: every section is a typed struct
// with a Validate method, the defaults are applied in one place
// (defaults.go), and a program's flags are set on the same struct and
// checked by the same code (LoadConfigWith). CheckTables checks the rules
// against the tables present.
//
// Counters are atomics added once per batch and exported at /metrics by
// a Prometheus collector; /healthz and /readyz report liveness and
// readiness. See docs/enrichd.md for the configuration and the output.
package enrichd
