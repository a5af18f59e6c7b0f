package kafkae2e

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestBrokerDown makes one broker stop answering for 4 seconds while
// events stream: kfake closes every connection that sends it a request.
// The broker leads some partitions of both topics but is not the group
// coordinator, so the outage hits fetches and produces, not the group.
// enrichd retries, counts the produce retries in its metrics, and
// recovers: every event arrives, enriched, and at most max_uncommitted
// of them twice; the events_out it logs at its stop is the records in
// the output topic.
func TestBrokerDown(t *testing.T) {
	const n, rows, window, down = 400_000, 10_000, 5000, 4 * time.Second
	cf := &conf{
		tables:  tableDir(t, rows),
		columns: `columns: ["Customer Id"]`,
		input:   ", max_uncommitted: 5000, commit_interval: 200ms",
		output:  ", key_field: cust, backoff_max: 1s",
	}
	c := kafkatest.Start(t, 3, 12, "in", "out")
	victim := pickVictim(t, c)

	p := start1(t, c, cf)
	waitStable(t, c, 1, 60*time.Second)
	// One producer for both halves: its producer ID and metadata come
	// before the outage, which then hits only enrichd's traffic and the
	// producer's writes, which it retries.
	pr := c.Producer(t, "in")
	pr.Produce(t, 0, n*5/8, event(rows))
	waitOut(t, n/8, 120*time.Second, p)

	var refused atomic.Int64
	until := time.Now().Add(down)
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		if time.Now().After(until) {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		if c.CurrentNode() != victim {
			return nil, nil, false
		}
		refused.Add(1)
		return nil, errors.New("down"), true // kfake closes the connection
	})
	before := p.metrics()
	t.Logf("broker %d down for %v with %v events out", victim, down, before[mProduced])
	pr.Produce(t, n*5/8, n, event(rows)) // partly into the outage

	_, done := waitCommitted(t, c, 120*time.Second, p)
	t.Logf("all committed %v after the outage began; broker %d refused %d requests",
		done.Sub(until.Add(-down)).Round(time.Millisecond), victim, refused.Load())
	after := p.metrics()
	logMetrics(t, p)
	if refused.Load() == 0 {
		t.Fatalf("broker %d got no request while down: the test tested nothing", victim)
	}
	retries := after[mRetries] - before[mRetries]
	fetchErrs := after[mFetchErrs] - before[mFetchErrs]
	t.Logf("during the outage: %v produce retries, %v fetch errors", retries, fetchErrs)
	// Produces to the broker fail and are retried. Fetches from it do not
	// count as errors: kgo retries a fetch from a broker that closed the
	// connection without reporting it to the poller, so only the produce
	// side can be asserted on.
	if retries == 0 {
		t.Errorf("no produce retry counted while broker %d was down", victim)
	}
	p.term(t)
	if lag := c.Lag(t, group, "in"); lag != 0 {
		t.Errorf("after shutdown the group has %d events uncommitted, want 0", lag)
	}
	out := readOut(t, c)
	dups := out.verify(t, n)
	if dups > window {
		t.Errorf("%d duplicates, more than max_uncommitted %d", dups, window)
	}
	if got := p.eventsOut(t); got != out.Total {
		t.Errorf("enrichd counts %d events delivered, the output topic holds %d", got, out.Total)
	}
}

// pickVictim returns a broker that leads partitions of both topics and is
// not the group's coordinator.
func pickVictim(t testing.TB, c *kafkatest.Cluster) int32 {
	t.Helper()
	coord := c.CoordinatorFor(group)
	leads := map[int32]map[string]int{}
	for _, topic := range []string{"in", "out"} {
		for p := range int32(12) {
			l := c.LeaderFor(topic, p)
			if leads[l] == nil {
				leads[l] = map[string]int{}
			}
			leads[l][topic]++
		}
	}
	for node, l := range leads {
		if node != coord && l["in"] > 0 && l["out"] > 0 {
			t.Logf("victim: broker %d, leader of %d input and %d output partitions; the group coordinator is broker %d", node, l["in"], l["out"], coord)
			return node
		}
	}
	t.Fatalf("no broker but the coordinator (%d) leads partitions of both topics: %v", coord, leads)
	return -1
}
