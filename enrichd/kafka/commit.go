package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lutkit/lutkit/enrichd"
)

// An input's offsets: which are delivered (commitTracker), and their
// commits to the group (input.commit and its loop). See doc.go for the
// whole of the delivery guarantee.

// ackEntry is one input batch on its way to the outputs: the batch's
// acknowledgement (Ack) tells it when every output has delivered the
// batch.
type ackEntry struct {
	enrichd.Ack
	t      *commitTracker
	offs   []partOffset // the last offset of each partition in the batch
	events int
	done   bool // under t.mu
}

type topicPart struct {
	topic     string
	partition int32
}

func (tp topicPart) String() string { return fmt.Sprintf("%s/%d", tp.topic, tp.partition) }

type partOffset struct {
	topicPart
	offset int64 // last offset in the batch
	epoch  int32 // its leader epoch
}

// delivered is the last delivered offset of a partition, and since when
// the oldest delivered event after its committed offset has waited.
type delivered struct {
	offset int64
	epoch  int32
	since  time.Time
}

func (e *ackEntry) note(r *kgo.Record) {
	e.events++
	e.t.inflight.Add(1)
	for i := range e.offs {
		if o := &e.offs[i]; o.partition == r.Partition && o.topic == r.Topic {
			o.offset, o.epoch = r.Offset, r.LeaderEpoch
			return
		}
	}
	e.offs = append(e.offs, partOffset{topicPart{r.Topic, r.Partition}, r.Offset, r.LeaderEpoch})
}

// Delivered is called once every output has delivered the batch.
func (e *ackEntry) Delivered() { e.t.complete(e) }

// commitTracker orders an input's batches and turns the delivered ones
// into offsets to commit.
type commitTracker struct {
	max      int64
	inflight atomic.Int64 // events fetched and not committed
	kick     chan struct{}

	mu     sync.Mutex
	cond   *sync.Cond  // inflight fell, or the input stops
	q      []*ackEntry // open entries, oldest first
	free   []*ackEntry // entries to reuse
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
	t.mu.Lock()
	var e *ackEntry
	if n := len(t.free); n > 0 {
		e, t.free = t.free[n-1], t.free[:n-1]
		e.offs, e.events, e.done = e.offs[:0], 0, false
	} else {
		e = &ackEntry{t: t}
	}
	e.Init(e)
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
				t.ready[o.topicPart] = delivered{o.offset, o.epoch, now}
			case o.offset > cur.offset:
				t.ready[o.topicPart] = delivered{o.offset, o.epoch, cur.since}
			}
		}
		t.readyN += h.events
		t.q[i] = nil
		if len(t.free) < 1024 {
			t.free = append(t.free, h)
		}
	}
	if i > 0 {
		n := copy(t.q, t.q[i:])
		clear(t.q[n:])
		t.q = t.q[:n]
	}
	kick := int64(t.readyN) >= t.max/2
	t.mu.Unlock()
	if kick {
		t.nudge()
	}
}

// holds reports whether a batch not delivered yet has events of one of
// parts.
func (t *commitTracker) holds(parts map[topicPart]bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.q {
		for _, o := range e.offs {
			if parts[o.topicPart] {
				return true
			}
		}
	}
	return false
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
			if cur.offset > o.offset {
				o.offset, o.epoch = cur.offset, cur.epoch
			}
			o.since = earlier(o.since, cur.since)
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

// commit commits the delivered offsets of the partitions the group
// assigns to the input now, in its current generation. Those of
// partitions a rebalance or a lost membership took away are kept as
// orphans (see input.former); their new owner, if they have one, reads
// those events again. Offsets the group has committed past are dropped.
// On failure the offsets go back to the tracker, to be retried.
func (k *input) commit() error {
	k.commitMu.Lock()
	defer k.commitMu.Unlock()
	offs, n := k.tr.take()
	if offs == nil {
		return nil
	}
	req := map[string]map[int32]kgo.EpochOffset{}
	k.mu.Lock()
	for tp, o := range offs {
		if !k.owned[tp] {
			delete(offs, tp)
			if cur, ok := k.orphans[tp]; !ok || o.offset > cur.offset {
				k.orphans[tp] = o
			}
			continue
		}
		if c, ok := k.committed[tp]; ok && o.offset+1 <= c {
			delete(offs, tp)
			continue
		}
		if req[tp.topic] == nil {
			req[tp.topic] = map[int32]kgo.EpochOffset{}
		}
		req[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: o.epoch, Offset: o.offset + 1}
	}
	k.mu.Unlock()
	if len(req) == 0 {
		k.tr.done(n)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	start := time.Now()
	var err error
	failed := map[topicPart]delivered{}
	k.cl.CommitOffsetsSync(ctx, req, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, e error) {
		if e != nil {
			err = e
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				tp := topicPart{t.Topic, p.Partition}
				if pe := kerr.ErrorForCode(p.ErrorCode); pe != nil {
					if o, ok := offs[tp]; ok {
						failed[tp] = o
					}
					if err == nil {
						err = fmt.Errorf("%s: %w", tp, pe)
					}
					continue
				}
				if o, ok := offs[tp]; ok {
					k.setCommitted(tp, o.offset+1)
				}
			}
		}
	})
	k.commitLat.Observe(time.Since(start).Seconds())
	if err != nil {
		if len(failed) == 0 {
			failed = offs
		}
		k.commitFailed(failed, n, err)
		return err
	}
	k.commits.Add(1)
	k.tr.done(n)
	k.commitStreak.ok(k.log, "kafka offset commits succeed again")
	return nil
}

