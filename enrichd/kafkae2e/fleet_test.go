package kafkae2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestFleetKill runs three enrichd processes in one consumer group and
// SIGKILLs one when about a third of the events are out. The other two
// take its partitions after the session timeout (6s, the least kfake
// allows, as Kafka does by default) and finish: every event
// arrives, enriched; the events read again are at most max_uncommitted
// per process; and after the survivors stop on SIGTERM the group has
// committed everything.
func TestFleetKill(t *testing.T) {
	const n, rows, window, nprocs = 300_000, 10_000, 5000, 3
	tables := tableDir(t, rows)
	c := kafkatest.Start(t, 3, 12, "in", "out")
	var procs []*proc
	for i := range nprocs {
		cf := &conf{
			tables:  tables,
			columns: `columns: ["Customer Id"]`,
			input: fmt.Sprintf(", max_uncommitted: %d, commit_interval: 200ms, session_timeout: 6s, heartbeat_interval: 500ms, rebalance_timeout: 6s",
				window),
			output: ", key_field: cust",
		}
		name := fmt.Sprintf("enrichd-%d", i+1)
		procs = append(procs, start(t, name, writeConfig(t, c, name, cf), cf))
	}
	for _, p := range procs {
		p.waitReady(t)
	}
	waitStable(t, c, nprocs, 60*time.Second)

	// Half the events before the kill, half while the group rebalances.
	c.Produce(t, "in", 0, n/2, event(rows))
	waitOut(t, n/3, 120*time.Second, procs...)
	victim, survivors := procs[1], []*proc{procs[0], procs[2]}
	before := victim.metrics()
	victim.kill(t)
	t.Logf("killed %s with %v events out of the fleet; it had %v events out, %v uncommitted at its last scrape",
		victim.name, sum(procs, mProduced), before[mProduced], before[mInflight])
	c.Produce(t, "in", n/2, n, event(rows))

	start := time.Now()
	waitCommitted(t, c, 120*time.Second, survivors...)
	t.Logf("survivors committed everything %v after the kill", time.Since(start).Round(time.Millisecond))
	logMetrics(t, procs...)
	for _, p := range survivors {
		p.term(t)
	}
	if lag := c.Lag(t, group, "in"); lag != 0 {
		t.Errorf("after the survivors stopped the group has %d events uncommitted, want 0", lag)
	}
	dups := readOut(t, c).verify(t, n)
	t.Logf("%d duplicates; bound %d processes x max_uncommitted %d = %d", dups, nprocs, window, nprocs*window)
	if dups > nprocs*window {
		t.Errorf("%d duplicates, more than %d processes x max_uncommitted %d", dups, nprocs, window)
	}
}

// TestFleetRebalance streams events while the group changes. A second
// enrichd joins the first mid-stream: partitions move, the first one
// commits what it delivered before they do, and the events it had fetched
// and not delivered are read again (at most max_uncommitted). Then the
// first one gets SIGTERM mid-stream: it delivers and commits everything it
// fetched and leaves the group, so its partitions move at once, long
// before the 30 s session timeout, and no event is read twice. The
// events_out each logs at its stop add up to the records in the topic.
func TestFleetRebalance(t *testing.T) {
	const n, rows, window = 150_000, 10_000, 5000
	tables := tableDir(t, rows)
	c := kafkatest.Start(t, 3, 12, "in", "out")
	startOne := func(name string) *proc {
		cf := &conf{
			tables:  tables,
			columns: `columns: ["Customer Id"]`,
			input:   fmt.Sprintf(", max_uncommitted: %d, commit_interval: 200ms, session_timeout: 30s, heartbeat_interval: 500ms", window),
			output:  ", key_field: cust",
		}
		p := start(t, name, writeConfig(t, c, name, cf), cf)
		p.waitReady(t)
		return p
	}
	pr := c.Producer(t, "in")
	p1 := startOne("enrichd-1")
	waitStable(t, c, 1, 60*time.Second)
	pr.Produce(t, 0, n/3, event(rows))
	waitOut(t, n/6, 120*time.Second, p1)

	// Scale out mid-stream.
	p2 := startOne("enrichd-2")
	waitStable(t, c, 2, 60*time.Second)
	pr.Produce(t, n/3, 2*n/3, event(rows))
	waitCommitted(t, c, 120*time.Second, p1, p2)
	joined := readOut(t, c)
	dupsJoin := joined.verify(t, 2*n/3)
	t.Logf("%d duplicates from the second member's join; bound max_uncommitted %d", dupsJoin, window)
	if dupsJoin > window {
		t.Errorf("%d duplicates from a member's join, more than max_uncommitted %d", dupsJoin, window)
	}

	// SIGTERM one mid-stream: it leaves, and its partitions move at once.
	pr.Produce(t, 2*n/3, n, event(rows))
	waitOut(t, float64(2*n/3+n/12), 120*time.Second, p1, p2)
	term := time.Now()
	p1.term(t)
	t.Logf("%s stopped %v after SIGTERM", p1.name, time.Since(term).Round(time.Millisecond))
	waitStable(t, c, 1, 60*time.Second)
	if moved := time.Since(term); moved > 15*time.Second {
		t.Errorf("the group took %v after SIGTERM to give the partitions to the other member: the member did not leave", moved)
	} else {
		t.Logf("the group was stable with one member %v after SIGTERM", moved.Round(time.Millisecond))
	}
	waitCommitted(t, c, 120*time.Second, p2)
	logMetrics(t, p1, p2)
	p2.term(t)
	if lag := c.Lag(t, group, "in"); lag != 0 {
		t.Errorf("after shutdown the group has %d events uncommitted, want 0", lag)
	}
	all := readOut(t, c)
	if dups := all.verify(t, n); dups != dupsJoin {
		t.Errorf("%d duplicates after the SIGTERM, %d before it: a member that leaves must have every event it fetched delivered and committed", dups, dupsJoin)
	}
	// The members' counts agree with the topic.
	if out1, out2 := p1.eventsOut(t), p2.eventsOut(t); out1+out2 != all.Total {
		t.Errorf("the members count %d + %d events delivered, the topic holds %d", out1, out2, all.Total)
	}
}
