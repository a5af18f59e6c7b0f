package kafkae2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// Exactly once between Kafka topics (pipeline.delivery: exactly_once):
// the output's events and the input's offsets are committed in one
// transaction, so that a read_committed reader of the output sees every
// input event once, whatever fails in between.

const (
	mTxnCommitted = `enrichd_kafka_transactions_total{input="kafka",result="committed"}`
	mTxnAborted   = `enrichd_kafka_transactions_total{input="kafka",result="aborted"}`
)

// eosConf is an exactly-once configuration: transactions of at most
// 200 ms or 20,000 events, aborted by the brokers 8 s after a member
// dies in one.
func eosConf(tables string, input string) *conf {
	return &conf{
		tables:   tables,
		columns:  `columns: ["Customer Id"]`,
		input:    ", max_uncommitted: 20000, commit_interval: 200ms" + input,
		output:   ", key_field: cust, transaction_timeout: 8s",
		pipeline: ", delivery: exactly_once",
	}
}

// readExactlyOnce reads the output topic as a read_committed reader and
// fails the test unless every id in [0, n) is there once, enriched; it
// also reads it as a read_uncommitted reader and returns how many events
// that one sees more (the aborted transactions' records).
func readExactlyOnce(t *testing.T, c *kafkatest.Cluster, n int) (held, aborted int) {
	t.Helper()
	r := readOutWith(t, c.ReadCommitted)
	if dups := r.verify(t, n); dups != 0 {
		t.Errorf("a read_committed reader sees %d duplicates, want 0", dups)
	}
	all := c.ReadAll(t, "out", 120*time.Second, func([]byte) {})
	t.Logf("a read_uncommitted reader sees %d events, %d of aborted transactions", all, all-r.Total)
	return r.Total, all - r.Total
}

// checkCommittedCount checks the events_out a member logged at its stop
// against the output topic: it counts the events of the transactions
// that committed, so it is what a read_committed reader holds (held), not
// what a read_uncommitted reader holds (those and the aborted
// transactions' records).
func checkCommittedCount(t *testing.T, p *proc, held, aborted int) {
	t.Helper()
	if out := p.eventsOut(t); out != held {
		t.Errorf("the member counts %d events delivered, a read_committed reader holds %d (a read_uncommitted one %d, with %d of aborted transactions)", out, held, held+aborted, aborted)
	}
}

// startHalf starts one exactly-once member (its group session of
// session) on a new cluster, sends it the first half of n events and
// waits until half of those are out; it returns the cluster, the member
// and the producer of the input topic.
func startHalf(t *testing.T, n, rows int, session time.Duration) (*kafkatest.Cluster, *proc, *kafkatest.Producer) {
	t.Helper()
	c := kafkatest.Start(t, 3, 12, "in", "out")
	cf := eosConf(tableDir(t, rows), fmt.Sprintf(", session_timeout: %v, heartbeat_interval: 1s", session))
	p := start1(t, c, cf)
	waitStable(t, c, 1, 60*time.Second)
	pr := c.Producer(t, "in")
	pr.Produce(t, 0, n/2, event(rows))
	waitOut(t, float64(n/4), 120*time.Second, p)
	return c, p, pr
}

// checkEnd stops the member and checks that the group committed every
// input event, that a read_committed reader of the output sees each of
// the n events once, and that the member counted what that reader holds.
func checkEnd(t *testing.T, c *kafkatest.Cluster, p *proc, n int) {
	t.Helper()
	p.term(t)
	if lag := c.Lag(t, group, "in"); lag != 0 {
		t.Errorf("after shutdown the group has %d events uncommitted, want 0", lag)
	}
	held, aborted := readExactlyOnce(t, c, n)
	checkCommittedCount(t, p, held, aborted)
}

// holdEnds makes the brokers close the connection of every EndTxn
// request (commit or abort) until release is called, and returns the
// transactional ids that asked: a member that asked has produced records
// in a transaction it cannot end while the hold lasts.
func holdEnds(c *kafkatest.Cluster) (asked func() int, release func()) {
	var mu sync.Mutex
	ids := map[string]bool{}
	var released atomic.Bool
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		if released.Load() {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		end, ok := req.(*kmsg.EndTxnRequest)
		if !ok {
			return nil, nil, false
		}
		mu.Lock()
		ids[end.TransactionalID] = true
		mu.Unlock()
		return nil, errors.New("held"), true // kfake closes the connection
	})
	asked = func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(ids)
	}
	return asked, func() { released.Store(true) }
}

// waitAsked waits until n members have asked to end a transaction.
func waitAsked(t *testing.T, asked func() int, n int) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); asked() < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d members asked to end a transaction in 60 s, want %d", asked(), n)
		}
	}
}

