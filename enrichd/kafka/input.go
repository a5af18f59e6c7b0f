package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lutkit/lutkit/enrichd"
)

// input is a member of a consumer group (kgo's group consumer) that
// batches its partitions' records for the workers and commits the
// offsets the outputs delivered (commit.go).
//
// kgo fetches the partitions the group assigns; on a rebalance it calls
// revoked for the partitions that move (all of them with an eager
// assignor), which commits what is delivered of them, waiting a moment
// for the batches on their way, before kgo lets them go. A partition the
// input keeps is read on from where it was; one new to it starts at the
// group's committed offset, or at start_offset when the group has none.
type input struct {
	env   *enrichd.Env
	cfg   *enrichd.InputConfig
	kc    *InputConfig
	stats *enrichd.InputStats
	log   *slog.Logger
	cur   *ackEntry // the acknowledgement of the batch being filled
	done  chan struct{}

	cl   *kgo.Client
	sess *kgo.GroupTransactSession // delivery: exactly_once (eos.go)
	adm  *kadm.Client
	tr   *commitTracker
	txnCounters

	ctx        context.Context // polls; cancelled by stop
	cancel     context.CancelFunc
	stopCh     chan struct{}
	stopping   atomic.Bool
	started    atomic.Bool
	commitStop chan struct{}
	commitDone chan struct{}
	commitMu   sync.Mutex // one commit at a time
	finishOnce sync.Once

	commits, commitErrors, staleOffsets, fetchErrors, joins atomic.Uint64
	commitLat                                               prometheus.Histogram
	commitStreak, fetchStreak                               streak

	mu sync.Mutex
	// owned are the partitions the group assigns to the input now;
	// former those it had and a rebalance or a lost membership took away,
	// and orphans the offsets of theirs delivered since: committed again
	// if the group gives the partition back, or else from outside the
	// group at shutdown, which the brokers take only while the group has
	// no member.
	owned   map[topicPart]bool
	former  map[topicPart]bool
	orphans map[topicPart]delivered
	// drops counts the calls of drop that took partitions away.
	drops uint64
	// committed is the group's committed offset of each partition as the
	// input last knew it: from kgo's fetch at assignment, its own commits
	// and the lag metric's reads.
	committed map[topicPart]int64
	// hwm and first are, by partition, the high watermark of the last
	// fetch and the first offset the input read; pos is the offset after
	// the last record it took.
	hwm, first, pos map[topicPart]int64
	lag             lagState
}

func init() {
	enrichd.RegisterInput(enrichd.InputKind{Type: "kafka", Format: enrichd.FormatSyslog, ExactlyOnce: true,
		Settings: func() enrichd.Settings { return &InputConfig{} }, New: newInput})
}

var (
	mLag         = enrichd.MetricDesc("kafka_consumer_lag", "High watermark minus the group's committed offset, as the brokers report them at the scrape, by assigned partition.", "input", "topic", "partition")
	mCommitted   = enrichd.MetricDesc("kafka_committed_offset", "The group's committed offset (the next to read), by assigned partition.", "input", "topic", "partition")
	mCommits     = enrichd.MetricDesc("kafka_commits_total", "Offset commits by result.", "input", "result")
	mUncommitted = enrichd.MetricDesc("kafka_uncommitted_events", "Events fetched and not yet committed (at most max_uncommitted).", "input")
	mStale       = enrichd.MetricDesc("kafka_stale_offsets_total", "Delivered offsets not committed because a rebalance moved their partition between their fetch and the commit (the partition's owner reads them again).", "input")
	mRebalances  = enrichd.MetricDesc("kafka_rebalances_total", "Assignments the input received from its consumer group: its first join, then one more after each rebalance or lost membership.", "input")
	mReadErrors  = enrichd.MetricDesc("kafka_fetch_errors_total", "Fetch errors reported by the consumer.", "input")
)

// pollRecords is the most records one poll returns.
const pollRecords = 4096

