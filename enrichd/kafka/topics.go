package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// maxTopics bounds the topic names an output remembers (topic_field
// values, topics created).
const maxTopics = 10000

// topic returns the topic a topic_field value names, interned; with
// create_topic, it creates the topic the first time it sees it (and again
// at most every 10 s while that fails).
func (o *output) topic(v []byte) (string, error) {
	o.mu.Lock()
	name, ok := o.names[string(v)]
	if !ok {
		name = string(v)
		if len(o.names) < maxTopics {
			o.names[name] = name
		}
	}
	known := o.known[name]
	o.mu.Unlock()
	if known || o.cfg.CreateTopic == nil {
		return name, nil
	}
	if !o.mayCreate(name) {
		return name, nil // being created, or failed a moment ago: kgo retries
	}
	ctx, cancel := context.WithTimeout(o.ctx, 10*time.Second)
	defer cancel()
	if err := o.createTopic(ctx, name); err != nil {
		o.log.Warn("kafka: creating a topic failed", "topic", name, "err", err)
		return name, nil
	}
	return name, nil
}

// checkTopics checks, at start, that the output topic and a dead-letter
// topic exist, creating them with create_topic: without it a missing
// topic stops the start. Brokers that cannot be reached are only logged
// (probe): the topics are then checked as events go to them.
func (o *output) checkTopics() error {
	topics := []string{o.cfg.Topic}
	if t, ok := strings.CutPrefix(o.cfg.DeadLetter, "kafka:"); ok {
		topics = append(topics, t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := o.adm.ListTopics(ctx, topics...)
	if err != nil {
		o.log.Warn("kafka: could not check that the topics exist; brokers unreachable", "topics", topics, "err", err)
		return nil
	}
	for _, name := range topics {
		d, ok := td[name]
		if ok && d.Err == nil {
			o.setKnown(name)
			continue
		}
		if ok && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("topic %q: %w", name, d.Err)
		}
		if o.cfg.CreateTopic == nil {
			return fmt.Errorf("topic %q does not exist: create it, or set create_topic to have enrichd create it", name)
		}
		o.mayCreate(name)
		if err := o.createTopic(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (o *output) setKnown(name string) {
	o.mu.Lock()
	if len(o.known) < maxTopics {
		o.known[name] = true
	}
	o.mu.Unlock()
}

// mayCreate reports whether a missing topic should be created now: with
// create_topic, at most once every 10 s per topic.
func (o *output) mayCreate(name string) bool {
	if o.cfg.CreateTopic == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if t, ok := o.creating[name]; ok && time.Since(t) < 10*time.Second {
		return false
	}
	if len(o.creating) >= maxTopics {
		return false
	}
	o.creating[name] = time.Now()
	return true
}

// createTopic creates a topic with create_topic's partitions and
// replication factor (a topic created meanwhile is fine).
func (o *output) createTopic(ctx context.Context, name string) error {
	spec := o.cfg.CreateTopic
	res, err := o.adm.CreateTopic(ctx, int32(spec.Partitions), int16(spec.ReplicationFactor), nil, name)
	if err == nil {
		err = res.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %q: %w", name, err)
	}
	if err == nil {
		o.log.Info("kafka: created topic", "topic", name, "partitions", spec.Partitions, "replication_factor", spec.ReplicationFactor)
	}
	o.setKnown(name)
	return nil
}
