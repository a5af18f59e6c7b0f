package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lutkit/lutkit/enrichd"
)

// Exactly once (pipeline.delivery: exactly_once): the input and the
// output share one client, a kgo.GroupTransactSession, which consumes in
// the group and produces with a transactional id. The input runs the
// transactions (serveTxn): it begins one, polls records into batches for
// commit_interval or max_uncommitted events, then stops polling and waits
// until the output has produced every event of those batches into the
// transaction (each batch's acknowledgement, txnAck) and ends it, which
// commits the offsets of every record polled in the same transaction.
// A rebalance, a lost membership or an event the producer gave up on
// aborts it instead: the brokers discard its records, the input starts
// again from the group's committed offsets, and a read_committed reader
// of the output sees every input event once. A member that dies in a
// transaction leaves it open until the brokers abort it
// (transaction_timeout); its partitions' new owner reads their events
// again from the offsets the group committed. A member that lost its
// partitions and comes back (a zombie) cannot commit: the group's
// coordinator refuses the offsets of a stale generation (KIP-447), which
// aborts its transaction.

// txnLinkKey is the Env.Shared key of an exactly-once pipeline's link.
const txnLinkKey = "kafka.exactly_once"

// txnLink is where the output and the input of an exactly-once pipeline
// meet: the output (made first) leaves its producer options, the input
// makes the session with them and gives the output its client.
type txnLink struct {
	out      *output
	prodOpts []kgo.Opt
}

func linkOf(env *enrichd.Env) *txnLink {
	return env.Shared(txnLinkKey, func() any { return &txnLink{} }).(*txnLink)
}

