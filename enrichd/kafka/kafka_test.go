package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/kafkatest"
	"github.com/lutkit/lutkit/internal/testfiles"
)

// kafkaConfig is a Kafka-to-Kafka configuration over a customers table
// of rows rows in dir; extra is appended to the Kafka output's settings.
func kafkaConfig(t testing.TB, dir string, c *kafkatest.Cluster, rows int, extraIn, extraOut string) *enrichd.Config {
	t.Helper()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), rows, 1)
	brokers := `["` + strings.Join(c.Addrs, `","`) + `"]`
	yml := fmt.Sprintf(`
inputs:
  - name: kafka
    type: kafka
    kafka: {brokers: %[1]s, topics: [in], group: enrichd%[3]s}
tables: {path: %[2]q}
rules:
  - {name: customer, table: customers, field: cust, target: customer, columns: ["Customer Id"]}
outputs:
  - name: kafka
    type: kafka
    kafka: {brokers: %[1]s, topic: out, key_field: cust%[4]s}
pipeline: {kv_fields: all}
http: {listen: "127.0.0.1:0"}
`, brokers, dir, extraIn, extraOut)
	cfg, err := enrichd.ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yml)
	}
	return cfg
}

func customerID(cust int) string { return fmt.Sprintf("C%d-1", cust) }

// waitMetric waits up to 10 s for a sample to reach want and returns its
// last value.
func waitMetric(t testing.TB, d *enrichd.Daemon, sample string, want float64) float64 {
	t.Helper()
	var got float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = metric(t, d, sample); got >= want {
			break
		}
	}
	return got
}

// TestKafkaToKafka streams events from one topic to another through the
// daemon: every event arrives once, enriched, and on shutdown every
// offset is committed.
func TestKafkaToKafka(t *testing.T) {
	const n, rows = 20_000, 1000
	c := kafkatest.Start(t, 3, 12, "in", "out")
	c.Produce(t, "in", 0, n/2, func(i int) []byte { return kafkatest.Event(i, rows) })
	r := startDaemon(t, kafkaConfig(t, t.TempDir(), c, rows, "", ""))
	c.Produce(t, "in", n/2, n, func(i int) []byte { return kafkatest.Event(i, rows) })

	ty := kafkatest.Check(c.Consume(t, "out", n, 60*time.Second), customerID)
	if len(ty.Bad) > 0 {
		t.Fatalf("%d bad events, first: %s", len(ty.Bad), ty.Bad[0])
	}
	if miss := ty.Missing(n); len(miss) > 0 || ty.Dups > 0 {
		t.Fatalf("%d events missing (first %v), %d duplicates", len(miss), miss[:min(5, len(miss))], ty.Dups)
	}
	// The counter follows the brokers' acknowledgement, which can come
	// after a consumer sees the events.
	if got := waitMetric(t, r.d, `enrichd_kafka_produced_total{output="kafka"}`, n); got != n {
		t.Errorf("kafka_produced_total = %v, want %d", got, n)
	}
	// Commits happened, and were timed; the lag of every partition is
	// known and, everything being delivered, soon 0.
	deadline := time.Now().Add(10 * time.Second)
	for metric(t, r.d, `enrichd_kafka_uncommitted_events{input="kafka"}`) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := metric(t, r.d, `enrichd_kafka_commit_latency_seconds_count{input="kafka"}`); got < 1 {
		t.Errorf("commit latency count = %v, want commits", got)
	}
	if got := metric(t, r.d, `enrichd_kafka_commits_total{input="kafka",result="ok"}`); got < 1 {
		t.Errorf("commits_total ok = %v", got)
	}
	for p := range 12 {
		s := fmt.Sprintf(`enrichd_kafka_consumer_lag{input="kafka",partition="%d",topic="in"}`, p)
		if got := metric(t, r.d, s); got != 0 {
			t.Errorf("%s = %v, want 0", s, got)
		}
		s = fmt.Sprintf(`enrichd_kafka_committed_offset{input="kafka",partition="%d",topic="in"}`, p)
		if got := metric(t, r.d, s); got < 1 {
			t.Errorf("%s = %v, want the partition's end", s, got)
		}
	}
	r.stop(t)
	if lag := c.Lag(t, "enrichd", "in"); lag != 0 {
		t.Errorf("after shutdown the group has %d uncommitted events, want 0", lag)
	}
	// The daemon's Kafka clients are closed (their goroutines would go on
	// reconnecting to the cluster).
	if r.d.Input("kafka").(*input).cl.Context().Err() == nil {
		t.Errorf("the input's client is still open after shutdown")
	}
	if r.d.Output("kafka").(*output).cl.Context().Err() == nil {
		t.Errorf("the output's client is still open after shutdown")
	}
}

