package enrichd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// A Kafka input's offsets: which are delivered (commitTracker), and their
// commits to the group (kafkaInput.commit and its loop). See kafka.go for
// the whole of the delivery guarantee.

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

func (tp topicPart) String() string { return fmt.Sprintf("%s/%d", tp.topic, tp.partition) }

type partOffset struct {
	topicPart
	offset int64 // last offset in the batch
}

// delivered is the last delivered offset of a partition, and since when
// the oldest delivered event after its committed offset has waited.
type delivered struct {
	offset int64
	since  time.Time
}

func (e *ackEntry) note(m *kafka.Message) {
	e.events++
	e.t.inflight.Add(1)
	for i := range e.offs {
		if o := &e.offs[i]; o.partition == m.Partition && o.topic == m.Topic {
			o.offset = m.Offset
			return
		}
	}
	e.offs = append(e.offs, partOffset{topicPart{m.Topic, m.Partition}, m.Offset})
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
	ready  map[topicPart]delivered
	readyN int // events that ready covers
	// taken is when the oldest of the offsets being committed was
	// delivered (zero when no commit is under way).
	taken time.Time
}

func newCommitTracker(max int) *commitTracker {
	t := &commitTracker{max: int64(max), kick: make(chan struct{}, 1), ready: map[topicPart]delivered{}}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// open starts the entry of a new batch.
func (t *commitTracker) open() *ackEntry {
	e := &ackEntry{t: t}
	e.Init(e)
	t.mu.Lock()
	t.q = append(t.q, e)
	t.mu.Unlock()
	return e
}

func (t *commitTracker) full() bool { return t.inflight.Load() >= t.max }

// complete records that e is delivered and makes the offsets of the
// delivered prefix of the queue committable.
func (t *commitTracker) complete(e *ackEntry) {
	now := time.Now()
	t.mu.Lock()
	e.done = true
	i := 0
	for ; i < len(t.q) && t.q[i].done; i++ {
		h := t.q[i]
		for _, o := range h.offs {
			cur, ok := t.ready[o.topicPart]
			switch {
			case !ok:
				t.ready[o.topicPart] = delivered{o.offset, now}
			case o.offset > cur.offset:
				t.ready[o.topicPart] = delivered{o.offset, cur.since}
			}
		}
		t.readyN += h.events
		t.q[i] = nil
	}
	t.q = t.q[i:]
	kick := int64(t.readyN) >= t.max/2
	t.mu.Unlock()
	if kick {
		t.nudge()
	}
}

// nudge asks the committer to commit now.
func (t *commitTracker) nudge() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// take returns the committable offsets and the events they cover.
func (t *commitTracker) take() (map[topicPart]delivered, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.readyN == 0 && len(t.ready) == 0 {
		return nil, 0
	}
	offs, n := t.ready, t.readyN
	t.ready, t.readyN = map[topicPart]delivered{}, 0
	for _, o := range offs {
		if t.taken.IsZero() || o.since.Before(t.taken) {
			t.taken = o.since
		}
	}
	return offs, n
}

// done records that the n events of a take are committed, or need no
// commit from this input.
func (t *commitTracker) done(n int) {
	t.inflight.Add(-int64(n))
	t.mu.Lock()
	t.taken = time.Time{}
	t.cond.Broadcast()
	t.mu.Unlock()
}

// restore puts back offsets whose commit failed, to be retried with the
// next ones; n is the events of the take, which stay uncommitted.
func (t *commitTracker) restore(offs map[topicPart]delivered, n int) {
	t.mu.Lock()
	for k, o := range offs {
		if cur, ok := t.ready[k]; ok {
			o = delivered{max(o.offset, cur.offset), earlier(o.since, cur.since)}
		}
		t.ready[k] = o
	}
	t.readyN += n
	t.taken = time.Time{}
	t.mu.Unlock()
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// oldest returns when the oldest delivered event not committed yet was
// delivered, or the zero time.
func (t *commitTracker) oldest() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.taken
	for _, o := range t.ready {
		if old.IsZero() || o.since.Before(old) {
			old = o.since
		}
	}
	return old
}

// pendingReady reports whether delivered offsets wait for a commit.
func (t *commitTracker) pendingReady() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.ready) > 0 || t.readyN > 0
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
		t.nudge()
		t.cond.Wait()
	}
	return true
}