// txnID is the producer's transactional id: the output's prefix and the
// input's instance_id, which fences the transaction a previous run of the
// same member left open, or else a random suffix, unique to the process.
func txnID(prefix, instance string) string {
	if instance != "" {
		return prefix + "-" + instance
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// newTxnSession makes the input's client of an exactly-once pipeline: a
// GroupTransactSession with the consumer's options and the output's
// producer options.
func (k *input) newTxnSession(consumer []kgo.Opt) (*kgo.GroupTransactSession, error) {
	l := linkOf(k.env)
	if l.out == nil {
		return nil, errors.New("pipeline.delivery: exactly_once needs a kafka output")
	}
	oc := l.out.cfg
	if !slices.Equal(sortedCopy(oc.Brokers), sortedCopy(k.kc.Brokers)) {
		return nil, fmt.Errorf("pipeline.delivery: exactly_once: the kafka output's brokers %v must be the input's %v (one transaction holds the events and the offsets)", oc.Brokers, k.kc.Brokers)
	}
	opts := slices.Concat(consumer, l.prodOpts,
		[]kgo.Opt{
			kgo.TransactionalID(txnID(oc.TransactionalID, k.kc.InstanceID)),
			kgo.TransactionTimeout(oc.TransactionTimeout),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		})
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return nil, err
	}
	k.sess = sess
	l.out.pcl = sess.Client()
	return sess, nil
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// txnState is the transaction being run: its batches on their way to
// the output.
type txnState struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending int   // batches not delivered yet
	err     error // the first failure of one of its batches
	free    []*txnAck
	events  uint64 // delivered by the outputs, to count at the commit
}

func newTxnState() *txnState {
	t := &txnState{}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// txnAck is one batch's acknowledgement in a transaction.
type txnAck struct {
	enrichd.Ack
	t *txnState
}

func (t *txnState) open() *txnAck {
	t.mu.Lock()
	defer t.mu.Unlock()
	var a *txnAck
	if n := len(t.free); n > 0 {
		a, t.free = t.free[n-1], t.free[:n-1]
	} else {
		a = &txnAck{t: t}
	}
	a.InitDeferred(a) // its events count when the transaction commits
	t.pending++
	return a
}

func (a *txnAck) resolve(err error) {
	t := a.t
	t.mu.Lock()
	if err != nil && t.err == nil {
		t.err = err
	}
	if err == nil {
		t.events += a.Events()
	}
	t.pending--
	if len(t.free) < 1024 {
		t.free = append(t.free, a)
	}
	if t.pending == 0 {
		t.cond.Broadcast()
	}
	t.mu.Unlock()
}

// Delivered is called once the output produced the batch's events into
// the transaction.
func (a *txnAck) Delivered() { a.resolve(nil) }

// Failed is called when the producer gave up on an event of the batch:
// the transaction aborts.
func (a *txnAck) Failed(err error) { a.resolve(err) }

// wait waits until every batch of the transaction is resolved, or stop is
// closed (the daemon gave up on the shutdown). It returns the events the
// outputs delivered into the transaction and the first failure.
func (t *txnState) wait(stop <-chan struct{}) (events uint64, err error) {
	done := make(chan struct{})
	go func() {
		select {
		case <-stop:
			t.mu.Lock()
			if t.err == nil {
				t.err = errors.New("shutdown deadline passed")
			}
			t.pending = 0
			t.cond.Broadcast()
			t.mu.Unlock()
		case <-done:
		}
	}()
	t.mu.Lock()
	for t.pending > 0 {
		t.cond.Wait()
	}
	events, err = t.events, t.err
	t.err, t.events = nil, 0
	t.mu.Unlock()
	close(done)
	return events, err
}

// serveTxn is serve for an exactly-once pipeline: one transaction after
// the other until stop.
func (k *input) serveTxn() {
	defer close(k.done)
	k.started.Store(true)
	bt := k.env.Batcher(k.stats, k.cfg.Format, false)
	maxSize := k.cfg.MaxMessageSize
	limit := k.kc.MaxUncommitted
	t := newTxnState()
	ends := map[topicPart]int64{} // the offsets past the transaction's records
	for !k.stopping.Load() {
		clear(ends)
		if err := k.sess.Begin(); err != nil {
			// A transaction whose end failed is still open.
			k.txnErrors.Add(1)
			k.commitStreak.fail(k.log, "kafka: cannot begin a transaction; aborting the one still open", "err", err)
			_ = k.abortOpen()
			continue
		}
		held := k.ownership()
		deadline := time.Now().Add(k.kc.CommitInterval)
		n := 0
		for n < limit && !k.stopping.Load() && time.Now().Before(deadline) {
			due := deadline
			if bt.Pending() && bt.Due().Before(due) {
				due = bt.Due()
			}
			ctx, cancel := context.WithDeadline(k.ctx, due)
			fs := k.sess.PollRecords(ctx, min(pollRecords, limit-n))
			cancel()
			if fs.IsClientClosed() {
				break
			}
			fs.EachError(func(topic string, p int32, err error) {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return
				}
				k.fetchErrors.Add(1)
				k.fetchStreak.fail(k.log, "kafka fetch failed; retrying", "topic", topic, "partition", p, "err", err)
			})
			for i := range fs {
				for j := range fs[i].Topics {
					ft := &fs[i].Topics[j]
					for l := range ft.Partitions {
						fp := &ft.Partitions[l]
						if len(fp.Records) == 0 {
							continue
						}
						k.notePartition(ft.Topic, fp)
						ends[topicPart{ft.Topic, fp.Partition}] = fp.Records[len(fp.Records)-1].Offset + 1
						for _, r := range fp.Records {
							msg, trunc := trimRecord(r.Value, maxSize)
							if !bt.Pending() {
								bt.Take()
							}
							if bt.Ack() == nil {
								bt.SetAck(&t.open().Ack)
							}
							bt.Put(msg, trunc)
							r.Recycle() // its value is copied
							n++
						}
					}
				}
			}
			if !fs.Empty() {
				k.fetchStreak.ok(k.log, "kafka fetches succeed again")
			}
			if bt.Pending() && !time.Now().Before(bt.Due()) {
				bt.Flush()
			}
		}
		bt.Flush()
		k.tr.inflight.Store(int64(n))
		delivered, failure := t.wait(k.env.Stop)
		k.endTxn(n, ends, held, delivered, failure)
		k.tr.inflight.Store(0)
	}
	bt.Flush()
}

// endTxn ends the transaction of n events: a commit of its events and
// offsets, unless one of its batches failed or the group rebalanced
// meanwhile, which abort it (the input then reads its records again).
// The delivered events the outputs produced into it count (events_out,
// the output's delivered events) once it commits; ends has the offsets
// past its records, by which an end that failed is found to have
// committed, and held the input's ownership when it began.
func (k *input) endTxn(n int, ends map[topicPart]int64, held ownership, delivered uint64, failure error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-k.env.Stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	committed, err := k.sess.End(ctx, kgo.TransactionEndTry(failure == nil))
	k.commitLat.Observe(time.Since(start).Seconds())
	switch {
	case committed:
		k.countCommitted(delivered)
		k.txnCommits.Add(1)
		k.txnBackoff.reset()
		if n > 0 {
			k.commits.Add(1)
			k.commitStreak.ok(k.log, "kafka transactions commit again")
			k.noteCommitted()
		}
	case err != nil:
		k.txnErrors.Add(1)
		k.commitErrors.Add(1)
		k.commitStreak.fail(k.log, "kafka: ending a transaction failed; aborting it, its events are read again unless it committed", "events", n, "err", err)
		if offs := k.abortOpen(); len(ends) > 0 && committedTo(offs, ends, k.ownedSince(held)) {
			// The end committed before its answer was lost: the
			// input reads on after the transaction's records.
			k.countCommitted(delivered)
			k.log.Info("kafka: the transaction whose end failed had committed; reading on after it", "events", n)
		}
		// Wait before the next one, longer at each failure in a row, so
		// that ends failing for a while do not make the input produce the
		// same events again and again.
		select {
		case <-k.env.Stop:
		case <-k.stopCh:
		case <-time.After(k.txnBackoff.next()):
		}
	default:
		k.txnAborts.Add(1)
		if failure != nil {
			k.commitStreak.fail(k.log, "kafka: transaction aborted, an event was not produced; its events are read again", "events", n, "err", failure)
		} else if n > 0 {
			k.log.Info("kafka: transaction aborted by a rebalance; its events are read again", "events", n)
		}
	}
}

// abortOpen aborts the transaction whose end failed (the brokers could
// not be reached, say), retrying with backoff until the brokers take the
// abort or the daemon gives up on shutdown, and then reads on from the
// offsets the group has committed, as the brokers say: the end that
// failed may have committed before its answer was lost. It returns those
// offsets (nil when the daemon gave up first).
func (k *input) abortOpen() kadm.OffsetResponses {
	bo := backoff{min: 100 * time.Millisecond, max: time.Second}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), k.revokeWait()+requestTimeout)
		_, err := k.sess.End(ctx, kgo.TryAbort)
		cancel()
		if err == nil {
			break
		}
		k.commitStreak.fail(k.log, "kafka: aborting a transaction failed; retrying", "err", err)
		select {
		case <-k.env.Stop:
			return nil
		case <-time.After(bo.next()):
		}
	}
	for {
		offs, err := k.resync()
		if err == nil {
			return offs
		}
		k.commitStreak.fail(k.log, "kafka: reading the group's committed offsets failed; retrying", "err", err)
		select {
		case <-k.env.Stop:
			return nil
		case <-time.After(bo.next()):
		}
	}
}

