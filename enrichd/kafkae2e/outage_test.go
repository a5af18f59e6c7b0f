package kafkae2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestClusterOutage stops all three brokers, at a random point of a
// stream, for 2, 5, 8 and 15 seconds in a random order; the input is idle
// afterwards. The session timeout is 10 s, so that the longest outage
// costs enrichd its group membership, and the shorter ones do not. Within
// 5 s of the brokers' return the group's committed offsets, as an
// independent client (franz-go) reads them from the brokers, must equal
// the end offsets; enrichd's lag metric must be exported for each of the
// 12 partitions, read 0 only when that is so, and read 0 soon after.
//
// Then, after one more outage, which begins when enrichd has fetched the
// whole stream, enrichd gets SIGTERM just as the brokers return: it must
// exit 0 with every offset committed, and a new enrichd must not deliver
// any event again. The events_out each logs at its stop is the records
// it added to the output topic.
//
// KAFKAE2E_SEED=n repeats a run's order and stopping points.
func TestClusterOutage(t *testing.T) {
	const rows = 10_000
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KAFKAE2E_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("KAFKAE2E_SEED: %v", err)
		}
	}
	t.Logf("KAFKAE2E_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	cf := &conf{
		tables:  tableDir(t, rows),
		columns: `columns: ["Customer Id"]`,
		input:   ", session_timeout: 10s, heartbeat_interval: 3s",
		output:  ", key_field: cust",
	}
	c := kafkatest.Start(t, 3, 12, "in", "out")
	cfgPath := writeConfig(t, c, "enrichd", cf)
	p := start(t, "enrichd", cfgPath, cf)
	p.waitReady(t)
	waitStable(t, c, 1, 60*time.Second)
	adm := kadm.NewClient(c.Client(t))
	pr := c.Producer(t, "in")
	next := 0 // ids produced so far: [0, next)
	// stream produces about 25,000 events/s for 0.3 to 2 s; the brokers
	// stop when it ends, while enrichd has events in every stage: fetched,
	// being produced, delivered and not yet committed.
	stream := func() {
		until := time.Now().Add(300*time.Millisecond + time.Duration(rng.Int64N(int64(1700*time.Millisecond))))
		for time.Now().Before(until) {
			pr.Produce(t, next, next+500, event(rows))
			next += 500
			time.Sleep(15 * time.Millisecond)
		}
	}

	downs := []time.Duration{2 * time.Second, 5 * time.Second, 8 * time.Second, 15 * time.Second}
	rng.Shuffle(len(downs), func(i, j int) { downs[i], downs[j] = downs[j], downs[i] })
	// An outage can make enrichd read again what it had fetched and not
	// committed when it began: the events uncommitted at the last scrape
	// and those it had still to fetch (the stream has ended by then).
	readAgain := 0.0
	for _, down := range downs {
		stream()
		before := p.metrics()
		c.StopBrokers()
		readAgain += before[mInflight] + float64(next) - before[mEventsIn]
		t.Logf("brokers stopped for %v after event %d; enrichd had %v events out, %v uncommitted",
			down, next, before[mProduced], before[mInflight])
		time.Sleep(down)
		c.StartBrokers(t)
		checkRecovery(t, c, adm, p, time.Now(), down)
	}
	logMetrics(t, p)

	// SIGTERM as the brokers return from an outage that began when
	// enrichd had fetched the whole stream (so that every offset can be
	// committed).
	stream()
	for deadline := time.Now().Add(60 * time.Second); p.metrics()[mEventsIn] < float64(next); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("enrichd fetched %v of the %d events in 60 s", p.metrics()[mEventsIn], next)
		}
	}
	readAgain += p.metrics()[mInflight]
	c.StopBrokers()
	t.Logf("brokers stopped for 5s after event %d; SIGTERM when they return", next)
	time.Sleep(5 * time.Second)
	c.StartBrokers(t)
	back := time.Now()
	p.term(t)
	t.Logf("enrichd exited %v after the brokers returned", time.Since(back).Round(time.Millisecond))
	if lag := c.Lag(t, group, "in"); lag != 0 {
		t.Errorf("after SIGTERM the group has %d events uncommitted, want 0", lag)
	}
	out := readOut(t, c)
	dups := out.verify(t, next)
	t.Logf("%d duplicates; at most %v fetched and not committed when the outages began", dups, readAgain)
	if float64(dups) > readAgain {
		t.Errorf("%d duplicates, more than the %v events fetched and not committed when the outages began", dups, readAgain)
	}
	if got := p.eventsOut(t); got != out.Total {
		t.Errorf("enrichd counts %d events delivered, the output topic holds %d", got, out.Total)
	}

	// A new enrichd reads only what comes after.
	p2 := start(t, "enrichd-2", cfgPath, cf)
	p2.waitReady(t)
	waitStable(t, c, 1, 60*time.Second)
	const more = 1000
	pr.Produce(t, next, next+more, event(rows))
	waitCommitted(t, c, 60*time.Second, p2)
	p2.term(t)
	again := readOut(t, c)
	again.verify(t, next+more)
	if got := again.Total - out.Total; got != more {
		t.Errorf("after the restart %d events out, want the %d new ones: %d delivered again", got, more, got-more)
	}
	if got := p2.eventsOut(t); got != again.Total-out.Total {
		t.Errorf("the restarted enrichd counts %d events delivered, the output topic got %d more", got, again.Total-out.Total)
	}
}

