package enrichd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

func init() {
	RegisterOutput(OutputKind{Type: "kafka", Settings: func() Settings { return &KafkaOutputConfig{} }, New: newKafkaSink})
}

var (
	mKafkaProduced    = MetricDesc("kafka_produced_total", "Events the brokers acknowledged.", "output")
	mKafkaRetries     = MetricDesc("kafka_produce_retries_total", "Events produced again after a failed attempt.", "output")
	mKafkaDeadLetter  = MetricDesc("kafka_dead_letter_total", "Events sent to the dead letter after max_attempts.", "output")
	mKafkaNotProduced = MetricDesc("kafka_not_produced_total", "Events neither produced nor dead-lettered (logged, or left uncommitted on shutdown).", "output")
)

// kafkaSink produces each event as one message. Write hands it an output
// buffer, which in_flight sender goroutines produce concurrently; the
// buffer goes back to the pool, and its delivery is reported, once the
// brokers acknowledged every event (or the dead letter took it).
//
// A buffer's events are grouped by partition and each group is one
// produce request (kafka.Client.Produce, the request kafka-go's Writer
// makes too, without its per-message overhead). Unkeyed events of a
// buffer all go to one partition, buffers rotating over the partitions,
// and move to the next partition when a produce fails; keyed events go by
// the murmur2 hash of their key, as the Java client places them.
type kafkaSink struct {
	env    *Env
	cfg    *KafkaOutputConfig
	st     *OutputStats
	log    *slog.Logger
	cl     *kafka.Client
	acks   kafka.RequiredAcks
	comp   kafka.Compression
	dl     deadLetter
	keyF   int
	topicF int
	jobs   chan *Buffer
	wg     sync.WaitGroup
	seq    atomic.Uint64
	// quit ends the retries: closed at the shutdown deadline, or when the
	// daemon gives up on shutdown.
	quit     chan struct{}
	quitOnce sync.Once
	closed   chan struct{}

	produced, retries, deadLettered, lost atomic.Uint64

	mu       sync.Mutex
	topics   map[string]*topicMeta // by name; also interns topic_field values
	creating map[string]time.Time  // topics created (create_topic), when
}

func newKafkaSink(o *OutputConfig, env *Env) (Output, error) {
	kc := o.Settings.(*KafkaOutputConfig)
	if err := probeKafka(kc.KafkaConn, env.Log); err != nil {
		return nil, err
	}
	tr, err := kafkaTransport(kc.KafkaConn)
	if err != nil {
		return nil, err
	}
	s := &kafkaSink{
		env: env, cfg: kc, st: env.OutputStats(), log: env.Log,
		cl:   &kafka.Client{Addr: kafka.TCP(kc.Brokers...), Transport: tr, Timeout: 30 * time.Second},
		acks: kafka.RequireAll, comp: kafkaCompression(kc.Compression),
		keyF: env.EventField(kc.KeyField), topicF: env.EventField(kc.TopicField),
		jobs: make(chan *Buffer, kc.InFlight), topics: map[string]*topicMeta{},
		creating: map[string]time.Time{}, quit: make(chan struct{}), closed: make(chan struct{}),
	}
	switch kc.RequiredAcks {
	case "one":
		s.acks = kafka.RequireOne
	case "none":
		s.acks = kafka.RequireNone
	}
	if err := s.checkTopics(); err != nil {
		return nil, err
	}
	if kc.DeadLetter != "" {
		if s.dl, err = newDeadLetter(kc, tr, s.quit); err != nil {
			return nil, fmt.Errorf("dead_letter: %w", err)
		}
	}
	go func() {
		select {
		case <-env.Stop:
			s.stopRetrying()
		case <-s.closed:
		}
	}()
	for range kc.InFlight {
		s.wg.Add(1)
		go s.sender()
	}
	return s, nil
}

// Write queues ob; it blocks while in_flight buffers are being produced.
func (s *kafkaSink) Write(ob *Buffer) error {
	ob.Retain()
	s.jobs <- ob
	return nil
}

