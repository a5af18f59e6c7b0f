package enrichd

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// kafkaInput is a member of a consumer group (kafka_group.go) that
// fetches its assigned partitions (kafka_fetch.go), batches their
// messages for the workers, and commits the offsets the outputs delivered
// (kafka_commit.go).
//
// When a generation ends, the input stops fetching; when the next one
// assigns it a partition it had, it goes on from where it was (or from
// the group's committed offset, if another member committed past that
// meanwhile), so that a rebalance or a broker outage makes it read
// nothing twice. A partition new to it starts at the group's committed
// offset, or at start_offset when the group has none.
type kafkaInput struct {
	env   *Env
	cfg   *InputConfig
	kc    *KafkaInputConfig
	stats *InputStats
	log   *slog.Logger
	cur   *ackEntry // the acknowledgement of the batch being filled
	done  chan struct{}

	cl        *kafka.Client // group requests, commits and offset listings
	dialer    *kafka.Dialer // the partition readers'
	readerLog *limitedLogger
	maxBytes  int
	maxWait   time.Duration
	group     *kafkaGroup
	tr        *commitTracker
	msgs      chan fetched

	stopCh     chan struct{}
	stopping   atomic.Bool
	started    atomic.Bool
	commitStop chan struct{}
	commitDone chan struct{}
	commitMu   sync.Mutex // one commit at a time
	closing    sync.WaitGroup
	finishOnce sync.Once

	commits, commitErrors, staleOffsets, fetchErrors atomic.Uint64
	commitLat                                        prometheus.Histogram
	commitStreak, fetchStreak                        streak

	mu       sync.Mutex
	fetchers map[topicPart]*partFetcher
	// pos is, for the partitions of the last generation, the offset after
	// the last message the input took.
	pos map[topicPart]int64
	// committed is the group's committed offset of each partition as the
	// input last knew it: from the generation's start, its own commits and
	// the lag metric's reads (-1: none).
	committed map[topicPart]int64
	lag       lagState
}

func init() {
	RegisterInput(InputKind{Type: "kafka", Format: FormatSyslog, Settings: func() Settings { return &KafkaInputConfig{} }, New: newKafkaInput})
}

var (
	mKafkaLag         = MetricDesc("kafka_consumer_lag", "High watermark minus the group's committed offset, as the brokers report them at the scrape, by assigned partition.", "input", "topic", "partition")
	mKafkaCommitted   = MetricDesc("kafka_committed_offset", "The group's committed offset (the next to read), by assigned partition.", "input", "topic", "partition")
	mKafkaCommits     = MetricDesc("kafka_commits_total", "Offset commits by result.", "input", "result")
	mKafkaUncommitted = MetricDesc("kafka_uncommitted_events", "Events fetched and not yet committed (at most max_uncommitted).", "input")
	mKafkaStale       = MetricDesc("kafka_stale_offsets_total", "Delivered offsets not committed because a rebalance came between their fetch and the commit (the partition's owner reads them again).", "input")
	mKafkaRebalances  = MetricDesc("kafka_rebalances_total", "Consumer group generations the input joined: its first join, then one more after each rebalance, lost generation or membership the coordinator forgot (a failed join counts in enrichd_kafka_fetch_errors_total).", "input")
	mKafkaReadErrors  = MetricDesc("kafka_fetch_errors_total", "Fetch and group errors reported by the consumer.", "input")
)

func newKafkaInput(ic *InputConfig, env *Env) (Input, error) {
	kc := ic.Settings.(*KafkaInputConfig)
	log := env.Log
	if err := probeKafka(kc.KafkaConn, log); err != nil {
		return nil, err
	}
	dialer, err := kafkaDialer(kc.KafkaConn)
	if err != nil {
		return nil, err
	}
	tr, err := kafkaTransport(kc.KafkaConn)
	if err != nil {
		return nil, err
	}
	k := &kafkaInput{
		env: env, cfg: ic, kc: kc, stats: env.InputStats(), log: log, done: make(chan struct{}),
		cl:         &kafka.Client{Addr: kafka.TCP(kc.Brokers...), Transport: tr, Timeout: 10 * time.Second},
		dialer:     dialer,
		readerLog:  &limitedLogger{l: log, every: 10 * time.Second},
		maxBytes:   kc.MaxBytes,
		maxWait:    kc.MaxWait,
		tr:         newCommitTracker(kc.MaxUncommitted),
		msgs:       make(chan fetched, 1024),
		stopCh:     make(chan struct{}),
		commitStop: make(chan struct{}),
		commitDone: make(chan struct{}),
		fetchers:   map[topicPart]*partFetcher{},
		pos:        map[topicPart]int64{},
		committed:  map[topicPart]int64{},
		commitLat: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "enrichd_kafka_commit_latency_seconds", Help: "Time an offset commit took.",
			ConstLabels: prometheus.Labels{"input": ic.Name},
			Buckets:     prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	if k.maxBytes == 0 {
		k.maxBytes = 16 << 20
	}
	if k.maxWait == 0 {
		k.maxWait = 500 * time.Millisecond
	}
	if max(1, kc.MinBytes) > k.maxBytes {
		return nil, fmt.Errorf("min_bytes (%d) is more than max_bytes (%d)", kc.MinBytes, k.maxBytes)
	}
	k.group = newKafkaGroup(k.cl, *kc, log)
	k.group.assign = k.assign
	k.group.revoke = k.revoke
	return k, nil
}

// assign starts fetching the partitions of a new generation.
func (k *kafkaInput) assign(gen *generation) {
	k.mu.Lock()
	for tp := range k.pos {
		if !gen.owns(tp) {
			delete(k.pos, tp) // another member's meanwhile, perhaps
		}
	}
	starts := make(map[topicPart]int64, len(gen.parts))
	for _, tp := range gen.parts {
		c := gen.committed[tp]
		k.committed[tp] = c
		start := c
		if p, ok := k.pos[tp]; ok && p > start {
			start = p // had it in the last generation: go on
		}
		if start < 0 {
			start = kafka.FirstOffset
			if k.kc.StartOffset == "latest" {
				start = kafka.LastOffset
			}
		}
		starts[tp] = start
	}
	k.lag.assigned(gen.parts)
	k.mu.Unlock()
	if k.stopping.Load() {
		return
	}
	for _, tp := range gen.parts {
		k.startFetcher(tp, starts[tp])
	}
}

// revoke stops fetching when a generation ends, keeping where each
// partition was; on a rebalance it commits what was delivered first.
func (k *kafkaInput) revoke(gen *generation, commit bool) {
	pos := k.stopFetchers()
	k.mu.Lock()
	for tp, p := range pos {
		k.pos[tp] = p
	}
	k.mu.Unlock()
	if commit {
		// commit counts and logs a failure; the offsets wait for the
		// next generation.
		_ = k.commit()
	}
}

// committedAt returns the group's committed offset of tp as last known.
func (k *kafkaInput) committedAt(tp topicPart) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.committed[tp]; ok {
		return c
	}
	return -1
}