func newInput(ic *enrichd.InputConfig, env *enrichd.Env) (enrichd.Input, error) {
	kc := ic.Settings.(*InputConfig)
	k := &input{
		env: env, cfg: ic, kc: kc, stats: env.InputStats(), log: env.Log, done: make(chan struct{}),
		tr:          newCommitTracker(kc.MaxUncommitted),
		txnCounters: txnCounters{txnBackoff: backoff{min: 100 * time.Millisecond, max: time.Second}},
		stopCh:      make(chan struct{}),
		commitStop:  make(chan struct{}),
		commitDone:  make(chan struct{}),
		owned:       map[topicPart]bool{},
		former:      map[topicPart]bool{},
		orphans:     map[topicPart]delivered{},
		committed:   map[topicPart]int64{},
		hwm:         map[topicPart]int64{},
		first:       map[topicPart]int64{},
		pos:         map[topicPart]int64{},
		commitLat: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "enrichd_kafka_commit_latency_seconds", Help: "Time an offset commit took.",
			ConstLabels: prometheus.Labels{"input": ic.Name},
			Buckets:     prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	opts, watch, err := clientOpts(kc.Conn, env.Log)
	if err != nil {
		return nil, err
	}
	reset := kgo.NewOffset().AtStart()
	if kc.StartOffset == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	var bal kgo.GroupBalancer
	switch kc.Assignor {
	case "range":
		bal = kgo.RangeBalancer()
	case "roundrobin":
		bal = kgo.RoundRobinBalancer()
	default:
		bal = kgo.CooperativeStickyBalancer()
	}
	eos := env.Delivery == enrichd.ExactlyOnce
	opts = append(opts,
		kgo.ConsumerGroup(kc.Group),
		kgo.ConsumeTopics(kc.Topics...),
		kgo.Balancers(bal),
		kgo.ConsumeResetOffset(reset),
		kgo.OnPartitionsAssigned(k.assigned),
		kgo.OnPartitionsLost(k.lostParts),
		kgo.MetadataMinAge(time.Second),
		kgo.MetadataMaxAge(10*time.Second),
		kgo.WithPools(&fetchPool{}),
	)
	if eos {
		// The session aborts the transaction on a revoke; an aborted
		// transaction's records are read again from the committed
		// offsets, so no fetch starts past them.
		opts = append(opts, kgo.OnPartitionsRevoked(k.revokedTxn))
	} else {
		opts = append(opts, kgo.DisableAutoCommit(), kgo.OnPartitionsRevoked(k.revoked), kgo.AdjustFetchOffsetsFn(k.startAt))
	}
	if kc.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(kc.InstanceID))
	}
	if kc.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(kc.SessionTimeout))
	}
	if kc.HeartbeatInterval > 0 {
		opts = append(opts, kgo.HeartbeatInterval(kc.HeartbeatInterval))
	}
	if kc.RebalanceTimeout > 0 {
		opts = append(opts, kgo.RebalanceTimeout(kc.RebalanceTimeout))
	}
	if kc.MinBytes > 0 {
		opts = append(opts, kgo.FetchMinBytes(int32(min(kc.MinBytes, 1<<30))))
	}
	if kc.MaxBytes > 0 {
		if max(1, kc.MinBytes) > kc.MaxBytes {
			return nil, fmt.Errorf("min_bytes (%d) is more than max_bytes (%d)", kc.MinBytes, kc.MaxBytes)
		}
		opts = append(opts, kgo.FetchMaxBytes(int32(min(kc.MaxBytes, 1<<30))))
	}
	if kc.MaxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(kc.MaxWait))
	}
	// The client joins the group and fetches once Start polls; until then
	// it only answers the probe.
	if eos {
		if _, err = k.newTxnSession(opts); err != nil {
			return nil, err
		}
		k.cl = k.sess.Client()
	} else if k.cl, err = kgo.NewClient(opts...); err != nil {
		return nil, err
	}
	if err := probe(k.cl, watch, env.Log); err != nil {
		k.cl.Close()
		return nil, err
	}
	k.adm = kadm.NewClient(k.cl)
	return k, nil
}

// assigned records the partitions a generation adds.
func (k *input) assigned(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
	k.joins.Add(1)
	committed := cl.CommittedOffsets()
	k.mu.Lock()
	var back map[topicPart]delivered
	for topic, ps := range parts {
		for _, p := range ps {
			tp := topicPart{topic, p}
			k.owned[tp] = true
			delete(k.former, tp)
			if o, ok := k.orphans[tp]; ok {
				// Delivered while the partition was not the input's:
				// commit them as its owner again (commit skips what
				// the group has committed past).
				if back == nil {
					back = map[topicPart]delivered{}
				}
				back[tp] = o
				delete(k.orphans, tp)
			}
			if eo, ok := committed[topic][p]; ok {
				if c, ok := k.committed[tp]; !ok || eo.Offset > c {
					k.committed[tp] = eo.Offset
				}
			}
		}
	}
	k.lag.assigned(k.lagParts())
	k.mu.Unlock()
	if back != nil {
		k.tr.restore(back, 0)
		k.tr.nudge()
	}
}