func (t *commitTracker) wake() {
	t.mu.Lock()
	t.cond.Broadcast()
	t.mu.Unlock()
}

// errNoGeneration: the input is between two generations of the group,
// so nothing can be committed until the next begins.
var errNoGeneration = errors.New("not a member of the group at the moment")

// commit commits the delivered offsets of the partitions the current
// generation assigns to the input. Offsets of partitions it does not
// assign are dropped (their new owner reads those events again), and so
// are offsets the group has already committed past. On failure the
// offsets go back to the tracker, to be retried.
func (k *kafkaInput) commit() error {
	k.commitMu.Lock()
	defer k.commitMu.Unlock()
	offs, n := k.tr.take()
	if offs == nil {
		return nil
	}
	gen := k.group.current()
	if gen == nil {
		k.tr.restore(offs, n)
		return errNoGeneration
	}
	topics := map[string][]kafka.OffsetCommit{}
	for tp, o := range offs {
		if !gen.owns(tp) {
			// Fetched before a rebalance: the partition is another
			// member's now, which reads these events again.
			delete(offs, tp)
			k.staleOffsets.Add(1)
			continue
		}
		if o.offset+1 <= k.committedAt(tp) {
			delete(offs, tp)
			continue
		}
		topics[tp.topic] = append(topics[tp.topic], kafka.OffsetCommit{Partition: tp.partition, Offset: o.offset + 1})
	}
	if len(topics) == 0 {
		k.tr.done(n)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
	start := time.Now()
	var resp *kafka.OffsetCommitResponse
	err := retryConn(ctx, func() (err error) {
		resp, err = k.cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
			GroupID: k.kc.Group, GenerationID: gen.id, MemberID: gen.member, Topics: topics,
		})
		return err
	})
	cancel()
	k.commitLat.Observe(time.Since(start).Seconds())
	if err != nil {
		k.commitFailed(offs, n, err)
		return err
	}
	failed := map[topicPart]delivered{}
	for topic, parts := range resp.Topics {
		for _, p := range parts {
			tp := topicPart{topic, p.Partition}
			if p.Error != nil {
				if o, ok := offs[tp]; ok {
					failed[tp] = o
				}
				if err == nil {
					err = fmt.Errorf("%s: %w", tp, p.Error)
				}
				continue
			}
			if o, ok := offs[tp]; ok {
				k.setCommitted(tp, o.offset+1)
			}
		}
	}
	if err != nil {
		if isGroupState(err) {
			k.group.commitRefused(gen, err)
		}
		k.commitFailed(failed, n, err)
		return err
	}
	k.commits.Add(1)
	k.tr.done(n)
	k.commitStreak.ok(k.log, "kafka offset commits succeed again")
	return nil
}

func (k *kafkaInput) commitFailed(offs map[topicPart]delivered, n int, err error) {
	k.commitErrors.Add(1)
	k.tr.restore(offs, n)
	k.commitStreak.fail(k.log, "kafka offset commit failed; retrying", "err", err)
}

// commitLoop commits every commit_interval, sooner when half the window
// is waiting or a generation begins, and retries a failed commit with
// backoff.
func (k *kafkaInput) commitLoop() {
	defer close(k.commitDone)
	tick := time.NewTicker(k.kc.CommitInterval)
	defer tick.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	bo := backoff{min: 100 * time.Millisecond, max: time.Second}
	for {
		select {
		case <-tick.C:
		case <-k.tr.kick:
		case <-retry.C:
		case <-k.group.begun:
		case <-k.commitStop:
			return
		}
		if err := k.commit(); err != nil {
			if !errors.Is(err, errNoGeneration) {
				retry.Reset(bo.next())
			}
		} else {
			bo.reset()
		}
	}
}