// TestKafkaWindow checks that the input never has more than
// max_uncommitted events fetched and not committed, and still finishes.
func TestKafkaWindow(t *testing.T) {
	const n, rows, window = 5000, 100, 300
	c := kafkatest.Start(t, 1, 4, "in", "out")
	c.Produce(t, "in", 0, n, func(i int) []byte { return kafkatest.Event(i, rows) })
	cfg := kafkaConfig(t, t.TempDir(), c, rows, fmt.Sprintf(", max_uncommitted: %d, commit_interval: 10ms", window), "")
	cfg.Pipeline.BatchSize = 64
	r := startDaemon(t, cfg)
	var peak int64
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		k := r.d.Input("kafka").(*input)
		peak = max(peak, k.tr.inflight.Load())
		if metric(t, r.d, `enrichd_kafka_produced_total{output="kafka"}`) >= n {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if peak > window {
		t.Errorf("%d events uncommitted at once, max_uncommitted is %d", peak, window)
	}
	ty := kafkatest.Check(c.Consume(t, "out", n, 30*time.Second), customerID)
	if miss := ty.Missing(n); len(miss) > 0 {
		t.Fatalf("%d events missing", len(miss))
	}
}

// refuseProduce makes the brokers answer every produce to topic with a
// retriable error (NOT_ENOUGH_REPLICAS).
func refuseProduce(c *kafkatest.Cluster, topic string) {
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.NotEnoughReplicas, Count: -1})
}

// TestKafkaDeadLetter: brokers that refuse every produce make the events
// go, after max_attempts, to the dead-letter file, and their offsets are
// committed.
func TestKafkaDeadLetter(t *testing.T) {
	const n, rows = 300, 100
	c := kafkatest.Start(t, 1, 2, "in", "out")
	refuseProduce(c, "out")
	dir := t.TempDir()
	dl := filepath.Join(dir, "dead.jsonl")
	cfg := kafkaConfig(t, dir, c, rows, "", fmt.Sprintf(", max_attempts: 2, backoff_min: 10ms, dead_letter: %q", dl))
	r := startDaemon(t, cfg)
	c.Produce(t, "in", 0, n, func(i int) []byte { return kafkatest.Event(i, rows) })
	deadline := time.Now().Add(60 * time.Second)
	var lines []string
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(dl)
		if lines = strings.Split(strings.TrimSpace(string(b)), "\n"); len(b) > 0 && len(lines) >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	raw := make([][]byte, len(lines))
	for i, l := range lines {
		raw[i] = []byte(l)
	}
	ty := kafkatest.Check(raw, customerID)
	if miss := ty.Missing(n); len(miss) > 0 || len(ty.Bad) > 0 {
		t.Fatalf("dead letter: %d missing, %d bad", len(miss), len(ty.Bad))
	}
	// The counter follows each write to the file.
	if got := waitMetric(t, r.d, `enrichd_kafka_dead_letter_total{output="kafka"}`, n); got != n {
		t.Errorf("kafka_dead_letter_total = %v, want %d", got, n)
	}
	r.stop(t)
	if lag := c.Lag(t, "enrichd", "in"); lag != 0 {
		t.Errorf("%d events uncommitted after the dead letter took them", lag)
	}
}

