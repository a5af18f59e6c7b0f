// Package kafka is enrichd's Kafka input and output, on franz-go's kgo
// client. It reaches the daemon only through the input and output
// contract of package enrichd (RegisterInput, RegisterOutput, Env,
// Batcher, Ack, Buffer, the stats and metric types), and registers its
// types ("kafka") from an init function: a program has them by importing
// it, as cmd/enrichd does (import _ "github.com/lutkit/lutkit/enrichd/kafka").
//
// An input (input.go) is a member of a consumer group: cooperative-sticky
// assignment by default (range and roundrobin, eager, selectable), static
// membership with instance_id. An output (output.go) produces each event
// as one record with kgo's producer, which batches them by partition.
//
// Delivery is at least once (exactly once with pipeline.delivery:
// exactly_once: eos.go). The input notes, for each batch, the last
// offset it holds of each partition, in an ackEntry: the batch's
// acknowledgement (enrichd.Ack), which goes with the batch to a worker
// and with the worker's output buffer to the outputs. It is done when
// every output has delivered the events: the stream outputs once they
// have flushed them, a Kafka output once the brokers acknowledged them
// (or the dead letter took those the producer gave up on). The
// commitTracker (commit.go) keeps the entries in the order the input made
// them; when the oldest are done, their offsets become committable,
// whenever that is (a produce retried long after the fetch, the brokers
// back from an outage), and the committer commits them every
// commit_interval, retrying a failed commit with backoff, at each
// rebalance for the partitions that move, and once more, until the
// shutdown deadline, on SIGTERM. So a committed offset never passes an
// event that is not delivered, and a crash makes the group read again at
// most the events fetched and not yet committed, which max_uncommitted
// bounds: the input stops taking records while that many are
// outstanding.
package kafka