// finalCommit commits what the outputs delivered, retrying until it
// succeeds or the deadline passes, and logs what it leaves uncommitted.
func (k *kafkaInput) finalCommit(deadline time.Time) {
	bo := backoff{min: 100 * time.Millisecond, max: time.Second}
	for {
		err := k.commit()
		if err == nil && !k.tr.pendingReady() {
			break
		}
		if err != nil && (errors.Is(err, errNoGeneration) || errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.UnknownMemberId)) {
			// No longer a member: a group with no member takes the
			// commit of a client outside it.
			if err = k.commitOutside(); err == nil && !k.tr.pendingReady() {
				break
			}
			if errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.UnknownMemberId) {
				// The group has members, which own the partitions now
				// and read these events again: retrying cannot help.
				k.logUncommitted(err)
				return
			}
		}
		wait := bo.next()
		if time.Now().Add(wait).After(deadline) {
			k.logUncommitted(err)
			return
		}
		time.Sleep(wait)
	}
	if n := k.tr.inflight.Load(); n > 0 {
		k.log.Warn("kafka: events fetched and never delivered stay uncommitted; the group reads them again", "events", n)
	}
}

// commitOutside commits the delivered offsets of the partitions of the
// input's last generation as a client outside the group (generation -1),
// which the brokers take only while the group has no member. Offsets the
// group has committed past are left alone.
func (k *kafkaInput) commitOutside() error {
	k.commitMu.Lock()
	defer k.commitMu.Unlock()
	gen := k.group.last()
	offs, n := k.tr.take()
	if offs == nil {
		return nil
	}
	if gen == nil {
		k.tr.restore(offs, n)
		return errNoGeneration
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
	defer cancel()
	now, err := k.group.committedOffsets(ctx, gen.parts)
	if err != nil {
		k.tr.restore(offs, n)
		return err
	}
	topics := map[string][]kafka.OffsetCommit{}
	for tp, o := range offs {
		if !gen.owns(tp) || o.offset+1 <= now[tp] {
			delete(offs, tp)
			continue
		}
		topics[tp.topic] = append(topics[tp.topic], kafka.OffsetCommit{Partition: tp.partition, Offset: o.offset + 1})
	}
	if len(topics) == 0 {
		k.tr.done(n)
		return nil
	}
	var resp *kafka.OffsetCommitResponse
	err = retryConn(ctx, func() (err error) {
		resp, err = k.cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: k.kc.Group, GenerationID: -1, Topics: topics})
		return err
	})
	if err == nil {
		for topic, parts := range resp.Topics {
			for _, p := range parts {
				if p.Error != nil && err == nil {
					err = fmt.Errorf("%s/%d: %w", topic, p.Partition, p.Error)
				}
			}
		}
	}
	if err != nil {
		k.commitFailed(offs, n, err)
		return err
	}
	for tp, o := range offs {
		k.setCommitted(tp, o.offset+1)
	}
	k.commits.Add(1)
	k.tr.done(n)
	k.log.Info("kafka: delivered offsets committed from outside the group, which has no member", "partitions", len(offs))
	return nil
}

// logUncommitted says which delivered offsets the shutdown could not
// commit.
func (k *kafkaInput) logUncommitted(err error) {
	k.tr.mu.Lock()
	var parts []string
	for tp, o := range k.tr.ready {
		parts = append(parts, fmt.Sprintf("%s:%d", tp, o.offset+1))
	}
	events := k.tr.readyN
	k.tr.mu.Unlock()
	sort.Strings(parts)
	k.log.Error("kafka: delivered offsets left uncommitted at shutdown; the group reads their events again",
		"events", events, "offsets", strings.Join(parts, " "), "err", err)
}
