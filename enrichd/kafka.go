package enrichd

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// Kafka inputs and outputs.
//
// Delivery is at least once. A Kafka input notes, for each batch, the
// last offset it holds of each partition, in an ackEntry. The entry goes
// with the batch to a worker and with the worker's output buffer to the
// outputs; it is done when every output has the events: the stream
// outputs (stdout, file, tcp) once they have flushed them, a Kafka output
// once the brokers acknowledged them (or, after max_attempts, the dead
// letter took them). The commitTracker keeps the entries in the order the
// input made them; when the oldest are done, their offsets become
// committable, and the committer commits them every commit_interval. So a
// committed offset never passes an event that is not delivered, and a
// crash makes the group read again at most the events fetched and not yet
// committed, which max_uncommitted bounds: the input stops fetching while
// that many are outstanding.

// ackEntry is one Kafka input batch on its way to the outputs.
type ackEntry struct {
	t       *commitTracker
	offs    []partOffset // the last offset of each partition in the batch
	events  int
	pending atomic.Int32 // outputs that have not delivered the batch yet
	done    bool         // under t.mu
}

type topicPart struct {
	topic     string
	partition int
}

type partOffset struct {
	topicPart
	offset int64  // last offset in the batch
	hwm    int64  // the partition's high watermark when it was fetched
	gen    uint64 // the input's generation when it was fetched
}

// committable is the last delivered offset of a partition, and the
// generation it was fetched in.
type committable struct {
	offset int64
	gen    uint64
}

func (e *ackEntry) note(m *kafka.Message, gen uint64) {
	e.events++
	e.t.inflight.Add(1)
	for i := range e.offs {
		if o := &e.offs[i]; o.partition == m.Partition && o.topic == m.Topic {
			o.offset, o.hwm, o.gen = m.Offset, m.HighWaterMark, gen
			return
		}
	}
	e.offs = append(e.offs, partOffset{topicPart{m.Topic, m.Partition}, m.Offset, m.HighWaterMark, gen})
}

// release marks one output's delivery of the batch.
func (e *ackEntry) release() {
	if e.pending.Add(-1) == 0 {
		e.t.complete(e)
	}
}

// commitTracker orders a Kafka input's batches and turns the delivered
// ones into offsets to commit.
type commitTracker struct {
	max      int64
	inflight atomic.Int64 // events fetched and not committed
	kick     chan struct{}

	mu     sync.Mutex
	cond   *sync.Cond  // inflight fell, or the input stops
	q      []*ackEntry // open entries, oldest first
	ready  map[topicPart]committable
	readyN int // events that ready covers
}

