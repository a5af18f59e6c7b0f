package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lutkit/lutkit/enrichd"
)

func init() {
	enrichd.RegisterOutput(enrichd.OutputKind{Type: "kafka", ExactlyOnce: true, Settings: func() enrichd.Settings { return &OutputConfig{} }, New: newOutput})
}

var (
	mProduced    = enrichd.MetricDesc("kafka_produced_total", "Events the brokers acknowledged (with delivery: exactly_once, those of aborted transactions too).", "output")
	mRetries     = enrichd.MetricDesc("kafka_produce_retries_total", "Failed attempts of the producer: connections to a broker that failed, and produce requests without an answer (the producer sends their records again).", "output")
	mDeadLetter  = enrichd.MetricDesc("kafka_dead_letter_total", "Events sent to the dead letter after the producer gave up on them.", "output")
	mNotProduced = enrichd.MetricDesc("kafka_not_produced_total", "Events neither produced nor dead-lettered (logged; their input offsets stay uncommitted).", "output")
)

// output produces each event of a buffer as one record, with kgo's
// producer, which batches the records by partition, retries what the
// brokers refuse for a while (max_attempts, backoff_min, backoff_max) and
// calls a promise for each. A buffer is delivered (Delivery.Done) once the
// brokers acknowledged all of its events, or the dead letter took those
// the producer gave up on; a buffer with events neither produced nor
// dead-lettered is never reported, so that its input offsets stay
// uncommitted.
//
// The records are a buffer's own: a job holds one kgo.Record per event,
// reused from buffer to buffer, whose value and key are the buffer's line
// and key field (no copy), and the buffer is retained until the last
// promise.
type output struct {
	env *enrichd.Env
	cfg *OutputConfig
	st  *enrichd.OutputStats
	log *slog.Logger
	cl  *kgo.Client
	// pcl produces: cl, or with delivery: exactly_once the input's
	// transactional client (eos.go), set before the daemon starts.
	pcl    *kgo.Client
	eos    bool
	adm    *kadm.Client
	dl     deadLetter
	keyF   int
	topicF int
	free   chan *job // jobs not in use: in_flight of them
	failed chan *job // jobs with records the producer gave up on
	wg     sync.WaitGroup
	dlDone chan struct{}
	// ctx ends the retries: cancelled at the shutdown deadline, or when
	// the daemon gives up on shutdown.
	ctx    context.Context
	cancel context.CancelFunc
	closed chan struct{}

	produced, deadLettered, lost atomic.Uint64
	hooks                        *produceHooks

	mu       sync.Mutex
	names    map[string]string    // topic_field values, interned
	known    map[string]bool      // topics that exist or were created
	creating map[string]time.Time // topics created (create_topic), when
}

// job is one buffer being produced.
type job struct {
	o       *output
	ob      *enrichd.Buffer
	recs    []kgo.Record
	left    atomic.Int32
	promise func(*kgo.Record, error)
	mu      sync.Mutex
	gaveUp  []*kgo.Record // records the producer gave up on
	cause   error
}