// checkRecovery polls, from the brokers' return, the group's committed
// and end offsets (asked of the brokers) and enrichd's metrics: within 5 s
// the offsets must be equal; enrichd's lag must have a series for each
// partition, read 0 only when they are, and read 0 (with nothing
// delivered and uncommitted) within 5 s after.
func checkRecovery(t *testing.T, c *kafkatest.Cluster, adm *kadm.Client, p *proc, back time.Time, down time.Duration) {
	t.Helper()
	deadline := back.Add(5 * time.Second)
	var equalAt time.Time
	var last string
	reported := map[string]bool{}
	fail := func(key, format string, args ...any) {
		if !reported[key] {
			reported[key] = true
			t.Errorf("outage of %v: "+format, append([]any{down}, args...)...)
		}
	}
	for {
		now := time.Now()
		m := p.metrics()
		lags := lagSeries(m)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		committed, end, err := kafkatest.GroupOffsets(ctx, adm, group, "in")
		cancel()
		if p.exited() {
			t.Fatalf("enrichd exited: %v", p.err)
		}
		if err == nil {
			var behind []string
			var uncommitted int64
			for part, e := range end {
				if d := e - committed[part]; d != 0 {
					uncommitted += d
					behind = append(behind, fmt.Sprintf("%d: %d/%d", part, committed[part], e))
				}
			}
			sort.Strings(behind)
			last = fmt.Sprintf("%d uncommitted (partition: committed/end %s); enrichd: lag %v, delivered and uncommitted for %vs",
				uncommitted, strings.Join(behind, ", "), lags, m[mDeliveredAge])
			if len(lags) != len(end) {
				fail("series", "enrichd exports the lag of %d partitions, want all %d: %s", len(lags), len(end), last)
			}
			zero := len(lags) == len(end)
			for _, v := range lags {
				zero = zero && v == 0
			}
			if zero && uncommitted != 0 {
				fail("zero", "enrichd's lag reads 0 while the group has %s", last)
			}
			if uncommitted == 0 && equalAt.IsZero() {
				equalAt = now
				t.Logf("outage of %v: committed offsets equal the end offsets %v after the brokers returned",
					down, now.Sub(back).Round(time.Millisecond))
			}
			if !equalAt.IsZero() && zero && m[mDeliveredAge] == 0 {
				if _, ok := m[mDeliveredAge]; ok {
					t.Logf("outage of %v: enrichd's lag reads 0 %v after the brokers returned", down, now.Sub(back).Round(time.Millisecond))
					return
				}
			}
		} else {
			last = "offsets not read: " + err.Error()
		}
		switch {
		case equalAt.IsZero() && now.After(deadline):
			fail("late", "5s after the brokers returned the group has %s", last)
			return
		case !equalAt.IsZero() && now.After(equalAt.Add(5*time.Second)):
			fail("metric", "every offset committed, but 5s later enrichd's metrics say: %s", last)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lagSeries returns the enrichd_kafka_consumer_lag samples of the input
// topic, by partition.
func lagSeries(m map[string]float64) map[int]float64 {
	lags := map[int]float64{}
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, `enrichd_kafka_consumer_lag{`)
		if !ok || !strings.Contains(rest, `topic="in"`) {
			continue
		}
		_, after, _ := strings.Cut(rest, `partition="`)
		part, _, _ := strings.Cut(after, `"`)
		if n, err := strconv.Atoi(part); err == nil {
			lags[n] = v
		}
	}
	return lags
}
