package enrichd

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// partFetcher fetches one assigned partition (a kafka-go Reader of that
// partition, which finds its leader, reconnects with backoff up to a
// second and reads ahead) and hands its messages to the input's loop.
type partFetcher struct {
	tp     topicPart
	start  int64 // the offset the fetch began at, or a kafka.FirstOffset/LastOffset
	r      *kafka.Reader
	cancel context.CancelFunc
	done   chan struct{} // the forwarding goroutine returned

	// stopped: the partition was revoked; the input drops the messages
	// still on their way.
	stopped atomic.Bool
	// next is the offset after the last message the input took (-1:
	// none yet); hwm the partition's high watermark with it.
	next, hwm atomic.Int64
	// first is the offset of the first message the input took (-1: none).
	first atomic.Int64
}

// fetched is a message on its way from a fetcher to the input's loop.
type fetched struct {
	f *partFetcher
	m kafka.Message
}

// startFetcher starts fetching tp at offset (or at kafka.FirstOffset or
// kafka.LastOffset).
func (k *kafkaInput) startFetcher(tp topicPart, offset int64) {
	kc := k.kc
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:         kc.Brokers,
		Topic:           tp.topic,
		Partition:       tp.partition,
		Dialer:          k.dialer,
		MinBytes:        max(1, kc.MinBytes),
		MaxBytes:        k.maxBytes,
		MaxWait:         k.maxWait,
		QueueCapacity:   128,
		ReadBackoffMin:  100 * time.Millisecond,
		ReadBackoffMax:  time.Second, // a broker that returns is read from within a second
		ReadLagInterval: -1,
		ErrorLogger:     k.readerLog,
	})
	if err := r.SetOffset(offset); err != nil {
		k.log.Error("kafka: starting a partition's fetch", "partition", tp.String(), "err", err)
		r.Close()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &partFetcher{tp: tp, start: offset, r: r, cancel: cancel, done: make(chan struct{})}
	f.next.Store(-1)
	f.hwm.Store(-1)
	f.first.Store(-1)
	k.mu.Lock()
	k.fetchers[tp] = f
	k.mu.Unlock()
	go k.forward(ctx, f)
}

// forward hands f's messages to the input's loop until f is stopped.
func (k *kafkaInput) forward(ctx context.Context, f *partFetcher) {
	defer close(f.done)
	failed := false
	for {
		m, err := f.r.FetchMessage(ctx)
		if err == nil && failed {
			failed = false
			k.fetchStreak.ok(k.log, "kafka fetches succeed again")
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// The reader goes on retrying; it reports an error after a few
			// failed attempts.
			failed = true
			k.fetchErrors.Add(1)
			k.fetchStreak.fail(k.log, "kafka fetch failed; retrying", "partition", f.tp.String(), "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case k.msgs <- fetched{f, m}:
		case <-ctx.Done():
			return
		}
	}
}

// stopFetchers stops fetching every partition and returns, by partition,
// the offset after the last message the input took (or, if it took none,
// where the fetch began). The readers close in the background; closed
// is done when all have.
func (k *kafkaInput) stopFetchers() map[topicPart]int64 {
	k.mu.Lock()
	fs := k.fetchers
	k.fetchers = map[topicPart]*partFetcher{}
	k.mu.Unlock()
	pos := make(map[topicPart]int64, len(fs))
	for tp, f := range fs {
		f.stopped.Store(true)
		f.cancel()
		k.closing.Add(1)
		go func() {
			defer k.closing.Done()
			<-f.done
			f.r.Close()
		}()
		if n := f.next.Load(); n >= 0 {
			pos[tp] = n
		} else if f.start >= 0 {
			pos[tp] = f.start
		}
	}
	return pos
}

// limitedLogger sends the partition readers' error log to slog, at most
// one line per interval: a broker outage makes every reader log every
// retry.
type limitedLogger struct {
	l       *slog.Logger
	every   time.Duration
	mu      sync.Mutex
	last    time.Time
	dropped int
}

func (k *limitedLogger) Printf(format string, args ...any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if now := time.Now(); now.Sub(k.last) >= k.every {
		if k.dropped > 0 {
			k.l.Warn("kafka: "+fmt.Sprintf(format, args...), "similar_lines_dropped", k.dropped)
		} else {
			k.l.Warn("kafka: " + fmt.Sprintf(format, args...))
		}
		k.last, k.dropped = now, 0
		return
	}
	k.dropped++
}
