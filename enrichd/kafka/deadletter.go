package kafka

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// deadLetter keeps events that could not be produced.
type deadLetter interface {
	write(recs []*kgo.Record) error
	close() error
}

// newDeadLetter opens the dead letter: a file, or a topic produced to by
// a client of its own, which retries until the brokers take the events
// or ctx ends (the shutdown deadline).
func newDeadLetter(kc *OutputConfig, ctx context.Context, log *slog.Logger) (deadLetter, error) {
	if topic, ok := strings.CutPrefix(kc.DeadLetter, "kafka:"); ok {
		opts, _, err := clientOpts(kc.Conn, log)
		if err != nil {
			return nil, err
		}
		cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))...)
		if err != nil {
			return nil, err
		}
		return &topicDeadLetter{cl: cl, ctx: ctx}, nil
	}
	f, err := os.OpenFile(kc.DeadLetter, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &fileDeadLetter{f: f}, nil
}

// fileDeadLetter appends the events as JSON lines and syncs the file.
type fileDeadLetter struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
}

func (l *fileDeadLetter) write(recs []*kgo.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = l.buf[:0]
	for _, r := range recs {
		l.buf = append(append(l.buf, r.Value...), '\n')
	}
	if _, err := l.f.Write(l.buf); err != nil {
		return err
	}
	return l.f.Sync()
}

func (l *fileDeadLetter) close() error { return l.f.Close() }

// topicDeadLetter produces to a dead-letter topic.
type topicDeadLetter struct {
	cl  *kgo.Client
	ctx context.Context
}

func (l *topicDeadLetter) write(recs []*kgo.Record) error {
	out := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		out[i] = &kgo.Record{Key: r.Key, Value: r.Value}
	}
	return l.cl.ProduceSync(l.ctx, out...).FirstErr()
}

func (l *topicDeadLetter) close() error {
	l.cl.Close()
	return nil
}
