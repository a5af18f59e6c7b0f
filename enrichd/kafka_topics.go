package enrichd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// topicMeta is a topic's partition count, fetched from the brokers.
type topicMeta struct {
	name    string
	parts   []int // 0..n-1, for the balancer
	fetched time.Time
	err     error
}

// metadataTTL is how long a topic's partition count is trusted.
const metadataTTL = 30 * time.Second

// topicOf returns the topic event i goes to, with its partitions.
func (s *kafkaSink) topicOf(ob *Buffer, i int) (*topicMeta, error) {
	name := s.cfg.Topic
	var v []byte
	if s.topicF >= 0 {
		v = ob.Field(i, s.topicF)
	}
	s.mu.Lock()
	var tm *topicMeta
	if len(v) > 0 {
		tm = s.topics[string(v)]
	} else {
		tm = s.topics[name]
	}
	if tm != nil && tm.err == nil && time.Since(tm.fetched) < metadataTTL {
		s.mu.Unlock()
		return tm, nil
	}
	s.mu.Unlock()
	if len(v) > 0 {
		name = string(v)
	}
	return s.fetchTopic(name)
}

// fetchTopic asks the brokers for a topic's partitions; with
// create_topic, it creates a topic that does not exist.
func (s *kafkaSink) fetchTopic(name string) (*topicMeta, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tm := &topicMeta{name: name, fetched: time.Now()}
	res, err := s.cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{name}})
	if err == nil && len(res.Topics) == 1 && errors.Is(res.Topics[0].Error, kafka.UnknownTopicOrPartition) && s.mayCreate(name) {
		if err = s.createTopic(ctx, name); err == nil {
			res, err = s.cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{name}})
		}
	}
	switch {
	case err != nil:
		tm.err = err
	case len(res.Topics) != 1 || res.Topics[0].Error != nil:
		tm.err = fmt.Errorf("topic %q: %w", name, kafka.UnknownTopicOrPartition)
		if len(res.Topics) == 1 {
			tm.err = fmt.Errorf("topic %q: %w", name, res.Topics[0].Error)
		}
	case len(res.Topics[0].Partitions) == 0:
		tm.err = fmt.Errorf("topic %q has no partitions", name)
	default:
		tm.parts = make([]int, len(res.Topics[0].Partitions))
		for i := range tm.parts {
			tm.parts[i] = i
		}
	}
	s.mu.Lock()
	if old := s.topics[name]; old == nil || old.err != nil || tm.err == nil {
		if len(s.topics) < 10000 {
			s.topics[name] = tm
		}
	}
	s.mu.Unlock()
	return tm, tm.err
}

// staleTopic makes the next event of the topic fetch its metadata again.
func (s *kafkaSink) staleTopic(tm *topicMeta) {
	s.mu.Lock()
	tm.fetched = time.Time{}
	s.mu.Unlock()
}

// checkTopics checks, at start, that the output topic and a dead-letter
// topic exist, creating them with create_topic: without it a missing
// topic stops the start. Brokers that cannot be reached are only logged
// (probeKafka): the topics are then checked as events go to them.
func (s *kafkaSink) checkTopics() error {
	topics := []string{s.cfg.Topic}
	if t, ok := strings.CutPrefix(s.cfg.DeadLetter, "kafka:"); ok {
		topics = append(topics, t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range topics {
		res, err := s.cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{name}})
		if err != nil {
			s.log.Warn("kafka: could not check that the topic exists; brokers unreachable", "topic", name, "err", err)
			return nil
		}
		if len(res.Topics) == 1 && res.Topics[0].Error == nil {
			continue
		}
		if len(res.Topics) == 1 && !errors.Is(res.Topics[0].Error, kafka.UnknownTopicOrPartition) {
			return fmt.Errorf("topic %q: %w", name, res.Topics[0].Error)
		}
		if s.cfg.CreateTopic == nil {
			return fmt.Errorf("topic %q does not exist: create it, or set create_topic to have enrichd create it", name)
		}
		s.mayCreate(name)
		if err := s.createTopic(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// mayCreate reports whether a missing topic should be created now: with
// create_topic, at most once every 10 s per topic.
func (s *kafkaSink) mayCreate(name string) bool {
	if s.cfg.CreateTopic == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.creating[name]; ok && time.Since(t) < 10*time.Second {
		return false
	}
	if len(s.creating) >= 10000 {
		return false
	}
	s.creating[name] = time.Now()
	return true
}

// createTopic creates a topic with create_topic's partitions and
// replication factor (a topic created meanwhile is fine).
func (s *kafkaSink) createTopic(ctx context.Context, name string) error {
	spec := s.cfg.CreateTopic
	res, err := s.cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: name, NumPartitions: spec.Partitions, ReplicationFactor: spec.ReplicationFactor,
	}}})
	if err == nil {
		err = res.Errors[name]
	}
	if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %q: %w", name, err)
	}
	if err == nil {
		s.log.Info("kafka: created topic", "topic", name, "partitions", spec.Partitions, "replication_factor", spec.ReplicationFactor)
	}
	return nil
}