// committedTo reports whether the group's committed offsets offs reach
// ends on every partition, each owned since the transaction began
// (owned): the transaction that read up to ends committed. A partition
// another member took meanwhile, even if the group gave it back since,
// may have been committed past ends by it: the transaction is then not
// taken as committed, so that its events are never counted twice (nor,
// if it did commit, at all).
func committedTo(offs kadm.OffsetResponses, ends map[topicPart]int64, owned func(topicPart) bool) bool {
	if offs == nil {
		return false
	}
	for tp, end := range ends {
		if o, ok := offs.Lookup(tp.topic, tp.partition); !ok || o.At < end || !owned(tp) {
			return false
		}
	}
	return true
}

// ownership is what the input owns, as far as an end that failed is
// concerned: the count of its drops of partitions (input.drops), and its
// member id and generation in the group. kgo calls the callbacks that
// drop partitions for the first revoke and the first loss between two
// ends of a transaction only; every rebalance makes a new generation, and
// a lost membership a new member.
type ownership struct {
	drops      uint64
	member     string
	generation int32
}

// ownership is the input's ownership now.
func (k *input) ownership() ownership {
	o := ownership{generation: -1}
	if k.cl != nil {
		o.member, o.generation = k.cl.GroupMetadata()
	}
	k.mu.Lock()
	o.drops = k.drops
	k.mu.Unlock()
	return o
}