// TestKafkaDeadLetterTopic: the dead letter can be a topic.
func TestKafkaDeadLetterTopic(t *testing.T) {
	const n, rows = 300, 100
	c := kafkatest.Start(t, 1, 2, "in", "out", "dead")
	refuseProduce(c, "out")
	cfg := kafkaConfig(t, t.TempDir(), c, rows, "", ", max_attempts: 2, backoff_min: 10ms, dead_letter: kafka:dead")
	startDaemon(t, cfg)
	c.Produce(t, "in", 0, n, func(i int) []byte { return kafkatest.Event(i, rows) })
	ty := kafkatest.Check(c.Consume(t, "dead", n, 30*time.Second), customerID)
	if miss := ty.Missing(n); len(miss) > 0 || len(ty.Bad) > 0 {
		t.Fatalf("dead-letter topic: %d missing, %d bad", len(miss), len(ty.Bad))
	}
}

// TestKafkaConfig checks the Kafka settings' validation and that the
// examples parse.
func TestKafkaConfig(t *testing.T) {
	f := func(yml, want string) {
		t.Helper()
		_, err := enrichd.ParseConfig("e.yaml", []byte(yml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
	out := "outputs: [{type: stdout}]\n"
	f("inputs:\n  - {type: kafka, kafka: {brokers: [k:9092], topics: [a]}}\n"+out, "e.yaml:2:26: inputs[0].kafka.group: required")
	f("inputs:\n  - {type: kafka, kafka: {brokers: [k], topics: [a], group: g}}\n"+out, `inputs[0].kafka.brokers: "k": want HOST:PORT`)
	f("inputs:\n  - {type: kafka}\n"+out, "inputs[0].kafka: required for a kafka input")
	f("inputs:\n  - {type: tcp, listen: \"x:1\", kafka: {brokers: [k:1]}}\n"+out, "inputs[0].kafka: only for a kafka input")
	f("inputs:\n  - {type: kafka, kafka: {brokers: [k:1], topics: [a], group: g, start_offset: middle}}\n"+out, "start_offset: must be one of earliest, latest")
	f("inputs:\n  - {type: kafka, kafka: {brokers: [k:1], topics: [a], group: g, assignor: sticky}}\n"+out, "assignor: must be one of cooperative-sticky, range, roundrobin")
	f("inputs:\n  - {type: kafka, kafka: {brokers: [k:1], topics: [a], group: g, sasl: {mechanism: md5, username: u}}}\n"+out, "sasl.mechanism: must be one of plain")
	in := "inputs: [{type: file, path: x}]\n"
	f(in+"outputs:\n  - {type: kafka, kafka: {brokers: [k:1]}}\n", "outputs[0].kafka.topic: required")
	f(in+"outputs:\n  - {type: kafka, kafka: {brokers: [k:1], topic: t, max_attempts: 3}}\n", "max_attempts: needs dead_letter")
	f(in+"outputs:\n  - {type: kafka, kafka: {brokers: [k:1], topic: t, compression: brotli}}\n", "compression: must be one of")
	f(in+"outputs:\n  - {type: kafka, kafka: {brokers: [k:1], topic: t, key_field: \"sd.x\"}}\n", "key_field")
	f(in+"outputs:\n  - {type: kafka, kafka: {brokers: [k:1], topic: t, create_topic: maybe}}\n", "create_topic: must be true or false")
	f(in+"outputs:\n  - {type: kafka, kafka: {brokers: [k:1], topic: t, create_topic: {partitions: 0}}}\n", "create_topic.partitions: must be a positive integer")
	f(in+"outputs:\n  - {type: kafka, kafka: {brokers: [k:1], topic: t, create_topic: {replicas: 3}}}\n", "create_topic")
	cfg, err := enrichd.LoadConfig("../../examples/enrichd-kafka.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if k := cfg.Inputs[0].Settings.(*InputConfig); k.Group != "enrichd" || k.MaxUncommitted != 100000 || len(k.Brokers) != 3 || k.Assignor != "cooperative-sticky" {
		t.Errorf("example input: %+v", k)
	}
	if k := cfg.Outputs[0].Settings.(*OutputConfig); k.KeyField != "cust" || k.MaxAttempts != 10 || k.BatchBytes != 1000000 {
		t.Errorf("example output: %+v", k)
	}
}

// TestKafkaLinger: linger defaults to 1ms, takes 0 (send at once) and
// refuses what kgo would not take, at the setting's line and column.
func TestKafkaLinger(t *testing.T) {
	parse := func(extra string) (*OutputConfig, error) {
		t.Helper()
		cfg, err := enrichd.ParseConfig("e.yaml", []byte("inputs: [{type: file, path: x}]\noutputs:\n  - {type: kafka, kafka: {brokers: [k:1], topic: t"+extra+"}}\n"))
		if err != nil {
			return nil, err
		}
		return cfg.Outputs[0].Settings.(*OutputConfig), nil
	}
	for extra, want := range map[string]time.Duration{"": DefaultLinger, ", linger: 0": 0, ", linger: 0s": 0, ", linger: 25ms": 25 * time.Millisecond, ", linger: 1m": time.Minute} {
		k, err := parse(extra)
		if err != nil {
			t.Fatalf("%q: %v", extra, err)
		}
		if k.Linger != want {
			t.Errorf("%q: linger %v, want %v", extra, k.Linger, want)
		}
	}
	for extra, want := range map[string]string{
		", linger: -1ms": `e.yaml:3:61: outputs[0].kafka.linger: must be a duration such as 5ms, 30s or 10m, not "-1ms"`,
		", linger: 61s":  "e.yaml:3:61: outputs[0].kafka.linger: must be from 0 to 1m",
	} {
		if _, err := parse(extra); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", extra, err, want)
		}
	}
}

// TestKafkaLingerHolds: the output's events wait for linger. With
// linger: 1m, events the input took are not produced 2 s later (kgo's
// own linger, 10ms, would have sent them); shutdown flushes them, and
// the topic then holds each once.
func TestKafkaLingerHolds(t *testing.T) {
	const n, rows = 10, 100
	c := kafkatest.Start(t, 1, 1, "in", "out")
	c.Produce(t, "in", 0, n, func(i int) []byte { return kafkatest.Event(i, rows) })
	r := startDaemon(t, kafkaConfig(t, t.TempDir(), c, rows, "", ", linger: 1m"))
	if got := waitMetric(t, r.d, `enrichd_events_in_total{input="kafka",type="kafka"}`, n); got != n {
		t.Fatalf("events_in_total = %v, want %d", got, n)
	}
	time.Sleep(2 * time.Second)
	if got := metric(t, r.d, `enrichd_kafka_produced_total{output="kafka"}`); got != 0 {
		t.Fatalf("kafka_produced_total = %v 2 s into a linger of 1m, want 0", got)
	}
	r.stop(t)
	ty := kafkatest.Check(c.Consume(t, "out", n, 30*time.Second), customerID)
	if miss := ty.Missing(n); len(miss) > 0 || ty.Dups > 0 || len(ty.Bad) > 0 {
		t.Fatalf("after shutdown: %d missing, %d duplicates, %d bad", len(miss), ty.Dups, len(ty.Bad))
	}
}

// TestKafkaTLSAndSASL runs the input and output against brokers that
// require TLS and each SASL mechanism.
func TestKafkaTLSAndSASL(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			const n, rows = 2000, 100
			c := kafkatest.StartSecure(t, mech, 1, 4, "in", "out")
			sec := fmt.Sprintf(", tls: {ca_file: %q}, sasl: {mechanism: %s, username: %s, password: %s}",
				c.CAFile, strings.ToLower(mech), c.User, c.Pass)
			c.Produce(t, "in", 0, n, func(i int) []byte { return kafkatest.Event(i, rows) })
			startDaemon(t, kafkaConfig(t, t.TempDir(), c.Cluster, rows, sec, sec))
			ty := kafkatest.Check(c.Consume(t, "out", n, 30*time.Second), customerID)
			if miss := ty.Missing(n); len(miss) > 0 || len(ty.Bad) > 0 {
				t.Fatalf("%d events missing, %d bad", len(miss), len(ty.Bad))
			}
		})
	}
	// Settings that can never work stop the start with a clear error.
	c := kafkatest.StartSecure(t, "SCRAM-SHA-512", 1, 1, "in", "out")
	for _, tc := range []struct{ in, want string }{
		{fmt.Sprintf(", tls: {ca_file: %q}, sasl: {mechanism: scram-sha-512, username: enrichd, password: wrong}", c.CAFile), "SASL Authentication failed"},
		{", tls: true, sasl: {mechanism: scram-sha-512, username: enrichd, password: x}", "certificate"},
	} {
		cfg := kafkaConfig(t, t.TempDir(), c.Cluster, 10, tc.in, "")
		if err := newFails(t, cfg); err == nil {
			t.Errorf("%s: started", tc.in)
		} else if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "input kafka") {
			t.Errorf("%s: error %q, want it to name the input and contain %q", tc.in, err, tc.want)
		}
	}
}

