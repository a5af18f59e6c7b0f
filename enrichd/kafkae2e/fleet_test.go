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