// ownedSince reports, for a partition, whether the input owns it and its
// ownership is still held: a partition taken away and given back
// meanwhile may have been read and committed past a transaction's end by
// another member.
func (k *input) ownedSince(held ownership) func(topicPart) bool {
	return func(tp topicPart) bool {
		if k.ownership() != held {
			return false
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.owned[tp]
	}
}

// countCommitted counts the events of a committed transaction as
// delivered: in events_out and in the output's delivered events.
func (k *input) countCommitted(events uint64) {
	var outs []*enrichd.OutputStats
	if o := linkOf(k.env).out; o != nil {
		outs = append(outs, o.st)
	}
	k.env.CountDelivered(events, outs...)
}

// resync sets the fetch positions of the partitions the input owns to
// the group's committed offsets, read from the coordinator, and returns
// those offsets.
func (k *input) resync() (kadm.OffsetResponses, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	offs, err := k.adm.FetchOffsets(ctx, k.kc.Group)
	if err != nil {
		return nil, err
	}
	if err := offs.Error(); err != nil {
		return nil, err
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	k.mu.Lock()
	for tp := range k.owned {
		if o, ok := offs.Lookup(tp.topic, tp.partition); ok {
			if set[tp.topic] == nil {
				set[tp.topic] = map[int32]kgo.EpochOffset{}
			}
			set[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: o.LeaderEpoch, Offset: o.At}
			k.committed[tp] = o.At
		}
	}
	k.mu.Unlock()
	k.cl.SetOffsets(set)
	return offs, nil
}

// noteCommitted records the group's committed offsets after a
// transaction, for the lag metric.
func (k *input) noteCommitted() {
	committed := k.cl.CommittedOffsets()
	k.mu.Lock()
	defer k.mu.Unlock()
	for topic, ps := range committed {
		for p, eo := range ps {
			tp := topicPart{topic, p}
			if c, ok := k.committed[tp]; !ok || eo.Offset > c {
				k.committed[tp] = eo.Offset
			}
		}
	}
}

// metrics of the transactions.
var mTxns = enrichd.MetricDesc("kafka_transactions_total", "Transactions of an exactly-once pipeline by result: committed, aborted (by a rebalance or an event not produced; their events are read again) or error (ending failed).", "input", "result")

func (k *input) collectTxn(m enrichd.MetricSink) {
	if k.sess == nil {
		return
	}
	m.Counter(mTxns, k.txnCommits.Load(), k.cfg.Name, "committed")
	m.Counter(mTxns, k.txnAborts.Load(), k.cfg.Name, "aborted")
	m.Counter(mTxns, k.txnErrors.Load(), k.cfg.Name, "error")
}

// txnCounters are the input's counts of its transactions.
type txnCounters struct {
	txnCommits, txnAborts, txnErrors atomic.Uint64
	txnBackoff                       backoff // after a failed end; used by serveTxn only
}