// TestKafkaKeysAndTopics: topic_field routes each event to its topic
// (the configured one when the field is absent), and key_field makes the
// message key, so that every event of a key lands in one partition.
func TestKafkaKeysAndTopics(t *testing.T) {
	const n, rows = 3000, 50
	c := kafkatest.Start(t, 3, 6, "in", "out", "t-a", "t-b")
	tenants := []string{"t-a", "t-b", ""}
	c.Produce(t, "in", 0, n, func(i int) []byte {
		ev := kafkatest.Event(i, rows)
		if tn := tenants[i%3]; tn != "" {
			ev = fmt.Appendf(ev, " tenant=%s", tn)
		}
		return ev
	})
	startDaemon(t, kafkaConfig(t, t.TempDir(), c, rows, "", ", topic_field: tenant"))
	cl := c.Client(t, kgo.ConsumeTopics("out", "t-a", "t-b"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	partOf := map[string]int32{} // topic/key -> partition
	got := 0
	for got < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			got++
			var m struct{ ID, Cust, Tenant string }
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatal(err)
			}
			id, _ := strconv.Atoi(m.ID)
			want := tenants[id%3]
			if want == "" {
				want = "out"
			}
			if r.Topic != want || m.Tenant != tenants[id%3] {
				t.Fatalf("event %d (tenant %q) in topic %s", id, m.Tenant, r.Topic)
			}
			if string(r.Key) != m.Cust {
				t.Fatalf("event %d: key %q, want the cust field %q", id, r.Key, m.Cust)
			}
			k := r.Topic + "/" + string(r.Key)
			if p, ok := partOf[k]; ok && p != r.Partition {
				t.Fatalf("key %s in partitions %d and %d", k, p, r.Partition)
			}
			partOf[k] = r.Partition
		})
	}
	if got != n {
		t.Fatalf("%d events out, want %d", got, n)
	}
	parts := map[int32]bool{}
	for _, p := range partOf {
		parts[p] = true
	}
	if len(parts) < 4 {
		t.Errorf("%d keys went to only %d of 6 partitions", len(partOf), len(parts))
	}
}