// startAt makes a partition the group gives the input again (after an
// eager rebalance, or a membership lost in an outage) start where the
// input was, when the group has committed less: the records it took
// before are on their way to the outputs, and their offsets are committed
// when delivered, so that reading them again would only duplicate them.
func (k *input) startAt(_ context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for topic, ps := range offs {
		for p, o := range ps {
			if pos, ok := k.pos[topicPart{topic, p}]; ok && o.EpochOffset().Offset < pos {
				ps[p] = kgo.NewOffset().At(pos).WithEpoch(-1)
			}
		}
	}
	return offs, nil
}

// revokeWait is how long a rebalance waits for the batches on their way
// of the partitions that move, so that their offsets are committed
// before the next owner starts.
func (k *input) revokeWait() time.Duration {
	w := 5 * time.Second
	if k.kc.RebalanceTimeout > 0 {
		w = min(w, k.kc.RebalanceTimeout/4)
	}
	return w
}

// revoked commits what is delivered of the partitions a rebalance takes
// away, after waiting a moment for the batches on their way, then lets
// them go.
func (k *input) revoked(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	set := map[topicPart]bool{}
	for topic, ps := range parts {
		for _, p := range ps {
			set[topicPart{topic, p}] = true
		}
	}
	if len(set) == 0 {
		return
	}
	// commit counts and logs a failure; the offsets of the partitions
	// that moved are then the next owner's to read again.
	for deadline := time.Now().Add(k.revokeWait()); k.tr.holds(set) && time.Now().Before(deadline) && !k.stopping.Load(); {
		time.Sleep(5 * time.Millisecond)
	}
	_ = k.commit()
	k.mu.Lock()
	for tp := range set {
		delete(k.owned, tp)
		k.former[tp] = true
	}
	k.lag.assigned(k.lagParts())
	k.mu.Unlock()
}

// revokedTxn drops the partitions a rebalance takes away (exactly once:
// the session aborts the transaction that holds their records).
func (k *input) revokedTxn(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	k.drop(parts)
}

// lostParts drops the partitions the input lost with its membership:
// their offsets delivered from now on are orphans (see input.former).
func (k *input) lostParts(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	k.drop(parts)
	k.tr.nudge()
}

// drop makes parts former partitions of the input.
func (k *input) drop(parts map[string][]int32) {
	k.mu.Lock()
	for _, ps := range parts {
		if len(ps) > 0 {
			k.drops++
			break
		}
	}
	for topic, ps := range parts {
		for _, p := range ps {
			tp := topicPart{topic, p}
			delete(k.owned, tp)
			k.former[tp] = true
		}
	}
	k.lag.assigned(k.lagParts())
	k.mu.Unlock()
}

// lagParts are the partitions of the lag metric (under k.mu): those the
// input owns, or while it owns none (after losing its membership, say),
// those it had, until the group assigns it partitions again.
func (k *input) lagParts() map[topicPart]bool {
	if len(k.owned) == 0 {
		return k.former
	}
	return k.owned
}

// Start polls in the background.
func (k *input) Start() {
	if k.sess != nil {
		go k.serveTxn()
		return
	}
	go k.serve()
}

func (k *input) Stop(time.Time)             { k.stop() }
func (k *input) Done() <-chan struct{}      { return k.done }
func (k *input) Addr() net.Addr             { return nil }
func (k *input) Stats() *enrichd.InputStats { return k.stats }

// Close commits what the outputs delivered and leaves the group.
func (k *input) Close() error {
	k.finish()
	return nil
}