func newOutput(oc *enrichd.OutputConfig, env *enrichd.Env) (enrichd.Output, error) {
	kc := oc.Settings.(*OutputConfig)
	opts, watch, err := clientOpts(kc.Conn, env.Log)
	if err != nil {
		return nil, err
	}
	bmin, bmax := kc.BackoffMin, kc.BackoffMax
	if bmin <= 0 {
		bmin = DefaultBackoffMin
	}
	bmax = max(bmax, bmin)
	prod := len(opts)
	opts = append(opts,
		kgo.DefaultProduceTopic(kc.Topic),
		kgo.ProducerBatchMaxBytes(int32(min(kc.BatchBytes, 1<<30))),
		kgo.ProducerLinger(kc.Linger),
		kgo.RetryBackoffFn(backoffFn(bmin, bmax)),
		kgo.MetadataMinAge(time.Second),
	)
	hooks := &produceHooks{}
	opts = append(opts, kgo.WithHooks(hooks))
	switch kc.RequiredAcks {
	case "one":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "none":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	switch kc.Compression {
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	if kc.MaxAttempts > 0 {
		opts = append(opts, kgo.RecordRetries(kc.MaxAttempts), kgo.UnknownTopicRetries(kc.MaxAttempts))
	} else {
		opts = append(opts, kgo.UnknownTopicRetries(-1))
	}
	eos := env.Delivery == enrichd.ExactlyOnce
	if eos {
		// The input's transactional client produces, with these
		// settings; this one only checks and creates the topics.
		linkOf(env).prodOpts = slices.Clone(opts[prod:])
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	o := &output{
		env: env, cfg: kc, st: env.OutputStats(), log: env.Log, cl: cl, pcl: cl, eos: eos, adm: kadm.NewClient(cl),
		keyF: env.EventField(kc.KeyField), topicF: env.EventField(kc.TopicField),
		free: make(chan *job, kc.InFlight), failed: make(chan *job, kc.InFlight),
		dlDone: make(chan struct{}), closed: make(chan struct{}),
		names: map[string]string{}, known: map[string]bool{}, creating: map[string]time.Time{},
	}
	o.hooks = hooks
	o.ctx, o.cancel = context.WithCancel(context.Background())
	fail := func(err error) (enrichd.Output, error) {
		o.cancel()
		cl.Close()
		return nil, err
	}
	if err := probe(cl, watch, env.Log); err != nil {
		return fail(err)
	}
	if err := o.checkTopics(); err != nil {
		return fail(err)
	}
	if kc.DeadLetter != "" {
		if o.dl, err = newDeadLetter(kc, o.ctx, env.Log); err != nil {
			return fail(fmt.Errorf("dead_letter: %w", err))
		}
	}
	for range kc.InFlight {
		j := &job{o: o}
		j.promise = j.done
		o.free <- j
	}
	go func() {
		select {
		case <-env.Stop:
			o.cancel()
		case <-o.closed:
		}
	}()
	go o.giveUpLoop()
	if eos {
		linkOf(env).out = o
	}
	return o, nil
}

// Write hands the buffer's events to the producer; it waits while
// in_flight buffers are being produced.
func (o *output) Write(ob *enrichd.Buffer) error {
	var j *job
	select {
	case j = <-o.free:
	case <-o.ctx.Done():
		return errors.New("kafka output stopped")
	}
	n := ob.Events
	ob.Retain()
	j.ob = ob
	if cap(j.recs) < n {
		j.recs = make([]kgo.Record, n)
	}
	j.recs = j.recs[:n]
	o.wg.Add(1)
	if n == 0 {
		j.finish()
		return nil
	}
	j.left.Store(int32(n))
	// One timestamp for the buffer: the producer would read the clock
	// for every record without one.
	now := time.Now()
	for i := range n {
		r := &j.recs[i]
		*r = kgo.Record{Value: ob.Line(i), Timestamp: now}
		if o.keyF >= 0 {
			if k := ob.Field(i, o.keyF); len(k) > 0 {
				r.Key = k
			}
		}
		if o.topicF >= 0 {
			if v := ob.Field(i, o.topicF); len(v) > 0 {
				topic, err := o.topic(v)
				if err != nil {
					j.done(r, err)
					continue
				}
				r.Topic = topic
			}
		}
		o.pcl.Produce(o.ctx, r, j.promise)
	}
	return nil
}

// done is a record's promise.
func (j *job) done(r *kgo.Record, err error) {
	if err != nil {
		j.mu.Lock()
		j.gaveUp = append(j.gaveUp, r)
		if j.cause == nil {
			j.cause = err
		}
		j.mu.Unlock()
	}
	if j.left.Add(-1) == 0 {
		j.finish()
	}
}

// finish reports the buffer delivered, or hands the records the
// producer gave up on to the dead letter.
func (j *job) finish() {
	o := j.o
	n := len(j.recs) - len(j.gaveUp)
	o.produced.Add(uint64(n))
	if len(j.gaveUp) > 0 && o.eos {
		// Its transaction aborts; the input reads the events again.
		o.st.Errors.Add(1)
		o.lost.Add(uint64(len(j.gaveUp)))
		j.ob.Delivery(o.st).Fail(j.cause)
		j.release()
		return
	}
	if len(j.gaveUp) > 0 {
		o.st.Errors.Add(1)
		o.failed <- j // never blocks: it has room for every job
		return
	}
	o.st.Bytes.Add(uint64(len(j.ob.B)))
	j.ob.Delivery(o.st).Done()
	j.release()
}

// release returns the job and its buffer.
func (j *job) release() {
	o := j.o
	j.ob.Release()
	j.ob = nil
	clear(j.recs)
	clear(j.gaveUp)
	j.gaveUp, j.cause = j.gaveUp[:0], nil
	o.free <- j
	o.wg.Done()
}

// giveUpLoop sends the events the producer gave up on to the dead
// letter; without one, or when the output stops, to the log, and their
// buffer is not reported delivered.
func (o *output) giveUpLoop() {
	defer close(o.dlDone)
	for j := range o.failed {
		delivered := o.giveUp(j.gaveUp, j.cause)
		if delivered {
			o.st.Bytes.Add(uint64(len(j.ob.B)))
			j.ob.Delivery(o.st).Done()
		}
		j.release()
	}
}

func (o *output) giveUp(recs []*kgo.Record, cause error) bool {
	stopping := o.ctx.Err() != nil || errors.Is(cause, kgo.ErrClientClosed) || errors.Is(cause, context.Canceled)
	if o.dl == nil || stopping {
		if stopping {
			o.log.Error("kafka: shutdown deadline passed; events not produced stay uncommitted", "events", len(recs), "err", cause)
		} else {
			for _, r := range recs {
				o.log.Error("event not produced; its input offsets stay uncommitted", "err", cause, "event", string(r.Value))
			}
		}
		o.lost.Add(uint64(len(recs)))
		return false
	}
	if err := o.dl.write(recs); err != nil {
		o.log.Error("dead letter failed; the events stay uncommitted", "events", len(recs), "err", err)
		o.lost.Add(uint64(len(recs)))
		return false
	}
	o.deadLettered.Add(uint64(len(recs)))
	o.log.Warn("events sent to the dead letter", "events", len(recs), "err", cause)
	return true
}

// Flush does nothing: each buffer is reported as the brokers acknowledge
// it.
func (o *output) Flush() error { return nil }

// Holds is how many buffers the output keeps at most: in_flight being
// produced and one waiting.
func (o *output) Holds() int { return o.cfg.InFlight + 1 }

// Close waits for the buffers in flight, until the shutdown deadline,
// then closes the client.
func (o *output) Close() error {
	defer close(o.closed)
	ctx, cancel := context.WithDeadline(context.Background(), o.env.ShutdownDeadline())
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
			o.cancel() // the deadline: give up what is still retried
		case <-o.closed:
		}
	}()
	if err := o.pcl.Flush(ctx); err != nil {
		o.cancel()
	}
	o.cl.Close() // fails what is left, so that every promise is called
	o.wg.Wait()
	close(o.failed)
	<-o.dlDone
	o.cancel()
	if o.dl != nil {
		return o.dl.close()
	}
	return nil
}

func (o *output) Stats() *enrichd.OutputStats { return o.st }

// Collect exports the output's Kafka metrics.
func (o *output) Collect(m enrichd.MetricSink) {
	n := o.st.Name
	m.Counter(mProduced, o.produced.Load(), n)
	m.Counter(mRetries, o.hooks.retries.Load(), n)
	m.Counter(mDeadLetter, o.deadLettered.Load(), n)
	m.Counter(mNotProduced, o.lost.Load(), n)
}

// produceHooks counts the producer's failed attempts.
type produceHooks struct{ retries atomic.Uint64 }

func (h *produceHooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.retries.Add(1)
	}
}

func (h *produceHooks) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == (&kmsg.ProduceRequest{}).Key() && e2e.Err() != nil {
		h.retries.Add(1)
	}
}
