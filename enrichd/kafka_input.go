package enrichd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/segmentio/kafka-go"
)

func init() {
	RegisterInput(InputKind{Type: "kafka", Format: FormatSyslog, Settings: func() Settings { return &KafkaInputConfig{} }, New: newKafkaInput})
}

var (
	mKafkaLag         = desc("kafka_consumer_lag", "High watermark minus the next offset to commit, by partition (partitions of the current assignment that were fetched from).", "input", "topic", "partition")
	mKafkaCommitted   = desc("kafka_committed_offset", "Last committed offset (the next to read), by partition.", "input", "topic", "partition")
	mKafkaCommits     = desc("kafka_commits_total", "Offset commits by result.", "input", "result")
	mKafkaUncommitted = desc("kafka_uncommitted_events", "Events fetched and not yet committed (at most max_uncommitted).", "input")
	mKafkaStale       = desc("kafka_stale_offsets_total", "Delivered offsets not committed because a rebalance came between their fetch and the commit (the partition's owner reads them again).", "input")
	mKafkaRebalances  = desc("kafka_rebalances_total", "Consumer group rebalances seen by the input.", "input")
	mKafkaReadErrors  = desc("kafka_fetch_errors_total", "Fetch and group errors reported by the consumer.", "input")
)

// ackEntry is one Kafka input batch on its way to the outputs: the
// batch's acknowledgement (Ack) tells it when every output has delivered
// the batch.
type ackEntry struct {
	Ack
	t      *commitTracker
	offs   []partOffset // the last offset of each partition in the batch
	events int
	done   bool // under t.mu
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

// Delivered is called once every output has delivered the batch.
func (e *ackEntry) Delivered() { e.t.complete(e) }

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
	e.Ack.Init(e)
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

// partState is what the lag metric knows of one partition.
type partState struct {
	hwm, committed, fetched int64 // committed: next offset to read (-1: none yet)
}

type kafkaInput struct {
	env   *Env
	cfg   *InputConfig
	stats *inputStats
	r     *kafka.Reader
	tr    *commitTracker
	log   *slog.Logger
	cur   *ackEntry // the acknowledgement of the batch being filled
	done  chan struct{}

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

func newKafkaInput(ic *InputConfig, env *Env) (Input, error) {
	kc := ic.Settings.(*KafkaInputConfig)
	if err := probeKafka(kc.KafkaConn, env.Log); err != nil {
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
		ErrorLogger:           kafkaLogger{env.Log},
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
		env: env, cfg: ic, stats: env.InputStats(), log: env.Log, done: make(chan struct{}),
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

func (k *kafkaInput) Start()                { go k.serve() }
func (k *kafkaInput) Stop(time.Time)        { k.stop() }
func (k *kafkaInput) Done() <-chan struct{} { return k.done }
func (k *kafkaInput) Addr() net.Addr        { return nil }
func (k *kafkaInput) Stats() *inputStats    { return k.stats }

// Close commits what the outputs delivered and leaves the group.
func (k *kafkaInput) Close() error {
	k.finish()
	return nil
}

// serve fetches messages into batches until stop.
func (k *kafkaInput) serve() {
	defer close(k.done)
	go k.commitLoop()
	bt := k.env.Batcher(k.stats, k.cfg.Format, false)
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
		if bt.Pending() {
			if due.ctx == nil {
				due.ctx, due.cancel = context.WithDeadline(k.ctx, bt.Due())
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
		bt.Take()
		if bt.Ack() == nil {
			k.cur = k.tr.open()
			bt.SetAck(&k.cur.Ack)
		}
		k.cur.note(&m, k.gen.Load())
		if bt.Put(msg, trunc) {
			k.noteParts(k.cur)
			endDue()
		}
	}
	k.flush(bt)
}

// flush sends the pending batch and notes its partitions.
func (k *kafkaInput) flush(bt *Batcher) {
	if bt.Pending() {
		bt.Flush()
		k.noteParts(k.cur)
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
	tick := time.NewTicker(k.cfg.Settings.(*KafkaInputConfig).CommitInterval)
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
		k.rebalances += uint64(st.Rebalances)
		if gen := k.rebalances - 1; gen != k.gen.Load() {
			// The assignment changed: forget partitions until they are
			// fetched from again.
			k.gen.Store(gen)
			clear(k.parts)
		}
	}
}

// Collect exports the input's Kafka metrics.
func (k *kafkaInput) Collect(m metricSink) {
	counter := func(d *prometheus.Desc, v float64, l ...string) { m.counter(d, uint64(v), l...) }
	gauge := m.gauge
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
	m.collect(k.commitLat)
}