// Flush does nothing: each buffer is delivered as it is produced.
func (s *kafkaSink) Flush() error { return nil }

// Holds is how many buffers the output keeps at most: in_flight being
// produced and one waiting.
func (s *kafkaSink) Holds() int { return s.cfg.InFlight + 1 }

func (s *kafkaSink) sender() {
	defer s.wg.Done()
	var sc produceScratch
	for ob := range s.jobs {
		if s.deliver(ob, &sc) {
			ob.Delivery(s.st).Done()
		}
		ob.Release()
	}
}

// prodGroup is the events of a buffer that go to one partition.
type prodGroup struct {
	topic     *topicMeta
	partition int
	events    []int32
	bytes     int
	err       error
}

// produceScratch is a sender's reusable memory.
type produceScratch struct {
	groups []prodGroup
	failed []prodGroup
	wg     sync.WaitGroup
}

// deliver produces ob's events. It returns false only when the daemon
// gave up on shutdown with events undelivered (their input offsets then
// stay uncommitted).
func (s *kafkaSink) deliver(ob *Buffer, sc *produceScratch) bool {
	sticky := int(s.seq.Add(1))
	groups := sc.groups[:0]
	var unplaced []int32 // events whose topic has no metadata yet
	var metaErr error
	var oversize []prodGroup
	for i := range int32(ob.Events) {
		if s.size(ob, int(i)) > s.cfg.BatchBytes {
			oversize = append(oversize, prodGroup{events: []int32{i}})
			continue
		}
		tm, err := s.topicOf(ob, int(i))
		if err != nil {
			unplaced, metaErr = append(unplaced, i), err
			continue
		}
		groups = s.addToGroup(groups, ob, tm, s.partition(ob, int(i), tm, sticky), i)
	}
	if len(unplaced) > 0 {
		groups = append(groups, prodGroup{events: unplaced, err: metaErr})
	}
	sc.groups = groups
	if len(oversize) > 0 && !s.giveUp(ob, oversize, fmt.Errorf("event larger than batch_bytes (%d)", s.cfg.BatchBytes)) {
		return false
	}
	// Retries wait backoff_min, doubling up to backoff_max: 100 ms, 200 ms,
	// 400 ms, 800 ms, then every second by default, so that brokers that
	// return are used within about a second.
	backoff := s.cfg.BackoffMin
	if backoff == 0 {
		backoff = DefaultKafkaBackoffMin
	}
	maxBackoff := s.cfg.BackoffMax
	if maxBackoff == 0 {
		maxBackoff = DefaultKafkaBackoffMax
	}
	pending := groups
	for attempt := 1; ; attempt++ {
		s.produceAll(ob, pending, sc)
		failed := sc.failed[:0]
		var firstErr error
		var refused []prodGroup
		nFailed := 0
		for _, g := range pending {
			if g.err == nil {
				s.produced.Add(uint64(len(g.events)))
				continue
			}
			s.st.Errors.Add(1)
			if permanent(g.err) {
				// No retry can help (the brokers refuse these events).
				refused = append(refused, g)
				continue
			}
			if firstErr == nil {
				firstErr = g.err
			}
			nFailed += len(g.events)
			failed = append(failed, g)
		}
		sc.failed = failed
		if len(refused) > 0 && !s.giveUp(ob, refused, refused[0].err) {
			return false
		}
		if nFailed == 0 {
			s.st.Bytes.Add(uint64(len(ob.B)))
			return true
		}
		if s.cfg.MaxAttempts > 0 && attempt >= s.cfg.MaxAttempts {
			return s.giveUp(ob, failed, firstErr)
		}
		s.retries.Add(uint64(nFailed))
		s.log.Warn("kafka produce failed; retrying", "events", nFailed, "attempt", attempt, "retry_in", backoff, "err", firstErr)
		select {
		case <-s.quit:
			s.lost.Add(uint64(nFailed))
			s.log.Error("kafka: shutdown deadline passed; events not produced stay uncommitted", "events", nFailed, "err", firstErr)
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
		// Place the failed events again: metadata may have changed, and
		// unkeyed events try the next partition.
		sticky++
		var again []prodGroup
		for _, g := range failed {
			for _, i := range g.events {
				tm, err := s.topicOf(ob, int(i))
				if err != nil {
					again = append(again, prodGroup{events: []int32{i}, err: err})
					continue
				}
				again = s.addToGroup(again, ob, tm, s.partition(ob, int(i), tm, sticky), i)
			}
		}
		pending = again
	}
}

// partition returns the partition of tm event i goes to: by its key, or
// else the buffer's sticky choice.
func (s *kafkaSink) partition(ob *Buffer, i int, tm *topicMeta, sticky int) int {
	if s.keyF >= 0 {
		if k := ob.Field(i, s.keyF); len(k) > 0 {
			return murmur2Partition(k, len(tm.parts))
		}
	}
	return sticky % len(tm.parts)
}

// addToGroup adds event i to the group of its partition that has room
// (batch_size, batch_bytes), or to a new one.
func (s *kafkaSink) addToGroup(groups []prodGroup, ob *Buffer, tm *topicMeta, p int, i int32) []prodGroup {
	n := s.size(ob, int(i))
	for j := range groups {
		g := &groups[j]
		if g.partition == p && g.topic == tm && g.err == nil && len(g.events) < s.cfg.BatchSize && g.bytes+n <= s.cfg.BatchBytes {
			g.events = append(g.events, i)
			g.bytes += n
			return groups
		}
	}
	if len(groups) < cap(groups) {
		// Reuse the events slice of an earlier buffer's group.
		groups = groups[:len(groups)+1]
		g := &groups[len(groups)-1]
		*g = prodGroup{topic: tm, partition: p, events: append(g.events[:0], i), bytes: n}
		return groups
	}
	return append(groups, prodGroup{topic: tm, partition: p, events: []int32{i}, bytes: n})
}

// size is what event i adds to a produce request, about.
func (s *kafkaSink) size(ob *Buffer, i int) int {
	n := len(ob.Line(i)) + 32
	if s.keyF >= 0 {
		n += len(ob.Field(i, s.keyF))
	}
	return n
}

// permanent reports whether a produce error is one the brokers will give
// again (a message too large, an invalid record, no authorization).
func permanent(err error) bool {
	var ke kafka.Error
	return errors.As(err, &ke) && !ke.Temporary() && ke != kafka.UnknownTopicOrPartition
}

// produceAll sends one produce request per group, concurrently, and sets
// each group's err.
func (s *kafkaSink) produceAll(ob *Buffer, groups []prodGroup, sc *produceScratch) {
	one := func(g *prodGroup) {
		if g.topic == nil {
			return // no metadata: g.err is set
		}
		var res *kafka.ProduceResponse
		err := retryConn(context.Background(), func() (err error) {
			recs := &lineRecords{ob: ob, events: g.events, keyF: s.keyF}
			res, err = s.cl.Produce(context.Background(), &kafka.ProduceRequest{
				Topic: g.topic.name, Partition: g.partition, RequiredAcks: s.acks, Records: recs, Compression: s.comp,
			})
			return err
		})
		switch {
		case err != nil:
			g.err = err
		case res != nil && res.Error != nil:
			g.err = res.Error
		case res != nil && len(res.RecordErrors) > 0:
			g.err = fmt.Errorf("%d records refused", len(res.RecordErrors))
		default:
			g.err = nil
			return
		}
		s.staleTopic(g.topic)
	}
	if len(groups) == 1 {
		one(&groups[0])
		return
	}
	for j := range groups {
		sc.wg.Add(1)
		go func() {
			defer sc.wg.Done()
			one(&groups[j])
		}()
	}
	sc.wg.Wait()
}

// murmur2Partition places a key as the Java client's default partitioner
// does.
func murmur2Partition(key []byte, n int) int {
	var b kafka.Murmur2Balancer
	return b.Balance(kafka.Message{Key: key}, partitionList(n)...)
}

// partitionList returns 0..n-1 (shared, read-only).
func partitionList(n int) []int {
	if n <= len(partitionIDs) {
		return partitionIDs[:n]
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

var partitionIDs = func() []int {
	ids := make([]int, 1024)
	for i := range ids {
		ids[i] = i
	}
	return ids
}()

// lineRecords reads the events of a group as Kafka records. The record
// and its byte readers are reused: the encoder writes each record before
// it reads the next.
type lineRecords struct {
	ob         *Buffer
	events     []int32
	keyF       int
	next       int
	rec        kafka.Record
	key, value bytesReader
}

func (r *lineRecords) ReadRecord() (*kafka.Record, error) {
	if r.next >= len(r.events) {
		return nil, io.EOF
	}
	i := int(r.events[r.next])
	r.next++
	r.rec = kafka.Record{}
	r.value.Reset(r.ob.Line(i))
	r.rec.Value = &r.value
	if r.keyF >= 0 {
		if k := r.ob.Field(i, r.keyF); len(k) > 0 {
			r.key.Reset(k)
			r.rec.Key = &r.key
		}
	}
	return &r.rec, nil
}

// bytesReader is a kafka.Bytes over a byte slice.
type bytesReader struct{ bytes.Reader }

func (*bytesReader) Close() error { return nil }

// giveUp sends events that cannot be produced to the dead letter; without
// one (only events larger than the brokers take get here then: retries
// are otherwise endless) to the log at error level.
func (s *kafkaSink) giveUp(ob *Buffer, groups []prodGroup, cause error) bool {
	var lines, keys [][]byte
	for _, g := range groups {
		for _, i := range g.events {
			lines = append(lines, ob.Line(int(i)))
			var k []byte
			if s.keyF >= 0 {
				k = ob.Field(int(i), s.keyF)
			}
			keys = append(keys, k)
		}
	}
	if s.dl == nil {
		for _, l := range lines {
			s.log.Error("event not produced", "err", cause, "event", string(l))
		}
		s.lost.Add(uint64(len(lines)))
		return true
	}
	if err := s.dl.write(lines, keys); err != nil {
		s.log.Error("dead letter failed; the events stay uncommitted", "events", len(lines), "err", err)
		s.lost.Add(uint64(len(lines)))
		return false
	}
	s.deadLettered.Add(uint64(len(lines)))
	s.log.Warn("events sent to the dead letter", "events", len(lines), "err", cause)
	return true
}

// stopRetrying makes the senders give up the events they retry.
func (s *kafkaSink) stopRetrying() { s.quitOnce.Do(func() { close(s.quit) }) }

// Close waits for the buffers in flight, until the shutdown deadline,
// then closes the connections.
func (s *kafkaSink) Close() error {
	defer close(s.closed)
	close(s.jobs)
	deadline := time.AfterFunc(time.Until(s.env.ShutdownDeadline()), s.stopRetrying)
	defer deadline.Stop()
	s.wg.Wait()
	var err error
	if s.dl != nil {
		err = s.dl.close()
	}
	s.cl.Transport.(*kafka.Transport).CloseIdleConnections()
	return err
}

func (s *kafkaSink) Stats() *OutputStats { return s.st }

// Collect exports the output's Kafka metrics.
func (s *kafkaSink) Collect(m MetricSink) {
	counter := func(d *prometheus.Desc, v float64, l ...string) { m.Counter(d, uint64(v), l...) }
	n := s.st.Name
	counter(mKafkaProduced, float64(s.produced.Load()), n)
	counter(mKafkaRetries, float64(s.retries.Load()), n)
	counter(mKafkaDeadLetter, float64(s.deadLettered.Load()), n)
	counter(mKafkaNotProduced, float64(s.lost.Load()), n)
}
