package enrichd

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestKafkaGroupHeartbeat checks the heartbeat against a real coordinator
// (kfake): it reaches the coordinator among three brokers, and says when
// the generation or the member is not the coordinator's (kafka-go alone
// reports neither; see kafkaGroup.beat).
func TestKafkaGroupHeartbeat(t *testing.T) {
	c := kafkatest.Start(t, 3, 4, "in")
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(c.Addrs...), Transport: tr}
	g := newKafkaGroup(cl, KafkaInputConfig{Group: "g", Topics: []string{"in"}, SessionTimeout: 10 * time.Second}, slog.New(slog.DiscardHandler))
	defer g.cancel()
	gen, _, err := g.join("")
	if err != nil {
		t.Fatal(err)
	}
	if len(gen.parts) != 4 || !gen.leader {
		t.Fatalf("generation %+v: want the leader with all 4 partitions", gen)
	}
	if err := g.beat(gen); err != nil {
		t.Errorf("heartbeat of the current generation: %v", err)
	}
	stale := *gen
	stale.id++
	if err := g.beat(&stale); !errors.Is(err, kafka.IllegalGeneration) {
		t.Errorf("heartbeat of another generation: %v, want %v", err, kafka.IllegalGeneration)
	}
	stale = *gen
	stale.member = "nobody"
	if err := g.beat(&stale); !errors.Is(err, kafka.UnknownMemberId) {
		t.Errorf("heartbeat of an unknown member: %v, want %v", err, kafka.UnknownMemberId)
	}
	// A second member joining makes the first one's heartbeat say so.
	g2 := newKafkaGroup(cl, KafkaInputConfig{Group: "g", Topics: []string{"in"}, SessionTimeout: 10 * time.Second}, slog.New(slog.DiscardHandler))
	joined := make(chan error, 1)
	go func() { _, _, err := g2.join(""); joined <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for err = g.beat(gen); err == nil && time.Now().Before(deadline); err = g.beat(gen) {
		time.Sleep(50 * time.Millisecond)
	}
	if !errors.Is(err, kafka.RebalanceInProgress) {
		t.Errorf("heartbeat while a member joins: %v, want %v", err, kafka.RebalanceInProgress)
	}
	g2.cancel()
	// Cancelled, or joined if the coordinator ended the rebalance first:
	// either way the second member is gone.
	if err := <-joined; err != nil {
		t.Logf("second member's join: %v", err)
	}
}