// TestKafkaFailedStreamOutput: events a file output could not write
// (/dev/full) are never committed, nor counted out; the daemon retries
// them until it gives up at shutdown_timeout. A daemon of the same group
// with a file it can write then reads every one of them again: the file
// holds each event once.
func TestKafkaFailedStreamOutput(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		testfiles.Missing(t, "/dev/full")
	}
	const n, rows = 200, 10
	c := kafkatest.Start(t, 1, 2, "in", "out")
	cfg := kafkaConfig(t, t.TempDir(), c, rows, ", commit_interval: 20ms", "")
	cfg.Outputs = []enrichd.OutputConfig{{Name: "full", Type: "file", Path: "/dev/full", BufferSize: 4096}}
	cfg.ShutdownTimeout = 2 * time.Second
	r := startDaemon(t, cfg)
	c.Produce(t, "in", 0, n, func(i int) []byte { return kafkatest.Event(i, rows) })
	if got := waitMetric(t, r.d, `enrichd_output_errors_total{output="full",reason="enospc",type="file"}`, 2); got < 2 {
		t.Fatalf("%v output errors counted writing to /dev/full, want it retried", got)
	}
	time.Sleep(200 * time.Millisecond) // ten commit intervals
	if got := metric(t, r.d, `enrichd_kafka_commits_total{input="kafka",result="ok"}`); got != 0 {
		t.Errorf("%v commits of events the output failed to write", got)
	}
	if got := metric(t, r.d, `enrichd_events_out_total`); got != 0 {
		t.Errorf("events_out %v, although the only output wrote nothing", got)
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err == nil {
		t.Errorf("Run returned nil, although the output never wrote")
	}
	if r.d.Input("kafka").(*input).cl.Context().Err() == nil {
		t.Errorf("the input's client is still open after the daemon gave up")
	}
	if lag := c.Lag(t, "enrichd", "in"); lag != n {
		t.Errorf("group lag %d after the output failed, want all %d uncommitted", lag, n)
	}

	// The group reads them again.
	out := filepath.Join(t.TempDir(), "out.json")
	cfg2 := kafkaConfig(t, t.TempDir(), c, rows, ", commit_interval: 20ms", "")
	cfg2.Outputs = []enrichd.OutputConfig{{Name: "file", Type: "file", Path: out, BufferSize: 4096}}
	r2 := startDaemon(t, cfg2)
	t0 := time.Now()
	for metric(t, r2.d, `enrichd_events_out_total`) < n && time.Since(t0) < 20*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the next daemon had all after %v", time.Since(t0))
	if got := metric(t, r2.d, `enrichd_events_out_total`); got != n {
		t.Fatalf("the next daemon of the group wrote %v events, want the %d the first could not", got, n)
	}
	r2.stop(t)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ty := kafkatest.Check(bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")), customerID)
	if miss := ty.Missing(n); len(miss) > 0 || ty.Dups > 0 || len(ty.Bad) > 0 {
		t.Errorf("the file holds %d of %d events, %d duplicates, %d bad", n-len(miss), n, ty.Dups, len(ty.Bad))
	}
	if lag := c.Lag(t, "enrichd", "in"); lag != 0 {
		t.Errorf("group lag %d after the next daemon wrote every event, want 0", lag)
	}
}

// TestKafkaCommitRetried: while the coordinator refuses commits, the
// delivered events wait, and the metrics say for how long; when it takes
// them again, the retried commit covers every delivered event, with no
// new input to prompt it.
func TestKafkaCommitRetried(t *testing.T) {
	const n, rows = 500, 50
	c := kafkatest.Start(t, 3, 4, "in", "out")
	refuse := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: "enrichd", Err: kerr.CoordinatorNotAvailable, Count: -1})
	r := startDaemon(t, kafkaConfig(t, t.TempDir(), c, rows, ", commit_interval: 100ms", ""))
	c.Produce(t, "in", 0, n, func(i int) []byte { return kafkatest.Event(i, rows) })
	if got := waitMetric(t, r.d, `enrichd_kafka_produced_total{output="kafka"}`, n); got != n {
		t.Fatalf("%v events produced, want %d", got, n)
	}
	if got := waitMetric(t, r.d, `enrichd_kafka_commits_total{input="kafka",result="error"}`, 3); got < 3 {
		t.Errorf("%v failed commits counted, want the retries", got)
	}
	if age := metric(t, r.d, `enrichd_kafka_delivered_uncommitted_seconds{input="kafka"}`); age <= 0 {
		t.Errorf("delivered_uncommitted_seconds = %v while commits fail, want more than 0", age)
	}
	lagOf := func() (lag float64) {
		for p := range 4 {
			lag += metric(t, r.d, fmt.Sprintf(`enrichd_kafka_consumer_lag{input="kafka",partition="%d",topic="in"}`, p))
		}
		return lag
	}
	if lag := lagOf(); lag != n {
		t.Errorf("consumer_lag sums to %v while nothing is committed, want %d", lag, n)
	}
	refuse.Remove()
	deadline := time.Now().Add(10 * time.Second)
	for c.Lag(t, "enrichd", "in") != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if lag := c.Lag(t, "enrichd", "in"); lag != 0 {
		t.Fatalf("the group has %d events uncommitted 10 s after commits were taken again", lag)
	}
	if lag := lagOf(); lag != 0 {
		t.Errorf("consumer_lag sums to %v with everything committed", lag)
	}
	if age := metric(t, r.d, `enrichd_kafka_delivered_uncommitted_seconds{input="kafka"}`); age != 0 {
		t.Errorf("delivered_uncommitted_seconds = %v with everything committed", age)
	}
}