// TestExactlyOnceKill runs two enrichd processes of a consumer group
// with delivery: exactly_once and SIGKILLs one in the middle of the
// stream, in a transaction: the brokers hold every member's transaction
// end (holdEnds) until both have records in a transaction they cannot
// end, so that the kill always finds one. The survivor takes its
// partitions after the session timeout and reads their events again from
// the group's committed offsets; the brokers abort the dead member's
// transaction after transaction_timeout. A read_committed reader of the
// output sees every input event exactly once, and a read_uncommitted one
// sees the aborted records besides.
func TestExactlyOnceKill(t *testing.T) {
	const n, rows = 200_000, 10_000
	tables := tableDir(t, rows)
	c := kafkatest.Start(t, 3, 12, "in", "out")
	var procs []*proc
	for i := range 2 {
		cf := eosConf(tables, ", session_timeout: 6s, heartbeat_interval: 500ms, rebalance_timeout: 6s")
		name := fmt.Sprintf("enrichd-%d", i+1)
		procs = append(procs, start(t, name, writeConfig(t, c, name, cf), cf))
	}
	for _, p := range procs {
		p.waitReady(t)
	}
	waitStable(t, c, 2, 60*time.Second)

	pr := c.Producer(t, "in")
	pr.Produce(t, 0, n/2, event(rows))
	waitOut(t, n/4, 120*time.Second, procs...)
	asked, release := holdEnds(c)
	pr.Produce(t, n/2, 3*n/4, event(rows))
	waitAsked(t, asked, 2)
	victim, survivor := procs[1], procs[0]
	before := victim.metrics()
	victim.kill(t)
	release()
	t.Logf("killed %s in a transaction it could not end, with %v events produced by the group; it had produced %v in %v committed transactions",
		victim.name, sum(procs, mProduced), before[mProduced], before[mTxnCommitted])
	pr.Produce(t, 3*n/4, n, event(rows))

	waitCommitted(t, c, 120*time.Second, survivor)
	m := survivor.metrics()
	t.Logf("%s: %v transactions committed, %v aborted", survivor.name, m[mTxnCommitted], m[mTxnAborted])
	survivor.term(t)
	if lag := c.Lag(t, group, "in"); lag != 0 {
		t.Errorf("after the survivor stopped the group has %d events uncommitted, want 0", lag)
	}
	if _, aborted := readExactlyOnce(t, c, n); aborted == 0 {
		t.Errorf("no event of an aborted transaction in the output: the victim's open transaction was not aborted, or it had none")
	}
}

// TestExactlyOnceOutage stops all three brokers for 5 seconds in the
// middle of an exactly-once stream, once the member has records in a
// transaction it could not end (holdEnds): the transaction under way
// cannot end; enrichd ends it (or the brokers abort it) once they are
// back, and goes on. A read_committed reader of the output sees every input event
// exactly once, and the group commits them all. The member's events_out
// is what the read_committed reader holds (checkCommittedCount).
func TestExactlyOnceOutage(t *testing.T) {
	const n, rows = 200_000, 10_000
	c, p, pr := startHalf(t, n, rows, 10*time.Second)
	asked, release := holdEnds(c)
	pr.Produce(t, n/2, 3*n/4, event(rows))
	waitAsked(t, asked, 1)
	before := p.metrics()
	c.StopBrokers()
	release()
	t.Logf("brokers stopped for 5s in a transaction, with %v events produced in %v committed transactions", before[mProduced], before[mTxnCommitted])
	time.Sleep(5 * time.Second)
	c.StartBrokers(t)
	pr.Produce(t, 3*n/4, n, event(rows))
	waitCommitted(t, c, 120*time.Second, p)
	m := p.metrics()
	t.Logf("%v transactions committed, %v aborted", m[mTxnCommitted], m[mTxnAborted])
	checkEnd(t, c, p, n)
}

