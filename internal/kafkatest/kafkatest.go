// Package kafkatest runs an in-process Kafka cluster (kfake, speaking the
// real wire protocol over TCP on 127.0.0.1) for tests, and produces and
// reads topics with an independent client (franz-go).
package kafkatest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Cluster is a kfake cluster.
type Cluster struct {
	*kfake.Cluster
	Addrs []string
}

// Start starts a cluster of brokers with the topics, each of partitions
// partitions; it is closed when the test ends.
func Start(t testing.TB, brokers int, partitions int32, topics ...string) *Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &Cluster{Cluster: c, Addrs: c.ListenAddrs()}
}

// Client returns a franz-go client of the cluster, closed when the test
// ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Produce writes the events gen(i) for i in [from, to) to topic,
// acknowledged by the brokers, in batches spread over the partitions.
func (c *Cluster) Produce(t testing.TB, topic string, from, to int, gen func(i int) []byte) {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(2*time.Millisecond),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.MaxBufferedRecords(100_000))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := from; i < to; i++ {
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Value: gen(i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
}

// Consume reads topic from the start until want records arrived or the
// timeout passed, and returns their values.
func (c *Cluster) Consume(t testing.TB, topic string, want int, timeout time.Duration) [][]byte {
	t.Helper()
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out [][]byte
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r.Value) })
	}
	return out
}

// Lag returns how many records of topic the group has not committed.
func (c *Cluster) Lag(t testing.TB, group, topic string) int64 {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var lag int64
	ends.Each(func(o kadm.ListedOffset) {
		at := int64(0)
		if r, ok := committed.Lookup(o.Topic, o.Partition); ok && r.Err == nil {
			at = r.At
		}
		lag += o.Offset - at
	})
	return lag
}

// Event is the syslog line of event i: an RFC 5424 message whose
// key=value pairs give its unique id, a customer and a source address.
func Event(i, customers int) []byte {
	return fmt.Appendf(nil, "<134>1 2026-11-30T05:24:00.000Z web-%02d app %d login - id=%d cust=%d src=%d.%d.%d.%d action=login",
		i%20, 1000+i%5000, i, 1+i%customers, 1+i%223, (i>>8)&255, (i>>16)&255, i&255)
}

// Tally counts enriched events by id and checks each against its
// expected customer: want(cust) is the Customer Id the table gives.
type Tally struct {
	Seen  map[int]int
	Dups  int
	Bad   []string
	Total int
}

// Check decodes enriched JSON lines.
func Check(lines [][]byte, customerID func(cust int) string) *Tally {
	ty := &Tally{Seen: map[int]int{}}
	for _, l := range lines {
		ty.Total++
		var m struct {
			ID       string `json:"id"`
			Cust     string `json:"cust"`
			Customer struct {
				ID string `json:"Customer Id"`
			} `json:"customer"`
		}
		if err := json.Unmarshal(l, &m); err != nil {
			ty.Bad = append(ty.Bad, fmt.Sprintf("%v: %s", err, l))
			continue
		}
		id, err := strconv.Atoi(m.ID)
		cust, err2 := strconv.Atoi(m.Cust)
		if err != nil || err2 != nil {
			ty.Bad = append(ty.Bad, "no id or cust: "+string(l))
			continue
		}
		if want := customerID(cust); m.Customer.ID != want {
			ty.Bad = append(ty.Bad, fmt.Sprintf("customer %q, want %q: %s", m.Customer.ID, want, l))
		}
		ty.Seen[id]++
		if ty.Seen[id] > 1 {
			ty.Dups++
		}
	}
	return ty
}

// Missing returns the ids in [0, n) not seen.
func (ty *Tally) Missing(n int) []int {
	var miss []int
	for i := range n {
		if ty.Seen[i] == 0 {
			miss = append(miss, i)
		}
	}
	return miss
}