// TestKafkaTermDuringOutage: SIGTERM while every broker is down, for
// longer than the session timeout: the outputs retry until the brokers
// return, and then the delivered offsets are committed although the
// group has forgotten the member (from outside the group, which has no
// member then). The input has taken every event before the outage, and
// the brokers refuse the second half's produce requests until then, so
// that the outage always finds events to retry.
func TestKafkaTermDuringOutage(t *testing.T) {
	const n, rows = 2000, 50
	gen := func(i int) []byte { return kafkatest.Event(i, rows) }
	c := kafkatest.Start(t, 3, 4, "in", "out")
	cfg := kafkaConfig(t, t.TempDir(), c, rows, ", session_timeout: 6s, heartbeat_interval: 500ms", "")
	r := startDaemon(t, cfg)
	waitMetric(t, r.d, `enrichd_kafka_rebalances_total{input="kafka"}`, 1)
	pr := c.Producer(t, "in")
	pr.Produce(t, 0, n/2, gen)
	if got := waitMetric(t, r.d, `enrichd_kafka_produced_total{output="kafka"}`, n/2); got != n/2 {
		t.Fatalf("kafka_produced_total = %v, want %d", got, n/2)
	}
	refuse := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.NotEnoughReplicas, Count: -1})
	pr.Produce(t, n/2, n, gen)
	if got := waitMetric(t, r.d, `enrichd_events_in_total{input="kafka",type="kafka"}`, n); got != n {
		t.Fatalf("events_in_total = %v, want %d", got, n)
	}
	if got := metric(t, r.d, `enrichd_kafka_produced_total{output="kafka"}`); got != n/2 {
		t.Fatalf("kafka_produced_total = %v while the brokers refuse produce requests, want %d", got, n/2)
	}
	c.StopBrokers()
	refuse.Remove()
	stopped := make(chan struct{})
	go func() {
		r.stop(t)
		close(stopped)
	}()
	time.Sleep(8 * time.Second) // past the session timeout
	c.StartBrokers(t)
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("enrichd did not stop within 30 s of the brokers' return")
	}
	if lag := c.Lag(t, "enrichd", "in"); lag != 0 {
		t.Errorf("after SIGTERM the group has %d events uncommitted, want 0", lag)
	}
	ty := kafkatest.Check(c.Consume(t, "out", n, 30*time.Second), customerID)
	if miss := ty.Missing(n); len(miss) > 0 || len(ty.Bad) > 0 {
		t.Errorf("%d events missing, %d bad", len(miss), len(ty.Bad))
	}
}

