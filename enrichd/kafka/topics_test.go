package kafka

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestKafkaOutputTopicMissing: without create_topic, an output topic or a
// dead-letter topic that does not exist stops the start with an error
// naming the output and the topic.
func TestKafkaOutputTopicMissing(t *testing.T) {
	for _, tc := range []struct {
		topics []string
		out    string
		want   string
	}{
		{[]string{"in"}, "", `output kafka: topic "out" does not exist: create it, or set create_topic`},
		{[]string{"in", "out"}, ", max_attempts: 2, dead_letter: kafka:dead", `output kafka: topic "dead" does not exist`},
	} {
		c := kafkatest.Start(t, 1, 2, tc.topics...)
		err := newFails(t, kafkaConfig(t, t.TempDir(), c, 10, "", tc.out))
		if err == nil {
			t.Errorf("%v: started", tc.topics)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %q, want %q", tc.topics, err, tc.want)
		}
	}
}

// TestKafkaCreateTopic: with create_topic, the output creates its topic
// with the partitions and replication factor configured, and so the
// topics that topic_field names as events go to them.
func TestKafkaCreateTopic(t *testing.T) {
	const n, rows = 1000, 50
	c := kafkatest.Start(t, 3, 4, "in")
	c.Produce(t, "in", 0, n, func(i int) []byte {
		ev := kafkatest.Event(i, rows)
		if i%2 == 0 {
			ev = fmt.Appendf(ev, " tenant=t-new")
		}
		return ev
	})
	startDaemon(t, kafkaConfig(t, t.TempDir(), c, rows, "", ", topic_field: tenant, create_topic: {partitions: 5, replication_factor: 3}"))
	ty := kafkatest.Check(append(c.Consume(t, "out", n/2, 30*time.Second), c.Consume(t, "t-new", n/2, 30*time.Second)...), customerID)
	if miss := ty.Missing(n); len(miss) > 0 || len(ty.Bad) > 0 || ty.Dups > 0 {
		t.Fatalf("%d events missing, %d bad, %d duplicates", len(miss), len(ty.Bad), ty.Dups)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(c.Client(t)).ListTopics(ctx, "out", "t-new")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"out", "t-new"} {
		d, ok := td[name]
		if !ok || d.Err != nil {
			t.Errorf("topic %s: %+v", name, d)
			continue
		}
		if got := len(d.Partitions); got != 5 {
			t.Errorf("topic %s has %d partitions, want 5", name, got)
		}
		for _, p := range d.Partitions {
			if len(p.Replicas) != 3 {
				t.Errorf("topic %s partition %d has %d replicas, want 3", name, p.Partition, len(p.Replicas))
				break
			}
		}
	}
}
