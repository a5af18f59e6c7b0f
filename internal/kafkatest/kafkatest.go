// Package kafkatest runs an in-process Kafka cluster (kfake, speaking the
// real wire protocol over TCP on 127.0.0.1) for tests, and produces and
// reads topics with an independent client (franz-go). It also builds the
// customers table that enrichd's tests, Kafka or not, enrich from.
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
	Opts  []kgo.Opt // what every client needs (TLS, SASL)

	lns *listeners // the brokers' listeners (StopBrokers)
}

// Start starts a cluster of brokers with the topics, each of partitions
// partitions; it is closed when the test ends.
func Start(t testing.TB, brokers int, partitions int32, topics ...string) *Cluster {
	t.Helper()
	lns := &listeners{}
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(partitions, topics...), kfake.ListenFn(lns.listen))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &Cluster{Cluster: c, Addrs: c.ListenAddrs(), lns: lns}
}

// Client returns a franz-go client of the cluster, closed when the test
// ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(c.Addrs...)}, c.Opts...)
	cl, err := kgo.NewClient(append(all, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Produce writes the events gen(i) for i in [from, to) to topic,
// acknowledged by the brokers, in batches spread over the partitions.
// It uses a new producer; see Producer to keep one across calls.
func (c *Cluster) Produce(t testing.TB, topic string, from, to int, gen func(i int) []byte) {
	t.Helper()
	c.Producer(t, topic).Produce(t, from, to, gen)
}

// Producer is a client that writes to one topic. Keeping one across
// Produce calls keeps its producer ID and metadata, so a test can fault a
// broker between calls without the fault hitting the producer's setup.
type Producer struct{ cl *kgo.Client }

// Producer returns a producer for topic, closed when the test ends.
func (c *Cluster) Producer(t testing.TB, topic string) *Producer {
	t.Helper()
	return &Producer{c.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(2*time.Millisecond),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.MaxBufferedRecords(100_000))}
}

// Produce writes the events gen(i) for i in [from, to), acknowledged by
// the brokers, and fails the test on the first error.
func (p *Producer) Produce(t testing.TB, from, to int, gen func(i int) []byte) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := from; i < to; i++ {
		wg.Add(1)
		p.cl.Produce(context.Background(), &kgo.Record{Value: gen(i)}, func(_ *kgo.Record, err error) {
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

// ReadAll reads every record topic holds now, from the start of each
// partition to its end offset, and calls fn with each value (fn must not
// keep it). It returns how many it read, and fails the test if that takes
// longer than timeout.
func (c *Cluster) ReadAll(t testing.TB, topic string, timeout time.Duration, fn func(value []byte)) int {
	t.Helper()
	return c.readAll(t, topic, timeout, false, fn)
}

// ReadCommitted is ReadAll as a read_committed consumer: only the
// records of committed transactions (and those written outside any)
// reach fn. Every transaction on topic must have ended, committed or
// aborted (by its producer or by the brokers' transaction timeout),
// before it can return: it reads up to the end offsets, and the markers
// of the transactions' ends are the last records.
func (c *Cluster) ReadCommitted(t testing.TB, topic string, timeout time.Duration, fn func(value []byte)) int {
	t.Helper()
	return c.readAll(t, topic, timeout, true, fn)
}

func (c *Cluster) readAll(t testing.TB, topic string, timeout time.Duration, committed bool, fn func(value []byte)) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ends, err := kadm.NewClient(c.Client(t)).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{} // partition: offset still to reach
	starts := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
			starts[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}),
		kgo.FetchMaxWait(200 * time.Millisecond), kgo.FetchMaxBytes(64 << 20),
		// The control records (the markers of transactions' ends) come
		// too, so that the reader knows it reached the end offset.
		kgo.KeepControlRecords()}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := c.Client(t, opts...)
	defer cl.Close()
	n := 0
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %d records read, %d partitions not to their end after %v", topic, n, len(left), timeout)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := left[r.Partition]
			if !ok {
				return
			}
			if r.Offset >= end {
				// Written after ReadAll started; a read_committed
				// reader may see one first after aborted records.
				delete(left, r.Partition)
				return
			}
			if !r.Attrs.IsControl() {
				fn(r.Value)
				n++
			}
			if r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	return n
}

// Lag returns how many records of topic the group has not committed.
func (c *Cluster) Lag(t testing.TB, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lag, err := GroupLag(ctx, kadm.NewClient(c.Client(t)), group, topic)
	if err != nil {
		t.Fatal(err)
	}
	return lag
}

// GroupLag returns how many records of topic the group has not
// committed, asking with adm (for polling without a client per call).
func GroupLag(ctx context.Context, adm *kadm.Client, group, topic string) (int64, error) {
	committed, end, err := GroupOffsets(ctx, adm, group, topic)
	if err != nil {
		return 0, err
	}
	var lag int64
	for p, e := range end {
		lag += e - committed[p]
	}
	return lag, nil
}

// GroupOffsets returns, by partition of topic, the offset the group
// committed (0 when it committed none) and the end offset, as the brokers
// report them. The committed offsets are asked first: when every one
// equals its end offset, the group had committed everything written
// before the end offsets were asked.
func GroupOffsets(ctx context.Context, adm *kadm.Client, group, topic string) (committed, end map[int32]int64, err error) {
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, nil, err
	}
	if err := offs.Error(); err != nil {
		return nil, nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	committed, end = map[int32]int64{}, map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && err == nil {
			err = fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
		}
		end[o.Partition] = o.Offset
		committed[o.Partition] = 0
		if r, ok := offs.Lookup(o.Topic, o.Partition); ok && r.Err == nil && r.At >= 0 {
			committed[o.Partition] = r.At
		}
	})
	return committed, end, err
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

	customerID func(cust int) string
}

// Check decodes enriched JSON lines.
func Check(lines [][]byte, customerID func(cust int) string) *Tally {
	ty := NewTally(customerID)
	for _, l := range lines {
		ty.Add(l)
	}
	return ty
}

// NewTally returns an empty Tally for Add; customerID(cust) is the
// Customer Id the table gives.
func NewTally(customerID func(cust int) string) *Tally {
	return &Tally{Seen: map[int]int{}, customerID: customerID}
}

// Add counts one enriched JSON line.
func (ty *Tally) Add(l []byte) {
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
		return
	}
	id, err := strconv.Atoi(m.ID)
	cust, err2 := strconv.Atoi(m.Cust)
	if err != nil || err2 != nil {
		ty.Bad = append(ty.Bad, "no id or cust: "+string(l))
		return
	}
	if want := ty.customerID(cust); m.Customer.ID != want {
		ty.Bad = append(ty.Bad, fmt.Sprintf("customer %q, want %q: %s", m.Customer.ID, want, l))
	}
	ty.Seen[id]++
	if ty.Seen[id] > 1 {
		ty.Dups++
	}
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
