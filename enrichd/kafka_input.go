package enrichd

import (
	"fmt"
	"log/slog"
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
	d     *Daemon
	cfg   InputConfig
	stats *inputStats
	fmt   uint8
	log   *slog.Logger

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

func newKafkaInput(d *Daemon, ic InputConfig, st *inputStats) (*kafkaInput, error) {
	kc := ic.Kafka
	log := d.log.With("input", ic.Name)
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
		d: d, cfg: ic, stats: st, fmt: formatCode(ic.Format), log: log,
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
	k.group = newKafkaGroup(k.cl, kc, log)
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
			if k.cfg.Kafka.StartOffset == "latest" {
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
		k.commit() // on failure the offsets wait for the next generation
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

// serve joins the group and batches the fetched messages until stop.
func (k *kafkaInput) serve(wg *sync.WaitGroup) {
	defer wg.Done()
	k.started.Store(true)
	go k.group.run()
	go k.commitLoop()
	d := k.d
	bt := &batcher{d: d, in: k.stats, fmt: k.fmt}
	flushEvery := d.cfg.Pipeline.FlushInterval
	maxSize := k.cfg.MaxMessageSize
	// A pending batch is flushed when due.
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
loop:
	for {
		if k.tr.full() {
			bt.flush()
			due.Stop()
			if !k.tr.wait(k.stopCh) {
				break
			}
		}
		var it fetched
		select {
		case it = <-k.msgs:
		case <-due.C:
			bt.flush()
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
		if !bt.pending() {
			bt.take()
			due.Reset(time.Until(bt.cur.start.Add(flushEvery)))
		}
		if bt.cur.ack == nil {
			bt.cur.ack = k.tr.open()
		}
		bt.cur.ack.note(m)
		if bt.put(msg, trunc) {
			due.Stop()
		}
	}
	bt.flush()
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
			k.finalCommit(k.d.shutdownDeadline())
		}
		k.group.leave(started)
		k.stopFetchers()
		k.closing.Wait()
		k.cl.Transport.(*kafka.Transport).CloseIdleConnections()
	})
}

// collect exports the input's Kafka metrics.
func (k *kafkaInput) collect(counter, gauge func(*prometheus.Desc, float64, ...string), ch chan<- prometheus.Metric) {
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
	k.commitLat.Collect(ch)
}
