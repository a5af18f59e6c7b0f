package enrichd

import (
	"context"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// deadLetter keeps events that could not be produced.
type deadLetter interface {
	write(lines, keys [][]byte) error
	close() error
}

func newDeadLetter(kc *KafkaOutputConfig, tr *kafka.Transport, stop <-chan struct{}) (deadLetter, error) {
	if topic, ok := strings.CutPrefix(kc.DeadLetter, "kafka:"); ok {
		return &topicDeadLetter{stop: stop, w: &kafka.Writer{
			Addr: kafka.TCP(kc.Brokers...), Topic: topic, Balancer: &kafka.RoundRobin{},
			BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: tr,
		}}, nil
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

func (l *fileDeadLetter) write(lines, _ [][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = l.buf[:0]
	for _, v := range lines {
		l.buf = append(append(l.buf, v...), '\n')
	}
	if _, err := l.f.Write(l.buf); err != nil {
		return err
	}
	return l.f.Sync()
}

func (l *fileDeadLetter) close() error { return l.f.Close() }

// topicDeadLetter produces to a dead-letter topic, retrying until it
// succeeds or the daemon gives up on shutdown.
type topicDeadLetter struct {
	w    *kafka.Writer
	stop <-chan struct{}
}

func (l *topicDeadLetter) write(lines, keys [][]byte) error {
	msgs := make([]kafka.Message, len(lines))
	for i := range lines {
		msgs[i] = kafka.Message{Key: keys[i], Value: lines[i]}
	}
	backoff := 100 * time.Millisecond
	for {
		err := l.w.WriteMessages(context.Background(), msgs...)
		if err == nil {
			return nil
		}
		select {
		case <-l.stop:
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, DefaultKafkaBackoffMax)
	}
}

func (l *topicDeadLetter) close() error { return l.w.Close() }
