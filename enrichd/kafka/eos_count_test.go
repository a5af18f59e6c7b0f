package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lutkit/lutkit/internal/kafkatest"
)

// TestCommittedTo: a transaction whose end failed committed when the
// group's committed offsets reach the offsets past its records on every
// partition it read, each still the input's; one partition short, absent,
// never committed or taken by another member means it did not (or cannot
// be told).
func TestCommittedTo(t *testing.T) {
	offs := func(at ...int64) kadm.OffsetResponses {
		o := kadm.OffsetResponses{}
		for p, a := range at {
			o.Add(kadm.OffsetResponse{Offset: kadm.Offset{Topic: "in", Partition: int32(p), At: a}})
		}
		return o
	}
	ends := map[topicPart]int64{{"in", 0}: 120, {"in", 1}: 7}
	all := func(topicPart) bool { return true }
	for _, c := range []struct {
		name  string
		offs  kadm.OffsetResponses
		owned func(topicPart) bool
		want  bool
	}{
		{"reached", offs(120, 7), all, true},
		{"past (a later transaction)", offs(130, 9), all, true},
		{"one partition short", offs(120, 6), all, false},
		{"a partition absent", offs(120), all, false},
		{"never committed", offs(-1, -1), all, false},
		{"no answer", nil, all, false},
		{"a partition taken by another member", offs(130, 9), func(tp topicPart) bool { return tp.partition == 0 }, false},
	} {
		if got := committedTo(c.offs, ends, c.owned); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestOwnedSince: a failed end's transaction is taken as committed only
// on partitions the input owned all along; one taken away and given back
// meanwhile (another member may have read and committed it) is not.
func TestOwnedSince(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	k := &input{owned: map[topicPart]bool{}, former: map[topicPart]bool{}, committed: map[topicPart]int64{}}
	p0, p1 := topicPart{"in", 0}, topicPart{"in", 1}
	k.assigned(context.Background(), cl, map[string][]int32{"in": {0, 1}})
	owned := k.ownedSince(k.ownership())
	if !owned(p0) || !owned(p1) {
		t.Fatalf("owned all along: %v %v, want true", owned(p0), owned(p1))
	}
	k.drop(map[string][]int32{"in": {}})
	if !owned(p0) {
		t.Errorf("a drop of no partition ended the ownership")
	}
	k.drop(map[string][]int32{"in": {1}})
	if owned(p1) {
		t.Errorf("a partition taken away is owned")
	}
	k.assigned(context.Background(), cl, map[string][]int32{"in": {1}})
	if owned(p0) || owned(p1) {
		t.Errorf("after partition 1 was taken away and given back: %v %v, want false", owned(p0), owned(p1))
	}
	if now := k.ownedSince(k.ownership()); !now(p0) || !now(p1) {
		t.Errorf("from now on: %v %v, want true", now(p0), now(p1))
	}
}

// TestOwnedSinceGeneration: a rebalance after the transaction began (a
// second member joins the group) ends the ownership, even where no
// callback dropped a partition: kgo calls them for the first revoke
// between two ends only.
func TestOwnedSinceGeneration(t *testing.T) {
	c := kafkatest.Start(t, 1, 4, "in")
	member := func() *kgo.Client {
		cl := c.Client(t, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in"), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(200*time.Millisecond))
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go func() {
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
		return cl
	}
	generation := func(cl *kgo.Client, above int32) int32 {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, g := cl.GroupMetadata(); g > above {
				return g
			}
		}
		t.Fatalf("no generation past %d in 30 s", above)
		return 0
	}
	k := &input{cl: member(), owned: map[topicPart]bool{{"in", 0}: true}}
	first := generation(k.cl, 0)
	owned := k.ownedSince(k.ownership())
	if !owned(topicPart{"in", 0}) {
		t.Fatalf("generation %d: not owned at once", first)
	}
	member()
	second := generation(k.cl, first)
	if owned(topicPart{"in", 0}) {
		t.Errorf("owned after the group's generation went from %d to %d, no drop counted", first, second)
	}
}