// TestKafkaNewPartitions: partitions added to the input topic are
// assigned (the group's leader notices and rebalances) and read.
func TestKafkaNewPartitions(t *testing.T) {
	const n, rows = 1000, 50
	c := kafkatest.Start(t, 3, 2, "in", "out")
	r := startDaemon(t, kafkaConfig(t, t.TempDir(), c, rows, "", ""))
	waitMetric(t, r.d, `enrichd_kafka_rebalances_total{input="kafka"}`, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(c.Client(t)).CreatePartitions(ctx, 2, "in"); err != nil {
		t.Fatal(err)
	}
	c.Produce(t, "in", 0, n, func(i int) []byte { return kafkatest.Event(i, rows) })
	ty := kafkatest.Check(c.Consume(t, "out", n, 60*time.Second), customerID)
	if miss := ty.Missing(n); len(miss) > 0 {
		t.Fatalf("%d of %d events missing (those of the new partitions not read?)", len(miss), n)
	}
	// The new partitions are read in a second generation: the first join
	// and the one after the rebalance.
	if joins := metric(t, r.d, `enrichd_kafka_rebalances_total{input="kafka"}`); joins < 2 {
		t.Errorf("enrichd_kafka_rebalances_total = %v after a rebalance, want at least 2", joins)
	}
	resp, err := http.Get("http://" + r.d.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for p := range 4 {
		if s := fmt.Sprintf(`enrichd_kafka_consumer_lag{input="kafka",partition="%d",topic="in"} `, p); !strings.Contains(string(body), s) {
			t.Errorf("no %s series", s)
		}
	}
}

// TestKafkaEagerAssignor: with assignor: range (eager) a second member
// joining mid-stream takes half the partitions; every event arrives, the
// events read twice stay within max_uncommitted, and after both stop the
// group has committed everything.
func TestKafkaEagerAssignor(t *testing.T) {
	const n, rows, window = 20_000, 100, 2000
	c := kafkatest.Start(t, 3, 6, "in", "out")
	in := fmt.Sprintf(", assignor: range, max_uncommitted: %d, commit_interval: 50ms, heartbeat_interval: 200ms", window)
	r1 := startDaemon(t, kafkaConfig(t, t.TempDir(), c, rows, in, ""))
	c.Produce(t, "in", 0, n/2, func(i int) []byte { return kafkatest.Event(i, rows) })
	waitMetric(t, r1.d, `enrichd_kafka_produced_total{output="kafka"}`, n/4)
	r2 := startDaemon(t, kafkaConfig(t, t.TempDir(), c, rows, in, ""))
	// The second half once the group has rebalanced: the first member
	// reassigned (its second assignment) and the second given its share.
	// Sent before, it can all be read by the first member alone.
	waitMetric(t, r2.d, `enrichd_kafka_rebalances_total{input="kafka"}`, 1)
	waitMetric(t, r1.d, `enrichd_kafka_rebalances_total{input="kafka"}`, 2)
	c.Produce(t, "in", n/2, n, func(i int) []byte { return kafkatest.Event(i, rows) })
	deadline := time.Now().Add(60 * time.Second)
	for c.Lag(t, "enrichd", "in") != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := metric(t, r2.d, `enrichd_kafka_produced_total{output="kafka"}`); got == 0 {
		t.Errorf("the second member produced nothing: it was given no partition")
	}
	r1.stop(t)
	r2.stop(t)
	if lag := c.Lag(t, "enrichd", "in"); lag != 0 {
		t.Errorf("after shutdown the group has %d events uncommitted, want 0", lag)
	}
	ty := kafkatest.Check(c.Consume(t, "out", n, 60*time.Second), customerID)
	if miss := ty.Missing(n); len(miss) > 0 || len(ty.Bad) > 0 {
		t.Fatalf("%d events missing, %d bad", len(miss), len(ty.Bad))
	}
	if ty.Dups > window {
		t.Errorf("%d duplicates, more than max_uncommitted %d", ty.Dups, window)
	}
	t.Logf("%d events, %d duplicates", n, ty.Dups)
}