// setCommitted records a commit of tp up to off.
func (k *kafkaInput) setCommitted(tp topicPart, off int64) {
	k.mu.Lock()
	if c, ok := k.committed[tp]; !ok || off > c {
		k.committed[tp] = off
	}
	k.mu.Unlock()
}

func (k *kafkaInput) Start()                { go k.serve() }
func (k *kafkaInput) Stop(time.Time)        { k.stop() }
func (k *kafkaInput) Done() <-chan struct{} { return k.done }
func (k *kafkaInput) Addr() net.Addr        { return nil }
func (k *kafkaInput) Stats() *InputStats    { return k.stats }

// Close commits what the outputs delivered and leaves the group.
func (k *kafkaInput) Close() error {
	k.finish()
	return nil
}

// serve joins the group and batches the fetched messages until stop.
func (k *kafkaInput) serve() {
	defer close(k.done)
	k.started.Store(true)
	go k.group.run()
	go k.commitLoop()
	bt := k.env.Batcher(k.stats, k.cfg.Format, false)
	maxSize := k.cfg.MaxMessageSize
	// A pending batch is flushed when due.
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
loop:
	for {
		if k.tr.full() {
			bt.Flush()
			due.Stop()
			if !k.tr.wait(k.stopCh) {
				break
			}
		}
		var it fetched
		select {
		case it = <-k.msgs:
		case <-due.C:
			bt.Flush()
			continue
		case <-k.stopCh:
			break loop
		}
		f, m := it.f, &it.m
		if f.stopped.Load() {
			continue // revoked: the next owner fetches it again
		}
		f.next.Store(m.Offset + 1)
		f.hwm.Store(m.HighWaterMark)
		if f.first.Load() < 0 {
			f.first.Store(m.Offset)
		}
		msg, trunc := m.Value, false
		for len(msg) > 0 && (msg[len(msg)-1] == '\n' || msg[len(msg)-1] == '\r') {
			msg = msg[:len(msg)-1]
		}
		if len(msg) > maxSize {
			msg, trunc = msg[:maxSize], true
		}
		if !bt.Pending() {
			bt.Take()
			due.Reset(time.Until(bt.Due()))
		}
		if bt.Ack() == nil {
			k.cur = k.tr.open()
			bt.SetAck(&k.cur.Ack)
		}
		k.cur.note(m)
		if bt.Put(msg, trunc) {
			due.Stop()
		}
	}
	bt.Flush()
}

// stop ends fetching; the pending batch is flushed by serve. The group
// membership goes on, without joining a new generation, until finish has
// committed what the outputs delivered.
func (k *kafkaInput) stop() {
	k.stopping.Store(true)
	k.group.drain()
	close(k.stopCh)
	k.stopFetchers()
	k.tr.wake()
}

// finish commits what the outputs delivered and leaves the group. It runs
// after the outputs are drained and closed.
func (k *kafkaInput) finish() {
	k.finishOnce.Do(func() {
		started := k.started.Load()
		if started {
			close(k.commitStop)
			<-k.commitDone
			k.finalCommit(k.env.ShutdownDeadline())
		}
		k.group.leave(started)
		k.stopFetchers()
		k.closing.Wait()
		k.cl.Transport.(*kafka.Transport).CloseIdleConnections()
	})
}

// Collect exports the input's Kafka metrics.
func (k *kafkaInput) Collect(m MetricSink) {
	counter := func(d *prometheus.Desc, v float64, l ...string) { m.Counter(d, uint64(v), l...) }
	gauge := m.Gauge
	name := k.cfg.Name
	k.collectLag(gauge)
	counter(mKafkaRebalances, float64(k.group.joins.Load()), name)
	counter(mKafkaReadErrors, float64(k.fetchErrors.Load()+k.group.failures.Load()), name)
	counter(mKafkaCommits, float64(k.commits.Load()), name, "ok")
	counter(mKafkaCommits, float64(k.commitErrors.Load()), name, "error")
	counter(mKafkaStale, float64(k.staleOffsets.Load()), name)
	gauge(mKafkaUncommitted, float64(k.tr.inflight.Load()), name)
	age := 0.0
	if old := k.tr.oldest(); !old.IsZero() {
		age = time.Since(old).Seconds()
	}
	gauge(mKafkaDeliveredAge, age, name)
	m.Collect(k.commitLat)
}