// commitTimeout bounds a commit, which kgo retries meanwhile while the
// coordinator answers with a retriable error.
const commitTimeout = 2 * time.Second

// setCommitted records a commit of tp up to off.
func (k *input) setCommitted(tp topicPart, off int64) {
	k.mu.Lock()
	if c, ok := k.committed[tp]; !ok || off > c {
		k.committed[tp] = off
	}
	k.mu.Unlock()
}

func (k *input) commitFailed(offs map[topicPart]delivered, n int, err error) {
	k.commitErrors.Add(1)
	k.tr.restore(offs, n)
	k.commitStreak.fail(k.log, "kafka offset commit failed; retrying", "err", err)
}

// commitLoop commits every commit_interval, sooner when half the window
// is waiting, and retries a failed commit with backoff.
func (k *input) commitLoop() {
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
		case <-k.commitStop:
			return
		}
		if err := k.commit(); err != nil {
			retry.Reset(bo.next())
		} else {
			bo.reset()
		}
	}
}

// finalCommit commits what the outputs delivered, retrying until it
// succeeds or the deadline passes, and logs what it leaves uncommitted.
func (k *input) finalCommit(deadline time.Time) {
	bo := backoff{min: 100 * time.Millisecond, max: time.Second}
	for {
		err := k.commit()
		if err == nil && !k.tr.pendingReady() {
			if err = k.commitOutside(); err == nil {
				break
			}
			if (errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration)) && k.othersInGroup() {
				// The group has other members, which own the partitions
				// now and read these events again: retrying cannot help.
				// (With none but the input itself, rejoining, the group
				// gives the partitions back, or it leaves.)
				k.mu.Lock()
				k.staleOffsets.Add(uint64(len(k.orphans)))
				k.mu.Unlock()
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

// commitOutside commits the orphans, the delivered offsets of partitions
// a rebalance or a lost membership (a session that expired while the
// brokers could not be reached) took away, as a client outside the group
// (generation -1),
// which the brokers take only while the group has no member. Offsets the
// group has committed past are left alone.
func (k *input) commitOutside() error {
	k.commitMu.Lock()
	defer k.commitMu.Unlock()
	k.mu.Lock()
	orphans := make(map[topicPart]delivered, len(k.orphans))
	for tp, o := range k.orphans {
		orphans[tp] = o
	}
	k.mu.Unlock()
	if len(orphans) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	now, err := k.adm.FetchOffsets(ctx, k.kc.Group)
	if err != nil {
		return err
	}
	offs := kadm.Offsets{}
	for tp, o := range orphans {
		if c, ok := now.Lookup(tp.topic, tp.partition); ok && c.Err == nil && o.offset+1 <= c.At {
			continue
		}
		offs.Add(kadm.Offset{Topic: tp.topic, Partition: tp.partition, At: o.offset + 1, LeaderEpoch: o.epoch})
	}
	if len(offs) > 0 {
		resp, err := k.adm.CommitOffsets(ctx, k.kc.Group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			k.commitErrors.Add(1)
			return err
		}
		k.commits.Add(1)
		k.log.Info("kafka: delivered offsets committed from outside the group, which has no member", "partitions", len(orphans))
	}
	k.mu.Lock()
	for tp, o := range orphans {
		if c, ok := k.committed[tp]; !ok || o.offset+1 > c {
			k.committed[tp] = o.offset + 1
		}
		if cur := k.orphans[tp]; cur.offset == o.offset {
			delete(k.orphans, tp)
		}
	}
	k.mu.Unlock()
	return nil
}

// othersInGroup reports whether the group has members other than the
// input's own client, as the coordinator describes it.
func (k *input) othersInGroup() bool {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	me, _ := k.cl.GroupMetadata()
	dg, err := k.adm.DescribeGroups(ctx, k.kc.Group)
	if err != nil {
		return false
	}
	for _, m := range dg[k.kc.Group].Members {
		if m.MemberID != me {
			return true
		}
	}
	return false
}

// logUncommitted says which delivered offsets the shutdown could not
// commit.
func (k *input) logUncommitted(err error) {
	var parts []string
	k.tr.mu.Lock()
	for tp, o := range k.tr.ready {
		parts = append(parts, fmt.Sprintf("%s:%d", tp, o.offset+1))
	}
	events := k.tr.readyN
	k.tr.mu.Unlock()
	k.mu.Lock()
	for tp, o := range k.orphans {
		parts = append(parts, fmt.Sprintf("%s:%d", tp, o.offset+1))
	}
	k.mu.Unlock()
	if len(parts) == 0 {
		return
	}
	sort.Strings(parts)
	k.log.Error("kafka: delivered offsets left uncommitted at shutdown; the group reads their events again",
		"events", events, "offsets", strings.Join(parts, " "), "err", err)
}
