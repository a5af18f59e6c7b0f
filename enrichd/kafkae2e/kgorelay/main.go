// kgorelay is the least a relay between Kafka topics on franz-go's kgo
// does per event, the floor of enrichd's Kafka path on the same client.
// It reads a topic as a member of a consumer group and produces one
// record to another topic for every record it reads, with the client
// settings enrichd's Kafka input and output use by default (cooperative
// sticky groups, linger 1ms, acks from all replicas with idempotent
// writes, no compression, one timestamp per fetch). Each value is one of
// the lines of a file, taken in turn: the lines enrichd writes for those
// events, so that the bytes produced are enrichd's. It parses, looks up
// and encodes nothing, and lets kgo commit the offsets it polled rather
// than those delivered, which is less work than enrichd's commits.
//
// It serves the count of records the brokers acknowledged at /metrics,
// as kgorelay_produced_total, and stops on SIGTERM or SIGINT after its
// records are acknowledged. BenchmarkKgoRelay (package kafkae2e) runs
// it on enrichd's CPU and reports its CPU per event beside enrichd's.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", "", "seed brokers, comma-separated")
	in := flag.String("in", "in", "topic to read")
	out := flag.String("out", "out", "topic to produce to")
	group := flag.String("group", "kgorelay", "consumer group")
	linesPath := flag.String("lines", "", "file whose lines are the values produced, taken in turn")
	listen := flag.String("listen", "127.0.0.1:0", "address of the /metrics endpoint")
	linger := flag.Duration("linger", time.Millisecond, "how long a partition's batch waits for more records (enrichd's linger)")
	acks := flag.String("acks", "all", "acknowledgements the producer waits for: all (idempotent writes) or leader")
	batch := flag.Int("batch-bytes", 1_000_000, "bytes of a partition's record batch at most (enrichd's batch_bytes)")
	flag.Parse()
	if *brokers == "" || *linesPath == "" {
		log.Fatal("kgorelay: --brokers and --lines are required")
	}
	lines, err := readLines(*linesPath)
	if err != nil {
		log.Fatal(err)
	}
	ack := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
	switch *acks {
	case "all":
	case "leader":
		ack = []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}
	default:
		log.Fatalf("kgorelay: --acks %q: all or leader", *acks)
	}
	cl, err := kgo.NewClient(append(ack,
		kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(*in),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic(*out),
		kgo.ProducerBatchMaxBytes(int32(*batch)),
		kgo.ProducerLinger(*linger),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)...)
	if err != nil {
		log.Fatal(err)
	}
	var produced atomic.Uint64
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		err := http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "kgorelay_produced_total %d\n", produced.Load())
		}))
		log.Print(err)
	}()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	r := &relay{cl: cl, lines: lines, produced: &produced, free: make(chan *slab, 16)}
	r.run(ctx)
	if err := cl.Flush(context.Background()); err != nil {
		log.Print(err)
	}
	cl.Close()
}

// relay produces a record for each record polled.
type relay struct {
	cl       *kgo.Client
	lines    [][]byte
	next     int
	produced *atomic.Uint64
	free     chan *slab // slabs whose records are all acknowledged
}

// slab holds the records produced for one poll, reused once the
// brokers acknowledged all of them.
type slab struct {
	r       *relay
	recs    []kgo.Record
	left    atomic.Int64
	promise func(*kgo.Record, error)
}

func (r *relay) run(ctx context.Context) {
	for {
		fs := r.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		fs.EachError(func(t string, p int32, err error) { log.Printf("fetch %s/%d: %v", t, p, err) })
		n := fs.NumRecords()
		if n == 0 {
			continue
		}
		s := r.slab(n)
		now := time.Now()
		i := 0
		fs.EachRecord(func(*kgo.Record) {
			rec := &s.recs[i]
			i++
			*rec = kgo.Record{Value: r.lines[r.next], Timestamp: now}
			if r.next++; r.next == len(r.lines) {
				r.next = 0
			}
			r.cl.Produce(ctx, rec, s.promise)
		})
	}
}

// slab returns a slab of n records, reused when one is free.
func (r *relay) slab(n int) *slab {
	var s *slab
	select {
	case s = <-r.free:
	default:
		s = &slab{r: r}
		s.promise = s.done
	}
	if cap(s.recs) < n {
		s.recs = make([]kgo.Record, n)
	}
	s.recs = s.recs[:n]
	s.left.Store(int64(n))
	return s
}

// done is each record's promise.
func (s *slab) done(_ *kgo.Record, err error) {
	if err != nil {
		log.Fatalf("produce: %v", err)
	}
	s.r.produced.Add(1)
	if s.left.Add(-1) == 0 {
		select {
		case s.r.free <- s:
		default:
		}
	}
}

// readLines returns the non-empty lines of the file at path.
func readLines(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines [][]byte
	for l := range bytes.Lines(b) {
		if l = bytes.TrimSuffix(l, []byte("\n")); len(l) > 0 {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s: no lines", path)
	}
	return lines, nil
}
