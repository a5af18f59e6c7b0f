package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestFetchPoolRecycles reads 20,000 records, in hundreds of record
// batches, through a fetchPool, recycling each once its value is read,
// as the input does: every value is the one produced, and kgo takes its
// record slices from the pool instead of allocating new ones.
func TestFetchPoolRecycles(t *testing.T) {
	const n = 20_000
	c := kafkatest.Start(t, 1, 3, "in")
	// In 200 rounds, each acknowledged before the next: hundreds of
	// record batches.
	p := c.Producer(t, "in")
	for i := 0; i < n; i += 100 {
		p.Produce(t, i, i+100, func(i int) []byte { return fmt.Appendf(nil, "event %d", i) })
	}

	// Small fetches (4 KiB), so that most of the batches come after the
	// first two fetches, whose slices are new.
	pool := &countingPool{}
	cl := c.Client(t, kgo.ConsumeTopics("in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(4<<10), kgo.WithPools(pool))
	seen := make([]bool, n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d of %d records: %v", got, n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var i int
			if _, err := fmt.Sscanf(string(r.Value), "event %d", &i); err != nil || i < 0 || i >= n || seen[i] {
				t.Fatalf("record %q: not a new event (%v)", r.Value, err)
			}
			seen[i] = true
			got++
			r.Recycle()
		})
	}
	gets, hits, puts := pool.counts()
	t.Logf("record slices: %d gets, %d from the pool, %d put back", gets, hits, puts)
	if puts == 0 || hits < gets*3/4 {
		t.Fatalf("record slices: %d gets, %d from the pool, %d put back: the pool is not reused", gets, hits, puts)
	}
}

// countingPool is a fetchPool that counts its record slices' gets, those
// served from its free list, and puts.
type countingPool struct {
	fetchPool
	gets, hits, puts int
}

func (p *countingPool) GetRecords(n int) []kgo.Record {
	p.recs.mu.Lock()
	p.gets++
	if c := sizeClass(n); c < len(p.recs.free) && len(p.recs.free[c]) > 0 {
		p.hits++
	}
	p.recs.mu.Unlock()
	return p.fetchPool.GetRecords(n)
}

func (p *countingPool) PutRecords(r []kgo.Record) {
	p.recs.mu.Lock()
	p.puts++
	p.recs.mu.Unlock()
	p.fetchPool.PutRecords(r)
}

func (p *countingPool) counts() (gets, hits, puts int) {
	p.recs.mu.Lock()
	defer p.recs.mu.Unlock()
	return p.gets, p.hits, p.puts
}