// TestExactlyOnceEndFails makes the brokers close the connection of every
// AddOffsetsToTxn and TxnOffsetCommit request for 25 s, longer than the client retries one,
// in the middle of an exactly-once stream: ending the transactions fails.
// enrichd aborts each, reads on from the group's committed offsets, and
// once the brokers take the requests again commits the rest: a
// read_committed reader of the output sees every input event exactly
// once. The member's events_out is what the read_committed reader holds
// (checkCommittedCount).
func TestExactlyOnceEndFails(t *testing.T) {
	const n, rows, down = 100_000, 10_000, 25 * time.Second
	c, p, pr := startHalf(t, n, rows, 10*time.Second)
	var refused atomic.Int64
	until := time.Now().Add(down)
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		if time.Now().After(until) {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		if k := req.Key(); k != (&kmsg.AddOffsetsToTxnRequest{}).Key() && k != (&kmsg.TxnOffsetCommitRequest{}).Key() {
			return nil, nil, false
		}
		refused.Add(1)
		return nil, errors.New("down"), true // kfake closes the connection
	})
	pr.Produce(t, n/2, n, event(rows))
	waitCommitted(t, c, 180*time.Second, p)
	m := p.metrics()
	t.Logf("%d AddOffsetsToTxn or TxnOffsetCommit requests refused; %v transactions committed, %v aborted, %v ends failed",
		refused.Load(), m[mTxnCommitted], m[mTxnAborted], m[`enrichd_kafka_transactions_total{input="kafka",result="error"}`])
	if m[`enrichd_kafka_transactions_total{input="kafka",result="error"}`] == 0 {
		t.Errorf("no transaction end failed: the test tested nothing")
	}
	checkEnd(t, c, p, n)
}

// loseEndAnswer makes the brokers apply the first transaction commit
// (EndTxn) asked after it is called, and lose its answer: the request
// is not answered, and the same request, sent by a client of the test's
// own, commits the transaction. The brokers then close the connection of
// every EndTxn commit of that producer epoch the member sends again, so
// that its End fails; a commit of another epoch (the member's next
// transaction) passes, and ends the control. applied returns the error
// of the test's commit, and whether it was sent.
func loseEndAnswer(t *testing.T, c *kafkatest.Cluster) (applied func() (error, bool)) {
	cl := c.Client(t)
	const (
		waiting = iota
		sending // the test's commit is on its way
		lost
	)
	var (
		mu     sync.Mutex
		state  = waiting
		id     int64
		epoch  int16
		result = make(chan error, 1)
	)
	c.ControlKey((&kmsg.EndTxnRequest{}).Key(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		end := req.(*kmsg.EndTxnRequest)
		if !end.Commit {
			return nil, nil, false
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case state == waiting:
			state, id, epoch = sending, end.ProducerID, end.ProducerEpoch
			again := *end
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				resp, err := again.RequestWith(ctx, cl)
				if err == nil {
					err = kerr.ErrorForCode(resp.ErrorCode)
				}
				result <- err
			}()
			return nil, nil, true // no answer
		case state == sending && end.ProducerID == id && end.ProducerEpoch == epoch:
			state = lost // the test's own: the member asks again only after its request timeout
			return nil, nil, false
		case end.ProducerID == id && end.ProducerEpoch == epoch:
			return nil, errors.New("lost"), true // kfake closes the connection
		default:
			c.DropControl()
			return nil, nil, false
		}
	})
	var (
		once   sync.Once
		endErr error
		sent   bool
	)
	return func() (error, bool) {
		once.Do(func() {
			select {
			case endErr = <-result:
				sent = true
			case <-time.After(10 * time.Second):
			}
		})
		return endErr, sent
	}
}

// TestExactlyOnceAnswerLost loses the answer to a transaction commit
// that the brokers applied (loseEndAnswer), in the middle of an
// exactly-once stream: the client's End fails, enrichd aborts (the client
// fences the transaction, already committed), reads the group's
// committed offsets, finds them at the transaction's end and reads on
// from there, counting the transaction's events as delivered. A
// read_committed reader of the output sees every input event exactly
// once, and the member's events_out is what it holds.
//
// The member's session (30 s) outlasts the 10 s it waits for the lost
// answer: with 10 s, one run in six lost its group session meanwhile
// ("unable to join group session"), its partitions were given to it
// again, and the transaction, committed, was not counted (80,000 of
// 100,000), as the docs say of an end found committed after a
// rebalance.
func TestExactlyOnceAnswerLost(t *testing.T) {
	const n, rows = 100_000, 10_000
	c, p, pr := startHalf(t, n, rows, 30*time.Second)
	applied := loseEndAnswer(t, c)
	pr.Produce(t, n/2, n, event(rows))
	waitCommitted(t, c, 180*time.Second, p)
	m := p.metrics()
	errs := m[`enrichd_kafka_transactions_total{input="kafka",result="error"}`]
	t.Logf("%v transactions committed, %v aborted, %v ends failed", m[mTxnCommitted], m[mTxnAborted], errs)
	if err, sent := applied(); !sent || err != nil {
		t.Errorf("no transaction commit applied with its answer lost (sent %v, err %v): the test tested nothing", sent, err)
	}
	if errs == 0 {
		t.Errorf("no transaction end failed: the client saw the lost answer's commit succeed")
	}
	checkEnd(t, c, p, n)
}