func newCommitTracker(max int) *commitTracker {
	t := &commitTracker{max: int64(max), kick: make(chan struct{}, 1), ready: map[topicPart]committable{}}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// open starts the entry of a new batch.
func (t *commitTracker) open() *ackEntry {
	e := &ackEntry{t: t}
	t.mu.Lock()
	t.q = append(t.q, e)
	t.mu.Unlock()
	return e
}

func (t *commitTracker) full() bool { return t.inflight.Load() >= t.max }

// complete records that e is delivered and makes the offsets of the
// delivered prefix of the queue committable.
func (t *commitTracker) complete(e *ackEntry) {
	t.mu.Lock()
	e.done = true
	i := 0
	for ; i < len(t.q) && t.q[i].done; i++ {
		h := t.q[i]
		for _, o := range h.offs {
			if cur, ok := t.ready[o.topicPart]; !ok || o.offset > cur.offset {
				t.ready[o.topicPart] = committable{o.offset, o.gen}
			}
		}
		t.readyN += h.events
		t.q[i] = nil
	}
	t.q = t.q[i:]
	kick := int64(t.readyN) >= t.max/2
	t.mu.Unlock()
	if kick {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
}

// take returns the committable offsets and the events they cover.
func (t *commitTracker) take() (map[topicPart]committable, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.readyN == 0 && len(t.ready) == 0 {
		return nil, 0
	}
	offs, n := t.ready, t.readyN
	t.ready, t.readyN = map[topicPart]committable{}, 0
	return offs, n
}

// committed records a successful commit of n events.
func (t *commitTracker) committed(n int) {
	t.inflight.Add(-int64(n))
	t.mu.Lock()
	t.cond.Broadcast()
	t.mu.Unlock()
}

// restore puts back offsets whose commit failed, to be retried with the
// next ones.
func (t *commitTracker) restore(offs map[topicPart]committable, n int) {
	t.mu.Lock()
	for k, o := range offs {
		if cur, ok := t.ready[k]; !ok || o.offset > cur.offset {
			t.ready[k] = o
		}
	}
	t.readyN += n
	t.mu.Unlock()
}

// wait blocks while the window is full; false if stop was closed.
func (t *commitTracker) wait(stop <-chan struct{}) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.full() {
		select {
		case <-stop:
			return false
		default:
		}
		select {
		case t.kick <- struct{}{}:
		default:
		}
		t.cond.Wait()
	}
	return true
}

func (t *commitTracker) wake() {
	t.mu.Lock()
	t.cond.Broadcast()
	t.mu.Unlock()
}

// ---- input

// partState is what the lag metric knows of one partition.
type partState struct {
	hwm, committed, fetched int64 // committed: next offset to read (-1: none yet)
}

type kafkaInput struct {
	d     *Daemon
	cfg   InputConfig
	stats *inputStats
	fmt   uint8
	r     *kafka.Reader
	tr    *commitTracker
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	stopCh chan struct{}

	commitStop chan struct{}
	commitDone chan struct{}
	finishOnce sync.Once

	commits, commitErrors, staleOffsets atomic.Uint64
	commitLat                           prometheus.Histogram

	// gen counts the group generations the reader has joined, less one:
	// offsets fetched in an earlier generation are not committed, since
	// their partition may belong to another member now (it commits them).
	gen atomic.Uint64

	mu         sync.Mutex
	parts      map[topicPart]*partState
	rebalances uint64
	readErrors uint64
}

func newKafkaInput(d *Daemon, ic InputConfig, st *inputStats) (*kafkaInput, error) {
	kc := ic.Kafka
	if err := probeKafka(kc.KafkaConn, d.log.With("input", ic.Name)); err != nil {
		return nil, err
	}
	dialer, err := kafkaDialer(kc.KafkaConn)
	if err != nil {
		return nil, err
	}
	rc := kafka.ReaderConfig{
		Brokers:               kc.Brokers,
		GroupID:               kc.Group,
		Dialer:                dialer,
		MinBytes:              max(1, kc.MinBytes),
		MaxBytes:              kc.MaxBytes,
		MaxWait:               kc.MaxWait,
		SessionTimeout:        kc.SessionTimeout,
		HeartbeatInterval:     kc.HeartbeatInterval,
		RebalanceTimeout:      kc.RebalanceTimeout,
		QueueCapacity:         1024,
		WatchPartitionChanges: true,
		StartOffset:           kafka.FirstOffset,
		ErrorLogger:           kafkaLogger{d.log.With("input", ic.Name)},
	}
	if rc.MaxBytes == 0 {
		rc.MaxBytes = 16 << 20
	}
	if rc.MaxWait == 0 {
		rc.MaxWait = 500 * time.Millisecond
	}
	if kc.StartOffset == "latest" {
		rc.StartOffset = kafka.LastOffset
	}
	if len(kc.Topics) == 1 {
		rc.Topic = kc.Topics[0]
	} else {
		rc.GroupTopics = kc.Topics
	}
	if err := rc.Validate(); err != nil {
		return nil, err
	}
	k := &kafkaInput{
		d: d, cfg: ic, stats: st, fmt: formatCode(ic.Format), log: d.log.With("input", ic.Name),
		r:          kafka.NewReader(rc),
		tr:         newCommitTracker(kc.MaxUncommitted),
		stopCh:     make(chan struct{}),
		commitStop: make(chan struct{}),
		commitDone: make(chan struct{}),
		parts:      map[topicPart]*partState{},
		commitLat: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "enrichd_kafka_commit_latency_seconds", Help: "Time an offset commit took.",
			ConstLabels: prometheus.Labels{"input": ic.Name},
			Buckets:     prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	return k, nil
}

// serve fetches messages into batches until stop.
func (k *kafkaInput) serve(wg *sync.WaitGroup) {
	defer wg.Done()
	go k.commitLoop()
	d := k.d
	bt := &batcher{d: d, in: k.stats, fmt: k.fmt}
	flushEvery := d.cfg.Pipeline.FlushInterval
	maxSize := k.cfg.MaxMessageSize
	// While a batch is pending, fetches wait at most until it is due.
	var due struct {
		ctx    context.Context
		cancel context.CancelFunc
	}
	endDue := func() {
		if due.cancel != nil {
			due.cancel()
			due.ctx, due.cancel = nil, nil
		}
	}
	defer endDue()
	for {
		if k.tr.full() {
			k.flush(bt)
			endDue()
			if !k.tr.wait(k.stopCh) {
				break
			}
		}
		ctx := k.ctx
		if bt.pending() {
			if due.ctx == nil {
				due.ctx, due.cancel = context.WithDeadline(k.ctx, bt.cur.start.Add(flushEvery))
			}
			ctx = due.ctx
		}
		m, err := k.r.FetchMessage(ctx)
		if err != nil {
			if k.ctx.Err() != nil || errors.Is(err, io.EOF) {
				break
			}
			if due.ctx != nil && errors.Is(err, context.DeadlineExceeded) {
				k.flush(bt)
				endDue()
				continue
			}
			k.stats.frameErrors.Add(1)
			k.log.Warn("kafka fetch failed", "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		msg, trunc := m.Value, false
		for len(msg) > 0 && (msg[len(msg)-1] == '\n' || msg[len(msg)-1] == '\r') {
			msg = msg[:len(msg)-1]
		}
		if len(msg) > maxSize {
			msg, trunc = msg[:maxSize], true
		}
		bt.take()
		if bt.cur.ack == nil {
			bt.cur.ack = k.tr.open()
		}
		bt.cur.ack.note(&m, k.gen.Load())
		if bt.put(msg, trunc) {
			k.noteParts(bt.lastAck)
			endDue()
		}
	}
	k.flush(bt)
}

// flush sends the pending batch and notes its partitions.
func (k *kafkaInput) flush(bt *batcher) {
	if bt.pending() {
		bt.flush()
		k.noteParts(bt.lastAck)
	}
}

// noteParts records what a flushed batch says of its partitions, for the
// lag metric.
func (k *kafkaInput) noteParts(e *ackEntry) {
	if e == nil {
		return
	}
	k.mu.Lock()
	for _, o := range e.offs {
		ps := k.parts[o.topicPart]
		if ps == nil {
			ps = &partState{committed: -1}
			k.parts[o.topicPart] = ps
		}
		ps.hwm, ps.fetched = o.hwm, o.offset+1
	}
	k.mu.Unlock()
}

// commitLoop commits every commit_interval, and sooner when half the
// window is waiting; when stopped it commits once more.
func (k *kafkaInput) commitLoop() {
	defer close(k.commitDone)
	tick := time.NewTicker(k.cfg.Kafka.CommitInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-k.tr.kick:
		case <-k.commitStop:
			k.commit()
			return
		}
		k.commit()
	}
}

func (k *kafkaInput) commit() {
	k.observe()
	offs, n := k.tr.take()
	if offs == nil {
		return
	}
	gen := k.gen.Load()
	msgs := make([]kafka.Message, 0, len(offs))
	for tp, off := range offs {
		if off.gen != gen {
			// Fetched before a rebalance: its partition may have moved.
			// If it did not, a later offset of it is committed soon.
			delete(offs, tp)
			k.staleOffsets.Add(1)
			continue
		}
		msgs = append(msgs, kafka.Message{Topic: tp.topic, Partition: tp.partition, Offset: off.offset})
	}
	if len(msgs) == 0 {
		k.tr.committed(n)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	start := time.Now()
	err := k.r.CommitMessages(ctx, msgs...)
	cancel()
	k.commitLat.Observe(time.Since(start).Seconds())
	if err != nil {
		// Retried with the next commit. Nothing is lost meanwhile: the
		// window keeps the input from running ahead.
		k.commitErrors.Add(1)
		k.tr.restore(offs, n)
		k.log.Warn("kafka offset commit failed; retrying with the next one", "err", err)
		return
	}
	k.commits.Add(1)
	k.tr.committed(n)
	k.mu.Lock()
	for tp, off := range offs {
		if ps := k.parts[tp]; ps != nil {
			ps.committed = off.offset + 1
		}
	}
	k.mu.Unlock()
}

// stop ends fetching; the pending batch is flushed by serve.
func (k *kafkaInput) stop() {
	close(k.stopCh)
	k.cancel()
	k.tr.wake()
}

// finish commits what the outputs delivered and leaves the group. It runs
// after the outputs are drained and closed.
func (k *kafkaInput) finish() {
	k.finishOnce.Do(func() {
		select {
		case <-k.commitDone:
		default:
			select {
			case <-k.stopCh:
				// serve ran: stop its committer, which commits once more.
				close(k.commitStop)
				<-k.commitDone
			default:
			}
		}
		if err := k.r.Close(); err != nil {
			k.log.Warn("closing kafka reader", "err", err)
		}
	})
}

// observe takes the reader's counters (kafka-go reports them since the
// previous call) and notes a new generation.
func (k *kafkaInput) observe() {
	st := k.r.Stats()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.readErrors += uint64(st.Errors)
	if st.Rebalances > 0 {
		// The assignment changed: forget partitions until they are fetched
		// from again.
		k.rebalances += uint64(st.Rebalances)
		k.gen.Store(k.rebalances - 1)
		clear(k.parts)
	}
}

// collect exports the input's Kafka metrics.
func (k *kafkaInput) collect(counter, gauge func(*prometheus.Desc, float64, ...string), ch chan<- prometheus.Metric) {
	k.observe()
	k.mu.Lock()
	defer k.mu.Unlock()
	name := k.cfg.Name
	for tp, ps := range k.parts {
		next := ps.committed
		if next < 0 {
			next = ps.fetched
		}
		p := strconv.Itoa(tp.partition)
		gauge(mKafkaLag, float64(max(0, ps.hwm-next)), name, tp.topic, p)
		if ps.committed >= 0 {
			gauge(mKafkaCommitted, float64(ps.committed), name, tp.topic, p)
		}
	}
	counter(mKafkaRebalances, float64(k.rebalances), name)
	counter(mKafkaReadErrors, float64(k.readErrors), name)
	counter(mKafkaCommits, float64(k.commits.Load()), name, "ok")
	counter(mKafkaCommits, float64(k.commitErrors.Load()), name, "error")
	counter(mKafkaStale, float64(k.staleOffsets.Load()), name)
	gauge(mKafkaUncommitted, float64(k.tr.inflight.Load()), name)
	k.commitLat.Collect(ch)
}

// ---- output

// kafkaSink produces each event as one message. Send hands it an output
// buffer, which in_flight sender goroutines produce concurrently; the
// buffer goes back to the pool, and its input acknowledgement is
// released, once the brokers acknowledged every event (or the dead letter
// took it).
//
// A buffer's events are grouped by partition and each group is one
// produce request (kafka.Client.Produce, the request kafka-go's Writer
// makes too, without its per-message overhead). Unkeyed events of a
// buffer all go to one partition, buffers rotating over the partitions,
// and move to the next partition when a produce fails; keyed events go by
// the murmur2 hash of their key, as the Java client places them.
type kafkaSink struct {
	d      *Daemon
	cfg    KafkaOutputConfig
	st     *outputStats
	log    *slog.Logger
	cl     *kafka.Client
	acks   kafka.RequiredAcks
	comp   kafka.Compression
	dl     deadLetter
	nf     int // out fields per event
	keyF   int
	topicF int
	jobs   chan *outBuf
	wg     sync.WaitGroup
	seq    atomic.Uint64

	produced, retries, deadLettered, lost atomic.Uint64

	mu     sync.Mutex
	topics map[string]*topicMeta // by name; also interns topic_field values
}

// topicMeta is a topic's partition count, fetched from the brokers.
type topicMeta struct {
	name    string
	parts   []int // 0..n-1, for the balancer
	fetched time.Time
	err     error
}

// metadataTTL is how long a topic's partition count is trusted.
const metadataTTL = 30 * time.Second

func newKafkaSink(o OutputConfig, d *Daemon, st *outputStats) (*kafkaSink, error) {
	kc := o.Kafka
	if err := probeKafka(kc.KafkaConn, d.log.With("output", o.Name)); err != nil {
		return nil, err
	}
	tr, err := kafkaTransport(kc.KafkaConn)
	if err != nil {
		return nil, err
	}
	s := &kafkaSink{
		d: d, cfg: kc, st: st, log: d.log.With("output", o.Name),
		cl:   &kafka.Client{Addr: kafka.TCP(kc.Brokers...), Transport: tr, Timeout: 30 * time.Second},
		acks: kafka.RequireAll, comp: kafkaCompression(kc.Compression),
		nf: len(d.pipe.outFields), keyF: d.pipe.outField(kc.KeyField), topicF: d.pipe.outField(kc.TopicField),
		jobs: make(chan *outBuf, kc.InFlight), topics: map[string]*topicMeta{},
	}
	switch kc.RequiredAcks {
	case "one":
		s.acks = kafka.RequireOne
	case "none":
		s.acks = kafka.RequireNone
	}
	if kc.DeadLetter != "" {
		if s.dl, err = newDeadLetter(kc, tr, d.hardStop); err != nil {
			return nil, fmt.Errorf("dead_letter: %w", err)
		}
	}
	for range kc.InFlight {
		s.wg.Add(1)
		go s.sender()
	}
	return s, nil
}

// Send queues ob; it blocks while in_flight buffers are being produced.
func (s *kafkaSink) Send(ob *outBuf) { s.jobs <- ob }

func (s *kafkaSink) sender() {
	defer s.wg.Done()
	var sc produceScratch
	for ob := range s.jobs {
		a := ob.ack
		if s.deliver(ob, &sc) && a != nil {
			a.release()
		}
		s.d.releaseOut(ob)
	}
}

// prodGroup is the events of a buffer that go to one partition.
type prodGroup struct {
	topic     *topicMeta
	partition int
	keyed     bool
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
func (s *kafkaSink) deliver(ob *outBuf, sc *produceScratch) bool {
	sticky := int(s.seq.Add(1))
	groups := sc.groups[:0]
	var unplaced []int32 // events whose topic has no metadata yet
	var metaErr error
	var oversize []prodGroup
	for i := range int32(ob.events) {
		if s.size(ob, int(i)) > s.cfg.BatchBytes {
			oversize = append(oversize, prodGroup{events: []int32{i}})
			continue
		}
		tm, err := s.topicOf(ob, int(i))
		if err != nil {
			unplaced, metaErr = append(unplaced, i), err
			continue
		}
		var p int
		keyed := false
		if s.keyF >= 0 {
			if k := ob.field(int(i), s.keyF, s.nf); len(k) > 0 {
				p, keyed = murmur2Partition(k, len(tm.parts)), true
			}
		}
		if !keyed {
			p = sticky % len(tm.parts)
		}
		groups = s.addToGroup(groups, ob, tm, p, keyed, i)
	}
	if len(unplaced) > 0 {
		groups = append(groups, prodGroup{events: unplaced, err: metaErr})
	}
	sc.groups = groups
	if len(oversize) > 0 && !s.giveUp(ob, oversize, fmt.Errorf("event larger than batch_bytes (%d)", s.cfg.BatchBytes)) {
		return false
	}
	backoff := s.cfg.BackoffMin
	if backoff == 0 {
		backoff = 100 * time.Millisecond
	}
	maxBackoff := s.cfg.BackoffMax
	if maxBackoff == 0 {
		maxBackoff = 5 * time.Second
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
			s.st.errors.Add(1)
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
			s.st.bytes.Add(uint64(len(ob.b)))
			return true
		}
		if s.cfg.MaxAttempts > 0 && attempt >= s.cfg.MaxAttempts {
			return s.giveUp(ob, failed, firstErr)
		}
		s.retries.Add(uint64(nFailed))
		s.log.Warn("kafka produce failed; retrying", "events", nFailed, "attempt", attempt, "retry_in", backoff, "err", firstErr)
		select {
		case <-s.d.hardStop:
			s.lost.Add(uint64(nFailed))
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
				p := sticky % len(tm.parts)
				if g.keyed {
					p = murmur2Partition(ob.field(int(i), s.keyF, s.nf), len(tm.parts))
				}
				again = s.addToGroup(again, ob, tm, p, g.keyed, i)
			}
		}
		pending = again
	}
}

// addToGroup adds event i to the group of its partition that has room
// (batch_size, batch_bytes), or to a new one.
func (s *kafkaSink) addToGroup(groups []prodGroup, ob *outBuf, tm *topicMeta, p int, keyed bool, i int32) []prodGroup {
	n := s.size(ob, int(i))
	for j := range groups {
		g := &groups[j]
		if g.partition == p && g.topic == tm && g.err == nil && len(g.events) < s.cfg.BatchSize && g.bytes+n <= s.cfg.BatchBytes {
			g.keyed = g.keyed || keyed
			g.events = append(g.events, i)
			g.bytes += n
			return groups
		}
	}
	if len(groups) < cap(groups) {
		// Reuse the events slice of an earlier buffer's group.
		groups = groups[:len(groups)+1]
		g := &groups[len(groups)-1]
		*g = prodGroup{topic: tm, partition: p, keyed: keyed, events: append(g.events[:0], i), bytes: n}
		return groups
	}
	return append(groups, prodGroup{topic: tm, partition: p, keyed: keyed, events: []int32{i}, bytes: n})
}

// size is what event i adds to a produce request, about.
func (s *kafkaSink) size(ob *outBuf, i int) int {
	n := len(ob.line(i)) + 32
	if s.keyF >= 0 {
		n += len(ob.field(i, s.keyF, s.nf))
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
func (s *kafkaSink) produceAll(ob *outBuf, groups []prodGroup, sc *produceScratch) {
	one := func(g *prodGroup) {
		if g.topic == nil {
			return // no metadata: g.err is set
		}
		recs := &lineRecords{ob: ob, events: g.events, keyF: s.keyF, nf: s.nf}
		res, err := s.cl.Produce(context.Background(), &kafka.ProduceRequest{
			Topic: g.topic.name, Partition: g.partition, RequiredAcks: s.acks, Records: recs, Compression: s.comp,
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

// topicOf returns the topic event i goes to, with its partitions.
func (s *kafkaSink) topicOf(ob *outBuf, i int) (*topicMeta, error) {
	name := s.cfg.Topic
	var v []byte
	if s.topicF >= 0 {
		v = ob.field(i, s.topicF, s.nf)
	}
	s.mu.Lock()
	var tm *topicMeta
	if len(v) > 0 {
		tm = s.topics[string(v)]
	} else {
		tm = s.topics[name]
	}
	if tm != nil && tm.err == nil && time.Since(tm.fetched) < metadataTTL {
		s.mu.Unlock()
		return tm, nil
	}
	s.mu.Unlock()
	if len(v) > 0 {
		name = string(v)
	}
	return s.fetchTopic(name)
}

// fetchTopic asks the brokers for a topic's partitions.
func (s *kafkaSink) fetchTopic(name string) (*topicMeta, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tm := &topicMeta{name: name, fetched: time.Now()}
	res, err := s.cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{name}})
	switch {
	case err != nil:
		tm.err = err
	case len(res.Topics) != 1 || res.Topics[0].Error != nil:
		tm.err = fmt.Errorf("topic %q: %w", name, kafka.UnknownTopicOrPartition)
		if len(res.Topics) == 1 {
			tm.err = fmt.Errorf("topic %q: %w", name, res.Topics[0].Error)
		}
	case len(res.Topics[0].Partitions) == 0:
		tm.err = fmt.Errorf("topic %q has no partitions", name)
	default:
		tm.parts = make([]int, len(res.Topics[0].Partitions))
		for i := range tm.parts {
			tm.parts[i] = i
		}
	}
	s.mu.Lock()
	if old := s.topics[name]; old == nil || old.err != nil || tm.err == nil {
		if len(s.topics) < 10000 {
			s.topics[name] = tm
		}
	}
	s.mu.Unlock()
	return tm, tm.err
}

// staleTopic makes the next event of the topic fetch its metadata again.
func (s *kafkaSink) staleTopic(tm *topicMeta) {
	s.mu.Lock()
	tm.fetched = time.Time{}
	s.mu.Unlock()
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
	ob         *outBuf
	events     []int32
	keyF, nf   int
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
	r.value.Reset(r.ob.line(i))
	r.rec.Value = &r.value
	if r.keyF >= 0 {
		if k := r.ob.field(i, r.keyF, r.nf); len(k) > 0 {
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
func (s *kafkaSink) giveUp(ob *outBuf, groups []prodGroup, cause error) bool {
	var lines, keys [][]byte
	for _, g := range groups {
		for _, i := range g.events {
			lines = append(lines, ob.line(int(i)))
			var k []byte
			if s.keyF >= 0 {
				k = ob.field(int(i), s.keyF, s.nf)
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

// Close waits for the buffers in flight.
func (s *kafkaSink) Close() error {
	close(s.jobs)
	s.wg.Wait()
	if s.dl != nil {
		return s.dl.close()
	}
	return nil
}

func (s *kafkaSink) Stats() *outputStats { return s.st }

func (s *kafkaSink) collect(counter func(*prometheus.Desc, float64, ...string)) {
	n := s.st.name
	counter(mKafkaProduced, float64(s.produced.Load()), n)
	counter(mKafkaRetries, float64(s.retries.Load()), n)
	counter(mKafkaDeadLetter, float64(s.deadLettered.Load()), n)
	counter(mKafkaNotProduced, float64(s.lost.Load()), n)
}

// deadLetter keeps events that could not be produced.
type deadLetter interface {
	write(lines, keys [][]byte) error
	close() error
}

func newDeadLetter(kc KafkaOutputConfig, tr *kafka.Transport, stop <-chan struct{}) (deadLetter, error) {
	if topic, ok := strings.CutPrefix(kc.DeadLetter, "kafka:"); ok {
		return &topicDeadLetter{stop: stop, w: &kafka.Writer{
			Addr: kafka.TCP(kc.Brokers...), Topic: topic, Balancer: &kafka.RoundRobin{},
			BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: tr,
		}}, nil
	}
	f, err := os.OpenFile(kc.DeadLetter, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &fileDeadLetter{f: f}, nil
}

// fileDeadLetter appends the events as JSON lines and syncs the file.
type fileDeadLetter struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
}

func (l *fileDeadLetter) write(lines, _ [][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = l.buf[:0]
	for _, v := range lines {
		l.buf = append(append(l.buf, v...), '\n')
	}
	if _, err := l.f.Write(l.buf); err != nil {
		return err
	}
	return l.f.Sync()
}

func (l *fileDeadLetter) close() error { return l.f.Close() }

// topicDeadLetter produces to a dead-letter topic, retrying until it
// succeeds or the daemon gives up on shutdown.
type topicDeadLetter struct {
	w    *kafka.Writer
	stop <-chan struct{}
}

func (l *topicDeadLetter) write(lines, keys [][]byte) error {
	msgs := make([]kafka.Message, len(lines))
	for i := range lines {
		msgs[i] = kafka.Message{Key: keys[i], Value: lines[i]}
	}
	backoff := 100 * time.Millisecond
	for {
		err := l.w.WriteMessages(context.Background(), msgs...)
		if err == nil {
			return nil
		}
		select {
		case <-l.stop:
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (l *topicDeadLetter) close() error { return l.w.Close() }

// ---- connection settings

// probeKafka connects to the brokers once, so that settings that can
// never work (a wrong password, an untrusted certificate) stop the start
// with a clear error. Brokers that cannot be reached are only logged: the
// clients keep trying, and a node must be able to start while a broker is
// down.
func probeKafka(c KafkaConn, log *slog.Logger) error {
	dialer, err := kafkaDialer(c)
	if err != nil {
		return err
	}
	dialer.Timeout = 5 * time.Second
	var errs []error
	for _, b := range c.Brokers {
		conn, err := dialer.Dial("tcp", b)
		if err == nil {
			conn.Close()
			return nil
		}
		var ke kafka.Error
		var ce *tls.CertificateVerificationError
		var ue x509.UnknownAuthorityError
		var he x509.HostnameError
		if errors.As(err, &ke) && (ke == kafka.SASLAuthenticationFailed || ke == kafka.UnsupportedSASLMechanism || ke == kafka.IllegalSASLState) ||
			errors.As(err, &ce) || errors.As(err, &ue) || errors.As(err, &he) {
			return fmt.Errorf("broker %s: %w", b, err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", b, err))
	}
	log.Warn("no Kafka broker reachable yet; retrying in the background", "err", errors.Join(errs...))
	return nil
}

func kafkaTLS(c *TLSConfig) (*tls.Config, error) {
	if c == nil {
		return nil, nil
	}
	tc := &tls.Config{ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file: %s holds no PEM certificate", c.CAFile)
		}
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

func kafkaSASL(c *SASLConfig) (sasl.Mechanism, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Mechanism {
	case "plain":
		return plain.Mechanism{Username: c.Username, Password: c.Password}, nil
	case "scram-sha-256":
		return scram.Mechanism(scram.SHA256, c.Username, c.Password)
	case "scram-sha-512":
		return scram.Mechanism(scram.SHA512, c.Username, c.Password)
	}
	return nil, fmt.Errorf("sasl: unknown mechanism %q", c.Mechanism)
}

func kafkaDialer(c KafkaConn) (*kafka.Dialer, error) {
	tc, err := kafkaTLS(c.TLS)
	if err != nil {
		return nil, err
	}
	mech, err := kafkaSASL(c.SASL)
	if err != nil {
		return nil, err
	}
	return &kafka.Dialer{ClientID: clientID(c), Timeout: 10 * time.Second, DualStack: true, TLS: tc, SASLMechanism: mech}, nil
}

func kafkaTransport(c KafkaConn) (*kafka.Transport, error) {
	tc, err := kafkaTLS(c.TLS)
	if err != nil {
		return nil, err
	}
	mech, err := kafkaSASL(c.SASL)
	if err != nil {
		return nil, err
	}
	return &kafka.Transport{ClientID: clientID(c), TLS: tc, SASL: mech, DialTimeout: 10 * time.Second}, nil
}

func clientID(c KafkaConn) string {
	if c.ClientID != "" {
		return c.ClientID
	}
	return "enrichd"
}

func kafkaCompression(s string) kafka.Compression {
	switch s {
	case "gzip":
		return kafka.Gzip
	case "snappy":
		return kafka.Snappy
	case "lz4":
		return kafka.Lz4
	case "zstd":
		return kafka.Zstd
	}
	return 0
}

// kafkaLogger sends kafka-go's error log to slog.
type kafkaLogger struct{ l *slog.Logger }

func (k kafkaLogger) Printf(format string, args ...any) {
	k.l.Warn("kafka: " + fmt.Sprintf(format, args...))
}