// serve polls the records of the assigned partitions and batches them
// until stop.
func (k *input) serve() {
	defer close(k.done)
	k.started.Store(true)
	go k.commitLoop()
	bt := k.env.Batcher(k.stats, k.cfg.Format, false)
	maxSize := k.cfg.MaxMessageSize
loop:
	for !k.stopping.Load() {
		if k.tr.full() {
			bt.Flush()
			if !k.tr.wait(k.stopCh) {
				break
			}
		}
		ctx, cancel := k.ctx, context.CancelFunc(nil)
		if bt.Pending() {
			ctx, cancel = context.WithDeadline(k.ctx, bt.Due())
		}
		fs := k.cl.PollRecords(ctx, int(min(pollRecords, max(1, k.tr.max-k.tr.inflight.Load()))))
		if cancel != nil {
			cancel()
		}
		if fs.IsClientClosed() {
			break
		}
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				return
			}
			k.fetchErrors.Add(1)
			k.fetchStreak.fail(k.log, "kafka fetch failed; retrying", "topic", topic, "partition", p, "err", err)
		})
		if fs.Empty() {
			if bt.Pending() && !time.Now().Before(bt.Due()) {
				bt.Flush()
			}
			continue
		}
		for i := range fs {
			for j := range fs[i].Topics {
				ft := &fs[i].Topics[j]
				for l := range ft.Partitions {
					fp := &ft.Partitions[l]
					if len(fp.Records) == 0 {
						continue
					}
					if !k.notePartition(ft.Topic, fp) {
						for _, r := range fp.Records {
							r.Recycle()
						}
						continue
					}
					for _, r := range fp.Records {
						if k.tr.full() {
							bt.Flush()
							if !k.tr.wait(k.stopCh) {
								break loop
							}
						}
						msg, trunc := trimRecord(r.Value, maxSize)
						if !bt.Pending() {
							bt.Take()
						}
						if bt.Ack() == nil {
							k.cur = k.tr.open()
							bt.SetAck(&k.cur.Ack)
						}
						k.cur.note(r)
						bt.Put(msg, trunc)
						r.Recycle() // its value is copied
					}
				}
			}
		}
		k.fetchStreak.ok(k.log, "kafka fetches succeed again")
		if bt.Pending() && !time.Now().Before(bt.Due()) {
			bt.Flush()
		}
	}
	bt.Flush()
}

// trimRecord is a record's value as a message: without its line end, cut
// to maxSize (trunc says so).
func trimRecord(msg []byte, maxSize int) (_ []byte, trunc bool) {
	for len(msg) > 0 && (msg[len(msg)-1] == '\n' || msg[len(msg)-1] == '\r') {
		msg = msg[:len(msg)-1]
	}
	if len(msg) > maxSize {
		return msg[:maxSize], true
	}
	return msg, false
}

// notePartition records a fetch's high watermark and, for the lag of a
// partition without a committed offset, the first offset read. It
// reports whether the input owns the partition still: the records of one
// a rebalance took away meanwhile are its new owner's to read.
func (k *input) notePartition(topic string, fp *kgo.FetchPartition) bool {
	tp := topicPart{topic, fp.Partition}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.owned[tp] {
		return false
	}
	k.hwm[tp] = fp.HighWatermark
	if _, ok := k.first[tp]; !ok {
		k.first[tp] = fp.Records[0].Offset
	}
	k.pos[tp] = fp.Records[len(fp.Records)-1].Offset + 1
	return true
}

// stop ends polling; the pending batch is flushed by serve. The group
// membership goes on until finish has committed what the outputs
// delivered.
func (k *input) stop() {
	k.stopping.Store(true)
	k.cl.PauseFetchTopics(k.kc.Topics...)
	close(k.stopCh)
	k.cancel()
	k.tr.wake()
}

// finish commits what the outputs delivered and leaves the group (a
// static member stays, to come back without a rebalance). It runs after
// the outputs are drained and closed.
func (k *input) finish() {
	k.finishOnce.Do(func() {
		if k.sess != nil {
			// serveTxn ended the last transaction before it returned.
			k.cancel()
			k.sess.Close()
			return
		}
		if k.started.Load() {
			close(k.commitStop)
			<-k.commitDone
			k.finalCommit(k.env.ShutdownDeadline())
		}
		k.cancel()
		k.cl.Close()
	})
}

// Collect exports the input's Kafka metrics.
func (k *input) Collect(m enrichd.MetricSink) {
	name := k.cfg.Name
	k.collectLag(m.Gauge)
	m.Counter(mRebalances, k.joins.Load(), name)
	m.Counter(mReadErrors, k.fetchErrors.Load(), name)
	m.Counter(mCommits, k.commits.Load(), name, "ok")
	m.Counter(mCommits, k.commitErrors.Load(), name, "error")
	m.Counter(mStale, k.staleOffsets.Load(), name)
	m.Gauge(mUncommitted, float64(k.tr.inflight.Load()), name)
	age := 0.0
	if old := k.tr.oldest(); !old.IsZero() {
		age = time.Since(old).Seconds()
	}
	m.Gauge(mDeliveredAge, age, name)
	m.Collect(k.commitLat)
	k.collectTxn(m)
}
