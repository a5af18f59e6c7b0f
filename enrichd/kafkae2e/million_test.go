package kafkae2e

import (
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestMillion streams 1,000,000 events from the input topic through one
// enrichd process to the output topic: every event arrives once,
// enriched as the customers table and the .mmdb say, and on shutdown the
// group has committed every offset.
func TestMillion(t *testing.T) {
	const n, rows = 1_000_000, 100_000
	cf := &conf{tables: tableDir(t, rows), columns: `columns: ["Customer Id"]`, output: ", key_field: cust"}
	c := kafkatest.Start(t, 3, 12, "in", "out")
	start := time.Now()
	c.Produce(t, "in", 0, n, event(rows))
	t.Logf("%d events produced to the input topic in %v", n, time.Since(start).Round(time.Millisecond))

	p := start1(t, c, cf)
	first, done := waitCommitted(t, c, 150*time.Second, p)
	el := done.Sub(first)
	t.Logf("enriched and committed %d events in %v: %.0f events/s (from the first event out to the last offset committed)",
		n, el.Round(time.Millisecond), n/el.Seconds())
	if got := p.metrics()[mProduced]; got != n {
		t.Errorf("kafka_produced_total = %v, want %d", got, n)
	}
	logMetrics(t, p)
	p.term(t)
	if lag := c.Lag(t, group, "in"); lag != 0 {
		t.Errorf("after shutdown the group has %d events uncommitted, want 0", lag)
	}
	start = time.Now()
	if dups := readOut(t, c).verify(t, n); dups != 0 {
		t.Errorf("%d duplicates without a failure, want 0", dups)
	}
	t.Logf("output read and checked in %v", time.Since(start).Round(time.Millisecond))
}

// start1 starts one enrichd process and waits until it is ready.
func start1(t testing.TB, c *kafkatest.Cluster, cf *conf) *proc {
	t.Helper()
	p := start(t, "enrichd", writeConfig(t, c, "enrichd", cf), cf)
	p.waitReady(t)
	return p
}
