package kafkae2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestRollingRestart restarts three static members (instance_id), one
// after the other, while a stream runs: every partition moves at most
// once (none should: a static member that comes back within the session
// timeout gets its partitions back), and every event arrives. Then a
// fourth, dynamic member joins: with the cooperative-sticky assignor
// only the partitions it takes move (an eager range assignor moves
// others between the old members too, which fails the test), and the
// members write events of the partitions they keep while the group
// rebalances, which the output records' timestamps show (each member
// writes to a topic of its own, and event i is in input partition i%12).
// The longest pause of each kept partition's writes around the
// rebalance is logged: kgo restarts a member's fetch session when it
// gives up a partition, so such a member pauses its other partitions
// too until the rebalance ends.
func TestRollingRestart(t *testing.T) {
	const rows, parts, nprocs = 10_000, 12, 3
	tables := tableDir(t, rows)
	c := kafkatest.Start(t, 3, parts, "in", "out-1", "out-2", "out-3", "out-4")
	member := func(i int, static bool) (string, string, *conf) {
		name := fmt.Sprintf("enrichd-%d", i)
		input := ", commit_interval: 200ms, session_timeout: 30s, heartbeat_interval: 500ms"
		if static {
			input += ", instance_id: " + name
		}
		cf := &conf{tables: tables, columns: `columns: ["Customer Id"]`, input: input, outTopic: fmt.Sprintf("out-%d", i)}
		return name, writeConfig(t, c, name, cf), cf
	}
	procs := make([]*proc, nprocs)
	for i := range procs {
		name, path, cf := member(i+1, true)
		procs[i] = start(t, name, path, cf)
	}
	for _, p := range procs {
		p.waitReady(t)
	}
	waitStable(t, c, nprocs, 60*time.Second)

	// The stream: event i goes to input partition i%parts.
	pr := c.Client(t, kgo.DefaultProduceTopic("in"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond))
	var (
		mu      sync.Mutex
		next    int
		stopped = make(chan struct{})
		done    = make(chan error, 1)
	)
	go func() {
		for {
			select {
			case <-stopped:
				done <- nil
				return
			default:
			}
			mu.Lock()
			from := next
			mu.Unlock()
			recs := make([]*kgo.Record, 240)
			for j := range recs {
				id := from + j
				recs[j] = &kgo.Record{Value: kafkatest.Event(id, rows), Partition: int32(id % parts)}
			}
			if err := pr.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				done <- err
				return
			}
			mu.Lock()
			next += len(recs)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	stopStream := func() int {
		close(stopped)
		if err := <-done; err != nil {
			t.Fatalf("producing the stream: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		return next
	}
	epoch := c.GroupInfo(group).Epoch
	waitOut(t, 5000, 60*time.Second, procs...)

	// The rolling restart.
	for i := range procs {
		procs[i].term(t)
		name, path, cf := member(i+1, true)
		procs[i] = start(t, name, path, cf)
		procs[i].waitReady(t)
		waitOut(t, 1000, 60*time.Second, procs[i])
	}
	waitStable(t, c, nprocs, 60*time.Second)
	t.Logf("rolling restart of %d static members: group generation %d before, %d after", nprocs, epoch, c.GroupInfo(group).Epoch)

	// A dynamic member joins; the group's state is watched meanwhile.
	var rebalance struct {
		sync.Mutex
		from, to time.Time
	}
	watchDone := make(chan struct{})
	watchStop := make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			select {
			case <-watchStop:
				return
			default:
			}
			g := c.GroupInfo(group)
			now := time.Now()
			rebalance.Lock()
			if g != nil && g.State != "Stable" && rebalance.from.IsZero() {
				rebalance.from = now
			}
			if g != nil && g.State == "Stable" && !rebalance.from.IsZero() && len(g.Members) == nprocs+1 && rebalance.to.IsZero() {
				rebalance.to = now
			}
			rebalance.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	name, path, cf := member(nprocs+1, false)
	p4 := start(t, name, path, cf)
	p4.waitReady(t)
	waitStable(t, c, nprocs+1, 60*time.Second)
	waitOut(t, 1000, 60*time.Second, p4)
	close(watchStop)
	<-watchDone
	n := stopStream()
	all := append(slices.Clone(procs), p4)
	waitCommitted(t, c, 120*time.Second, all...)
	for _, p := range all {
		p.term(t)
	}

	rebalance.Lock()
	from, to := rebalance.from, rebalance.to
	rebalance.Unlock()
	if from.IsZero() || to.IsZero() {
		t.Fatalf("no rebalance seen when the fourth member joined (from %v to %v)", from, to)
	}

	// Who wrote each event, and when.
	owner := make([][]stamp, parts) // by input partition: each event's writer, in event order
	seen := map[int]int{}
	early := map[int]int{} // copies written before the fourth member's join began
	for m := 1; m <= nprocs+1; m++ {
		for _, s := range readStamped(t, c, fmt.Sprintf("out-%d", m)) {
			s.member = m
			seen[s.id]++
			if s.at.Before(from) {
				early[s.id]++
			}
			owner[s.id%parts] = append(owner[s.id%parts], s)
		}
	}
	missing, dups, rollingDups := 0, 0, 0
	for i := range n {
		switch k := seen[i]; {
		case k == 0:
			missing++
		case k > 1:
			dups += k - 1
		}
		rollingDups += max(0, early[i]-1)
	}
	t.Logf("%d events, %d missing, %d duplicates (%d of them written twice before the fourth member joined)", n, missing, dups, rollingDups)
	if missing > 0 {
		t.Errorf("%d of %d events missing", missing, n)
	}
	if rollingDups > 0 {
		t.Errorf("%d events written twice before the fourth member joined: the rolling restart of static members read events again", rollingDups)
	}

	t.Logf("the fourth member's join: the group rebalanced for %v", to.Sub(from).Round(time.Millisecond))
	for p, evs := range owner {
		slices.SortFunc(evs, func(a, b stamp) int { return a.id - b.id })
		var moves []string
		last := 0
		for _, s := range evs {
			if s.member != last {
				if last != 0 {
					moves = append(moves, fmt.Sprintf("%d->%d at event %d", last, s.member, s.id))
				}
				last = s.member
			}
		}
		if len(moves) > 1 {
			t.Errorf("partition %d moved %d times: %v", p, len(moves), moves)
		}
		if len(moves) == 1 && evs[len(evs)-1].member != nprocs+1 {
			t.Errorf("partition %d moved (%v), not to the member that joined", p, moves)
		}
		if len(moves) > 0 {
			t.Logf("partition %d: %v", p, moves)
			continue
		}
		// Kept through the join: its member wrote events of it while
		// the group rebalanced.
		during := 0
		var gap time.Duration // the longest pause in its writes around the rebalance
		var prev time.Time
		for _, s := range evs {
			if s.at.After(from) && s.at.Before(to) {
				during++
			}
			if s.at.After(from.Add(-time.Second)) && s.at.Before(to.Add(time.Second)) {
				if !prev.IsZero() {
					gap = max(gap, s.at.Sub(prev))
				}
				prev = s.at
			}
		}
		t.Logf("partition %d kept by member %d: %d events written during the rebalance, longest pause %v around it",
			p, evs[0].member, during, gap.Round(time.Millisecond))
		if during == 0 {
			t.Errorf("partition %d: member %d wrote none of its events during the %v rebalance: it stopped reading a partition it kept",
				p, evs[0].member, to.Sub(from).Round(time.Millisecond))
		}
	}
}

// stamp is an output event: its id, who wrote it and when (the record's
// timestamp, set by the writer's producer).
type stamp struct {
	id     int
	member int
	at     time.Time
}

// readStamped reads every record of topic.
func readStamped(t *testing.T, c *kafkatest.Cluster, topic string) []stamp {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(c.Client(t)).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{}
	starts := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
			starts[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	var out []stamp
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %d partitions not to their end", topic, len(left))
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := left[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			var m struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatalf("%s: %v: %s", topic, err, r.Value)
			}
			id, err := strconv.Atoi(m.ID)
			if err != nil {
				t.Fatalf("%s: no id: %s", topic, r.Value)
			}
			out = append(out, stamp{id: id, at: r.Timestamp})
			if r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	return out
}
